"""PyTorch hooks of the audit child (``audit/child.py``): the same counters as ``tf_hooks.py``.

:func:`install` runs the moment the script's ``import torch`` finishes (:class:`TorchHookFinder`)
and installs, each as one small function:

- :func:`hook_functions`: a ``TorchFunctionMode`` kept on for the whole script — every torch call
  with the device of its output (``ops_by_device``), first use of an op on a device,
  host<->device copies (``to``/``cuda``/``copy_`` across devices; from pageable or pinned memory)
  and host reads (``.item()``, ``float(t)``, ``.tolist()``: the host waits for the device);
- :func:`hook_host_reads`: ``Tensor.item``/``.cpu``/``.numpy``/``.tolist`` and
  ``torch.cuda.synchronize`` called by the script (``user_syncs``);
- :func:`hook_modules`: global forward pre/post hooks — top-level module calls are the steps
  (``fn_calls``), the first call of each module is "first step" set-up, and the last arguments
  of each (module, device) are kept for the interleaved re-run;
- :func:`hook_moves`: ``Tensor.to``/``.cuda`` from the script on a CPU tensor (an input built on
  the host and moved at every step: ``host_inputs``; ``pageable_h2d`` when not pinned);
- :func:`hook_dataloader`: ``DataLoader`` settings (``num_workers``, ``pin_memory``) and its
  iterator start-up with the first batch (``setup_loader_s``);
- :func:`hook_cuda_probe`: ``torch.cuda.is_available()`` asked by the script (its answer is the
  evidence that a "cuda" fallback ran on the CPU).

Like ``tf_hooks``, nothing here imports ``whichdevice.audit.child`` or torch itself.
"""

from __future__ import annotations

import contextlib
import gc
import re
import sys
from collections import Counter
from dataclasses import dataclass
import threading
import time
from typing import TYPE_CHECKING, Any

from whichdevice.frameworks.common import audit as common
from whichdevice.frameworks.common.audit import HostSync, RerunItem, from_script, sync_runtime_names

if TYPE_CHECKING:
    from whichdevice.frameworks.common.auditstate import State

_perf = time.perf_counter  # imported before the child patches the clocks
_local = threading.local()
MAX_OP_LOG = 200_000  # torch ops outside module calls remembered (seq, op, argument specs) for the replay
# Ops logged between two clock reads: a longer timed block is not replayed (said so), and the ops past
# this many cost no logging (≈ 3-5 µs per logged op on this 2-core machine, measured with a loop of 4x4
# adds under the mode: ≤ 5 ms per span). The plain-tensor benchmarks people post time a few ops.
MAX_SPAN_OPS = 1_000


# A tensor argument in the op log is (TENSOR, id, shape, kind): what the replay needs of it, not the
# tensor (keeping it would keep the script's memory alive); ``kind`` indexes KINDS, its (dtype, device).
# Only atomic values, so the garbage collector untracks the entry: a tuple holding a torch.dtype or a
# torch.device (types the collector may track) stayed tracked, and with torch's ≈ 300,000 objects
# each full collection made a logged op cost ≈ 20 µs instead of ≈ 2 µs.
TENSOR = object()
_Tensor: Any = None  # torch.Tensor, set by install (this module never imports torch)
KINDS: list[tuple[Any, Any]] = []  # (dtype, device) by index
_KIND_INDEX: dict[tuple[Any, Any], int] = {}


def is_spec(x: Any) -> bool:
    return type(x) is tuple and len(x) == 4 and x[0] is TENSOR


def _spec(x: Any, torch) -> Any:
    """An op's argument with each tensor (also inside a list or tuple: torch.cat) replaced by its spec."""
    tensor = _Tensor or torch.Tensor
    if isinstance(x, tensor):
        key = (x.dtype, x.device)
        kind = _KIND_INDEX.get(key)
        if kind is None:
            kind = _KIND_INDEX[key] = len(KINDS)
            KINDS.append(key)
        return (TENSOR, id(x), tuple(x.shape), kind)
    if isinstance(x, (list, tuple)) and any(isinstance(y, tensor) for y in x):
        return [_spec(y, torch) for y in x] if isinstance(x, list) else tuple(_spec(y, torch) for y in x)
    return x


