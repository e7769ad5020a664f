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
- **TensorFlow**, hooked the moment the script imports it (a ``sys.meta_path`` finder, so a
  script that sets ``CUDA_VISIBLE_DEVICES`` before importing still works and a script that
  never imports TensorFlow never pays for it):
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

import importlib.abc
import importlib.util
import json
import linecache
import os
import re
import runpy
import sys
import threading
import time
import traceback
from pathlib import Path

AUDIT_STATE_VERSION = 1

_orig_time = time.time
_orig_perf = time.perf_counter
_orig_mono = time.monotonic

MAX_READS = 50_000  # beyond this, reads are counted but not snapshotted (memory)
MAX_INTERVALS = 50_000
MAX_RERUNS = 8  # distinct (function, device) pairs re-measured after the script
RERUN_MIN_TIME_S = 0.2  # steady seconds per re-measured pair (timing.TimingPolicy.min_time_s)

# Ops whose effect reaches outside TensorFlow: a graph holding one is not re-run.
UNSAFE_OPS = frozenset({
    "WriteFile", "PrintV2", "Print", "Save", "SaveV2", "SaveSlices", "MergeV2Checkpoints", "PyFunc",
    "EagerPyFunc", "PyFuncStateless", "WriteScalarSummary", "WriteSummary", "WriteImageSummary",
    "WriteHistogramSummary", "WriteAudioSummary", "WriteGraphSummary", "WriteRawProtoSummary",
    "DebugIdentityV2", "DebugIdentityV3", "ImportEvent", "FlushSummaryWriter", "DeleteFile",
    "DatasetToTFRecord", "SaveDataset", "SaveDatasetV2",
})

_PLACER_RE = re.compile(r"^(?:\S+ +\S+ +\d+ placer\.cc:\d+\] )?(?P<name>[^\s:][^:]*): \((?P<type>\w+)\): "
                        r"(?P<dev>/job:\S+)\s*$")
_EXEC_RE = re.compile(r"Executing op (?P<type>\S+) in device (?P<dev>/job:\S+)")
_MARK = b"\x1ewhichdevice-mark "


