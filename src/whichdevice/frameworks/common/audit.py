"""What every framework's audit part (``frameworks/<name>/audit.py``, ``contracts.Audit``) shares.

- :class:`AfterImportFinder`: a framework's hooks are installed the moment the script's own
  ``import <framework>`` ends. Each part's ``finders(st)`` puts one at the front of
  ``sys.meta_path`` while the script runs; on the first import of its framework it takes itself
  off the path, lets the normal loader run, then calls the part's ``install(module, state)``: the
  hooks are in place before the script's next line, and a script that never imports the framework
  pays nothing.
- :func:`from_script`: whether a hooked call came from the script's own code.
- :class:`RerunItem`: one call of a compared pair's side, as a part's ``rerun_side`` gives it to
  the child's interleaved re-run (``audit/child.py``).
- :func:`per_op` and :func:`launch_cost`: the per-op and GPU launch costs the child measures after
  the script (``op_cost``, ``gpu_cost`` of each part), on a throwaway state (:func:`dummy_state`).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median
from types import FrameType
from types import SimpleNamespace
from typing import Any

from whichdevice.frameworks.common import capturekit


class AfterImportFinder(capturekit.AfterImport):
    """Calls ``install(module, st)`` right after the script's ``import <name>`` finishes, once
    (``st.<installed_attr>`` set by ``install`` says it is done): the capture's finder
    (``capturekit.AfterImport``), with the audit's state."""

    def __init__(self, name: str, installed_attr: str, install: Callable[[Any, Any], None], st: Any) -> None:
        super().__init__(name, install)
        self.installed_attr = installed_attr
        self.st = st

    def watching(self) -> bool:
        return super().watching() and not getattr(self.st, self.installed_attr)

    def installs(self, module: Any) -> None:
        super().installs(module, self.st)


def watched(name: str, installed_attr: str, install: Callable[[Any, Any], None]) -> tuple[Callable, Callable]:
    """A part's ``finders`` and ``installed`` (``contracts.Audit``) for one framework module: its
    hooks ``install(module, st)`` go in on the script's ``import <name>``, and ``st.<installed_attr>``
    (set by ``install``) says they are in."""

    def finders(st: Any) -> list[AfterImportFinder]:
        return [AfterImportFinder(name, installed_attr, install, st)]

    def installed(st: Any) -> bool:
        return bool(getattr(st, installed_attr))

    return finders, installed


MAX_CALL_LOG = 200_000  # top-level calls remembered (seq, key) for the re-run


def log_call(st: Any, key: str, name: str, jit: bool, last: tuple) -> None:
    """A top-level call (an ``nn.Module``'s, a ``jax.jit`` function's), under ``st.lock``: a new
    ``key`` ("<function id>@<device>") listed in ``st.functions``, its last arguments (``last``) kept
    for the re-run, and ``(seq, key)`` logged."""
    if key not in st.torch_last:
        st.functions[len(st.functions)] = {"name": name, "calls": 0, "traces": 0, "jit": jit, "user_calls": 0}
    st.torch_last[key] = last
    if len(st.torch_calls) < MAX_CALL_LOG:
        st.torch_calls.append((st.seq, key))


def calls_in(st: Any, m: Any) -> dict[str, int]:
    """How many top-level calls of each key (:func:`log_call`) ran inside measurement ``m``."""
    counts: dict[str, int] = {}
    for seq, key in st.torch_calls:
        if m.start_seq < seq < m.end_seq:
            counts[key] = counts.get(key, 0) + 1
    return counts


def script_frame(st: Any, levels: int, depth: int = 2) -> FrameType | None:
    """The script's own frame among the ``levels`` callers above the hook (``depth``: the hook's caller's
    frame), else None: a library's call (Keras reading its logs)."""
    f: FrameType | None = sys._getframe(depth)
    for _ in range(levels):
        if f is None or f.f_code.co_filename == st.script:
            return f
        f = f.f_back
    return None


def from_script(st: Any, levels: int = 5) -> bool:
    """Whether one of the few callers above the hook is the script's own code (``.numpy()``,
    ``float(t)``) rather than a library's (Keras reading its logs)."""
    return script_frame(st, levels, 3) is not None


def count_op(st: Any, op: str, dev: str) -> None:
    """An eager op that ran on ``dev``, under ``st.lock``: counted there, and its kernel's first
    use on that device counted once (``new_kernels``)."""
    st.ops_by_device[dev] = st.ops_by_device.get(dev, 0) + 1
    if (op, dev) not in st.seen_kernels:
        st.seen_kernels.add((op, dev))
        st.c["new_kernels"] += 1


def count_read(st: Any, user: bool) -> None:
    """A host read (the host waited for the device), under ``st.lock``: one more sync, the script's
    own when ``user``, and the ops dispatched so far (what the sync waited for)."""
    st.seq += 1
    st.c["syncs"] += 1
    if user:
        st.c["user_syncs"] += 1
    st.c["last_sync"] = st.seq
    st.c["ops_at_last_sync"] = st.c["eager_ops"]


