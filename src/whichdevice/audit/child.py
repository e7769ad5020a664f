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

import json
import linecache
import re
import os
import runpy
import sys
import threading
import time
import traceback
from pathlib import Path

from whichdevice.audit import clocks, jax_hooks, tf_hooks, torch_hooks
from whichdevice.audit.tf_hooks import short_device

AUDIT_STATE_VERSION = 1

_orig_time = time.time
_orig_perf = time.perf_counter
_orig_mono = time.monotonic

MAX_READS = 50_000  # beyond this, reads are counted but not snapshotted (memory)
MAX_INTERVALS = 50_000
MAX_RERUNS = 8  # distinct (function, device) pairs re-measured after the script
RERUN_MIN_TIME_S = 0.2  # steady seconds per re-measured pair (timing.TimingPolicy.min_time_s)
RERUN_BUDGET_S = 3.0  # seconds of interleaved rounds per compared pair (at least interleave.MIN_ROUNDS)
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


class State:
    """Everything observed, as JSON-ready counters and lists (the parent analyses it)."""

    def __init__(self, script: str):
        self.script = script
        self.lock = threading.RLock()
        self.active = True
        self.seq = 0
        self.c = {  # cumulative counters, snapshotted at every stamped read and block edge
            "eager_ops": 0,
            "elems": 0,  # output elements of those eager ops (op size = elems / eager_ops)
            "graph_ops": 0,
            "traces": 0,
            "fn_calls": 0,
            "instantiations": 0,
            "xla_compiles": 0,
            "new_kernels": 0,
            "syncs": 0,
            "h2d": 0,
            "d2h": 0,
            "sessions": 0,
            "session_runs": 0,
            "first_session_runs": 0,
            "last_gpu_work": 0,
            "last_sync": 0,
            "ops_at_last_sync": 0,  # eager ops counted when the host last waited
            "cpu_ops_in_gpu_block": 0,
            "host_inputs": 0,
            "user_syncs": 0,  # host reads made by the script's own code (.numpy(), float(t), .item())  # tf.function calls given NumPy / Python values (converted per call)
            "vars_other_device": 0,  # variables made in a block of one device kind, used in another
            "iterators": 0,
            # Seconds of set-up, by kind (float counters): calls that traced or set up a graph,
            # Session creation, variable initialization, iterator start-up and first batch.
            "setup_trace_s": 0.0,
            "setup_session_s": 0.0,
            "setup_init_s": 0.0,
            "setup_iter_s": 0.0,
            # PyTorch (torch_hooks.py)
            "last_work": 0,
            "pageable_h2d": 0,
            "pageable_moves": 0,
            "setup_first_step_s": 0.0,
            "setup_compile_s": 0.0,
            "setup_loader_s": 0.0,
            "loader_wait_s": 0.0,  # seconds the script's loop waited for DataLoader batches
        }
        self.framework = "tensorflow"
        self.torch_installed = False
        self.torch_physical: dict[str, int] = {}
        self.jax_installed = False
        self.torch_mode = None
        self.torch_first: set[int] = set()
        self.torch_last: dict[str, tuple] = {}  # "id(module)@device" -> (module, args, grad enabled)
        self.torch_calls: list[tuple[int, str]] = []  # (seq, key) of every top-level module call
        self.loaders: list[dict] = []
        self.moved_modules: set[int] = set()  # nn.Modules the script sent with .to() / .cuda()
        self.keras_installed = False
        self.rnn_layers: list[dict] = []  # keras LSTM / GRU the script built (tf_hooks.install_keras)
        self.loops: list[dict] = []  # graph loops built (map_fn, while_loop, for over tf.range): tf_hooks.hook_loops
        self.tf_calls: list[tuple[int, str]] = []  # (seq, "fn:<id>" | "graph:<id>") of top-level calls / runs
        self.first_run_args: list[tuple] = []  # (session, args, kwargs, index in first_runs): the script's own
        self.first_runs: list[dict] = []  # each (session, fetch)'s first Session.run: tf_hooks.hook_sessions
        self.op_cost: dict = {}  # calibrate.per_op_cost after the script
        self.written_files: dict[str, dict] = {}  # TFRecord files the script wrote: path -> seq, line
        self.read_after_write: list[dict] = []  # ... and then read back
        self.cuda_probe: dict | None = None
        self.ops_by_device: dict[str, int] = {}
        self.placed_by_device: dict[str, int] = {}
        self.placed_cpu_in_gpu_block: dict[str, int] = {}  # op type -> count (placer log)
        self.reads: list[dict] = []
        self.n_reads = 0
        self.intervals: list[dict] = []
        self.blocks: list[dict] = []
        self.stack: list[int] = []  # open user blocks (ids)
        self.functions: dict[int, dict] = {}  # id(fn) -> {"name", "calls", "traces"}
        self.block_calls: dict[int, dict[int, int]] = {}  # block id -> fn id -> calls
        self.last_args: dict[tuple[int, int], tuple] = {}  # (block, fn) -> (fn, args, kwargs)
        self.seen_kernels: set[tuple[str, str]] = set()
        self.var_kind: dict[int, str] = {}  # id(variable handle) -> device kind of the block it was made in
        self.var_handles: list = []
        self.var_seen: set[tuple[int, int]] = set()
        self.instantiated: set[tuple] = set()
        self.tf_installed = False
        self.physical: dict[str, int] = {}
        self.soft_placement: bool | None = None
        self.placement_log = False
        self.log_reader: tf_hooks.StderrFilter | None = None  # reads the placement log (fd 2)
        self.exception: dict | None = None
        self.exit_code: int | None = None
        self.timed_out = False
        self.hang_line: dict | None = None
        self.reruns: list[dict] = []
        self.interleaved: list[dict] = []  # one entry per compared pair: rounds of A and B, or why not
        self.rerun_left_s = RERUN_BUDGET_S  # set from the script's run time before the re-run
        self.rerun_skipped: list[dict] = []
        self.started = _orig_perf()
        self.script_s: float | None = None

    def snap(self) -> dict:
        with self.lock:
            self.seq += 1
            s = dict(self.c)
            s["seq"] = self.seq
            s["t"] = _orig_perf()
            s["ops_by_device"] = dict(self.ops_by_device)
            s["placed_by_device"] = dict(self.placed_by_device)
            return s

    def stamp(self, fn: str, line: int) -> int | None:
        """Record one clock read by the script (clocks.py) with a snapshot of the counters; its id,
        or None past MAX_READS (counted, not followed)."""
        tf_hooks.sync_log_reader(self)  # outside the lock: the reader thread takes it for each line
        tracing = clocks.tracing_now(self)
        with self.lock:
            self.n_reads += 1
            if len(self.reads) >= MAX_READS:
                return None
            rid = len(self.reads)
            self.reads.append(
                {
                    "id": rid,
                    "fn": fn,
                    "line": line,
                    "text": self.source(line),
                    "block": self.stack[-1] if self.stack else None,
                    "tracing": tracing,
                    "snap": self.snap(),
                }
            )
            return rid

    def add_interval(self, start: int, end: int, seconds: float, line: int | None) -> None:
        """``end - start`` computed by the script from two recorded reads."""
        if len(self.intervals) >= MAX_INTERVALS:
            return
        with self.lock:
            self.intervals.append(
                {"start": start, "end": end, "seconds": seconds, "line": line, "text": self.source(line) if line else ""}
            )

    def current_block(self) -> dict | None:
        return self.blocks[self.stack[-1]] if self.stack else None

    def requested_kind(self) -> str:
        b = self.current_block()
        return b["kind"] if b else ""

    def source(self, line: int) -> str:
        """The script's source line ``line``, stripped and cut to 200 characters."""
        return linecache.getline(self.script, line).strip()[:200]

    def to_json(self) -> dict:
        with self.lock:
            return {
                "version": AUDIT_STATE_VERSION,
                "script": self.script,
                "tf_installed": self.tf_installed,
                "framework": self.framework,
                "torch_installed": self.torch_installed,
                "jax_installed": self.jax_installed,
                "loaders": list(self.loaders),
                "loops": list(self.loops),
                "rnn_layers": list(self.rnn_layers),
                "moved_modules": sorted(self.moved_modules),
                "first_runs": list(self.first_runs),
                "tf_calls": list(self.tf_calls),
                "op_cost": dict(self.op_cost),
                "read_after_write": list(self.read_after_write),
                "cuda_probe": self.cuda_probe,
                "torch_calls": list(self.torch_calls),
                "physical_devices": self.physical,
                "soft_placement": self.soft_placement,
                "placement_log": self.placement_log,
                "reads": list(self.reads),
                "n_reads": self.n_reads,
                "intervals": list(self.intervals),
                "blocks": [dict(b) for b in self.blocks],
                "functions": {str(k): dict(v) for k, v in self.functions.items()},
                "block_calls": {str(b): {str(f): n for f, n in calls.items()} for b, calls in self.block_calls.items()},
                "placed_cpu_in_gpu_block": dict(self.placed_cpu_in_gpu_block),
                "totals": self.snap(),
                "exception": self.exception,
                "exit_code": self.exit_code,
                "timed_out": self.timed_out,
                "hang_line": self.hang_line,
                "reruns": list(self.reruns),
                "interleaved": list(self.interleaved),
                "rerun_skipped": list(self.rerun_skipped),
                "script_s": self.script_s,
            }


