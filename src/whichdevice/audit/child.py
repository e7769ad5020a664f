"""Child process of ``whichdevice audit``: run the user's script once, unmodified, and watch it.

``python -m whichdevice.audit.child JOB.json`` where JOB names the script, its arguments, the
state file to write and the deadline. The script runs through ``runpy`` as ``__main__`` with
its own ``sys.argv``; its stdout and stderr are this process's (inherited from the parent),
so its output reaches the user unchanged.

What is installed before the script runs, and why each piece:

- **Clock reads** (``time.time``, ``time.perf_counter``, ``time.monotonic``): a read *from the
  script's own file* returns a ``Stamp`` — a ``float`` subclass that behaves like the number
  but records, when the script computes ``end - start``, which two reads formed the
  interval, on which line. So the audit knows exactly what the script timed, not a guess
  from line numbers. Reads by libraries get plain floats. At every stamped read the counters
  below are snapshotted; an interval's contents are the difference of its two snapshots.
- **TensorFlow** (``tf_hooks.py``), hooked the moment the script imports it (a
  ``sys.meta_path`` finder, so a script that sets ``CUDA_VISIBLE_DEVICES`` before importing
  still works and a script that never imports TensorFlow never pays for it):
  ``tf.device`` / ``tf.compat.v1.device`` (blocks entered from the script: requested device,
  line, counters at entry and exit); ``tf.function``'s ``Function.__call__`` (calls, traces =
  change of ``experimental_get_tracing_count()``, first call per traced signature and device
  = graph instantiation, or XLA compile with ``jit_compile``); an op callback
  (``op_callbacks.add_op_callback``: the device every eager op *actually* ran on — the
  output's ``.device`` —, inputs on another device = host<->device copies, first use of an
  op kernel on a device); ``EagerTensor._numpy`` and ``tf.test.experimental.sync_devices``
  (host reads: the points where the host waits for the device); ``tf.compat.v1`` sessions
  (created, ``run`` calls, each a synchronous host read).
- **Placement inside graphs** on a machine with a GPU: ``tf.debugging.set_log_device_placement``
  makes TensorFlow's placer print one line per op of every instantiated graph; fd 2 is then
  read by a thread that keeps those lines (and in-band markers this module writes at every
  snapshot, so each line lands in the right block) and forwards every other byte to the
  real stderr. On a machine without a GPU this is off: every op can only run on the CPU,
  and the op callback already sees where eager work ran.

After the script ends (normally, by an exception or ``sys.exit``), instrumentation is
switched off and, within the time left, every ``tf.function`` the script called inside a
device block is re-measured with the project's timing core (``timing.measure``, device
synchronized, warm-up apart) under the same device request, with the arguments of its
last call — unless the graph has side effects outside TensorFlow (files, prints, Python
callbacks, summaries) or an argument is a data iterator, in which case the reason is
recorded instead. A watchdog thread writes the state at the deadline and ends the process,
so a hanging script is still audited up to that point.

Trade-off: hooks cost a few microseconds per eager op and per stamped clock read; the
script's own printed numbers include that. ``benchmarks/audit.md`` measures it.
"""

from __future__ import annotations

import errno
import json
import re
import os
import resource
import runpy
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from whichdevice.audit import clocks, jax_hooks, tf_hooks, torch_hooks
from whichdevice.audit.state import AUDIT_STATE_VERSION, RERUN_BUDGET_S, State
from whichdevice.audit.tf_hooks import short_device

_orig_time = time.time
_orig_perf = time.perf_counter
_orig_mono = time.monotonic

MAX_RERUNS = 8  # distinct (function, device) pairs re-measured after the script
RERUN_MIN_TIME_S = 0.2  # steady seconds per re-measured pair (timing.TimingPolicy.min_time_s)
# All pairs together get at most this share of the script's own run time, so the
# audit stays within 2x the script (benchmarks/audit.md); at least 0.5 s; a pair always gets MIN_ROUNDS rounds.
RERUN_SHARE = 0.3