def mark_read(st: Any, levels: int = 3, only_script: bool = False) -> None:
    """Called by a hooked host read: counted (:func:`count_read`), as the script's own when one of
    the ``levels`` callers above the hook is the script's (with ``only_script``: only then)."""
    if not st.active:
        return
    user = from_script(st, levels=levels)
    if user or not only_script:
        with st.lock:
            count_read(st, user)


def read_hook(orig: Callable, st: Any, levels: int = 3, only_script: bool = False) -> Callable:
    """``orig`` (a host read: ``.item()``, ``block_until_ready``...) counted after each call (:func:`mark_read`)."""

    def read(*a: Any, **k: Any) -> Any:
        out = orig(*a, **k)
        mark_read(st, levels, only_script)
        return out

    read.__wrapped__ = orig  # type: ignore[attr-defined]
    return read


def timed_iter(st: Any, orig_iter: Callable[[Any], Any], setup: str) -> Callable[[Any], Any]:
    """``__iter__`` of a data pipeline (tf.data, DataLoader) whose start-up is counted as ``setup``
    seconds; the iterator is marked so its first batch can be counted too."""

    def iterate(self: Any) -> Any:
        t0 = _perf()
        it = orig_iter(self)  # DataLoader worker processes start here (num_workers > 0)
        if st.active:
            with st.lock:
                st.c[setup] += _perf() - t0
                st.c["iterators"] += 1
            try:
                it._whichdevice_first = True
            except Exception:
                pass
        return it

    return iterate


def timed_next(st: Any, orig_next: Callable[[Any], Any], setup: str, wait: str = "") -> Callable[[Any], Any]:
    """``__next__`` of the iterator :func:`timed_iter` marked: its first batch counted as ``setup``
    seconds; with ``wait``, every batch's wait for data counted there too (a DataLoader's)."""

    def next_(self: Any) -> Any:
        first = st.active and getattr(self, "_whichdevice_first", False)
        if not (first or (wait and st.active)):
            return orig_next(self)
        self._whichdevice_first = False
        t0 = _perf()
        try:
            return orig_next(self)
        finally:
            dt = _perf() - t0
            with st.lock:
                if wait:
                    st.c[wait] += dt  # the loop waited for this batch
                if first:
                    st.c[setup] += dt

    return next_


@dataclass
class RerunItem:
    """One function of a compared pair's side: ``fn()`` runs one call (the script's last arguments,
    or a replay of its ops) inside ``scope()`` (its device request, grad mode); ``calls`` of it ran in
    the timed block. ``key`` tells identical sides apart; ``ran_on`` may be filled by ``where`` from
    the warm-up call's output."""

    key: Any
    fn: Callable[[], Any]
    calls: int
    function: str
    ran_on: str = ""
    requested: str | None = None
    scope: Callable[[], Any] = contextlib.nullcontext
    where: Callable[[Any], str] | None = field(default=None, repr=False)


# ---------------------------------------------------------------- the calls after which the host has waited


@dataclass(frozen=True)
class HostSync:
    """One entry of a framework's table of host syncs (``HOST_SYNCS`` in its audit part): a call after
    which the host has waited for the device, so a clock read right after it times finished work.

    ``form`` says how the script writes it, and so how the source scan (``audit/static.py``) finds it:

    - ``"method"``: ``x.<name>()`` for a name in ``names`` (``.item()``);
    - ``"function"``: ``<module>.<within>.<name>(...)`` — the call's owner ends in ``within``
      (``torch.linalg.solve``: within ``"linalg"``), or any owner when ``within`` is empty;
    - ``"builtin"``: ``<name>(v)`` with a device value among its arguments (``print(t)``, ``float(t)``);
    - ``"host_function"``: ``<within>.<name>(v)`` with a device value (``np.asarray(x)``);
    - ``"fstring"``: a device value formatted in an f-string;
    - ``"mask"``: ``x[<comparison>]``, a device value indexed by a boolean mask.

    ``runtime`` holds the names the framework's per-op hook sees for it (``torch.linalg.solve`` is
    ``linalg_solve`` there). ``waits_for`` is ``"value"`` when the host waits for this call's own result,
    ``"queue"`` when it waits for the work queued before it (its output's size depends on the values, so
    the host must read a count first; the op's own last kernel may still be queued). ``why`` is the
    documented reason, quoted by the findings."""

    written: str
    form: str
    names: tuple[str, ...]
    why: str
    within: str = ""  # the owner's name, or several separated by "|" ("np|numpy")
    runtime: tuple[str, ...] = ()
    waits_for: str = "value"
    arg: str = ""  # "method" only: its first argument must be a string starting with this (.to('cpu'))


SYNC_FORMS = ("method", "function", "builtin", "host_function", "fstring", "mask")


