"""TensorFlow hooks of the audit child (``audit/child.py``): one small function per hook.

:func:`install` runs the moment the script's ``import tensorflow`` finishes (:class:`TFHookFinder`)
and calls, in order:

- :func:`record_devices`: physical CPUs / GPUs and soft placement, once;
- :func:`hook_device_scopes`: ``tf.device`` / ``tf.compat.v1.device`` blocks entered from the
  script (:class:`Block`: requested device, line, counters at entry and exit);
- :func:`hook_function_calls`: ``tf.function``'s ``Function.__call__`` (calls, traces, graph
  instantiations, XLA compiles, the arguments of the last call in a block);
- :func:`hook_op_callback`: the device every eager op actually ran on, host<->device copies,
  first use of a kernel on a device;
- :func:`hook_host_reads`: ``EagerTensor._numpy`` and ``tf.test.experimental.sync_devices``;
- :func:`hook_sessions`: ``tf.compat.v1`` sessions (created, ``run`` calls);
- :func:`start_placement_log` on a machine with a GPU: TensorFlow's placer log, read from fd 2
  by :class:`StderrFilter` (lines parsed by ``frameworks.tensorflow.logparse``).

The child's ``State`` is passed explicitly and every hook closes over that object. This module
never imports ``whichdevice.audit.child``: the child runs as ``__main__``, so such an import
would be a second copy of it, with its own state and with clock functions already patched. Nor
does it import TensorFlow itself: :func:`install` is handed the module the script imported.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import importlib.util
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

from whichdevice.frameworks.common import audit as common
from whichdevice.frameworks.common.audit import AfterImportFinder, HostSync, RerunItem, from_script
from whichdevice.frameworks.tensorflow.logparse import Placed, parse_placement_log, short_device

if TYPE_CHECKING:
    from whichdevice.frameworks.common.auditstate import State

_perf = time.perf_counter  # the real clock: this module is imported before the child patches it
MAX_CALL_LOG = 200_000  # top-level tf.function calls and Session.runs remembered (seq, owner)
_local = threading.local()  # depth of nested tf.function calls (a call made while tracing another)

# In-band marker the child writes to fd 2 at every snapshot, so each placement line lands in the
# right block (:meth:`StderrFilter.sync`).
MARK = b"\x1ewhichdevice-mark "

# Ops that run on the host by design in every graph (arguments, constants, control).
HOST_OPS = frozenset(
    {
        "_Arg",
        "_Retval",
        "_DeviceArg",
        "_DeviceRetval",
        "Const",
        "NoOp",
        "Identity",
        "Placeholder",
        "_EagerConst",
        "VarHandleOp",
        "ReadVariableOp",
        "Shape",
        "IteratorGetNext",
        "OptionalFromValue",
        "OptionalGetValue",
        "OptionalHasValue",
        "_Send",
        "_Recv",
    }
)


def requested_kind(requested: Any) -> str:
    """'GPU', 'CPU' or '' for a ``tf.device`` argument."""
    text = str(requested or "").upper()
    if "GPU" in text:
        return "GPU"
    if "CPU" in text:
        return "CPU"
    return ""


def is_host_value(x: Any) -> bool:
    """A NumPy array or a Python number/list passed where a tensor is used (converted at every call)."""
    if isinstance(x, (bool, int, float, list)):
        return not isinstance(x, bool) and not (isinstance(x, list) and not x)
    return type(x).__module__ == "numpy" and type(x).__name__ == "ndarray"


def mark_sync(st: State) -> None:
    """The host has waited for the device (a host read): count it."""
    if st.active:
        with st.lock:
            common.count_read(st, False)


# ---------------------------------------------------------------- placement log (fd 2)


def placement_of(line: str) -> Placed | None:
    """What one line of TensorFlow's placement log placed (a graph node or an eager op), else None."""
    placed = parse_placement_log(line)
    return placed[0] if placed else None


class StderrFilter:
    """Reads fd 2 through a pipe; keeps TensorFlow's placement lines, forwards the rest."""

    def __init__(self, st: State):
        self.st = st
        self.real = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
        self.r = r
        self.marks_sent = 0
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
                if raw.startswith(MARK):
                    with self.cond:
                        self.marks_seen = int(raw[len(MARK) :] or 0)
                        self.cond.notify_all()
                    continue
                placed = placement_of(raw.decode("utf-8", "replace"))
                if placed is not None:
                    self._placed(placed.op_type, placed.device)
                    continue
                out.append(raw + b"\n")
            if out:
                os.write(self.real, b"".join(out))
        if buf:
            os.write(self.real, buf)

    def _placed(self, op_type: str, dev: str):
        st = self.st
        if not st.active:
            return
        with st.lock:
            st.placed_by_device[dev] = st.placed_by_device.get(dev, 0) + 1
            if dev.startswith("CPU") and st.requested_kind() == "GPU" and op_type not in HOST_OPS:
                st.c["cpu_ops_in_gpu_block"] += 1
                st.placed_cpu_in_gpu_block[op_type] = st.placed_cpu_in_gpu_block.get(op_type, 0) + 1

    def sync(self):
        """Wait (at most 1 s) until the reader has handled every line written to fd 2 so far."""
        self.marks_sent += 1
        n = self.marks_sent
        os.write(2, MARK + str(n).encode() + b"\n")
        with self.cond:
            self.cond.wait_for(lambda: self.marks_seen >= n, timeout=1.0)

    def close(self):
        try:
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(self.real, 2)  # our pipe's last writer goes away: the thread sees EOF
        self.thread.join(timeout=2.0)


def sync_log_reader(st: State) -> None:
    """Before a snapshot: let the placement-log reader catch up (nothing without one)."""
    if st.log_reader is not None:
        st.log_reader.sync()