STATE: State | None = None


def _source(line: int) -> str:
    return STATE.source(line)


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


def rerun(deadline: float) -> None:
    """Interleaved steady re-measurement of every compared pair (A = CPU-asked, B = GPU-asked).

    Each side is the tf.functions its blocks called, with the arguments of their last call,
    under the block's device request; one side's block time is Σ calls × (time of k calls, device
    synchronized) / k. Rounds alternate A and B in a random order (``audit/interleave.py``)."""
    st = STATE
    if not st.tf_installed:
        return
    import tensorflow as tf

    from whichdevice.audit import interleave, rules

    state = st.to_json()
    pairs = rules.comparisons(rules.timed(rules.build_measurements(state)))
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
            rounds, per_call = _interleave(tf, interleave, wa, wb, budget_s=budget)
            st.rerun_left_s -= _orig_perf() - t_pair
        except Exception as e:
            st.interleaved.append({**base, "skipped": f"re-running raised {type(e).__name__}: {str(e).strip()[:200]}"})
            continue
        done[key] = len(st.interleaved)
        st.interleaved.append({**base, "rounds": rounds, "functions": per_call})


def _torch_side(st: State, m) -> tuple[list[tuple], str | None]:
    """(key, callable, args, grad mode or kwargs, calls) for the top-level module calls (PyTorch) or
    jitted calls (JAX) inside measurement ``m``."""
    counts: dict[str, int] = {}
    for seq, key in st.torch_calls:
        if m.start_seq < seq < m.end_seq:
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return (
            [],
            "the timed work calls no nn.Module (only module calls are re-run: a forward pass with its last inputs)",
        )
    return [(key, *st.torch_last[key], n) for key, n in counts.items()], None