# Ops whose effect reaches outside TensorFlow: a graph holding one is not re-run.
UNSAFE_OPS = frozenset(
    {
        "WriteFile",
        "PrintV2",
        "Print",
        "Save",
        "SaveV2",
        "SaveSlices",
        "MergeV2Checkpoints",
        "PyFunc",
        "EagerPyFunc",
        "PyFuncStateless",
        "WriteScalarSummary",
        "WriteSummary",
        "WriteImageSummary",
        "WriteHistogramSummary",
        "WriteAudioSummary",
        "WriteGraphSummary",
        "WriteRawProtoSummary",
        "DebugIdentityV2",
        "DebugIdentityV3",
        "ImportEvent",
        "FlushSummaryWriter",
        "DeleteFile",
        "DatasetToTFRecord",
        "SaveDataset",
        "SaveDatasetV2",
    }
)


# ---------------------------------------------------------------- re-measurement


def _graph_op_types(cf) -> set[str]:
    gd = cf.graph.as_graph_def()
    types = {n.op for n in gd.node}
    for fn in gd.library.function:
        types.update(n.op for n in fn.node_def)
    return types


def _iterator_like(x) -> bool:
    name = type(x).__name__
    return "Iterator" in name or "Dataset" in name or hasattr(x, "__next__")


def _fresh_args(args: tuple, kwargs: dict) -> tuple[tuple, dict] | str:
    """The last call's arguments, with a tf.data iterator replaced by a fresh endless one over the
    same dataset (the script's own iterator is never touched); a reason string when that is impossible."""

    def fresh(x):
        if not _iterator_like(x):
            return x
        ds = getattr(x, "_dataset", None)
        if ds is None or not hasattr(ds, "repeat"):
            raise ValueError("an argument is a data iterator whose dataset is not reachable")
        return iter(ds.repeat())

    try:
        return tuple(fresh(a) for a in args), {k: fresh(v) for k, v in kwargs.items()}
    except ValueError as e:
        return str(e)


def _side_work(st: State, block_ids: list[int]) -> tuple[list[tuple], str | None]:
    """(fn, args, kwargs, device, calls) for every tf.function called at top level in these blocks."""
    work: list[tuple] = []
    for bid in block_ids:
        for fid, n in (st.block_calls.get(bid) or {}).items():
            fn, args, kwargs = st.last_args[(bid, fid)]
            name = st.functions[fid]["name"]
            fresh = _fresh_args(args, kwargs)
            if isinstance(fresh, str):
                return [], f"{name}: {fresh}"
            try:
                cf = fn.get_concrete_function(*fresh[0], **fresh[1])
                unsafe = sorted(_graph_op_types(cf) & UNSAFE_OPS)
            except Exception as e:
                return [], f"{name}: its graph could not be inspected ({type(e).__name__})"
            if unsafe:
                return [], f"{name}: its graph has side effects outside TensorFlow ({', '.join(unsafe)})"
            work.append((fid, fn, fresh[0], fresh[1], st.blocks[bid]["requested"], n))
    if not work:
        return [], (
            "the timed work calls no tf.function (eager ops or a tf.compat.v1 session); only traced functions are "
            "re-run, because their graph is the whole work and calling it again touches nothing outside TensorFlow"
        )
    return work, None