def start_placement_log(tf, st: State) -> None:
    """Turn TensorFlow's placement log on and read it from fd 2 (machines with a GPU)."""
    try:
        st.log_reader = StderrFilter(st)
        tf.debugging.set_log_device_placement(True)
        st.placement_log = True
    except Exception:
        st.log_reader = None


# ---------------------------------------------------------------- devices and device scopes


def record_devices(tf, st: State) -> None:
    """Physical devices and soft placement, as TensorFlow sees them when the script imports it."""
    try:
        st.physical = {
            "CPU": len(tf.config.list_physical_devices("CPU")),
            "GPU": len(tf.config.list_physical_devices("GPU")),
        }
    except Exception:
        st.physical = {}
    try:
        st.soft_placement = bool(tf.config.get_soft_device_placement())
    except Exception:
        st.soft_placement = None


class Block:
    """Wraps the context manager ``tf.device(...)`` returned, recording the block."""

    def __init__(self, st: State, cm, requested, api: str, frame):
        self._st = st
        self._cm, self._requested, self._api, self._frame = cm, requested, api, frame
        self._id = None

    def __enter__(self):
        st = self._st
        if st.active and self._frame is not None:
            sync_log_reader(st)
            with st.lock:
                self._id = len(st.blocks)
                line = self._frame.f_lineno
                req = (
                    self._requested
                    if isinstance(self._requested, str) or self._requested is None
                    else repr(self._requested)
                )
                st.blocks.append(
                    {
                        "id": self._id,
                        "requested": req,
                        "kind": requested_kind(req),
                        "api": self._api,
                        "line": line,
                        "text": st.source(line),
                        "parent": st.stack[-1] if st.stack else None,
                        "enter": st.snap(),
                        "exit": None,
                        "error": None,
                    }
                )
                st.stack.append(self._id)
                st.block_calls[self._id] = {}
        return self._cm.__enter__()

    def __exit__(self, et, ev, tb):
        try:
            return self._cm.__exit__(et, ev, tb)
        finally:
            st = self._st
            if self._id is not None:
                sync_log_reader(st)
                with st.lock:
                    b = st.blocks[self._id]
                    b["exit"] = st.snap()
                    if et is not None:
                        b["error"] = (
                            f"{et.__name__}: {str(ev).strip().splitlines()[0][:300] if str(ev).strip() else ''}"
                        )
                    if st.stack and st.stack[-1] == self._id:
                        st.stack.pop()
                    elif self._id in st.stack:
                        st.stack.remove(self._id)


def wrap_device(orig, api: str, st: State):
    """``tf.device`` that returns a recording :class:`Block` when called from the script's file."""

    def device(*args, **kwargs):
        cm = orig(*args, **kwargs)
        if not st.active:
            return cm
        f = sys._getframe(1)
        frame = f if f.f_code.co_filename == st.script else None
        if frame is None:
            return cm
        requested = args[0] if args else kwargs.get("device_name", kwargs.get("name"))
        return Block(st, cm, requested, api, frame)

    setattr(device, "__wrapped__", orig)  # the original, as functools.wraps keeps it
    device.__doc__ = orig.__doc__
    return device


def hook_device_scopes(st: State) -> None:
    """Wrap ``device`` in ``tensorflow``, ``tensorflow.compat.v1`` and ``tensorflow.compat.v2``."""
    for mod_name, api in (
        ("tensorflow", "tf.device"),
        ("tensorflow.compat.v1", "tf.compat.v1.device"),
        ("tensorflow.compat.v2", "tf.device"),
    ):
        mod = sys.modules.get(mod_name)
        if mod is None:
            try:
                mod = importlib.import_module(mod_name)
            except Exception:
                continue
        orig = getattr(mod, "device", None)
        if orig is not None and not hasattr(orig, "__wrapped__"):
            try:
                setattr(mod, "device", wrap_device(orig, api, st))
            except Exception:
                pass


# ---------------------------------------------------------------- tf.function


def hook_function_calls(st: State, pf, context, nest) -> None:
    """Count ``tf.function`` calls, traces, graph instantiations and XLA compiles.

    ``pf`` is ``polymorphic_function`` (its ``Function``), ``context`` the eager context module,
    ``nest`` TensorFlow's ``nest``."""
    orig_call = pf.Function.__call__

    def call(self, *args, **kwargs):
        if not st.active:
            return orig_call(self, *args, **kwargs)
        depth = getattr(_local, "depth", 0)
        before = self.experimental_get_tracing_count()
        t0 = _perf()
        _local.depth = depth + 1
        owners = getattr(_local, "owners", None)
        if owners is None:
            owners = _local.owners = []
        owners.append(id(self))
        try:
            result = orig_call(self, *args, **kwargs)
        finally:
            _local.depth = depth
            owners.pop()
        dt = _perf() - t0
        after = self.experimental_get_tracing_count()
        f = sys._getframe(1)
        user = f.f_code.co_filename == st.script
        scope = _scope_device(context)
        with st.lock:
            info = _function_info(st, self)
            info["calls"] += 1
            info["traces"] += after - before
            st.c["fn_calls"] += 1
            st.c["traces"] += after - before
            first = _count_instantiation(st, info, (id(self), after, _ran_device(nest, result) or scope))
            if depth == 0:
                if first or after != before:  # the call traced or set up a graph: set-up time (with its run)
                    st.c["setup_trace_s"] += dt
                _top_level_call(st, self, args, kwargs)
            if user:
                info["user_calls"] += 1
        return result

    pf.Function.__call__ = call


def _scope_device(context) -> str:
    """The device scope the call was made in ('' when TensorFlow cannot say)."""
    try:
        return context.context().device_name or ""
    except Exception:
        return ""


