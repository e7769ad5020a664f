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
from typing import Any

AUDIT_STATE_VERSION = 1
MAX_READS = 50_000  # beyond this, reads are counted but not snapshotted (memory)
MAX_INTERVALS = 50_000
RERUN_BUDGET_S = 3.0  # seconds of interleaved rounds per compared pair (at least interleave.MIN_ROUNDS)

_perf = time.perf_counter  # imported before the child patches the clocks


class State:
    """Everything observed, as JSON-ready counters and lists (the parent analyses it)."""

    def __init__(self, script: str):
        self.script = script
        self.lock = threading.RLock()
        # Registered by the hooks that need them (no import of theirs here): called at each clock read.
        self.before_read: list[Callable[[State], None]] = []
        self.tracing_probes: list[Callable[[State], str]] = []  # 'tf.function f' / 'jax.jit' while tracing
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
        self.log_reader: Any = None  # tf_hooks.StderrFilter: reads the placement log (fd 2)
        self.exception: dict | None = None
        self.exit_code: int | None = None
        self.timed_out = False
        self.hang_line: dict | None = None
        self.reruns: list[dict] = []
        self.interleaved: list[dict] = []  # one entry per compared pair: rounds of A and B, or why not
        self.rerun_left_s = RERUN_BUDGET_S  # set from the script's run time before the re-run
        self.rerun_skipped: list[dict] = []
        self.started = _perf()
        self.script_s: float | None = None

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