def _log_op(st: Any, torch, func, args: tuple, kwargs: dict | None) -> None:
    """Remember one op run from the script's own code (not inside a module call, which the module re-run
    covers) with its arguments' specs, for the replay of a plain-tensor timed block (``child.py``). The
    op itself is kept once, in ``st.torch_op_index``: an entry of atomic values only is untracked by the
    garbage collector, so a long log does not make its full collections slower."""
    log = getattr(st, "torch_ops", None)
    depth: int = getattr(_local, "depth", 0)
    if log is None or depth:
        return
    if len(log) >= MAX_OP_LOG:
        if st.torch_ops_full_at is None:
            st.torch_ops_full_at = st.seq
        return
    st.span_ops += 1
    if st.span_ops > MAX_SPAN_OPS:
        if st.span_ops == MAX_SPAN_OPS + 1:
            st.torch_ops_dropped.append(st.seq)
        return
    index = st.torch_op_index
    i = index.get(func)
    if i is None:
        i = index[func] = len(index)
    specs = tuple([_spec(a, torch) for a in args])
    log.append((st.seq, i, specs, {k: _spec(v, torch) for k, v in kwargs.items()} if kwargs else None))


# ---------------------------------------------------------------- the calls after which the host has waited

# The linear-algebra functions whose docstrings say "When inputs are on a CUDA device, this function
# synchronizes that device with the CPU" (PyTorch 2.x: they read an error code back from the device).
_LINALG_SYNCING = (
    "solve",
    "inv",
    "cholesky",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "ldl_factor",
    "lu_factor",
    "matrix_rank",
    "pinv",
    "svdvals",
)
_DATA_SHAPED = (
    "its output's size depends on the values, so the host reads a count back before it can allocate "
    "the result: it waits for the work queued before it"
)

# Each call after which the host has waited for a CUDA device (common.HostSync): the source scan of a
# region that did not run here (audit/static.py) and the per-op hook of a run on a GPU (make_mode) read it.
HOST_SYNCS: tuple[HostSync, ...] = (
    HostSync(
        ".item()",
        "method",
        ("item",),
        "copies the value to the host: it waits for the kernels making it",
        runtime=("item",),
    ),
    HostSync(".tolist()", "method", ("tolist",), "copies the values to the host", runtime=("tolist",)),
    HostSync(".numpy()", "method", ("numpy",), "a host array of the values (after .cpu())", runtime=("numpy",)),
    HostSync(
        ".cpu()", "method", ("cpu",), "a device-to-host copy, synchronous from the default stream", runtime=("cpu",)
    ),
    HostSync(
        ".to('cpu')",
        "method",
        ("to",),
        "a device-to-host copy, synchronous from the default stream",
        arg="cpu",
        runtime=("to",),
    ),
    *common.python_reads(
        "t",
        "a Python number from a tensor reads its value on the host",
        "formatting a tensor's values copies them to the host first",
        print_runtime=("__repr__", "__format__"),
    ),
    HostSync(
        "torch.cuda.synchronize()",
        "function",
        ("synchronize",),
        "waits for every kernel queued on the device (a stream's or an event's: for theirs)",
    ),
    *(
        HostSync(
            f"torch.linalg.{name}",
            "function",
            (name,),
            "its docstring: when inputs are on a CUDA device, it synchronizes that device with the CPU",
            within="linalg",
            runtime=(f"linalg_{name}",),
        )
        for name in _LINALG_SYNCING
    ),
    HostSync(
        "torch.gesv / torch.solve (the older names of torch.linalg.solve)",
        "function",
        ("gesv", "solve"),
        "the solver reads its error code back from the device, as torch.linalg.solve does",
        within="torch|tr|th",
        runtime=("gesv", "solve"),
    ),
    HostSync(
        "torch.nonzero / torch.argwhere",
        "function",
        ("nonzero", "argwhere"),
        "its docstring: on CUDA it causes host-device synchronization; " + _DATA_SHAPED,
        runtime=("nonzero", "argwhere"),
        waits_for="queue",
    ),
    HostSync(
        "torch.unique",
        "function",
        ("unique", "unique_consecutive"),
        _DATA_SHAPED,
        runtime=("unique", "unique_consecutive"),
        waits_for="queue",
    ),
    HostSync(
        "torch.masked_select",
        "function",
        ("masked_select",),
        _DATA_SHAPED,
        runtime=("masked_select",),
        waits_for="queue",
    ),
    HostSync(
        "torch.repeat_interleave (no output_size)",
        "function",
        ("repeat_interleave",),
        "its docstring: output_size avoids the stream synchronization needed to compute the output's shape",
        runtime=("repeat_interleave",),
        waits_for="queue",
    ),
    HostSync("x[mask] (boolean-mask indexing)", "mask", (), _DATA_SHAPED, runtime=("__getitem__",), waits_for="queue"),
)
# The per-op hook's names of the pure reads (the host waits and no new device work is queued) and of the
# ops that run device work and then wait (counted as work, then as a sync). ``to`` and ``cpu`` are copies
# (_count_copy decides by the devices); ``__getitem__`` waits only with a boolean mask (_waits).
_READS = frozenset({"item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__repr__", "__format__"})
_SYNCING_OPS = sync_runtime_names(HOST_SYNCS) - _READS - {"to", "cpu", "__getitem__"}