def rerun(st: State, deadline: float) -> None:
    """Interleaved steady re-measurement of every compared pair (A = CPU-asked, B = GPU-asked).

    Each side is the tf.functions its blocks called, with the arguments of their last call,
    under the block's device request; one side's block time is Σ calls × (time of k calls, device
    synchronized) / k. Rounds alternate A and B in a random order (``audit/interleave.py``)."""
    if not st.tf_installed:
        return
    import tensorflow as tf

    from whichdevice.audit import measurements

    state = st.to_json()
    pairs = measurements.comparisons(measurements.timed(measurements.build_measurements(state)))
    done: dict[tuple, int] = {}
    for a, b in pairs:
        base = {"a": a.id, "b": b.id}
        key = (tuple(a.blocks), tuple(b.blocks))
        if key in done:
            st.interleaved.append({**base, "same_as": done[key]})
            continue
        wa, why_a = _side_work(st, a.blocks)
        wb, why_b = _side_work(st, b.blocks)
        if why_a or why_b:
            st.interleaved.append({**base, "skipped": why_a or why_b})
            continue
        if len(done) >= MAX_RERUNS:
            st.interleaved.append({**base, "skipped": f"more than {MAX_RERUNS} compared pairs; the first were re-run"})
            continue
        left = deadline - _orig_mono()
        if left < 10 * RERUN_MIN_TIME_S:
            st.interleaved.append({**base, "skipped": "no time left before --timeout"})
            continue
        try:
            t_pair = _orig_perf()
            budget = max(0.0, min(RERUN_BUDGET_S, left / 4, st.rerun_left_s))
            rounds, per_call = _interleave(st, tf, wa, wb, budget_s=budget)
            st.rerun_left_s -= _orig_perf() - t_pair
        except Exception as e:
            st.interleaved.append({**base, "skipped": f"re-running raised {type(e).__name__}: {str(e).strip()[:200]}"})
            continue
        done[key] = len(st.interleaved)
        st.interleaved.append({**base, "rounds": rounds, "functions": per_call})


def _torch_side(st: State, m) -> tuple[list[tuple], str | None]:
    """(key, callable, args, grad mode or kwargs, calls) for the top-level module calls (PyTorch) or
    jitted calls (JAX) inside measurement ``m``; a PyTorch block with no module call: its torch ops,
    replayed (``audit/replay.py``)."""
    counts: dict[str, int] = {}
    for seq, key in st.torch_calls:
        if m.start_seq < seq < m.end_seq:
            counts[key] = counts.get(key, 0) + 1
    if not counts and st.framework == "jax":
        return [], (
            "the timed work calls no jax.jit function (only jitted calls are re-run; JAX's eager jnp ops are not "
            "recorded one by one)"
        )
    if not counts:  # plain tensors: the block's torch ops, replayed on fresh tensors (audit/replay.py)
        from whichdevice.audit import replay

        return replay.side(st, m)
    return [(key, *st.torch_last[key], n) for key, n in counts.items()], None


def rerun_torch(st: State, deadline: float) -> None:
    """Interleaved re-run of each compared pair's forward passes (PyTorch): each side's top-level
    module calls with their last inputs and grad mode, device synchronized; the backward pass and
    the optimizer are the script's and are not replayed (said in the correction's note)."""
    from whichdevice.audit import measurements

    state = st.to_json()
    pairs = measurements.comparisons(measurements.timed(measurements.build_measurements(state)))
    jax_mode = st.framework == "jax"
    pairs_run = _TorchPairs(st, deadline, jax_mode, _torch_call_k(jax_mode))
    for a, b in pairs:
        pairs_run.pair(a, b)


def _torch_call_k(jax_mode: bool) -> Callable[[tuple, int], float]:
    """Seconds of k calls of one (key, callable, args, grad mode or kwargs, calls) item, synchronized
    before and after with the project's sync (core.timing.block; issue #31, one ground)."""
    from whichdevice import frameworks
    from whichdevice.core import timing

    # The project's sync (block_until_ready / torch.cuda.synchronize when CUDA is up): issue #31, one ground.
    fw_sync = frameworks.load("jax" if jax_mode else "torch").sync.sync
    if not jax_mode:
        import torch

    def call_k(item, k) -> float:
        """Seconds of k calls, synchronized before and after (core.timing.block)."""
        _, fn, args, extra, _ = item
        if jax_mode:  # extra: the call's keyword arguments
            return timing.block(lambda: fn(*args, **extra), k, fw_sync, _orig_perf)
        _to_inputs_device(torch, fn, args)
        with torch.set_grad_enabled(extra):  # extra: grad mode of the script's last call
            return timing.block(lambda: fn(*args), k, fw_sync, _orig_perf)

    return call_k


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