def _ran_device(nest, result: Any) -> str:
    """Where a call ran: the device of its first output that has one ('' when it returns none)."""
    ran = ""
    try:
        for leaf in nest.flatten(result):
            ran = short_device(getattr(leaf, "device", "") or "")
            if ran:
                break
    except Exception:
        pass
    return ran


def _function_info(st: State, fn: Any) -> dict:
    """The state's entry for one ``tf.function`` (made at its first call)."""
    fid = id(fn)
    info = st.functions.get(fid)
    if info is None:
        info = st.functions[fid] = {
            "name": getattr(fn, "__name__", None) or getattr(fn, "_name", "fn"),
            "calls": 0,
            "traces": 0,
            "jit": bool(getattr(fn, "_jit_compile", False)),
            "user_calls": 0,
        }
    return info


def _count_instantiation(st: State, info: dict, key: tuple) -> bool:
    """Whether this call is the first of its (function, traced signature, device) ``key``: a graph
    instantiation — placement, grappler, and with jit_compile an XLA compile. A soft-placed "GPU"
    call on a machine without one reuses the CPU instantiation, as TensorFlow does."""
    first = key not in st.instantiated
    if first:
        st.instantiated.add(key)
        st.c["instantiations"] += 1
        if info["jit"]:
            st.c["xla_compiles"] += 1
    return first


def _top_level_call(st: State, fn: Any, args: tuple, kwargs: dict) -> None:
    """A call not made inside another tf.function: logged (``tf_calls``), host inputs counted, and
    inside a block its arguments kept for the re-run after the script."""
    fid = id(fn)
    st.seq += 1
    if len(st.tf_calls) < MAX_CALL_LOG:
        st.tf_calls.append((st.seq, f"fn:{fid}"))
    if any(is_host_value(x) for x in list(args) + list(kwargs.values())):
        st.c["host_inputs"] += 1  # NumPy / Python values: converted (copied to the device) per call
    if st.stack:  # top-level calls inside a block (the script's, or a library's such as fit)
        bid = st.stack[-1]
        calls = st.block_calls.setdefault(bid, {})
        calls[fid] = calls.get(fid, 0) + 1
        st.last_args[(bid, fid)] = (fn, args, kwargs)
    else:  # outside any device block: a timing with no tf.device is re-run from these (NO_BLOCK)
        st.last_args[(NO_BLOCK, fid)] = (fn, args, kwargs)


# ---------------------------------------------------------------- eager ops