def _bool_mask(torch: Any, args: tuple) -> bool:
    """``x[mask]``: an index that is (or holds) a boolean tensor."""
    index = args[1] if len(args) > 1 else None
    items = index if isinstance(index, (tuple, list)) else (index,)
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in items)


def _waits(torch: Any, name: str, args: tuple) -> bool:
    """Whether op ``name`` (run with ``args``) left the host waiting for the device after its own work."""
    return name in _SYNCING_OPS or (name == "__getitem__" and _bool_mask(torch, args))


def torch_device(dev: Any) -> str:
    """'cuda:0' -> 'GPU:0', 'cpu' -> 'CPU:0', 'mps' -> 'MPS:0'."""
    text = str(dev)
    kind, _, idx = text.partition(":")
    name = {"cuda": "GPU", "cpu": "CPU"}.get(kind, kind.upper())
    return f"{name}:{idx or 0}"


def _first_tensor(x: Any, torch) -> Any:
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (list, tuple)):
        for y in x:
            t = _first_tensor(y, torch)
            if t is not None:
                return t
    if isinstance(x, dict):
        return _first_tensor(list(x.values()), torch)
    return None


def record_devices(torch, st: State) -> None:
    try:
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        gpus = 0
    st.torch_physical = {"CPU": 1, "GPU": gpus}


def hook_functions(torch, st: State) -> None:
    """On for the whole script: :func:`make_mode` entered on the main thread."""
    mode = make_mode(torch, st)
    mode.__enter__()  # on for the whole script (the main thread's mode stack)
    st.torch_mode = mode


def make_mode(torch, st: Any) -> Any:
    """A ``TorchFunctionMode`` (``torch.overrides``) kept on for the whole script: every torch call
    from Python with the device of its output. A ``TorchDispatchMode`` would also see the
    backward kernels one by one, but costs ≈ 1.8 ms per op on this machine against ≈ 12 µs
    (measured with a 3,000-op loop of ``x.add(1)``), which breaks the ≤ 2× overhead target;
    backward shows up here as one ``Tensor.backward`` call on the loss's device."""
    from torch.overrides import TorchFunctionMode

    copies = {"to", "cuda", "copy_", "cpu"}
    reads = _READS  # .item(), float(t), print(t): the host waits for the value (HOST_SYNCS)

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not st.active:
                return out
            name = getattr(func, "__name__", "") or ""
            t = _first_tensor(out, torch)
            dev = torch_device(t.device) if t is not None else ""
            with st.lock:
                st.c["eager_ops"] += 1
                st.seq += 1
                if name in reads:  # .item(), float(t), .tolist(): the host waits for the value
                    st.c["syncs"] += 1
                    st.c["last_sync"] = st.seq
                    st.c["ops_at_last_sync"] = st.c["eager_ops"]
                    _log_op(st, torch, func, args, kwargs)  # a read in the timed block is part of its work
                    return out
                st.c["last_work"] = st.seq
                if t is not None:
                    st.c["elems"] += t.numel()
                if dev:
                    common.count_op(st, name, dev)
                    if dev.startswith("GPU"):
                        st.c["last_gpu_work"] = st.seq
                if name in copies:
                    _count_copy(st, torch, args, dev)
                elif _waits(torch, name, args):  # torch.linalg.solve, nonzero, x[mask]: work, then a wait
                    st.c["syncs"] += 1
                    st.c["last_sync"] = st.seq
                    st.c["ops_at_last_sync"] = st.c["eager_ops"]
                _log_op(st, torch, func, args, kwargs)
            return out

    return Watch()