def _same_k(items: list[tuple], ones: list[float]) -> dict[int, int]:
    """One k (calls per sample) for every function of a pair, so the slowest chunk is ≥ 10 ms: the
    same k on both sides amortizes the sync and the clock reads equally (a k per side biased the
    ratio of two identical sides)."""
    k_all = max(1, min(1000, int(0.01 / max(ones)) + 1))
    return {id(item): k_all for item in items}


def _side_clock(
    work: list[tuple], ks: dict[int, int], samples: dict[int, list[float]], call_k: Callable, calls_at: int
) -> Callable[[], float]:
    """One side's round: Σ calls in the block × (seconds of k calls / k) over its functions, each
    function's per-call time kept in ``samples`` (``calls_at``: where the item keeps its call count)."""

    def timed() -> float:
        total = 0.0
        for item in work:
            k = ks[id(item)]
            per = call_k(item, k) / k
            samples[id(item)].append(per)
            total += item[calls_at] * per
        return total

    return timed


@dataclass
class _TorchPairs:
    """The PyTorch / JAX re-run, pair by pair: identical pairs point at the first, and the time left
    (``deadline``, the state's ``rerun_left_s``) is shared between them."""

    st: State
    deadline: float
    jax_mode: bool
    call_k: Callable[[tuple, int], float]
    done: dict[tuple, int] = field(default_factory=dict)

    def pair(self, a, b) -> None:
        from whichdevice.audit import interleave

        st = self.st
        base = {"a": a.id, "b": b.id}
        wa, why_a = _torch_side(st, a)
        wb, why_b = _torch_side(st, b)
        key = (tuple((w[0], w[4]) for w in wa), tuple((w[0], w[4]) for w in wb))
        if not (why_a or why_b) and key in self.done:
            st.interleaved.append({**base, "same_as": self.done[key]})
            return
        n = len(self.done)
        left = self.deadline - _orig_mono()
        if why_a or why_b or n >= MAX_RERUNS or left < 10 * RERUN_MIN_TIME_S:
            reason = why_a or why_b or ("no time left before --timeout" if n < MAX_RERUNS else "too many pairs")
            st.interleaved.append({**base, "skipped": reason})
            return
        ones = []
        try:  # a side that cannot run is this pair's reason, said in one line; the other pairs go on
            for item in wa + wb:
                self.call_k(item, 1)
                ones.append(max(self.call_k(item, 1), 1e-6))
        except Exception as e:
            st.interleaved.append({**base, "skipped": f"re-running raised {type(e).__name__}: {str(e).strip()[:200]}"})
            return
        ks = _same_k(wa + wb, ones)  # one k for the pair (see _interleave)
        samples: dict[int, list[float]] = {id(i): [] for i in wa + wb}
        try:
            t_pair = _orig_perf()
            budget = max(0.0, min(RERUN_BUDGET_S, left / 4, st.rerun_left_s))
            rounds = interleave.run_rounds(
                _side_clock(wa, ks, samples, self.call_k, 4),
                _side_clock(wb, ks, samples, self.call_k, 4),
                budget_s=budget,
                clock=_orig_perf,
            )
            st.rerun_left_s -= _orig_perf() - t_pair
        except Exception as e:
            st.interleaved.append({**base, "skipped": f"re-running raised {type(e).__name__}: {str(e).strip()[:200]}"})
            return
        per_call = [self._per_call(item, wa, ks, samples) for item in wa + wb]
        self.done[key] = len(st.interleaved)
        st.interleaved.append({**base, "rounds": rounds, "functions": per_call})

    def _per_call(self, item: tuple, wa: list[tuple], ks: dict[int, int], samples: dict[int, list[float]]) -> dict:
        return {
            "side": "a" if any(item is w for w in wa) else "b",
            "function": (
                f"jax.jit({getattr(item[1], '__name__', 'fn')})"
                if self.jax_mode
                else getattr(item[1], "label", None) or type(item[1]).__name__ + ".forward"
            ),
            "requested": None,
            "ran_on": item[0].split("@", 1)[1],
            "calls_in_block": item[4],
            "number_per_sample": ks[id(item)],
            "samples_s": samples[id(item)],
        }