def rerun_torch(deadline: float) -> None:
    """Interleaved re-run of each compared pair's forward passes (PyTorch): each side's top-level
    module calls with their last inputs and grad mode, device synchronized; the backward pass and
    the optimizer are the script's and are not replayed (said in the correction's note)."""
    st = STATE
    from whichdevice.audit import interleave, rules

    state = st.to_json()
    pairs = rules.comparisons(rules.timed(rules.build_measurements(state)))
    gpu = bool(st.physical.get("GPU"))
    jax_mode = st.framework == "jax"
    if jax_mode:
        import jax

        torch = None
    else:
        import torch

    def sync(out=None):
        if jax_mode:
            jax.block_until_ready(out)
        elif gpu:
            torch.cuda.synchronize()

    done: dict[tuple, int] = {}
    for n, (a, b) in enumerate(pairs):
        base = {"a": a.id, "b": b.id}
        wa, why_a = _torch_side(st, a)
        wb, why_b = _torch_side(st, b)
        key = (tuple((w[0], w[4]) for w in wa), tuple((w[0], w[4]) for w in wb))
        if not (why_a or why_b) and key in done:
            st.interleaved.append({**base, "same_as": done[key]})
            continue
        n = len(done)
        left = deadline - _orig_mono()
        if why_a or why_b or n >= MAX_RERUNS or left < 10 * RERUN_MIN_TIME_S:
            reason = why_a or why_b or ("no time left before --timeout" if n < MAX_RERUNS else "too many pairs")
            st.interleaved.append({**base, "skipped": reason})
            continue

        def call_k(item, k):
            _, fn, args, extra, _ = item
            out = None
            if jax_mode:  # extra: the call's keyword arguments
                for _ in range(k):
                    out = fn(*args, **extra)
            else:  # extra: grad mode of the script's last call
                with torch.set_grad_enabled(extra):
                    for _ in range(k):
                        out = fn(*args)
            sync(out)

        ones = []
        for item in wa + wb:
            call_k(item, 1)
            t0 = _orig_perf()
            call_k(item, 1)
            ones.append(max(_orig_perf() - t0, 1e-6))
        k_all = max(1, min(1000, int(0.01 / max(ones)) + 1))  # one k for the pair (see _interleave)
        ks = {id(item): k_all for item in wa + wb}
        samples: dict[int, list[float]] = {id(i): [] for i in wa + wb}

        def side(work):
            def timed() -> float:
                total = 0.0
                for item in work:
                    k = ks[id(item)]
                    t0 = _orig_perf()
                    call_k(item, k)
                    per = (_orig_perf() - t0) / k
                    samples[id(item)].append(per)
                    total += item[4] * per
                return total

            return timed

        try:
            t_pair = _orig_perf()
            budget = max(0.0, min(RERUN_BUDGET_S, left / 4, st.rerun_left_s))
            rounds = interleave.run_rounds(side(wa), side(wb), budget_s=budget, clock=_orig_perf)
            st.rerun_left_s -= _orig_perf() - t_pair
        except Exception as e:
            st.interleaved.append({**base, "skipped": f"re-running raised {type(e).__name__}: {str(e).strip()[:200]}"})
            continue
        per_call = [
            {
                "side": "a" if any(item is w for w in wa) else "b",
                "function": (
                    f"jax.jit({getattr(item[1], '__name__', 'fn')})"
                    if jax_mode
                    else type(item[1]).__name__ + ".forward"
                ),
                "requested": None,
                "ran_on": item[0].split("@", 1)[1],
                "calls_in_block": item[4],
                "number_per_sample": ks[id(item)],
                "samples_s": samples[id(item)],
            }
            for item in wa + wb
        ]
        done[key] = len(st.interleaved)
        st.interleaved.append({**base, "rounds": rounds, "functions": per_call})