def _count_copy(st: Any, torch, args: tuple, dev: str) -> None:
    """A copy (``to``, ``cuda``, ``copy_``, ``cpu``) whose output is on ``dev``: host to device (from
    pageable memory or not), or device to host (the host waits: a sync)."""
    src = args[0] if args and isinstance(args[0], torch.Tensor) else None
    sdev = torch_device(src.device) if src is not None else dev
    if src is None or not dev or sdev[:3] == dev[:3]:
        return
    if dev.startswith("GPU"):
        st.c["h2d"] += 1
        if sdev.startswith("CPU") and not src.is_pinned():
            st.c["pageable_h2d"] += 1
    else:
        st.c["d2h"] += 1
        st.c["syncs"] += 1
        st.c["last_sync"] = st.seq
        st.c["ops_at_last_sync"] = st.c["eager_ops"]


def hook_host_reads(torch, st: State) -> None:
    """Host reads the script makes: ``.item()``, ``.cpu()``, ``.numpy()``, ``.tolist()``, ``float()``,
    ``torch.cuda.synchronize()``."""

    for name in ("item", "cpu", "numpy", "tolist", "__float__"):
        orig = getattr(torch.Tensor, name, None)
        if orig is not None:
            setattr(torch.Tensor, name, common.read_hook(orig, st, only_script=True))
    torch.cuda.synchronize = common.read_hook(torch.cuda.synchronize, st, only_script=True)


def hook_modules(torch, st: State) -> None:
    """Top-level ``nn.Module`` calls: the steps of the script's loop (``fn_calls``)."""
    from torch.nn.modules import module as module_mod

    def pre(module, args):
        depth = getattr(_local, "depth", 0)
        _local.depth = depth + 1
        if depth == 0 and st.active:
            _local.t0 = _perf()

    def post(module, args, output):
        depth = getattr(_local, "depth", 1) - 1
        _local.depth = depth
        if depth != 0 or not st.active:
            return None
        dt = _perf() - getattr(_local, "t0", _perf())
        t = _first_tensor(args, torch)
        dev = torch_device(t.device) if t is not None else ""
        key = f"{id(module)}@{dev}"
        with st.lock:
            st.seq += 1
            st.c["fn_calls"] += 1
            if id(module) not in st.torch_first:
                st.torch_first.add(id(module))
                # torch.compile's module (OptimizedModule) compiles on its first call: compile time.
                compiled = type(module).__name__ == "OptimizedModule"
                st.c["setup_compile_s" if compiled else "setup_first_step_s"] += dt
            common.log_call(st, key, type(module).__name__, False, (module, args, torch.is_grad_enabled()))
        return None

    module_mod.register_module_forward_pre_hook(pre)
    module_mod.register_module_forward_hook(post)


def hook_moves(torch, st: State) -> None:
    """``Tensor.to`` / ``Tensor.cuda`` called by the script on a tensor in host memory."""

    def wrap(orig):
        def move(self, *a, **k):
            if st.active and self.device.type == "cpu" and from_script(st, levels=1):
                with st.lock:
                    st.c["host_inputs"] += 1
                    if not self.is_pinned():
                        st.c["pageable_moves"] += 1
            return orig(self, *a, **k)

        move.__wrapped__ = orig
        return move

    def wrap_module(orig):
        def move(self, *a, **k):
            if st.active and from_script(st, levels=1):
                st.moved_modules.add(id(self))
            return orig(self, *a, **k)

        move.__wrapped__ = orig
        return move

    for name in ("to", "cuda"):
        setattr(torch.Tensor, name, wrap(getattr(torch.Tensor, name)))
        setattr(torch.nn.Module, name, wrap_module(getattr(torch.nn.Module, name)))