def _interleave(st: State, tf, wa: list[tuple], wb: list[tuple], budget_s: float):
    from whichdevice import frameworks
    from whichdevice.audit import interleave
    from whichdevice.core import timing

    fw_sync = frameworks.load("tensorflow").sync.sync  # the project's sync (issue #31: one ground)

    def call_k(item, k) -> float:
        """Seconds of k calls under the block's device request, synchronized (core.timing.block)."""
        _, fn, args, kwargs, device, _ = item
        with tf.device(device):
            return timing.block(lambda: fn(*args, **kwargs), k, fw_sync, _orig_perf)

    # Warm-up (trace / instantiate on each device), then one k for every function of the pair, so
    # the slowest chunk is ≥ 10 ms: the same k on both sides amortizes the sync and the clock
    # reads equally (a k per side biased the ratio of two identical sides).
    ran: dict[int, str] = {}
    ones = []
    for item in wa + wb:
        _, fn, args, kwargs, device, _ = item
        with tf.device(device):
            out = fn(*args, **kwargs)
        fw_sync(out)
        ones.append(max(call_k(item, 1), 1e-6))
        leaves = [x for x in tf.nest.flatten(out) if hasattr(x, "device")]
        ran[id(item)] = short_device(leaves[0].device) if leaves else ""
    ks = _same_k(wa + wb, ones)
    samples: dict[int, list[float]] = {id(i): [] for i in wa + wb}
    rounds = interleave.run_rounds(
        _side_clock(wa, ks, samples, call_k, 5),
        _side_clock(wb, ks, samples, call_k, 5),
        budget_s=budget_s,
        clock=_orig_perf,
    )
    per_call = [
        {
            "side": "a" if any(item is w for w in wa) else "b",
            "function": st.functions[item[0]]["name"],
            "requested": item[4],
            "ran_on": ran[id(item)],
            "calls_in_block": item[5],
            "number_per_sample": ks[id(item)],
            "samples_s": samples[id(item)],
        }
        for item in wa + wb
    ]
    return rounds, per_call


# ---------------------------------------------------------------- main


def _calibrate(st: State, deadline: float) -> None:
    """After the script: the per-op cost (plain and hooked) when the script dispatched many ops, the
    launch costs of the GPU present (none: the findings quote the H100's recorded ones), and the re-run
    of its first Session.runs (``audit/calibrate.py``). A failure here loses only that evidence."""
    from whichdevice.audit import calibrate

    try:
        if st.c["eager_ops"] >= calibrate.MIN_OPS_FOR_COST and st.framework in ("torch", "tensorflow"):
            st.op_cost = calibrate.per_op_cost(
                st.framework,
                torch_mode_factory=torch_hooks.make_mode if st.framework == "torch" else None,
                tf_callback=tf_hooks.hook_op_callback if st.framework == "tensorflow" else None,
            )
    except Exception as e:
        st.op_cost = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    try:
        if (st.physical or {}).get("GPU"):
            st.gpu_costs = calibrate.gpu_launch_cost(st.framework)
    except Exception as e:
        st.gpu_costs = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    try:
        if st.first_run_args:
            budget = min(max(1.0, RERUN_SHARE * (st.script_s or 0.0)), (deadline - _orig_mono()) / 4)
            calibrate.rerun_first_runs(st.first_runs, st.first_run_args, budget)
    except Exception as e:
        for r in st.first_runs:
            r.setdefault("not_rerun", f"{type(e).__name__}: {str(e)[:200]}")
    st.first_run_args = []


