"""Where the ops of a JAX training step ran, its host<->device copies and its syncs, for
``whichdevice placement --framework keras-jax`` (imported inside a child: it imports JAX).

JAX's own tools, over whole steps after three warm-up steps (the first compiles):

- **``jax.profiler.trace(..., create_perfetto_trace=True)``** over ``steps`` steps: the
  Perfetto JSON it writes (``*.trace.json.gz``, no TensorBoard or xprof needed) has one event
  per XLA op executed, with ``args.hlo_op`` and ``args.hlo_module``, under the process of the
  device that ran it (``/host:CPU`` for the CPU backend's thunks, ``/device:GPU:0`` for GPU
  kernels). XLA compiles the whole step into one program for one device, so every op of the
  jitted step runs there; an op of the program seen on the host in a GPU run (a host
  callback) is the exception, and is listed as such.
- **Copies**, from the same trace: a NumPy array passed to a jitted function is put on the
  device at each call (a ``DevicePut`` event on the calling thread: the host-to-device copy),
  and reading a result (``float(loss)``) is a copy back that waits for the device (an
  ``np.asarray(jax.Array)`` event). JAX's ``transfer_guard("log")`` says the same on stderr,
  but as warnings, which a child with ``TF_CPP_MIN_LOG_LEVEL=2`` (XLA's logging quiet) never
  prints. Bytes: the step's NumPy inputs (ordinary pageable memory).
"""

from __future__ import annotations

import gzip
import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

_SUFFIX = re.compile(r"[.:]\d+$")


def op_type(hlo_op: str) -> str:
    """``multiply_add_fusion.3`` -> ``multiply_add_fusion``: the op's kind, not its instance."""
    return _SUFFIX.sub("", hlo_op)


def device_of(process_name: str) -> str:
    """A Perfetto process name -> the device: ``/device:GPU:0 ...`` -> ``GPU:0``; host -> ``CPU:0``."""
    m = re.search(r"/device:GPU:(\d+)", process_name)
    return f"GPU:{m.group(1)}" if m else "CPU:0"


# The trace's events of a copy: host-to-device (a NumPy argument put on the device), device-to-host.
TRANSFER_EVENTS = {"DevicePut": "H2D", "np.asarray(jax.Array)": "D2H"}


def read_perfetto(events: list[dict]) -> tuple[dict[tuple[str, str], tuple[int, float]], dict[str, int]]:
    """(device, op type) -> (executions, total µs) of the XLA ops in a Perfetto trace's events,
    and the copies (``H2D``, ``D2H``) it saw."""
    names = {e.get("pid"): str(e.get("args", {}).get("name", "")) for e in events if e.get("name") == "process_name"}
    out: dict[tuple[str, str], tuple[int, float]] = {}
    moved = {"H2D": 0, "D2H": 0}
    for e in events:
        if e.get("ph") == "X" and e.get("name") in TRANSFER_EVENTS:
            moved[TRANSFER_EVENTS[e["name"]]] += 1
        hlo = (e.get("args") or {}).get("hlo_op")
        if e.get("ph") != "X" or not hlo:
            continue
        key = (device_of(names.get(e.get("pid"), "")), op_type(str(hlo)))
        n, us = out.get(key, (0, 0.0))
        out[key] = (n + 1, us + float(e.get("dur", 0.0)))
    return out, moved


def _profile(call: Callable[[], Any], steps: int) -> tuple[dict, dict[str, int], list[float]]:
    times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="whichdevice-jaxprof-") as tmp:
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            for _ in range(steps):
                t0 = time.perf_counter()
                jax.block_until_ready(call())
                times.append(time.perf_counter() - t0)
        files = sorted(Path(tmp).rglob("*.trace.json.gz"))
        if not files:
            return {}, {}, times
        with gzip.open(files[-1], "rt") as f:
            data = json.load(f)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    return (*read_perfetto(events), times)


def _op_metrics(m: dict[str, float], ops: dict[tuple[str, str], tuple[int, float]], steps: int) -> None:
    """Calls and times per op. In a GPU run the host's events of an op that also ran on the GPU
    are its launch (XLA's runtime marks each thunk it starts), timed as host time, not a CPU op;
    an op seen only on the host ran there (a host callback)."""
    on_gpu = {name for (where, name) in ops if where.startswith("GPU")}
    for (where, name), (n, us) in ops.items():
        if where.startswith("GPU"):
            m[f"op_calls|{where}|{name}"] = n / steps
            m[f"op_gpu_us|{name}"] = m.get(f"op_gpu_us|{name}", 0.0) + us
            continue
        if name not in on_gpu:
            m[f"op_calls|{where}|{name}"] = n / steps
        m[f"op_host_us|{name}"] = m.get(f"op_host_us|{name}", 0.0) + us


def trace_step(call: Callable[[], Any], inputs: tuple, steps: int, device: str) -> tuple[dict[str, float], list[float]]:
    """The placement metrics of ``call`` (one whole step) on ``device`` (module docstring) and
    the profiled steps' times (the profiler's cost in them)."""
    for _ in range(3):  # warm-up: the first call traces and compiles
        jax.block_until_ready(call())
    ops, moved, times = _profile(call, steps)
    m: dict[str, float] = {"profiled_steps": float(steps), "profiler_on": 1.0, "op_stats": 1.0 if ops else 0.0}
    _op_metrics(m, ops, steps)
    host_arrays = [a for a in inputs if isinstance(a, np.ndarray)]
    per_step = {kind: n / steps for kind, n in moved.items() if n}
    for kind, n in per_step.items():
        m[f"copies|{kind}"] = n
    if per_step.get("H2D"):
        # NumPy arrays fed to the jitted step: their bytes when the trace saw one copy each.
        if per_step["H2D"] == len(host_arrays):
            m["copy_bytes|H2D"] = float(sum(a.nbytes for a in host_arrays))
        m["copies_pageable"] = per_step["H2D"]
    if per_step.get("D2H"):
        m["syncs|read_back"] = per_step["D2H"]  # a read of a result waits for the device
        m["host_reads"] = per_step["D2H"]
    return m, times