def hook_dataloader(torch, st: State) -> None:
    from torch.utils.data import dataloader as dl

    orig_init = dl.DataLoader.__init__
    orig_iter = dl.DataLoader.__iter__

    def init(self, *a, **k):
        orig_init(self, *a, **k)
        f = sys._getframe(1)
        if st.active and f.f_code.co_filename == st.script:
            st.loaders.append(
                {
                    "line": f.f_lineno,
                    "text": st.source(f.f_lineno),
                    "num_workers": int(self.num_workers),
                    "pin_memory": bool(self.pin_memory),
                    "batch_size": self.batch_size,
                }
            )

    next_batch = common.timed_next(st, dl._BaseDataLoaderIter.__next__, "setup_loader_s", "loader_wait_s")

    # torch's own classes, patched in the child for the script's run (methods are not assignable to mypy)
    setattr(dl._BaseDataLoaderIter, "__next__", next_batch)
    setattr(dl.DataLoader, "__init__", init)
    setattr(dl.DataLoader, "__iter__", common.timed_iter(st, orig_iter, "setup_loader_s"))


def hook_cuda_probe(torch, st: State) -> None:
    orig = torch.cuda.is_available

    def is_available():
        out = orig()
        f = sys._getframe(1)
        if st.active and f.f_code.co_filename == st.script and st.cuda_probe is None:
            st.cuda_probe = {"line": f.f_lineno, "text": st.source(f.f_lineno), "answer": bool(out)}
        return out

    setattr(is_available, "__wrapped__", orig)  # the original, as functools.wraps keeps it
    torch.cuda.is_available = is_available


def hook_cuda_events(torch, st: State) -> None:
    """``torch.cuda.Event(enable_timing=True)``: ``record()`` from the script is a clock read,
    ``start.elapsed_time(end)`` the interval (milliseconds, as torch returns them)."""
    ev = getattr(torch.cuda, "Event", None)
    if ev is None:
        return
    orig_record, orig_elapsed = ev.record, ev.elapsed_time

    def record(self, *a, **k):
        out = orig_record(self, *a, **k)
        f = sys._getframe(1)
        if st.active and f.f_code.co_filename == st.script:
            self._whichdevice_read = st.stamp("torch.cuda.Event", f.f_lineno)
        return out

    def elapsed_time(self, end):
        ms = orig_elapsed(self, end)
        f = sys._getframe(1)
        a, b = getattr(self, "_whichdevice_read", None), getattr(end, "_whichdevice_read", None)
        if st.active and a is not None and b is not None:
            st.add_interval(a, b, ms / 1e3, f.f_lineno if f.f_code.co_filename == st.script else None)
        return ms

    try:
        ev.record, ev.elapsed_time = record, elapsed_time
    except Exception:
        pass


def install(torch, st: State) -> None:
    global _Tensor
    _Tensor = torch.Tensor
    # One full collection now, at import: torch leaves ≈ 300,000 objects no full collection has seen, so
    # the first one (≈ 0.1-0.3 s here) would otherwise land wherever the script first allocates — in its
    # timed loop, where the op log's entries bring it sooner.
    gc.collect()
    record_devices(torch, st)
    hook_cuda_probe(torch, st)
    hook_cuda_events(torch, st)
    hook_host_reads(torch, st)
    hook_modules(torch, st)
    hook_moves(torch, st)
    hook_dataloader(torch, st)
    hook_functions(torch, st)
    st.torch_installed = True


# ---------------------------------------------------------------- the part's contract (contracts.Audit)


finders, installed = common.watched("torch", "torch_installed", install)


def adopt(st: State) -> None:
    st.framework = "torch"
    st.physical = st.torch_physical


def stop(st: State) -> None:
    """After the script: the dispatch mode off (the re-run is timed without it)."""
    mode = getattr(st, "torch_mode", None)
    if mode is not None:
        try:
            mode.__exit__(None, None, None)
        except Exception:
            pass
        st.torch_mode = None