def _write_state(st: State, path: str) -> None:
    for _ in range(5):  # the main thread may be mutating lists while the watchdog dumps
        try:
            text = json.dumps(st.to_json())
            break
        except RuntimeError:
            time.sleep(0.01)
    else:
        text = json.dumps({"version": AUDIT_STATE_VERSION, "error": "state could not be serialized"})
    # O_EXCL|O_NOFOLLOW random temporary file beside it, renamed (core/safeio.py, issue 18)
    from whichdevice.core import safeio

    safeio.write_atomic(path, text, remember=False)


def _decide_framework(st: State) -> None:
    """Which framework's audit this is: the one whose hooks the script used (TensorFlow's import can
    pull in JAX; a script may import several): TensorFlow, else PyTorch, else JAX."""
    if not st.tf_installed and st.torch_installed:
        st.framework = "torch"
        st.physical = st.torch_physical
    elif not st.tf_installed and st.jax_installed:
        st.framework = "jax"
        jax_hooks.record_devices(st)


_AUDIT_DIR = str(Path(__file__).resolve().parent)


def _user_frames(te: traceback.TracebackException, seen: set[int], script: str) -> None:
    """Drop the audit's own frames (the runner before the script, the hooks around the calls it
    made) from a traceback and from the exceptions chained to it: the user sees Python's traceback."""
    if id(te) in seen:
        return
    seen.add(id(te))
    frames = list(te.stack)
    first = next((i for i, f in enumerate(frames) if f.filename == script), 0)
    te.stack = traceback.StackSummary.from_list(
        [f for f in frames[first:] if not str(f.filename).startswith(_AUDIT_DIR)]
    )
    for other in (te.__cause__, te.__context__):
        if other is not None:
            _user_frames(other, seen, script)


def _print_script_traceback(e: BaseException, script: str) -> None:
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    _user_frames(te, set(), script)
    # Messages that quote a Python stack (TensorFlow's "defined at (most recent call last)") list the
    # runner's frames too: those lines go, the script's and the libraries' stay.
    runner = re.compile(r'^\s*File "(?:<frozen runpy>|' + re.escape(_AUDIT_DIR) + r'[^"]*)", line \d+, in .*$')
    text = "".join(te.format())
    sys.stderr.write("".join(ln for ln in text.splitlines(keepends=True) if not runner.match(ln)))


def _script_line(e: BaseException, script: str) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        if frame.f_code.co_filename == script:
            line = lineno
    return line


# File descriptors kept back while the script runs (issue #43: a script that used up its file
# descriptors crashed the audit child itself, at the import after it, and no state was written):
# closed when the script ends or the watchdog fires, so the audit's own files can be opened.
FD_RESERVE = 32
_reserved: list[int] = []


def _reserve_fds() -> None:
    """Keep ``FD_RESERVE`` descriptors back, and import now what the audit needs after the script
    (an import opens the module's file)."""
    from whichdevice.audit import calibrate  # noqa: F401
    from whichdevice.core import safeio  # noqa: F401

    for _ in range(FD_RESERVE):
        try:
            _reserved.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            break