def hook_op_callback(st: Any, op_callbacks) -> Any:
    """An op callback: where each eager op ran, copies between devices, new kernels."""

    def on_op(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if not st.active:
            return None
        with st.lock:
            if graph is not None:
                st.c["graph_ops"] += 1
                return None
            st.c["eager_ops"] += 1
            dev = _output_device(st, outputs)
            _track_variables(st, op_type, inputs, outputs)
            if dev:
                _count_on_device(st, op_type, inputs, dev)
            if st.requested_kind() == "GPU":
                st.seq += 1
                st.c["last_gpu_work"] = st.seq
                if dev.startswith("CPU") and st.physical.get("GPU") and op_type not in HOST_OPS:
                    st.c["cpu_ops_in_gpu_block"] += 1
                    st.placed_cpu_in_gpu_block[op_type] = st.placed_cpu_in_gpu_block.get(op_type, 0) + 1
        return None

    op_callbacks.add_op_callback(on_op)
    return on_op


def _output_device(st: Any, outputs: Any) -> str:
    """The device of an eager op's first output that has one (its elements counted), else ''."""
    for o in outputs or ():
        dev = short_device(getattr(o, "device", "") or "")
        if dev:
            try:
                st.c["elems"] += int(o.shape.num_elements() or 0)
            except Exception:
                pass
            return dev
    return ""


def _track_variables(st: Any, op_type: str, inputs: Any, outputs: Any) -> None:
    """Variables made inside a device block (the block decides where they live), and each later use
    of one from a block of the other device kind (``vars_other_device``)."""
    kind = st.requested_kind()
    if op_type == "VarHandleOp" and outputs:
        if kind:  # created inside a device block: the block decides where the variable lives
            st.var_kind[id(outputs[0])] = kind
            st.var_handles.append(outputs[0])  # kept alive so its id stays its own
    elif kind and st.var_kind:
        for x in inputs or ():
            made = st.var_kind.get(id(x))
            if made and made != kind and (id(x), st.stack[-1]) not in st.var_seen:
                st.var_seen.add((id(x), st.stack[-1]))
                st.c["vars_other_device"] += 1


def _count_on_device(st: Any, op_type: str, inputs: Any, dev: str) -> None:
    """An eager op that ran on ``dev``: counted there, a first-used kernel, GPU work, copies of its inputs."""
    common.count_op(st, op_type, dev)
    if dev.startswith("GPU"):
        st.c["last_gpu_work"] = st.seq + 1
        st.seq += 1
    for x in inputs or ():
        xdev = short_device(getattr(x, "device", "") or "")
        if xdev and xdev != dev and xdev[:3] != dev[:3]:
            st.c["h2d" if dev.startswith("GPU") else "d2h"] += 1


# ---------------------------------------------------------------- host reads

# Each call after which the host has waited for the device (common.HostSync). An EagerTensor's value
# reaches Python only through ``EagerTensor._numpy`` (``.numpy()``, ``float(t)``, ``print(t)``, ``f"{t}"``:
# ``__str__``, ``__repr__``, ``__format__``, ``__float__`` all call it), so one hook sees them all.
HOST_SYNCS: tuple[HostSync, ...] = (
    HostSync(".numpy()", "method", ("numpy",), "copies the values to the host when computed", runtime=("_numpy",)),
    *common.python_reads(
        "t",
        "a Python number of the value (EagerTensor.__float__ reads .numpy())",
        "formatting a tensor's values reads them with .numpy() first",
        number_runtime=("_numpy",),
        print_runtime=("_numpy",),
        fstring_runtime=("_numpy",),
    ),
    HostSync(
        "tf.test.experimental.sync_devices()",
        "function",
        ("sync_devices",),
        "waits for the work queued on every device",
        runtime=("sync_devices",),
    ),
)


def hook_host_reads(tf, st: State, ops) -> None:
    """``EagerTensor._numpy`` (a device-to-host read when the tensor is on a GPU) and
    ``sync_devices``: the points where the host waits for the device."""
    orig_numpy = ops._EagerTensorBase._numpy

    def _numpy(self):
        out = orig_numpy(self)
        if st.active:
            user = from_script(st)
            with st.lock:
                common.count_read(st, user)
                try:
                    if short_device(self.device).startswith("GPU"):
                        st.c["d2h"] += 1
                except Exception:
                    pass
        return out

    ops._EagerTensorBase._numpy = _numpy

    try:
        from tensorflow.python.framework import test_util

        orig_sync = test_util.sync_devices

        def sync_devices():
            orig_sync()
            mark_sync(st)

        for holder in (test_util, tf.test.experimental):
            try:
                holder.sync_devices = sync_devices
            except Exception:
                pass
    except Exception:
        pass


# ---------------------------------------------------------------- TF1 sessions


def _is_initializer(fetches: Any) -> bool:
    """``tf.global_variables_initializer()`` and friends: a NoOp named init… grouping the initializers."""
    items = fetches if isinstance(fetches, (list, tuple)) else [fetches]
    for f in items:
        op = getattr(f, "op", f)
        name = str(getattr(op, "name", ""))
        if getattr(op, "type", "") == "NoOp" and name.split("/")[-1].startswith("init"):
            return True
    return False


def hook_sessions(st: State, session_mod) -> None:
    """``tf.compat.v1`` sessions: created, ``run`` calls (each a synchronous host read), first runs."""
    orig_init = session_mod.BaseSession.__init__
    orig_run = session_mod.BaseSession.run

    def sess_init(self, target="", graph=None, config=None):
        if st.active:
            if st.placement_log:
                config = _logging_config(config)
            with st.lock:
                st.c["sessions"] += 1
        t0 = _perf()
        orig_init(self, target, graph, config)
        if st.active:
            with st.lock:
                st.c["setup_session_s"] += _perf() - t0
        self._whichdevice_runs = 0

    def sess_run(self, *args, **kwargs):
        init, first_of_fetch = _before_session_run(st, self, args, kwargs) if st.active else (False, None)
        t0 = _perf()
        out = orig_run(self, *args, **kwargs)
        dt = _perf() - t0
        if init and st.active:
            with st.lock:
                st.c["setup_init_s"] += dt
        elif first_of_fetch is not None and st.active:
            f = sys._getframe(1)
            user = f.f_code.co_filename == st.script
            run = {"seconds": dt, "line": f.f_lineno if user else None, "fetch": first_of_fetch}
            _record_first_run(st, run, (self, args, kwargs) if user else None)
        mark_sync(st)  # Session.run returns host values: the host has waited for the device
        return out

    orig_close = session_mod.BaseSession.close

    def sess_close(self):
        # A session whose first run of a fetch the script timed stays open until the re-run of that
        # fetch after the script (calibrate.rerun_first_runs), which closes it.
        if st.active and any(entry[0] is self for entry in st.first_run_args):
            self._whichdevice_close_deferred = True
            return None
        return orig_close(self)

    setattr(sess_close, "__wrapped__", orig_close)  # the original, as functools.wraps keeps it
    session_mod.BaseSession.__init__ = sess_init
    session_mod.BaseSession.run = sess_run
    session_mod.BaseSession.close = sess_close


def _logging_config(config: Any) -> Any:
    """A copy of the Session's ConfigProto with the placement log on (a machine with a GPU)."""
    from tensorflow.core.protobuf import config_pb2

    new = config_pb2.ConfigProto()
    if config is not None:
        new.CopyFrom(config)
    new.log_device_placement = True
    return new


def _before_session_run(st: State, sess: Any, args: tuple, kwargs: dict) -> tuple[bool, str | None]:
    """Count one ``Session.run``; (whether it runs the variable initializer, the fetch's key when this
    is the session's first run of that fetch, else None)."""
    first_of_fetch = None
    try:
        fkey = repr(args[0] if args else kwargs.get("fetches"))[:300]
    except Exception:
        fkey = "?"
    seen = sess.__dict__.setdefault("_whichdevice_fetches", set())
    if fkey not in seen:
        seen.add(fkey)
        first_of_fetch = fkey
    with st.lock:
        st.seq += 1
        if len(st.tf_calls) < MAX_CALL_LOG:
            st.tf_calls.append((st.seq, f"graph:{id(sess.graph)}"))
    init = _is_initializer(args[0] if args else kwargs.get("fetches"))
    with st.lock:
        st.c["session_runs"] += 1
        if getattr(sess, "_whichdevice_runs", 0) == 0:
            st.c["first_session_runs"] += 1
        sess._whichdevice_runs = getattr(sess, "_whichdevice_runs", 0) + 1
        if st.requested_kind() == "GPU":
            st.seq += 1
            st.c["last_gpu_work"] = st.seq
        _count_graph_ops(st, sess.graph)
    return init, first_of_fetch


def _count_graph_ops(st: State, graph: Any) -> None:
    """The graph's op types this process runs for the first time (their kernels are built now); with
    no GPU, every op of the graph as placed on the CPU."""
    try:  # op types this process runs for the first time: their kernels are built now
        for op_type in {op.type for op in graph.get_operations()}:
            if (op_type, "graph") not in st.seen_kernels:
                st.seen_kernels.add((op_type, "graph"))
                st.c["new_kernels"] += 1
    except Exception:
        pass
    if not st.physical.get("GPU"):
        # No GPU: every op of the session's graph can only have run on the CPU (with a
        # GPU, the placement log reports each op instead).
        try:
            n = len(graph.get_operations())
        except Exception:
            n = 0
        st.placed_by_device["CPU:0"] = st.placed_by_device.get("CPU:0", 0) + n


def _record_first_run(st: State, run: dict, call: tuple | None) -> None:
    """The first ``Session.run`` of a fetch (seconds, line, fetch); the script's own ``call`` (session,
    args, kwargs) is kept for the re-run after the script (calibrate.rerun_first_runs)."""
    with st.lock:
        st.seq += 1
        st.first_runs.append({"seq": st.seq, **run})
        if call is not None:
            st.first_run_args.append((*call, len(st.first_runs) - 1))


# ---------------------------------------------------------------- tf.data iterators


def hook_iterators(st: State, dataset_ops, iterator_ops) -> None:
    """Iterator start-up: ``iter(dataset)`` (pipeline threads, buffers) and each iterator's first batch."""
    dataset_ops.DatasetV2.__iter__ = common.timed_iter(st, dataset_ops.DatasetV2.__iter__, "setup_iter_s")
    iterator_ops.OwnedIterator.__next__ = common.timed_next(st, iterator_ops.OwnedIterator.__next__, "setup_iter_s")


# ---------------------------------------------------------------- files written, then read


def hook_file_reuse(st: State, tf_record, readers) -> None:
    """A TFRecord file the script writes and then reads back: the read comes from the OS page cache."""
    orig_writer = tf_record.TFRecordWriter.__init__
    orig_reader = readers.TFRecordDatasetV2.__init__

    def writer_init(self, path, *a, **k):
        orig_writer(self, path, *a, **k)
        if st.active:
            with st.lock:
                st.written_files.setdefault(str(path), {"seq": st.seq, "line": _script_line(st)})

    def reader_init(self, filenames, *a, **k):
        orig_reader(self, filenames, *a, **k)
        if not (st.active and st.written_files):
            return
        names = [filenames] if isinstance(filenames, (str, bytes)) else filenames
        try:
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
        except TypeError:
            return
        for n in names:
            w = st.written_files.get(n)
            if w is not None:
                with st.lock:
                    st.read_after_write.append(
                        {"path": n, "written_line": w["line"], "read_line": _script_line(st), "seq": st.seq}
                    )

    tf_record.TFRecordWriter.__init__ = writer_init
    readers.TFRecordDatasetV2.__init__ = reader_init


def _static_int(x: Any) -> int | None:
    if x is None:
        return None
    if isinstance(x, int):
        return x
    try:
        from tensorflow.python.framework import tensor_util

        v = tensor_util.constant_value(x)
        return int(v) if v is not None else None
    except Exception:
        return None


def hook_loops(st: State, while_loop_mod, ops) -> None:
    """Graph loops (``tf.map_fn``, ``tf.while_loop``, autograph's ``for i in tf.range(n)``): where the
    script built them, how many iterations when that is static, the size of what one iteration works
    on, and which function or graph owns them (so a timed call or ``Session.run`` can be tied to them)."""
    orig = while_loop_mod.while_loop

    def while_loop(cond, body, loop_vars, *args, **kwargs):
        if st.active:
            try:
                _record_loop(st, ops, loop_vars, kwargs.get("maximum_iterations"))
            except Exception:
                pass
        return orig(cond, body, loop_vars, *args, **kwargs)

    setattr(while_loop, "__wrapped__", orig)  # the original, as functools.wraps keeps it
    while_loop_mod.while_loop = while_loop


@dataclass
class _LoopSeen:
    """What the frames between the script and ``while_loop`` say of one graph loop."""

    kind: str
    iterations: int | None
    elems: int | None = None

    def read_frame(self, caller: FrameType) -> None:
        """Refine the loop's kind, iterations and elements from one frame of its call stack."""
        name = caller.f_code.co_filename.replace("\\", "/")
        if name.endswith("ops/map_fn.py") and self.kind == "tf.while_loop":
            self.kind = "tf.map_fn"
            n = caller.f_locals.get("n")
            self.iterations = _static_int(n) if self.iterations is None else self.iterations
            try:
                flat = caller.f_locals.get("elems_flat") or []
                self.elems = int(flat[0].shape[1:].num_elements() or 1) if flat else None
            except Exception:
                self.elems = None
        elif "autograph/operators/control_flow.py" in name and self.kind == "tf.while_loop":
            self.kind = "while (autograph)"
        if caller.f_code.co_name == "_tf_range_for_stmt":
            self.kind = "for over tf.range"
            try:
                start, limit, delta = (_static_int(x) for x in caller.f_locals["iter_"].op.inputs)
                if start is not None and limit is not None and delta:
                    self.iterations = max(0, -(-(limit - start) // delta))
            except Exception:
                pass


def _loop_owner(ops) -> str:
    """Who runs the loop: the tf.function being traced, a graph, eager code, or '' (a library's trace)."""
    owners = getattr(_local, "owners", None) or []
    graph = ops.get_default_graph()
    if owners:
        return f"fn:{owners[-1]}"
    if getattr(graph, "building_function", False):
        return ""  # traced by a library outside the script's tf.function calls
    if ops.executing_eagerly_outside_functions():
        return "eager"
    return f"graph:{id(graph)}"


def _record_loop(st: State, ops, loop_vars: Any, max_iter: Any) -> None:
    f = sys._getframe(2)
    seen = _LoopSeen("tf.while_loop", _static_int(max_iter))
    caller: FrameType | None = f
    while caller is not None and caller.f_code.co_filename != st.script:
        seen.read_frame(caller)
        caller = caller.f_back
    if caller is None:
        return  # a library's loop (Keras's RNN when unrolled by TF, ...), not the script's
    line = autograph_origin(st, f) or caller.f_lineno
    shapes = []
    for v in nest_flatten(loop_vars):
        shape = getattr(v, "shape", None)
        if shape is not None and hasattr(shape, "num_elements"):
            shapes.append(shape)
    elems = seen.elems
    if elems is None and shapes:
        known = [int(x.num_elements()) for x in shapes if x.num_elements() is not None]
        elems = max(known) if len(known) == len(shapes) else None
    owner = _loop_owner(ops)
    with st.lock:
        st.seq += 1
        st.loops.append(
            {
                "seq": st.seq,
                "kind": seen.kind,
                "line": line,
                "text": st.source(line),
                "var_shapes": [str(x) for x in shapes[:6]],
                "iterations": seen.iterations,
                "elems_per_iteration": elems,
                "owner": owner,
            }
        )


def nest_flatten(x: Any) -> list:
    try:
        from tensorflow.python.util import nest

        return list(nest.flatten(x, expand_composites=False))
    except Exception:
        return []


def _script_line(st: State) -> int | None:
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename != st.script:
        f = f.f_back
    return f.f_lineno if f is not None else None


def autograph_origin(st: State, f: Any) -> int | None:
    """A clock read from a tf.function's body while autograph traces it comes from autograph's
    generated copy of the script's function: its line in the script, from autograph's source map."""
    if not st.tf_installed:
        return None
    gen = None
    for _ in range(12):
        if f is None:
            return None
        name = f.f_code.co_filename
        if gen is None and "__autograph_generated" in name:
            gen = f
        elif gen is not None:
            conv = f.f_locals.get("converted_f")
            smap = getattr(conv, "ag_source_map", None)
            if smap:
                for loc, origin in smap.items():
                    if loc.filename == gen.f_code.co_filename and loc.lineno == gen.f_lineno:
                        return origin.loc.lineno if origin.loc.filename == st.script else None
                return None
        f = f.f_back
    return None


# ---------------------------------------------------------------- install


def install(tf, st: State) -> None:
    """Install every hook on ``tf``, the TensorFlow module the script imported.

    TensorFlow's private modules are all imported first, so a TensorFlow without one of them
    gets no hook at all (the error is the caller's to report)."""
    from tensorflow.python.client import session as session_mod
    from tensorflow.python.data.ops import dataset_ops, iterator_ops
    from tensorflow.python.eager import context
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf
    from tensorflow.python.framework import op_callbacks, ops
    from tensorflow.python.util import nest

    record_devices(tf, st)
    st.before_read.append(sync_log_reader)
    try:  # autograph must call the audit's clock wrappers as they are (not convert them, warning the user)
        from tensorflow.python.autograph.core import config as ag_config

        ag_config.CONVERSION_RULES = (ag_config.DoNotConvert("whichdevice"), *ag_config.CONVERSION_RULES)
    except Exception:
        pass
    hook_device_scopes(st)
    hook_function_calls(st, pf, context, nest)
    hook_op_callback(st, op_callbacks)
    hook_host_reads(tf, st, ops)
    hook_sessions(st, session_mod)
    try:
        from tensorflow.python.ops import while_loop as while_loop_mod

        hook_loops(st, while_loop_mod, ops)
    except Exception:  # a TensorFlow without this module: no loop finding
        pass
    hook_iterators(st, dataset_ops, iterator_ops)
    try:
        from tensorflow.python.data.ops import readers
        from tensorflow.python.lib.io import tf_record

        hook_file_reuse(st, tf_record, readers)
    except Exception:  # a TensorFlow without these modules: no page-cache finding
        pass
    if st.physical.get("GPU"):
        start_placement_log(tf, st)
    st.tf_installed = True


# ---------------------------------------------------------------- Keras recurrent layers


# Keras 3 runs an LSTM / GRU on the fused cuDNN kernel on a GPU only with these arguments
# (keras.layers.LSTM's docstring, "use_cudnn"); otherwise it loops over the time steps.
CUDNN_DEFAULTS = {
    "activation": "tanh",
    "recurrent_activation": "sigmoid",
    "recurrent_dropout": 0,
    "unroll": False,
    "use_bias": True,
}


def install_keras(keras, st: State) -> None:
    """``keras.layers.LSTM`` / ``GRU`` built by the script: units, time steps and whether their
    arguments allow Keras's cuDNN kernel on a GPU (``causes.rule_recurrent_layer``)."""
    for name in ("LSTM", "GRU"):
        cls = getattr(keras.layers, name, None)
        if cls is None:
            continue
        orig = cls.__init__

        def init(self, *args, _orig=orig, _name=name, **kwargs):
            _orig(self, *args, **kwargs)
            f = sys._getframe(1)
            if not st.active or f.f_code.co_filename != st.script:
                return
            shape = kwargs.get("input_shape") or (kwargs.get("batch_input_shape") or (None,))[1:]
            off = {
                k: kwargs[k]
                for k, v in CUDNN_DEFAULTS.items()
                if k in kwargs
                and kwargs[k] != v
                and not (k.endswith("activation") and getattr(kwargs[k], "__name__", "") == v)
            }
            if kwargs.get("use_cudnn") is False:
                off["use_cudnn"] = False
            with st.lock:
                st.rnn_layers.append(
                    {
                        "layer": _name,
                        "line": f.f_lineno,
                        "text": st.source(f.f_lineno),
                        "units": args[0] if args else kwargs.get("units"),
                        "timesteps": shape[0] if shape else None,
                        "features": shape[1] if shape and len(shape) > 1 else None,
                        "not_cudnn_because": {k: str(v) for k, v in off.items()},
                    }
                )

        cls.__init__ = init
    st.keras_installed = True


# ---------------------------------------------------------------- the part's contract (contracts.Audit)


def finders(st: State) -> list[AfterImportFinder]:
    """TensorFlow's hooks on ``import tensorflow``, the Keras layers' on ``import keras``."""
    return [
        AfterImportFinder("tensorflow", "tf_installed", install, st),
        AfterImportFinder("keras", "keras_installed", install_keras, st),
    ]


def installed(st: State) -> bool:
    return bool(st.tf_installed)


def adopt(st: State) -> None:
    """TensorFlow is the state's framework by default: its devices were recorded at import."""
    st.framework = "tensorflow"


def stop(st: State) -> None:
    """After the script: TensorFlow stops logging placements (the reader stays until closed)."""
    if st.log_reader is None:
        return
    try:
        import tensorflow as tf

        tf.debugging.set_log_device_placement(False)
    except Exception:
        pass


def op_cost() -> dict:
    """A 4x4 eager add, plainly and under the audit's op callback (on a throwaway state)."""
    import contextlib

    import tensorflow as tf
    from tensorflow.python.framework import op_callbacks

    @contextlib.contextmanager
    def hooked():  # type: ignore[no-untyped-def]
        cb = hook_op_callback(common.dummy_state(), op_callbacks)
        try:
            yield
        finally:
            op_callbacks.remove_op_callback(cb)

    return common.op_cost("tensorflow", "4x4 add (TF eager)", tf.ones((4, 4)), hooked)


def gpu_cost() -> dict | None:
    """A 1-element eager add under ``tf.device(GPU)``; the read (and the wait) is ``.numpy()``."""
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if not gpus:
        return None
    details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
    device = gpus[0].name
    with tf.device(device):
        x = tf.zeros([1])

    def step() -> None:
        with tf.device(device):
            x + 1

    def read() -> None:
        with tf.device(device):
            (x + 1).numpy()

    return common.launch_cost(step, read, read, str(details.get("device_name") or "GPU"), "tensorflow")


RUNS = 20  # re-runs of a first Session.run (median of these is the steady time)
# Op types whose run changes state: such a fetch is not re-run.
_WRITES = ("Assign", "Apply", "ResourceApply", "Queue", "Iterator", "Save", "Restore", "Write", "Print", "PyFunc")


def rerun_setup(st: State, budget_s: float) -> None:
    """The script's first ``Session.run`` of each fetch (TF1), run again in the same session with the
    same feeds, so the first run's set-up share is measured: first run minus the steady median of the
    re-runs. A fetch whose graph writes state (assignments, optimizers, queues, iterators, files) is
    not re-run, and the reason is kept."""
    if st.first_run_args:
        _rerun_first_runs(st.first_runs, st.first_run_args, budget_s)
    st.first_run_args = []


def _fetch_names(fetches: Any) -> list[str]:
    from tensorflow.python.util import nest

    names = []
    for x in nest.flatten(fetches):
        op = getattr(x, "op", x)
        name = getattr(op, "name", None)
        if name:
            names.append(name)
    return names


def _rerun_first_runs(first_runs: list[dict], entries: list[tuple], budget_s: float) -> None:
    """Fill ``first_runs[i]['steady_s']`` (or ``['not_rerun']``) for the script's own first runs, within
    ``budget_s`` in all: a fetch whose first run alone took longer than what is left is not re-run
    (its steady run could be as long), and re-runs stop when the budget is spent (at least 3)."""
    from tensorflow.python.framework import graph_util
    from tensorflow.python.util import deprecation

    spent = 0.0
    for sess, args, kwargs, i in entries:
        rec = first_runs[i]
        if rec["seconds"] > budget_s - spent:
            rec["not_rerun"] = (
                f"its first run took {rec['seconds']:.3g} s, more than the {max(0.0, budget_s - spent):.3g} s left "
                "for re-runs (30 % of the script's time)"
            )
            continue
        try:
            fetches = args[0] if args else kwargs.get("fetches")
            with deprecation.silence():  # the audit's own call: no TensorFlow warning on the user's stderr
                sub = graph_util.extract_sub_graph(sess.graph.as_graph_def(), _fetch_names(fetches))
            writes = sorted({n.op for n in sub.node if n.op.startswith(_WRITES)})
            if writes:
                rec["not_rerun"] = f"the fetch's graph changes state ({', '.join(writes[:4])})"
                continue
            t_all = _perf()
            times = []
            for _ in range(RUNS):
                t0 = _perf()
                sess.run(*args, **kwargs)
                times.append(_perf() - t0)
                if len(times) >= 3 and spent + _perf() - t_all > budget_s:
                    break
            spent += _perf() - t_all
            rec["steady_s"] = statistics.median(times)
            rec["reruns"] = len(times)
        except Exception as e:  # a closed session, a feed that cannot be repeated...
            rec["not_rerun"] = f"re-running raised {type(e).__name__}: {str(e).strip()[:160]}"
    for sess, _, _, _ in entries:
        if getattr(sess, "_whichdevice_close_deferred", False):
            try:
                type(sess).close.__wrapped__(sess)  # type: ignore[attr-defined]
            except Exception:
                pass


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


# The block id under which the last arguments of a tf.function called outside any tf.device are kept.
NO_BLOCK = -1


def _calls_outside_blocks(st: State, m: Any) -> dict[int, int]:
    """fn id -> top-level tf.function calls inside measurement ``m`` made outside any device block."""
    out: dict[int, int] = {}
    for seq, key in st.tf_calls:
        fid = int(key.split(":", 1)[1]) if key.startswith("fn:") else None
        if fid is not None and m.start_seq < seq < m.end_seq and (NO_BLOCK, fid) in st.last_args:
            out[fid] = out.get(fid, 0) + 1
    return out


def rerun_side(st: State, m: Any) -> tuple[list[RerunItem], str | None]:
    """Every tf.function called at top level in measurement ``m``'s blocks (a timing with no block: in
    it), with the arguments of its last call, under the block's device request; or why the side cannot
    be re-run."""
    import tensorflow as tf

    work: list[RerunItem] = []
    by_block = {bid: st.block_calls.get(bid) or {} for bid in m.blocks}
    if not m.blocks:
        by_block = {NO_BLOCK: _calls_outside_blocks(st, m)}
    for bid, calls in by_block.items():
        for fid, n in calls.items():
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
            device = st.blocks[bid]["requested"] if bid != NO_BLOCK else None
            a, kw = fresh
            work.append(
                RerunItem(
                    key=(fid, device),
                    fn=functools.partial(fn, *a, **kw),
                    calls=n,
                    function=name,
                    requested=device,
                    scope=functools.partial(tf.device, device) if device else contextlib.nullcontext,
                    where=_ran_on,
                )
            )
    if not work:
        return [], (
            "the timed work calls no tf.function (eager ops or a tf.compat.v1 session); only traced functions are "
            "re-run, because their graph is the whole work and calling it again touches nothing outside TensorFlow"
        )
    return work, None


def _ran_on(out: Any) -> str:
    import tensorflow as tf

    leaves = [x for x in tf.nest.flatten(out) if hasattr(x, "device")]
    return short_device(leaves[0].device) if leaves else ""


# ---------------------------------------------------------------- the audit's words for TensorFlow

# What the shared counters and the findings are called in TensorFlow's terms (``present/auditwords.py``
# says the findings; a ``.tf1`` key is the wording for a script that runs tf.compat.v1 sessions).
WORDS: dict[str, str] = {
    "sees": "TensorFlow sees {cpu} CPU, {gpu} GPU; soft placement {soft} at import",
    "name": "TensorFlow",
    "eager": "TensorFlow eager",
    "step": "tf.function call",
    "trace": "tf.function trace",
    "setup.trace": "tf.function tracing / graph set-up (first calls, with their run)",
    "setup.compile": "XLA compilation (first calls)",
    "fix.soft_placed": (
        "Check tf.config.list_logical_devices('GPU') before timing, or turn soft placement off "
        "(tf.config.set_soft_device_placement(False)) so a missing device raises; label results by "
        "where the ops ran (tensor.device)."
    ),
    "fix.soft_placed.tf1": (
        "Check tf.config.list_logical_devices('GPU') before timing, or create the Session with "
        "tf.compat.v1.ConfigProto(allow_soft_placement=False) so a missing device raises; label "
        "results by where the ops ran."
    ),
    "sync.reads": "no .numpy(), no Session.run, no sync_devices",
    "sync.here": (
        " On this machine the block ran on the CPU, whose eager ops finish before they return, so the number "
        "is right here — on a real GPU it would time only the queueing."
    ),
    "fix.sync": "Read a result back (.numpy()) or call tf.test.experimental.sync_devices() right before the second clock read.",
    "fix.sync.tf1": "Fetch the result with Session.run (it returns host values) inside the timing, before the second clock read.",
    "label": (
        "the line that reports this time says GPU, but no tf.device block asked for one and the "
        "work ran on {ran}; tf.data transformations (map, batch) always run on the CPU."
    ),
    "fix.label": "Label results by where the ops ran (tensor.device), and time the GPU only inside a GPU block.",
    "fix.setup": (
        "Do the set-up before the first clock read: call the tf.function (or the model) once on each "
        "device with the same shapes, build the tf.data iterator and take one batch — then start the "
        "clock and time the steady steps only."
    ),
    "fix.setup.tf1": (
        "Do the set-up before the first clock read: create the Session and initialize the variables, "
        "run each fetch once untimed — then start the clock and time the steady runs only."
    ),
    "fix.host_inputs": "Convert once before the clock starts (tf.constant(x) on the device), or feed with tf.data and .prefetch.",
    "fix.dispatch": (
        "Batch the work into few large ops (e.g. tf.linalg.inv(batch) on a stacked batch); or put the loop in a "
        "tf.function(jit_compile=True) so XLA fuses it; compare devices at the sizes you will really use."
    ),
    "missing.device": "a GPU",
    "missing.did": "TensorFlow refused to place the ops there, so it stopped",
    "missing.did.tf1": (
        "TensorFlow refused to place the ops there (a tf.compat.v1 Session does not fall back unless soft "
        "placement is allowed), so it stopped"
    ),
    "fix.missing": (
        "Run it where TensorFlow sees a GPU (`whichdevice devices` says why it does not here); or allow soft placement "
        "(tf.config.set_soft_device_placement(True)) knowing the 'GPU' numbers will then be CPU numbers."
    ),
    "fix.missing.tf1": (
        "Run it where TensorFlow sees a GPU (`whichdevice devices` says why it does not here); or allow soft placement "
        "(tf.compat.v1.ConfigProto(allow_soft_placement=True)) knowing the 'GPU' numbers will then be CPU numbers."
    ),
}
# The script's series are paired by the device kind their blocks asked for (tf.device), not in order.
SERIES_IN_ORDER = False
# What TensorFlow says when the device asked for does not exist (rules.rule_missing_device_failure).
MISSING_DEVICE = (
    r"Cannot assign a device for operation|Could not satisfy explicit device specification|"
    r"explicitly assigned to (?P<dev>\S+) but available devices|Unknown device|"
    r"no (?:GPU|device) (?:named|found)|Could not find device"
)