def op_cost() -> dict:
    """A 4x4 add, plainly and under the audit's dispatch mode (on a throwaway state)."""
    import torch

    return common.op_cost("torch", "4x4 add (torch)", torch.ones(4, 4), lambda: make_mode(torch, common.dummy_state()))


def gpu_cost() -> dict | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return launch_cost_on(torch, "cuda", torch.cuda.get_device_name(0))


def launch_cost_on(torch: Any, device: str, name: str) -> dict:
    """A 1-element in-place add on ``device`` ('cuda', or 'cpu' where a test runs it), synchronized
    with ``torch.cuda.synchronize`` on CUDA; the read is ``.item()``."""
    x = torch.zeros(1, device=device)
    cuda = torch.device(device).type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    return common.launch_cost(lambda: x.add_(1), lambda: x.add_(1).item(), sync, name, "torch")


def rerun_setup(st: State, budget_s: float) -> None:
    """Nothing: PyTorch has no first Session.run to re-run."""


def rerun_side(st: State, m: Any) -> tuple[list[RerunItem], str | None]:
    """The top-level module calls inside measurement ``m`` with their last inputs and grad mode; a block
    with no module call: its torch ops, replayed on fresh tensors (:func:`replay_side`)."""
    import torch

    counts = common.calls_in(st, m)
    if counts:
        calls = [(key, *st.torch_last[key], n) for key, n in counts.items()]
    else:
        calls, why = replay_side(st, m)
        if why:
            return [], why
    return [_item(torch, *c) for c in calls], None


def _item(torch: Any, key: str, fn: Any, args: tuple, grad: bool, calls: int) -> RerunItem:
    @contextlib.contextmanager
    def scope():  # type: ignore[no-untyped-def]
        _to_inputs_device(torch, fn, args)
        with torch.set_grad_enabled(grad):  # grad mode of the script's last call
            yield

    return RerunItem(
        key=key,
        fn=lambda: fn(*args),
        calls=calls,
        function=getattr(fn, "label", None) or type(fn).__name__ + ".forward",
        ran_on=key.split("@", 1)[1],
        scope=scope,
    )


def _to_inputs_device(torch, fn, args) -> None:
    """A module moved in place between the script's blocks (``net = net.cuda()`` after its CPU loop:
    one object, whose CPU block the H200 could not re-run, "Input type (torch.FloatTensor) and weight
    type (torch.cuda.FloatTensor)") goes to the device its recorded inputs are on before its side
    runs; outside the timed block (timing.block synchronizes before reading the clock)."""
    if not isinstance(fn, torch.nn.Module):
        return
    t = next((a for a in args if isinstance(a, torch.Tensor)), None)
    p = next(fn.parameters(), None)
    if t is not None and p is not None and p.device != t.device:
        fn.to(t.device)


# ---------------------------------------------------------------- the replay of a plain-tensor block

# The replay of a plain-tensor PyTorch timed block (What to build #3).
#
# The most common GPU timing script people post times tensor ops, not a model: ``c = a @ b`` on the CPU,
# then on the GPU, with no ``torch.cuda.synchronize()`` and the first call inside the clock. The module
# re-run (``child._TorchPairs``) has no forward pass to call there, so such a block is replayed instead:
# the torch ops the script ran inside the interval, from its own code (``torch_hooks._log_op``: each op
# with the shape, dtype and device of its tensor arguments, not the tensors), run again in order on
# fresh tensors of the same shapes, dtypes and devices — random values for floating point, zeros for
# integers and booleans (a valid index). The child times it like a module call: warmed up, device
# synchronized before and after, interleaved with the other side.
#
# Fresh tensors mean the replay touches nothing of the script's. Python work between the ops (NumPy,
# lists, prints) is not replayed: the corrected ratio is the ratio of the block's torch ops. A block is
# not replayed, with the reason kept in one line, when it runs autograd or an op with an effect outside
# torch (``_NOT_REPLAYED``), when it ran more ops than the log keeps between two clock reads
# (``torch_hooks.MAX_SPAN_OPS``) or the log was full before it ended, or when its fresh tensors would
# need more than ``MAX_BYTES``.

