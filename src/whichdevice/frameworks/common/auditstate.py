"""The audit child's state: every counter and list the hooks fill while the script runs.

One :class:`State` per audited script, created by ``audit/child.py`` and handed to each hook
module (``clocks``, ``tf_hooks``, ``torch_hooks``, ``jax_hooks``) when it installs; none of them
imports the child, and this module imports none of them (the hooks register what the state must
call at each clock read: ``before_read``, ``tracing_probes``). ``to_json`` is what the parent
analyses (``rules.analyze``).
"""

from __future__ import annotations

import linecache
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

AUDIT_STATE_VERSION = 1
# How a notebook's timing magic starts once translated (audit/notebook.MAGICS, a call of it).
MAGICS_CALL = "__whichdevice_magics__."
MAX_READS = 50_000  # beyond this, reads are counted but not snapshotted (memory)
MAX_INTERVALS = 50_000
RERUN_BUDGET_S = 3.0  # seconds of interleaved rounds per compared pair (at least interleave.MIN_ROUNDS)

_perf = time.perf_counter  # imported before the child patches the clocks


def new_counters() -> dict[str, float]:
    """The cumulative counters, all at zero: snapshotted at every stamped read and block edge."""
    return {
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
        "host_inputs": 0,  # tf.function calls given NumPy / Python values (converted per call)
        "user_syncs": 0,  # host reads made by the script's own code (.numpy(), float(t), .item())
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


@dataclass(eq=False, repr=False)
class State:
    """Everything observed, as JSON-ready counters and lists (the parent analyses it).

    One typed field per thing observed, grouped below by who fills it: the run itself, the
    counters, the clock reads and device blocks (``clocks``, ``tf_hooks``), TensorFlow's
    functions, ops and sessions (``tf_hooks``), PyTorch / JAX (``torch_hooks``, ``jax_hooks``),
    and what the child does after the script (re-runs, calibration)."""

    script: str
    lock: threading.RLock = field(default_factory=threading.RLock)
    # Registered by the hooks that need them (no import of theirs here): called at each clock read.
    before_read: list[Callable[[State], None]] = field(default_factory=list)
    # 'tf.function f' / 'jax.jit' while tracing:
    tracing_probes: list[Callable[[State], str]] = field(default_factory=list)
    active: bool = True
    seq: int = 0
    c: dict[str, float] = field(default_factory=new_counters)

    # Which framework, and what each framework's hooks saw of the machine.
    framework: str = "tensorflow"
    tf_installed: bool = False
    keras_installed: bool = False
    torch_installed: bool = False
    jax_installed: bool = False
    physical: dict[str, int] = field(default_factory=dict)
    torch_physical: dict[str, int] = field(default_factory=dict)
    soft_placement: bool | None = None
    placement_log: bool = False
    log_reader: Any = None  # tf_hooks.StderrFilter: reads the placement log (fd 2)
    cuda_probe: dict | None = None

    # PyTorch / JAX (torch_hooks.py, jax_hooks.py).
    torch_mode: Any = None
    torch_first: set[int] = field(default_factory=set)
    torch_last: dict[str, tuple] = field(default_factory=dict)  # "id(module)@device" -> (module, args, grad enabled)
    torch_calls: list[tuple[int, str]] = field(default_factory=list)  # (seq, key) of every top-level module call
    torch_ops: list[tuple] = field(default_factory=list)  # (seq, op index, arg specs, kwarg specs): _log_op
    torch_op_index: dict[Any, int] = field(default_factory=dict)  # op -> its index in torch_ops' entries
    torch_ops_full_at: int | None = None  # seq at which the op log reached its cap (later blocks: no replay)
    span_ops: int = 0  # ops logged since the last clock read
    torch_ops_dropped: list[int] = field(default_factory=list)  # seq of the first op not logged, per long span
    loaders: list[dict] = field(default_factory=list)
    moved_modules: set[int] = field(default_factory=set)  # nn.Modules the script sent with .to() / .cuda()

    # TensorFlow: layers, loops, functions, sessions, files (tf_hooks.py).
    rnn_layers: list[dict] = field(default_factory=list)  # keras LSTM / GRU the script built (install_keras)
    loops: list[dict] = field(default_factory=list)  # graph loops built (map_fn, while_loop, for over tf.range)
    tf_calls: list[tuple[int, str]] = field(default_factory=list)  # (seq, "fn:<id>" | "graph:<id>") of top-level
    first_run_args: list[tuple] = field(default_factory=list)  # (session, args, kwargs, index in first_runs)
    first_runs: list[dict] = field(default_factory=list)  # each (session, fetch)'s first Session.run: hook_sessions
    written_files: dict[str, dict] = field(default_factory=dict)  # TFRecord files the script wrote: path -> seq, line
    read_after_write: list[dict] = field(default_factory=list)  # ... and then read back
    functions: dict[int, dict] = field(default_factory=dict)  # id(fn) -> {"name", "calls", "traces"}
    block_calls: dict[int, dict[int, int]] = field(default_factory=dict)  # block id -> fn id -> calls
    last_args: dict[tuple[int, int], tuple] = field(default_factory=dict)  # (block, fn) -> (fn, args, kwargs)
    instantiated: set[tuple] = field(default_factory=set)
    seen_kernels: set[tuple[str, str]] = field(default_factory=set)
    var_kind: dict[int, str] = field(default_factory=dict)  # id(variable handle) -> device kind of its block
    var_handles: list = field(default_factory=list)
    var_seen: set[tuple[int, int]] = field(default_factory=set)

    # Where ops ran: eager ops and placed graph ops per device (snapshotted with the counters).
    ops_by_device: dict[str, int] = field(default_factory=dict)
    placed_by_device: dict[str, int] = field(default_factory=dict)
    placed_cpu_in_gpu_block: dict[str, int] = field(default_factory=dict)  # op type -> count (placer log)

    # Clock reads, the intervals the script computed, device blocks (clocks.py, tf_hooks.Block).
    reads: list[dict] = field(default_factory=list)
    n_reads: int = 0
    intervals: list[dict] = field(default_factory=list)
    blocks: list[dict] = field(default_factory=list)
    stack: list[int] = field(default_factory=list)  # open user blocks (ids)

    # How the script ended (child.main).
    exception: dict | None = None
    exit_code: int | None = None
    timed_out: bool = False
    hang_line: dict | None = None
    # A notebook's cells after the one that stopped on a missing device, each run here all the same:
    # {"cell", "line", "error"} (error None: it ran).
    cells_after_stop: list[dict] = field(default_factory=list)
    fd_limit_reached: int | None = None  # the script left no file descriptor free: the limit (RLIMIT_NOFILE)
    started: float = field(default_factory=_perf)
    script_s: float | None = None

    # After the script: calibration and re-runs (calibrate.py, child.rerun / rerun_torch).
    op_cost: dict = field(default_factory=dict)  # calibrate.per_op_cost after the script
    gpu_costs: dict | None = None  # calibrate.gpu_launch_cost: this GPU's launch costs (None: no GPU here)
    reruns: list[dict] = field(default_factory=list)
    interleaved: list[dict] = field(default_factory=list)  # one per compared pair: rounds of A and B, or why not
    singles: list[dict] = field(default_factory=list)  # one per unpaired timing measured wrong: its rounds, or why not
    rerun_left_s: float = RERUN_BUDGET_S  # set from the script's run time before the re-run
    rerun_skipped: list[dict] = field(default_factory=list)

    def snap(self) -> dict:
        with self.lock:
            self.seq += 1
            s: dict[str, Any] = dict(self.c)
            s["seq"] = self.seq
            s["t"] = _perf()
            s["ops_by_device"] = dict(self.ops_by_device)
            s["placed_by_device"] = dict(self.placed_by_device)
            return s

    def stamp(self, fn: str, line: int) -> int | None:
        """Record one clock read by the script (clocks.py) with a snapshot of the counters; its id,
        or None past MAX_READS (counted, not followed)."""
        for before in self.before_read:  # tf_hooks: the placement-log reader catches up (outside the lock)
            before(self)
        tracing = next((t for t in (probe(self) for probe in self.tracing_probes) if t), "")
        with self.lock:
            self.n_reads += 1
            self.span_ops = 0  # torch_hooks._log_op: a new span between two clock reads
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
                {
                    "start": start,
                    "end": end,
                    "seconds": seconds,
                    "line": line,
                    "text": self.source(line) if line else "",
                }
            )

    def current_block(self) -> dict | None:
        return self.blocks[self.stack[-1]] if self.stack else None

    def requested_kind(self) -> str:
        b = self.current_block()
        return b["kind"] if b else ""

    def source(self, line: int) -> str:
        """The script's source line ``line``, stripped and cut to 200 characters; a notebook's timing
        magic as the notebook wrote it (its translation keeps it in a comment: audit/notebook.py)."""
        text = linecache.getline(self.script, line).strip()
        if text.startswith(MAGICS_CALL) and "  # %" in text:
            text = text[text.index("  # %") + len("  # ") :]
        return text[:200]

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
                "gpu_costs": self.gpu_costs,
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
                "cells_after_stop": list(self.cells_after_stop),
                "fd_limit_reached": self.fd_limit_reached,
                "reruns": list(self.reruns),
                "interleaved": list(self.interleaved),
                "singles": list(self.singles),
                "rerun_skipped": list(self.rerun_skipped),
                "script_s": self.script_s,
            }
