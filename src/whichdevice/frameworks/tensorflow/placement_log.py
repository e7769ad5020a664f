"""Capture TensorFlow's device-placement log, the kernel registry and a step's graph edges.

TensorFlow writes placement lines from C++ (``printf`` to fd 1, and a glog copy to fd 2 that
the child's ``TF_CPP_MIN_LOG_LEVEL=2`` silences), so Python's ``sys.stdout`` cannot catch them: ``capture`` points file descriptors 1 and 2 at a
temporary file for the duration of one call and restores them after. Imported only inside a
child process (it imports TensorFlow); the parsing is ``frameworks.tensorflow.logparse``.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

import contextlib
import ctypes
import os
import sys
import tempfile

import tensorflow as tf

from whichdevice.frameworks.tensorflow.logparse import Edge, Placed


def _flush() -> None:
    """Python's streams, then C stdio: TensorFlow's placer ``printf``s its lines, which C stdio
    buffers when fd 1 is a file, so they must be flushed before fd 1 is pointed back (else they
    land after the capture)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def _fds_to(path: str):
    _flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for fd in (1, 2):
            os.dup2(target, fd)
        yield
    finally:
        _flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(target)


def capture(fn):
    """Run ``fn()`` with placement logging on; returns (its result, the log text)."""
    fd, path = tempfile.mkstemp(prefix="whichdevice-placement-", suffix=".log")
    os.close(fd)
    try:
        with _fds_to(path):
            tf.debugging.set_log_device_placement(True)
            try:
                result = fn()
            finally:
                tf.debugging.set_log_device_placement(False)
        with open(path, encoding="utf-8", errors="replace") as f:
            return result, f.read()
    finally:
        os.unlink(path)


def kernel_devices(op_type: str) -> set[str] | None:
    """Device types with a registered kernel for ``op_type`` (``CPU``, ``GPU``, ``DEFAULT``...).

    Read from this build's kernel registry, so it answers "would this op have a GPU kernel?"
    even on a machine without a GPU. None when the registry cannot be read."""
    try:
        from tensorflow.python.framework import kernels

        return {k.device_type for k in kernels.get_registered_kernels_for_op(op_type).kernel}
    except Exception:  # a private API: never let it break a measurement
        return None


def graph_edges(concrete_fn) -> list[Edge]:
    """Data edges of a concrete function's graph (and of the functions it calls), with the
    tensor's size in bytes when its shape is fully known."""
    edges: list[Edge] = []
    graphs = [concrete_fn.graph]
    graphs += [f.graph for f in getattr(concrete_fn.graph, "_functions", {}).values() if hasattr(f, "graph")]
    for g in graphs:
        for op in g.get_operations():
            for t in op.inputs:
                size = None
                if t.shape.is_fully_defined() and t.dtype.size:
                    try:
                        size = int(t.shape.num_elements()) * int(t.dtype.size)
                    except (TypeError, ValueError):
                        size = None
                edges.append(Edge(t.op.name, op.name, size))
    return edges


def graph_placement(concrete_fn, device: str) -> tuple[list[Placed], list[Edge]]:
    """Every node of the step's graph (and of the functions it calls) on ``device``, and its
    edges: where one device is all there is, the placement the placer would log. The step's
    arguments are ``Placeholder`` nodes here and ``_Arg`` in the placer's log: named as the log
    names them, so plumbing is counted apart the same way."""
    graphs = [concrete_fn.graph]
    graphs += [f.graph for f in getattr(concrete_fn.graph, "_functions", {}).values() if hasattr(f, "graph")]
    placed = [
        Placed(op.name, "_Arg" if op.type == "Placeholder" else op.type, device, "graph")
        for g in graphs
        for op in g.get_operations()
    ]
    return placed, graph_edges(concrete_fn)


def train_step(model, optimizer, loss_fn, *, with_string_op: bool):
    """Seed 001's ``tf.function`` train step; ``with_string_op`` adds what many training loops
    do for logging — format the loss as text inside the step (``tf.strings.as_string`` and
    ``tf.strings.length``). String ops have no GPU kernel, so on a GPU they fall back to the
    CPU and the loss is copied to the host every step: the fallback path, exercised."""

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if with_string_op:
            return loss, tf.strings.length(tf.strings.as_string(loss))
        return loss

    return step


def first(out):
    """The loss out of a step's result (a tensor or a tuple starting with it)."""
    return out[0] if isinstance(out, (tuple, list)) else out


# ---------------- the probe process ----------------
# TensorFlow reads ``log_device_placement`` for tf.function graphs when its eager context is
# created; a measurement child has created it long before a case runs (device discovery), so
# turning the flag on there logs nothing for functions. The placement log is therefore taken
# in a short probe process of its own (``python -m whichdevice.frameworks.tensorflow.placement_log
# JOB.json OUT.json``) that turns the flag on before its first op: one extra TensorFlow import.

PROBE_TIMEOUT_S = 240.0


def run_probe(device: str, params: dict) -> dict:
    """Run the probe for one device; returns {"log": text, "edges": [[src, dst, bytes], ...]}."""
    import json

    from whichdevice.core.process import run_module

    with tempfile.TemporaryDirectory(prefix="whichdevice-probe-") as tmp:
        job, out = os.path.join(tmp, "job.json"), os.path.join(tmp, "out.json")
        with open(job, "w", encoding="utf-8") as f:
            json.dump({"device": device, "params": params}, f)
        err = os.path.join(tmp, "err.txt")
        with open(err, "wb") as err_file:
            done = run_module(
                "whichdevice.frameworks.tensorflow.placement_log",
                [job, out],
                timeout_s=PROBE_TIMEOUT_S,
                env=os.environ.copy(),
                stderr=err_file,
            )
        if not done.ok or not os.path.exists(out):
            with open(err, encoding="utf-8", errors="replace") as f:
                tail = f.read().strip().splitlines()[-1:] or ["no output"]
            why = f"stopped: {done.stopped}" if done.stopped else f"exit {done.returncode}"
            raise RuntimeError(f"placement probe failed ({why}): {tail[0][:300]}")
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def _probe_main(job_path: str, out_path: str) -> int:
    import json

    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    tf.debugging.set_log_device_placement(True)  # before the first op: see the note above
    from whichdevice import frameworks
    from whichdevice.frameworks.common.casemodel import CaseModel

    fw = frameworks.load("tensorflow")
    device, p = job["device"], job["params"]
    fw.placement.configure(device, None)
    m = CaseModel(p)
    training = __import__("whichdevice.frameworks.tensorflow.training", fromlist=["x"])

    def first_step():
        with fw.placement.scope(device):
            model = m.build()
            opt, loss = m.optimizer_and_loss(model)
            step = train_step(model, opt, loss, with_string_op=bool(p.get("string_op", False)))
            x, y = m.one_batch(training, int(p[fixkeys.BATCH]))
            fw.sync.sync(first(step(x, y)))
            return step, x, y

    (step, x, y), text = capture(first_step)
    edges = graph_edges(step.get_concrete_function(x, y))
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"log": text, "edges": [[e.src, e.dst, e.nbytes] for e in edges]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(_probe_main(sys.argv[1], sys.argv[2]))