# Fresh tensors of one block: at most this many bytes (the device must hold them beside the script's).
MAX_BYTES = 2 * 2**30
# Ops not replayed: autograd (its graph is not rebuilt from single ops), files, the RNG's seed, storage
# sharing and stream bookkeeping.
_NOT_REPLAYED = re.compile(r"backward|autograd|grad$|save|load|seed|share_memory|record_stream|set_", re.I)


@dataclass
class Replay:
    """One block's ops with fresh arguments; calling it runs them once, in order."""

    ops: list[tuple[Any, tuple, dict]]
    label: str

    def __call__(self) -> None:
        for func, args, kwargs in self.ops:
            func(*args, **kwargs)


def _fresh(spec: Any, torch, made: dict, size: list[int]) -> Any:
    """The fresh tensor for one spec (the same spec twice: the same tensor), or the value itself."""
    if is_spec(spec):
        if spec not in made:
            _, _, shape, kind = spec
            dtype, device = KINDS[kind]
            floating = dtype.is_floating_point or dtype.is_complex
            t = (torch.randn if floating else torch.zeros)(shape, dtype=dtype, device=device)
            size[0] += t.numel() * t.element_size()
            if size[0] > MAX_BYTES:
                raise MemoryError(f"its fresh tensors would need more than {MAX_BYTES / 2**30:.0f} GiB")
            made[spec] = t
        return made[spec]
    if isinstance(spec, list):
        return [_fresh(x, torch, made, size) for x in spec]
    if isinstance(spec, tuple):
        return tuple(_fresh(x, torch, made, size) for x in spec)
    return spec


def _label(names: list[str]) -> str:
    counts = Counter(names).most_common()
    top = ", ".join(f"{n} ×{c}" for n, c in counts[:3]) + (", …" if len(counts) > 3 else "")
    return f"{len(names)} torch op{'s' if len(names) != 1 else ''} replayed ({top})"


def replay_side(st: Any, m: Any) -> tuple[list[tuple], str | None]:
    """(key, replay, (), grad mode, calls) for measurement ``m``'s block, or the one-line reason it is not
    replayed; the key names the block and the device its work ran on."""
    import torch

    funcs = {i: f for f, i in st.torch_op_index.items()}
    logged = [(funcs[i], a, k or {}) for seq, i, a, k in st.torch_ops if m.start_seq < seq < m.end_seq]
    if st.torch_ops_full_at is not None and st.torch_ops_full_at < m.end_seq:
        return [], "the timed work ran after the audit's op log was full (200,000 ops): its ops are not all known"
    if any(m.start_seq < seq < m.end_seq for seq in st.torch_ops_dropped):
        return [], (
            f"the timed work ran more than {MAX_SPAN_OPS:,} torch ops between two clock reads: only blocks up to "
            "that many are replayed"
        )
    if not logged:
        return [], "the timed work calls no nn.Module and runs no torch op from the script: nothing to re-run"
    names = [getattr(f, "__name__", "") or type(f).__name__ for f, _, _ in logged]
    bad = sorted({n for n in names if _NOT_REPLAYED.search(n)})
    if bad:
        return [], (
            f"the timed work runs {', '.join(bad[:3])} (autograd, or an effect outside torch): its ops are not "
            "replayed on fresh tensors"
        )
    made: dict = {}
    size = [0]
    try:
        ops = [(f, _fresh(a, torch, made, size), _fresh(k, torch, made, size)) for f, a, k in logged]
    except Exception as e:  # a dtype randn cannot make, a device gone, too much memory
        return [], f"its ops' arguments could not be made afresh ({type(e).__name__}: {str(e).strip()[:160]})"
    gpu = sorted(d for d in m.ran_on if d.startswith("GPU"))
    dev = gpu[0] if gpu else (sorted(m.ran_on)[0] if m.ran_on else "CPU:0")
    return [(f"replay:{m.id}@{dev}", Replay(ops, _label(names)), (), False, 1)], None


# ---------------------------------------------------------------- the audit's words for PyTorch