def _interleave(tf, interleave, wa: list[tuple], wb: list[tuple], budget_s: float):
    def sync():
        tf.test.experimental.sync_devices()

    def call_k(item, k):
        _, fn, args, kwargs, device, _ = item
        out = None
        with tf.device(device):
            for _ in range(k):
                out = fn(*args, **kwargs)
        sync()
        return out

    # Warm-up (trace / instantiate on each device), then one k for every function of the pair, so
    # the slowest chunk is ≥ 10 ms: the same k on both sides amortizes the sync and the clock
    # reads equally (a k per side biased the ratio of two identical sides).
    ran: dict[int, str] = {}
    ones = []
    for item in wa + wb:
        out = call_k(item, 1)
        t0 = _orig_perf()
        call_k(item, 1)
        ones.append(max(_orig_perf() - t0, 1e-6))
        leaves = [x for x in tf.nest.flatten(out) if hasattr(x, "device")]
        ran[id(item)] = short_device(leaves[0].device) if leaves else ""
    k_all = max(1, min(1000, int(0.01 / max(ones)) + 1))
    ks = {id(item): k_all for item in wa + wb}
    samples: dict[int, list[float]] = {id(i): [] for i in wa + wb}

    def side(work):
        def timed() -> float:
            total = 0.0
            for item in work:
                k = ks[id(item)]
                t0 = _orig_perf()
                call_k(item, k)
                per = (_orig_perf() - t0) / k
                samples[id(item)].append(per)
                total += item[5] * per
            return total

        return timed

    rounds = interleave.run_rounds(side(wa), side(wb), budget_s=budget_s, clock=_orig_perf)
    per_call = [
        {
            "side": "a" if any(item is w for w in wa) else "b",
            "function": STATE.functions[item[0]]["name"],
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


def _calibrate(deadline: float) -> None:
    """After the script: the per-op cost (plain and hooked) when the script dispatched many ops, and
    the re-run of its first Session.runs (``audit/calibrate.py``). A failure here loses only that evidence."""
    from whichdevice.audit import calibrate

    try:
        if STATE.c["eager_ops"] >= calibrate.MIN_OPS_FOR_COST and STATE.framework in ("torch", "tensorflow"):
            STATE.op_cost = calibrate.per_op_cost(
                STATE.framework,
                torch_mode_factory=torch_hooks.make_mode if STATE.framework == "torch" else None,
                tf_callback=tf_hooks.hook_op_callback if STATE.framework == "tensorflow" else None,
            )
    except Exception as e:
        STATE.op_cost = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    try:
        if STATE.first_run_args:
            budget = min(max(1.0, RERUN_SHARE * (STATE.script_s or 0.0)), (deadline - _orig_mono()) / 4)
            calibrate.rerun_first_runs(STATE.first_runs, STATE.first_run_args, budget)
    except Exception as e:
        for r in STATE.first_runs:
            r.setdefault("not_rerun", f"{type(e).__name__}: {str(e)[:200]}")
    STATE.first_run_args = []


def _write_state(path: str) -> None:
    for _ in range(5):  # the main thread may be mutating lists while the watchdog dumps
        try:
            text = json.dumps(STATE.to_json())
            break
        except RuntimeError:
            time.sleep(0.01)
    else:
        text = json.dumps({"version": AUDIT_STATE_VERSION, "error": "state could not be serialized"})
    # O_EXCL|O_NOFOLLOW random temporary file beside it, renamed (core/safeio.py, issue 18)
    from whichdevice.core import safeio

    safeio.write_atomic(path, text, remember=False)


def _decide_framework() -> None:
    """Which framework's audit this is: the one whose hooks the script used (TensorFlow's import can
    pull in JAX; a script may import several): TensorFlow, else PyTorch, else JAX."""
    if not STATE.tf_installed and STATE.torch_installed:
        STATE.framework = "torch"
        STATE.physical = STATE.torch_physical
    elif not STATE.tf_installed and STATE.jax_installed:
        STATE.framework = "jax"
        jax_hooks.record_devices(STATE)


_AUDIT_DIR = str(Path(__file__).resolve().parent)


def _user_frames(te: traceback.TracebackException, seen: set[int]) -> None:
    """Drop the audit's own frames (the runner before the script, the hooks around the calls it
    made) from a traceback and from the exceptions chained to it: the user sees Python's traceback."""
    if id(te) in seen:
        return
    seen.add(id(te))
    frames = list(te.stack)
    first = next((i for i, f in enumerate(frames) if f.filename == STATE.script), 0)
    te.stack = traceback.StackSummary.from_list(
        [f for f in frames[first:] if not str(f.filename).startswith(_AUDIT_DIR)]
    )
    for other in (te.__cause__, te.__context__):
        if other is not None:
            _user_frames(other, seen)


def _print_script_traceback(e: BaseException) -> None:
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    _user_frames(te, set())
    # Messages that quote a Python stack (TensorFlow's "defined at (most recent call last)") list the
    # runner's frames too: those lines go, the script's and the libraries' stay.
    runner = re.compile(r'^\s*File "(?:<frozen runpy>|' + re.escape(_AUDIT_DIR) + r'[^"]*)", line \d+, in .*$')
    text = "".join(te.format())
    sys.stderr.write("".join(ln for ln in text.splitlines(keepends=True) if not runner.match(ln)))


def _script_line(e: BaseException) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        if frame.f_code.co_filename == STATE.script:
            line = lineno
    return line


def main(argv: list[str]) -> int:
    global STATE
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    script = str(Path(job["script"]).resolve())
    state_path = job["state"]
    deadline = _orig_mono() + float(job["timeout_s"])
    STATE = State(script)
    done = threading.Event()
    main_thread = threading.main_thread()

    def watchdog():
        if done.wait(max(0.0, deadline - _orig_mono())):
            return
        finished = STATE.exit_code is not None  # the script ended; the re-measurement ran out of time
        STATE.timed_out = not finished
        if not finished:
            STATE.script_s = _orig_perf() - STATE.started
        frame = sys._current_frames().get(main_thread.ident)
        while frame is not None and frame.f_code.co_filename != script:
            frame = frame.f_back
        if frame is not None:
            STATE.hang_line = {"line": frame.f_lineno, "text": _source(frame.f_lineno)}
        STATE.active = False
        try:
            if not finished:
                _decide_framework()
            _write_state(state_path)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(STATE.exit_code if finished else 124)

    threading.Thread(target=watchdog, daemon=True, name="whichdevice-watchdog").start()

    clocks.install(STATE)
    sys.meta_path.insert(0, tf_hooks.TFHookFinder(STATE))
    sys.meta_path.insert(0, torch_hooks.TorchHookFinder(STATE))
    sys.meta_path.insert(0, jax_hooks.JaxHookFinder(STATE))
    sys.meta_path.insert(0, tf_hooks.KerasHookFinder(STATE))
    if "tensorflow" in sys.modules:  # only when something imported it already (never by us)
        tf_hooks.install(sys.modules["tensorflow"], STATE)

    sys.argv = [job.get("shown_as") or script, *job.get("args", [])]
    sys.path.insert(0, job.get("path0") or str(Path(script).parent))
    code = 0
    STATE.started = _orig_perf()
    try:
        magics = {"__whichdevice_magics__": clocks.Magics(STATE)} if job.get("notebook") else None
        runpy.run_path(script, init_globals=magics, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    except BaseException as e:  # the script's own failure: shown as Python would, then audited
        _print_script_traceback(e)
        msg = str(e).strip()
        STATE.exception = {"type": type(e).__name__, "message": msg[:4000], "line": _script_line(e)}
        code = 1
    STATE.script_s = _orig_perf() - STATE.started
    STATE.exit_code = code
    STATE.active = False
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    tf_hooks.stop_placement_log(STATE)
    torch_hooks.uninstall(STATE)
    _decide_framework()
    clocks.uninstall()
    _calibrate(deadline)
    try:
        if not job.get("no_rerun"):
            STATE.rerun_left_s = max(0.5, RERUN_SHARE * (STATE.script_s or 0.0))
            if STATE.framework in ("torch", "jax"):
                rerun_torch(deadline)
            else:
                rerun(deadline)
    except Exception as e:  # never lose the audit to a failed re-measurement
        STATE.rerun_skipped.append(
            {
                "block": None,
                "function": None,
                "requested": None,
                "reason": f"re-measurement failed: {type(e).__name__}: {e}",
            }
        )
    done.set()
    _write_state(state_path)
    if STATE.log_reader is not None:
        STATE.log_reader.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