def _release_fds(st: State) -> None:
    """Give the reserve back; first note whether the script left no descriptor free."""
    try:
        os.close(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    except OSError as e:
        if e.errno == errno.EMFILE:
            st.fd_limit_reached = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    while _reserved:
        fd = _reserved.pop()
        try:
            os.close(fd)
        except OSError:
            pass


def _start_watchdog(st: State, done: threading.Event, deadline: float, state_path: str) -> None:
    """A thread that, at the deadline, records where the script was, writes the state and ends the
    process (124 while the script still ran; its own exit code when only the re-run ran out of time)."""
    main_thread = threading.main_thread()

    def watchdog():
        if done.wait(max(0.0, deadline - _orig_mono())):
            return
        finished = st.exit_code is not None  # the script ended; the re-measurement ran out of time
        st.timed_out = not finished
        if not finished:
            st.script_s = _orig_perf() - st.started
        frame = sys._current_frames().get(main_thread.ident)
        while frame is not None and frame.f_code.co_filename != st.script:
            frame = frame.f_back
        if frame is not None:
            st.hang_line = {"line": frame.f_lineno, "text": st.source(frame.f_lineno)}
        st.active = False
        try:
            _release_fds(st)
            if not finished:
                _decide_framework(st)
            _write_state(st, state_path)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(st.exit_code if finished else 124)

    threading.Thread(target=watchdog, daemon=True, name="whichdevice-watchdog").start()


def _install_hooks(st: State) -> None:
    """The clocks now; each framework's hooks the moment the script imports it."""
    clocks.install(st)
    sys.meta_path.insert(0, tf_hooks.TFHookFinder(st))
    sys.meta_path.insert(0, torch_hooks.TorchHookFinder(st))
    sys.meta_path.insert(0, jax_hooks.JaxHookFinder(st))
    sys.meta_path.insert(0, tf_hooks.KerasHookFinder(st))
    if "tensorflow" in sys.modules:  # only when something imported it already (never by us)
        tf_hooks.install(sys.modules["tensorflow"], st)


def _run_script(st: State, job: dict) -> int:
    """Run the script as ``__main__`` with its own ``sys.argv``; its exit code (its own failure is
    shown as Python would show it, and kept in the state)."""
    sys.argv = [job.get("shown_as") or st.script, *job.get("args", [])]
    sys.path.insert(0, job.get("path0") or str(Path(st.script).parent))
    code = 0
    st.started = _orig_perf()
    try:
        magics = {"__whichdevice_magics__": clocks.Magics(st)} if job.get("notebook") else None
        runpy.run_path(st.script, init_globals=magics, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    except BaseException as e:  # the script's own failure: shown as Python would, then audited
        _print_script_traceback(e, st.script)
        msg = str(e).strip()
        st.exception = {"type": type(e).__name__, "message": msg[:4000], "line": _script_line(e, st.script)}
        code = 1
    st.script_s = _orig_perf() - st.started
    st.exit_code = code
    return code


def _stop_watching(st: State) -> None:
    """After the script: instrumentation off, hooks and clocks removed, the framework decided."""
    st.active = False
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    tf_hooks.stop_placement_log(st)
    torch_hooks.uninstall(st)
    _decide_framework(st)
    clocks.uninstall()


def _rerun_all(st: State, deadline: float) -> None:
    """The steady re-measurement of the compared pairs; a failure is recorded, never fatal."""
    try:
        st.rerun_left_s = max(0.5, RERUN_SHARE * (st.script_s or 0.0))
        if st.framework in ("torch", "jax"):
            rerun_torch(st, deadline)
        else:
            rerun(st, deadline)
    except Exception as e:  # never lose the audit to a failed re-measurement
        st.rerun_skipped.append(
            {
                "block": None,
                "function": None,
                "requested": None,
                "reason": f"re-measurement failed: {type(e).__name__}: {e}",
            }
        )


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    script = str(Path(job["script"]).resolve())
    state_path = job["state"]
    deadline = _orig_mono() + float(job["timeout_s"])
    st = State(script)
    done = threading.Event()
    _start_watchdog(st, done, deadline, state_path)
    _install_hooks(st)
    _reserve_fds()
    code = _run_script(st, job)
    _release_fds(st)
    _stop_watching(st)
    _calibrate(st, deadline)
    if not job.get("no_rerun"):
        _rerun_all(st, deadline)
    done.set()
    _write_state(st, state_path)
    if st.log_reader is not None:
        st.log_reader.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