# What the shared counters and the findings are called in PyTorch's terms (``present/auditwords.py``).
WORDS: dict[str, str] = {
    "sees": "PyTorch sees {gpu} GPU device(s)",
    "name": "PyTorch",
    "eager": "PyTorch",
    "step": "nn.Module call",
    "trace": "torch.compile trace",
    "setup.trace": "tracing (first calls)",
    "setup.compile": "torch.compile compilation (first calls)",
    "soft_placed.ran": "its CUDA path ran the work on the CPU",
    "fix.soft_placed": (
        "Check torch.cuda.is_available() before timing and label results by tensor.device, not by the device asked for."
    ),
    "sync.reads": "no .item(), no .cpu(), no torch.cuda.synchronize()",
    "sync.here": (
        " Here the CUDA path fell back to the CPU, whose kernels finish before they return, so the number is "
        "right here; on a GPU this would time only the kernel launches (the script never synchronizes)."
    ),
    "fix.sync": "Call torch.cuda.synchronize() right before the second clock read (or time with torch.cuda.Event).",
    "label": "the line that reports this time says GPU, but nothing in this timing ran on a GPU: the work ran on {ran}.",
    "fix.label": "Label results by where the tensors are (tensor.device), and move the work there first (.to('cuda')).",
    "fix.setup": (
        "Do the set-up before the first clock read: run one warm-up step per device (first calls, "
        "torch.compile, DataLoader workers) — then start the clock and time the steady steps only."
    ),
    "host_inputs.gpu": (
        "{host_inputs} tensors built in host memory were moved with .to()/.cuda() inside this timing "
        "({fn_calls} steps), {pageable_moves} of them from pageable memory (tensor.is_pinned() False). "
        "{h2d} host→device copies ran inside the clock."
    ),
    "host_inputs.cpu": (
        "{host_inputs} tensors built in host memory were moved with .to()/.cuda() inside this timing "
        "({fn_calls} steps), {pageable_moves} of them from pageable memory (tensor.is_pinned() False). "
        "Here the CUDA path fell back to the CPU, so nothing was copied; on a GPU each move would be "
        "a host→device copy per step, synchronous from pageable (not pinned) memory."
    ),
    "fix.host_inputs": (
        "Move the data to the device once before the clock starts (torch.as_tensor(x, device=...)), or "
        "feed with a DataLoader(pin_memory=True) and .to(device, non_blocking=True)."
    ),
    "fix.dispatch": (
        "Batch the work into few large ops (stack the small matrices and call the op once, e.g. "
        "torch.linalg.inv(batch)); or compile the loop with torch.compile / CUDA graphs so it launches once; "
        "compare devices at the sizes you will really use."
    ),
    "missing.did": (
        "this PyTorch cannot reach a CUDA device (a CPU-only build, no NVIDIA driver, or no visible GPU), so "
        "the first .cuda() / device='cuda' / torch.cuda call stopped the script before its GPU timing ran"
    ),
    "fix.missing": (
        "Run it where torch.cuda.is_available() is True (`whichdevice devices` says why it is not here; a CPU-only "
        "wheel needs the CUDA build of torch), or choose the device with "
        "`device = 'cuda' if torch.cuda.is_available() else 'cpu'` and label results by tensor.device."
    ),
    "latent.waits": "no torch.cuda.synchronize(), .item(), .cpu()",
    "latent.async": "CUDA kernels run",
    "fix.latent": (
        "Call torch.cuda.synchronize() before each clock read (or time with torch.cuda.Event / "
        "torch.utils.benchmark.Timer, which synchronize); warm up once before timing; and give the GPU "
        "work in few large ops (batch the small tensors) before comparing it with the CPU."
    ),
    "rerun": "a model's forward pass, or a plain-tensor block's torch ops replayed on fresh tensors",
}
# A script with no GPU here (a "cuda if available else cpu" fallback) has no device-asked blocks: its
# series are compared in the order it wrote them.
SERIES_IN_ORDER = True
# What PyTorch says when no CUDA device can be reached: a CPU-only build, no driver, no visible GPU,
# torch.cuda.Event on a CPU build, X.cuda(0) on 2.13's CPU build (rules.rule_missing_device_failure).
MISSING_DEVICE = (
    r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available|"
    r"CUDA driver initialization failed|Tried to instantiate dummy base class|"
    r"Cannot access accelerator device when none is available"
)