def python_reads(
    value: str,
    number: str,
    formatting: str,
    *,
    number_runtime: tuple[str, ...] = ("__float__", "__int__", "__bool__"),
    print_runtime: tuple[str, ...] = ("__repr__", "__str__", "__format__"),
    fstring_runtime: tuple[str, ...] = ("__format__",),
) -> tuple[HostSync, HostSync, HostSync]:
    """The entries of a framework's ``HOST_SYNCS`` for the ways plain Python reads a device value on
    the host, the same builtins in every framework: ``float(v) / int(v) / bool(v)`` (``number``: why
    it waits), ``print(v) / str(v) / repr(v) / format(v)`` and an f-string of it (``formatting``: why;
    print's is "printing or " and it). ``value`` is how the framework's table writes the value ("t",
    "x"); the ``*_runtime`` names are what its per-op hook sees for each (default: the special methods
    Python calls)."""
    return (
        HostSync(
            f"float({value}) / int({value}) / bool({value})",
            "builtin",
            ("float", "int", "bool"),
            number,
            runtime=number_runtime,
        ),
        HostSync(
            f"print({value}) / str({value}) / repr({value}) / format({value})",
            "builtin",
            ("print", "str", "repr", "format"),
            f"printing or {formatting}",
            runtime=print_runtime,
        ),
        HostSync(f"f'{{{value}}}'", "fstring", (), formatting, runtime=fstring_runtime),
    )


def sync_runtime_names(table: tuple[HostSync, ...], waits_for: str | None = None) -> frozenset[str]:
    """The names a framework's per-op hook sees for the entries of ``table`` (those waiting for
    ``waits_for`` only, when given)."""
    return frozenset(n for s in table for n in s.runtime if waits_for is None or s.waits_for == waits_for)


_perf = time.perf_counter
OPS = 2000  # tiny ops timed per side by per_op (a few ms plain on this machine)
LAUNCHES = 1000  # tiny kernels per timed block (≈ 10 ms on an H100 at ≈ 9.7 µs each)
ROUNDTRIPS = 200  # launches each followed by a host read, per timed block
LAUNCH_BLOCKS = 3  # timed blocks of each; the median is kept


def dummy_state() -> Any:
    """A throwaway state for a part's per-op hook timed after the script (``op_cost``)."""
    from collections import defaultdict

    return SimpleNamespace(
        active=True,
        lock=threading.RLock(),
        c=defaultdict(int),
        seq=0,
        ops_by_device={},
        placed_by_device={},
        seen_kernels=set(),
        stack=[],
        var_kind={},
        var_handles=[],
        var_seen=set(),
        physical={},
        placed_cpu_in_gpu_block={},
        requested_kind=lambda: "",
    )


def per_op(x: Any, reps: int = 5) -> float:
    """Median over ``reps`` blocks of ``OPS`` adds ``y = y + x`` (eager, one op each): seconds per op."""

    def run(n: int) -> None:
        y = x
        for _ in range(n):
            y = y + x

    run(50)  # warm-up: kernels built, allocator warm
    out = []
    for _ in range(reps):
        t0 = _perf()
        run(OPS)
        out.append((_perf() - t0) / OPS)
    return median(out)


def op_cost(framework: str, op: str, x: Any, hooked: Any) -> dict:
    """{'framework', 'op', 'plain_s', 'hooked_s', 'ops'}: adds of the framework's tensor ``x``
    (:func:`per_op`) plainly, then inside ``hooked()`` (a context with the part's per-op hook on a
    throwaway state)."""
    plain = per_op(x)
    with hooked():
        under = per_op(x)
    return {"framework": framework, "op": op, "plain_s": plain, "hooked_s": under, "ops": OPS}


def launch_cost(step: Any, read: Any, sync: Any, device: str, framework: str) -> dict:
    """Seconds per tiny kernel launched back to back (``step`` launches one, ``sync`` waits for the device
    once after the block: the queue's rate, as tests/data/h100_probe_torch.json's ``tiny_add_async_s``),
    and per launch followed by a host read (``read``: ``tiny_add_item_roundtrip_s``); each the median of
    ``LAUNCH_BLOCKS`` blocks after a warm-up."""
    for _ in range(20):  # warm-up: the kernel built, the allocator and the stream warm
        step()
    read()
    launches, reads = [], []
    for _ in range(LAUNCH_BLOCKS):
        sync()
        t0 = _perf()
        for _ in range(LAUNCHES):
            step()
        sync()
        launches.append((_perf() - t0) / LAUNCHES)
        t0 = _perf()
        for _ in range(ROUNDTRIPS):
            read()
        reads.append((_perf() - t0) / ROUNDTRIPS)
    return {
        "device": device,
        "framework": framework,
        "launch_s": median(launches),
        "item_roundtrip_s": median(reads),
        "launches": LAUNCHES,
        "roundtrips": ROUNDTRIPS,
        "blocks": LAUNCH_BLOCKS,
    }


def _audited() -> tuple[str, ...]:
    from whichdevice import frameworks

    return tuple(n for n in frameworks.FRAMEWORKS if "audit" in frameworks.PARTS[n])


# The frameworks ``whichdevice audit`` watches (those with an audit part), in FRAMEWORKS' order.
AUDITED = _audited()


@functools.cache
def terms(framework: str) -> Any:
    """The audit part of ``framework`` (its ``WORDS``, ``SERIES_IN_ORDER``), TensorFlow's for a name
    that has none (a record older than the field). Imports no framework: safe in the parent."""
    from whichdevice import frameworks

    return frameworks.part(framework if "audit" in frameworks.PARTS.get(framework, ()) else "tensorflow", "audit")