def short_device(name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:GPU:0' -> 'GPU:0'; '' -> ''."""
    if not name:
        return ""
    tail = name.split("device:")[-1] if "device:" in name else name.rsplit("/", 1)[-1]
    return tail.upper()


class State:
    """Everything observed, as JSON-ready counters and lists (the parent analyses it)."""

    def __init__(self, script: str):
        self.script = script
        self.lock = threading.RLock()
        self.active = True
        self.seq = 0
        self.c = {  # cumulative counters, snapshotted at every stamped read and block edge
            "eager_ops": 0, "graph_ops": 0, "traces": 0, "fn_calls": 0, "instantiations": 0,
            "xla_compiles": 0, "new_kernels": 0, "syncs": 0, "h2d": 0, "d2h": 0, "sessions": 0,
            "session_runs": 0, "first_session_runs": 0, "last_gpu_work": 0, "last_sync": 0,
            "cpu_ops_in_gpu_block": 0,
        }
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
        self.instantiated: set[tuple] = set()
        self.tf_installed = False
        self.physical: dict[str, int] = {}
        self.soft_placement: bool | None = None
        self.placement_log = False
        self.exception: dict | None = None
        self.exit_code: int | None = None
        self.timed_out = False
        self.hang_line: dict | None = None
        self.reruns: list[dict] = []
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

    def current_block(self) -> dict | None:
        return self.blocks[self.stack[-1]] if self.stack else None

    def requested_kind(self) -> str:
        b = self.current_block()
        return b["kind"] if b else ""

    def to_json(self) -> dict:
        with self.lock:
            return {
                "version": AUDIT_STATE_VERSION, "script": self.script, "tf_installed": self.tf_installed,
                "physical_devices": self.physical, "soft_placement": self.soft_placement,
                "placement_log": self.placement_log, "reads": list(self.reads), "n_reads": self.n_reads,
                "intervals": list(self.intervals), "blocks": [dict(b) for b in self.blocks],
                "functions": {str(k): dict(v) for k, v in self.functions.items()},
                "block_calls": {str(b): {str(f): n for f, n in calls.items()} for b, calls in self.block_calls.items()},
                "placed_cpu_in_gpu_block": dict(self.placed_cpu_in_gpu_block),
                "totals": self.snap(), "exception": self.exception, "exit_code": self.exit_code,
                "timed_out": self.timed_out, "hang_line": self.hang_line, "reruns": list(self.reruns),
                "rerun_skipped": list(self.rerun_skipped), "script_s": self.script_s,
            }


STATE: State | None = None


def _user_frame(depth: int = 2):
    """The caller's frame if it belongs to the script's file, else None."""
    f = sys._getframe(depth)
    return f if f.f_code.co_filename == STATE.script else None


def _source(line: int) -> str:
    return linecache.getline(STATE.script, line).strip()[:200]


# ---------------------------------------------------------------- clock reads

class Stamp(float):
    """A clock value from the script; ``end - start`` between two stamps records the interval."""

    __slots__ = ("read_id",)

    def __new__(cls, value: float, read_id: int):
        obj = super().__new__(cls, value)
        obj.read_id = read_id
        return obj

    def __sub__(self, other):
        result = float(self) - float(other)
        st = STATE
        if isinstance(other, Stamp) and st is not None and st.active and len(st.intervals) < MAX_INTERVALS:
            f = sys._getframe(1)
            line = f.f_lineno if f.f_code.co_filename == st.script else None
            with st.lock:
                st.intervals.append({"start": other.read_id, "end": self.read_id, "seconds": result,
                                     "line": line, "text": _source(line) if line else ""})
        return result

    def __reduce__(self):  # pickles and copies as a plain float
        return (float, (float(self),))


def _clock(orig, name):
    def read():
        value = orig()
        st = STATE
        if st is None or not st.active or sys._getframe(1).f_code.co_filename != st.script:
            return value
        f = sys._getframe(1)
        _sync_log_reader()  # outside the lock: the reader thread takes it for each line
        with st.lock:
            st.n_reads += 1
            if len(st.reads) >= MAX_READS:
                return value
            rid = len(st.reads)
            st.reads.append({"id": rid, "fn": name, "line": f.f_lineno, "text": _source(f.f_lineno),
                             "block": st.stack[-1] if st.stack else None, "snap": st.snap()})
        return Stamp(value, rid)

    read.__wrapped__ = orig
    read.__name__ = orig.__name__
    return read


# ---------------------------------------------------------------- fd 2 filter (placement log)

class _StderrFilter:
    """Reads fd 2 through a pipe; keeps TensorFlow's placement lines, forwards the rest."""

    def __init__(self):
        self.real = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
        self.r = r
        self.marks_seen = 0
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._loop, daemon=True, name="whichdevice-stderr")
        self.thread.start()

    def _loop(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self.r, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            out = []
            for raw in lines:
                if raw.startswith(_MARK):
                    with self.cond:
                        self.marks_seen = int(raw[len(_MARK):] or 0)
                        self.cond.notify_all()
                    continue
                text = raw.decode("utf-8", "replace")
                m = _PLACER_RE.match(text) or _EXEC_RE.search(text)
                if m and ("placer.cc" in text or "Executing op" in text or text[:1] not in " \t"):
                    self._placed(m.group("type"), short_device(m.group("dev")))
                    continue
                out.append(raw + b"\n")
            if out:
                os.write(self.real, b"".join(out))
        if buf:
            os.write(self.real, buf)

    def _placed(self, op_type: str, dev: str):
        st = STATE
        if st is None or not st.active:
            return
        with st.lock:
            st.placed_by_device[dev] = st.placed_by_device.get(dev, 0) + 1
            if dev.startswith("CPU") and st.requested_kind() == "GPU" and op_type not in _HOST_OPS:
                st.c["cpu_ops_in_gpu_block"] += 1
                st.placed_cpu_in_gpu_block[op_type] = st.placed_cpu_in_gpu_block.get(op_type, 0) + 1

    def sync(self, n: int):
        os.write(2, _MARK + str(n).encode() + b"\n")
        with self.cond:
            self.cond.wait_for(lambda: self.marks_seen >= n, timeout=1.0)

    def close(self):
        try:
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(self.real, 2)  # our pipe's last writer goes away: the thread sees EOF
        self.thread.join(timeout=2.0)


# Ops that run on the host by design in every graph (arguments, constants, control).
_HOST_OPS = frozenset({"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "Const", "NoOp", "Identity",
                       "Placeholder", "_EagerConst", "VarHandleOp", "ReadVariableOp", "Shape", "IteratorGetNext",
                       "OptionalFromValue", "OptionalGetValue", "OptionalHasValue", "_Send", "_Recv"})
_FILTER: _StderrFilter | None = None
_MARKS = [0]


def _sync_log_reader():
    if _FILTER is not None:
        _MARKS[0] += 1
        _FILTER.sync(_MARKS[0])


# ---------------------------------------------------------------- TensorFlow hooks

def _kind(requested) -> str:
    text = str(requested or "").upper()
    if "GPU" in text:
        return "GPU"
    if "CPU" in text:
        return "CPU"
    return ""


class _Block:
    """Wraps the context manager ``tf.device(...)`` returned, recording the block."""

    def __init__(self, cm, requested, api: str, frame):
        self._cm, self._requested, self._api, self._frame = cm, requested, api, frame
        self._id = None

    def __enter__(self):
        st = STATE
        if st is not None and st.active and self._frame is not None:
            _sync_log_reader()
            with st.lock:
                self._id = len(st.blocks)
                line = self._frame.f_lineno
                req = self._requested if isinstance(self._requested, str) or self._requested is None else repr(self._requested)
                st.blocks.append({"id": self._id, "requested": req, "kind": _kind(req), "api": self._api,
                                  "line": line, "text": _source(line), "parent": st.stack[-1] if st.stack else None,
                                  "enter": st.snap(), "exit": None, "error": None})
                st.stack.append(self._id)
                st.block_calls[self._id] = {}
        return self._cm.__enter__()

    def __exit__(self, et, ev, tb):
        try:
            return self._cm.__exit__(et, ev, tb)
        finally:
            st = STATE
            if self._id is not None and st is not None:
                _sync_log_reader()
                with st.lock:
                    b = st.blocks[self._id]
                    b["exit"] = st.snap()
                    if et is not None:
                        b["error"] = f"{et.__name__}: {str(ev).strip().splitlines()[0][:300] if str(ev).strip() else ''}"
                    if st.stack and st.stack[-1] == self._id:
                        st.stack.pop()
                    elif self._id in st.stack:
                        st.stack.remove(self._id)


def _wrap_device(orig, api: str):
    def device(*args, **kwargs):
        cm = orig(*args, **kwargs)
        st = STATE
        if st is None or not st.active:
            return cm
        f = sys._getframe(1)
        frame = f if f.f_code.co_filename == st.script else None
        if frame is None:
            return cm
        requested = args[0] if args else kwargs.get("device_name", kwargs.get("name"))
        return _Block(cm, requested, api, frame)

    device.__wrapped__ = orig
    device.__doc__ = orig.__doc__
    return device


def _install_tf(tf) -> None:
    st = STATE
    from tensorflow.python.client import session as session_mod
    from tensorflow.python.eager import context
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf
    from tensorflow.python.framework import op_callbacks, ops
    from tensorflow.python.util import nest

    try:
        st.physical = {"CPU": len(tf.config.list_physical_devices("CPU")),
                       "GPU": len(tf.config.list_physical_devices("GPU"))}
    except Exception:
        st.physical = {}
    try:
        st.soft_placement = bool(tf.config.get_soft_device_placement())
    except Exception:
        st.soft_placement = None

    for mod_name, api in (("tensorflow", "tf.device"), ("tensorflow.compat.v1", "tf.compat.v1.device"),
                          ("tensorflow.compat.v2", "tf.device")):
        mod = sys.modules.get(mod_name)
        if mod is None:
            try:
                mod = importlib.import_module(mod_name)
            except Exception:
                continue
        orig = getattr(mod, "device", None)
        if orig is not None and not hasattr(orig, "__wrapped__"):
            try:
                setattr(mod, "device", _wrap_device(orig, api))
            except Exception:
                pass

    orig_call = pf.Function.__call__

    def call(self, *args, **kwargs):
        st_ = STATE
        if st_ is None or not st_.active:
            return orig_call(self, *args, **kwargs)
        before = self.experimental_get_tracing_count()
        result = orig_call(self, *args, **kwargs)
        after = self.experimental_get_tracing_count()
        f = sys._getframe(1)
        user = f.f_code.co_filename == st_.script
        try:
            scope = context.context().device_name or ""
        except Exception:
            scope = ""
        with st_.lock:
            fid = id(self)
            info = st_.functions.get(fid)
            if info is None:
                info = st_.functions[fid] = {"name": getattr(self, "__name__", None) or getattr(self, "_name", "fn"),
                                             "calls": 0, "traces": 0, "jit": bool(getattr(self, "_jit_compile", False)),
                                             "user_calls": 0}
            info["calls"] += 1
            info["traces"] += after - before
            st_.c["fn_calls"] += 1
            st_.c["traces"] += after - before
            # Where the call ran (its outputs' device; the scope when it returns nothing): a new
            # (traced signature, device) pair is a graph instantiation — placement, grappler,
            # and with jit_compile an XLA compile. A soft-placed "GPU" call on a machine
            # without one reuses the CPU instantiation, as TensorFlow does.
            ran = ""
            try:
                for leaf in nest.flatten(result):
                    ran = short_device(getattr(leaf, "device", "") or "")
                    if ran:
                        break
            except Exception:
                pass
            key = (fid, after, ran or scope)
            if key not in st_.instantiated:
                st_.instantiated.add(key)
                st_.c["instantiations"] += 1
                if info["jit"]:
                    st_.c["xla_compiles"] += 1
            if user:
                info["user_calls"] += 1
                if st_.stack:
                    bid = st_.stack[-1]
                    calls = st_.block_calls.setdefault(bid, {})
                    calls[fid] = calls.get(fid, 0) + 1
                    st_.last_args[(bid, fid)] = (self, args, kwargs)
        return result

    pf.Function.__call__ = call

    def on_op(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        st_ = STATE
        if st_ is None or not st_.active:
            return None
        with st_.lock:
            if graph is not None:
                st_.c["graph_ops"] += 1
                return None
            st_.c["eager_ops"] += 1
            dev = ""
            for o in outputs or ():
                dev = short_device(getattr(o, "device", "") or "")
                if dev:
                    break
            if dev:
                st_.ops_by_device[dev] = st_.ops_by_device.get(dev, 0) + 1
                if (op_type, dev) not in st_.seen_kernels:
                    st_.seen_kernels.add((op_type, dev))
                    st_.c["new_kernels"] += 1
                if dev.startswith("GPU"):
                    st_.c["last_gpu_work"] = st_.seq + 1
                    st_.seq += 1
                for x in inputs or ():
                    xdev = short_device(getattr(x, "device", "") or "")
                    if xdev and xdev != dev and xdev[:3] != dev[:3]:
                        st_.c["h2d" if dev.startswith("GPU") else "d2h"] += 1
            if st_.requested_kind() == "GPU":
                st_.seq += 1
                st_.c["last_gpu_work"] = st_.seq
                if dev.startswith("CPU") and st_.physical.get("GPU") and op_type not in _HOST_OPS:
                    st_.c["cpu_ops_in_gpu_block"] += 1
                    st_.placed_cpu_in_gpu_block[op_type] = st_.placed_cpu_in_gpu_block.get(op_type, 0) + 1
        return None

    op_callbacks.add_op_callback(on_op)

    orig_numpy = ops._EagerTensorBase._numpy

    def _numpy(self):
        out = orig_numpy(self)
        st_ = STATE
        if st_ is not None and st_.active:
            with st_.lock:
                st_.seq += 1
                st_.c["syncs"] += 1
                st_.c["last_sync"] = st_.seq
                try:
                    if short_device(self.device).startswith("GPU"):
                        st_.c["d2h"] += 1
                except Exception:
                    pass
        return out

    ops._EagerTensorBase._numpy = _numpy

    def _mark_sync():
        st_ = STATE
        if st_ is not None and st_.active:
            with st_.lock:
                st_.seq += 1
                st_.c["syncs"] += 1
                st_.c["last_sync"] = st_.seq

    try:
        from tensorflow.python.framework import test_util

        orig_sync = test_util.sync_devices

        def sync_devices():
            orig_sync()
            _mark_sync()

        for holder in (test_util, tf.test.experimental):
            try:
                holder.sync_devices = sync_devices
            except Exception:
                pass
    except Exception:
        pass

    orig_init = session_mod.BaseSession.__init__
    orig_run = session_mod.BaseSession.run

    def sess_init(self, target="", graph=None, config=None):
        st_ = STATE
        if st_ is not None and st_.active:
            if st_.placement_log:
                from tensorflow.core.protobuf import config_pb2

                new = config_pb2.ConfigProto()
                if config is not None:
                    new.CopyFrom(config)
                new.log_device_placement = True
                config = new
            with st_.lock:
                st_.c["sessions"] += 1
        orig_init(self, target, graph, config)
        self._whichdevice_runs = 0

    def sess_run(self, *args, **kwargs):
        st_ = STATE
        if st_ is not None and st_.active:
            with st_.lock:
                st_.c["session_runs"] += 1
                if getattr(self, "_whichdevice_runs", 0) == 0:
                    st_.c["first_session_runs"] += 1
                self._whichdevice_runs = getattr(self, "_whichdevice_runs", 0) + 1
                if st_.requested_kind() == "GPU":
                    st_.seq += 1
                    st_.c["last_gpu_work"] = st_.seq
                try:  # op types this process runs for the first time: their kernels are built now
                    for op_type in {op.type for op in self.graph.get_operations()}:
                        if (op_type, "graph") not in st_.seen_kernels:
                            st_.seen_kernels.add((op_type, "graph"))
                            st_.c["new_kernels"] += 1
                except Exception:
                    pass
                if not st_.physical.get("GPU"):
                    # No GPU: every op of the session's graph can only have run on the CPU (with a
                    # GPU, the placement log reports each op instead).
                    try:
                        n = len(self.graph.get_operations())
                    except Exception:
                        n = 0
                    st_.placed_by_device["CPU:0"] = st_.placed_by_device.get("CPU:0", 0) + n
        out = orig_run(self, *args, **kwargs)
        _mark_sync()  # Session.run returns host values: the host has waited for the device
        return out

    session_mod.BaseSession.__init__ = sess_init
    session_mod.BaseSession.run = sess_run

    if st.physical.get("GPU"):
        global _FILTER
        try:
            _FILTER = _StderrFilter()
            tf.debugging.set_log_device_placement(True)
            st.placement_log = True
        except Exception:
            _FILTER = None
    st.tf_installed = True


class _TFHookFinder(importlib.abc.MetaPathFinder):
    """Installs the TensorFlow hooks right after the script's ``import tensorflow`` finishes."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "tensorflow" or STATE is None or STATE.tf_installed:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            pass
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                _install_tf(module)
            except Exception:  # a hook that fails must not stop the script: audit less, say why
                traceback.print_exc(file=sys.__stderr__)

        loader.exec_module = exec_module
        return spec


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


def rerun(deadline: float) -> None:
    """Steady re-measurement of each (function, requested device) the script called in a block."""
    st = STATE
    if not st.tf_installed or not st.last_args:
        return
    import tensorflow as tf

    from whichdevice.core.timing import TimingPolicy, measure

    def sync(_=None):
        tf.test.experimental.sync_devices()

    done: dict[tuple, int] = {}
    for (bid, fid), (fn, args, kwargs) in list(st.last_args.items()):
        block = st.blocks[bid]
        name = st.functions[fid]["name"]
        key = (fid, block["requested"])
        base = {"block": bid, "function": name, "function_id": fid, "requested": block["requested"]}
        if key in done:
            st.reruns.append({**base, "same_as": done[key]})
            continue
        flat = list(args) + list(kwargs.values())
        if any(_iterator_like(x) for x in flat):
            st.rerun_skipped.append({**base, "reason": "an argument is a data iterator: calling again would consume it"})
            continue
        try:
            cf = fn.get_concrete_function(*args, **kwargs)
            unsafe = sorted(_graph_op_types(cf) & UNSAFE_OPS)
        except Exception as e:
            st.rerun_skipped.append({**base, "reason": f"its graph could not be inspected ({type(e).__name__})"})
            continue
        if unsafe:
            st.rerun_skipped.append({**base, "reason": f"its graph has side effects outside TensorFlow ({', '.join(unsafe)})"})
            continue
        if len(done) >= MAX_RERUNS:
            st.rerun_skipped.append({**base, "reason": f"more than {MAX_RERUNS} functions x devices; the first {MAX_RERUNS} were re-run"})
            continue
        left = deadline - _orig_mono()
        if left < 4 * RERUN_MIN_TIME_S:
            st.rerun_skipped.append({**base, "reason": "no time left before --timeout"})
            continue
        policy = TimingPolicy(min_time_s=RERUN_MIN_TIME_S, max_time_s=min(5.0, left / 4), telemetry_period_s=None)
        device = block["requested"]
        try:
            def call():
                with tf.device(device):
                    return fn(*args, **kwargs)

            raw = measure(call, sync=sync, policy=policy)
            out = call()
            leaves = [x for x in tf.nest.flatten(out) if hasattr(x, "device")]
            ran_on = short_device(leaves[0].device) if leaves else ""
        except Exception as e:
            st.rerun_skipped.append({**base, "reason": f"re-running raised {type(e).__name__}: {str(e).strip()[:200]}"})
            continue
        done[key] = len(st.reruns)
        st.reruns.append({**base, "ran_on": ran_on, "first_call_s": raw.first_call_s, "warmup_s": list(raw.warmup_s),
                          "samples_s": list(raw.samples_s), "number_per_sample": raw.number_per_sample,
                          "overhead_s": raw.overhead_s})


# ---------------------------------------------------------------- main

def _write_state(path: str) -> None:
    for _ in range(5):  # the main thread may be mutating lists while the watchdog dumps
        try:
            text = json.dumps(STATE.to_json())
            break
        except RuntimeError:
            time.sleep(0.01)
    else:
        text = json.dumps({"version": AUDIT_STATE_VERSION, "error": "state could not be serialized"})
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _print_script_traceback(e: BaseException) -> None:
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != STATE.script:
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb if tb is not None else e.__traceback__, file=sys.stderr)


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
            _write_state(state_path)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(STATE.exit_code if finished else 124)

    threading.Thread(target=watchdog, daemon=True, name="whichdevice-watchdog").start()

    time.time = _clock(_orig_time, "time.time")
    time.perf_counter = _clock(_orig_perf, "time.perf_counter")
    time.monotonic = _clock(_orig_mono, "time.monotonic")
    sys.meta_path.insert(0, _TFHookFinder())
    if "tensorflow" in sys.modules:  # only when something imported it already (never by us)
        _install_tf(sys.modules["tensorflow"])

    sys.argv = [script, *job.get("args", [])]
    sys.path.insert(0, str(Path(script).parent))
    code = 0
    STATE.started = _orig_perf()
    try:
        runpy.run_path(script, run_name="__main__")
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
    if _FILTER is not None:
        try:
            import tensorflow as tf

            tf.debugging.set_log_device_placement(False)
        except Exception:
            pass
    time.time, time.perf_counter, time.monotonic = _orig_time, _orig_perf, _orig_mono
    try:
        if not job.get("no_rerun"):
            rerun(deadline)
    except Exception as e:  # never lose the audit to a failed re-measurement
        STATE.rerun_skipped.append({"block": None, "function": None, "requested": None,
                                    "reason": f"re-measurement failed: {type(e).__name__}: {e}"})
    done.set()
    _write_state(state_path)
    if _FILTER is not None:
        _FILTER.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
