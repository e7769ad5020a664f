"""Which ops ran where: TensorFlow's device-placement log and XProf's op statistics, parsed,
and the host<->device copies a training step makes.

Pure: text and numbers in, tables out (no TensorFlow import), so it is tested on real output
captured on a CPU (``tests/data/placement/``).

Sources, and what each one can say:

- **Placement log** (``tf.debugging.set_log_device_placement(True)``). When a ``tf.function``
  is instantiated, TensorFlow's placer logs one line per graph node::

      I0000 00:00:1795400006.145373   28383 placer.cc:162] sequential_1/dense_1/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0

  and every eager op executed logs ``execute.cc:...] Executing op Cast in device /job:.../device:CPU:0``.
  The same placer lines are also printed bare (without the ``I0000 ... placer.cc]`` prefix) on
  stdout; when prefixed lines exist, the bare copies are ignored so nothing is counted twice.
  This is *authoritative* for placement: it says where each node was put, after soft placement.
- **XProf ``framework_op_stats``** (a profile converted by ``xprof``): one row per op name with
  ``Host/device``, type, occurrences and self time (µs). It gives *time*; on a CPU-only run every
  row is ``Host``.
- **Copies**: a node whose input comes from a node on another device needs a copy (TensorFlow
  inserts a ``_Send``/``_Recv`` pair after placement; the placer does not log it). Counted from
  the step function's graph edges and the placement, with bytes where the tensor's shape is
  static. Inputs fed from the host (NumPy batches) are copies too when the step runs on a GPU.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

# Graph plumbing: function arguments/returns and control nodes. They are placed like any node
# but do no work; counted apart so the op table shows the model's real ops.
from whichdevice.frameworks.tensorflow.logparse import (
    Copies,
    PLUMBING,
    RESOURCE_OPS,
)


# ---------------- why an op is on the CPU ----------------


CpuOpCause = Literal["python", "no_gpu_kernel", "plumbing", "variable", "dtype_or_host_memory", "unknown"]


def cpu_op_cause(op_type: str, kernel_devices: set[str] | None) -> CpuOpCause:
    """Why ``op_type`` ran on the CPU in a GPU run (present/pages/placement.py words it).

    ``kernel_devices``: the device types TensorFlow has kernels for (``CPU``, ``GPU``,
    ``DEFAULT`` = any device), from the kernel registry; None when unknown."""
    if op_type in ("PyFunc", "EagerPyFunc", "PyFuncStateless"):
        return "python"
    if kernel_devices is not None and not ({"GPU", "DEFAULT"} & kernel_devices):
        return "no_gpu_kernel"
    if op_type in PLUMBING:
        return "plumbing"
    if op_type in RESOURCE_OPS:
        return "variable"
    if kernel_devices is not None:
        return "dtype_or_host_memory"
    return "unknown"


# ---------------- a placement record -> tables ----------------


@dataclass(frozen=True)
class OpRow:
    op_type: str
    placed_on: str  # device the placer put it on
    nodes: int  # graph nodes of this type placed there (the step's function graphs)
    executions: int | None  # profiler occurrences over the profiled steps (None: no profile)
    self_us: float | None  # profiler self time over the profiled steps
    has_gpu_kernel: bool | None
    plumbing: bool


@dataclass(frozen=True)
class DevicePlacement:
    device: str  # the device the step was asked to run on
    ops: list[OpRow]  # every op type placed anywhere during this device's step, busiest first
    copies: Copies
    feed_tensors: int
    feed_bytes: int
    profiled_steps: int
    step_s: float  # median profiled step (profiler on)
    profiled: bool  # xprof op times available
    profiler_on: bool = True  # the steps ran under the profiler (records before it was optional: always)

    @property
    def on_cpu_in_gpu_run(self) -> list[OpRow]:
        """Ops placed on the CPU although the step was asked to run on a GPU (real work only)."""
        if not self.device.startswith("GPU"):
            return []
        return [o for o in self.ops if o.placed_on.startswith("CPU") and not o.plumbing]

    @property
    def would_fall_back(self) -> list[OpRow]:
        """Ops with no GPU kernel in this build: on a GPU they would run on the CPU."""
        return [o for o in self.ops if o.has_gpu_kernel is False and not o.plumbing]


def device_placement(device: str, metrics: dict[str, float], step_s: float) -> DevicePlacement:
    """Rebuild one device's placement tables from a placement case's metrics."""
    placed: dict[tuple[str, str], int] = {}
    occ: dict[str, float] = defaultdict(float)
    self_us: dict[str, float] = defaultdict(float)
    kernel: dict[str, bool] = {}
    by_dir: dict[str, int] = {}
    for k, v in metrics.items():
        parts = k.split("|")
        if parts[0] == "placed" and len(parts) == 3:
            placed[(parts[1], parts[2])] = int(v)
        elif parts[0] == "occ" and len(parts) == 3:
            occ[parts[2]] += v
        elif parts[0] == "self_us" and len(parts) == 3:
            self_us[parts[2]] += v
        elif parts[0] == "gpu_kernel" and len(parts) == 2:
            kernel[parts[1]] = bool(v)
        elif parts[0] == "copies" and len(parts) == 2:
            by_dir[parts[1]] = int(v)
    profiled = bool(metrics.get("op_stats"))
    rows = [
        OpRow(
            t,
            dev,
            n,
            int(occ[t]) if profiled and t in occ else (0 if profiled else None),
            self_us.get(t) if profiled else None,
            kernel.get(t),
            t in PLUMBING,
        )
        for (dev, t), n in placed.items()
    ]
    # Op types the profiler saw but the placer did not log: graph rewrites after placement
    # (grappler fuses MatMul+BiasAdd+Relu into _FusedMatMul) and runtime ops.
    seen = {t for (_d, t) in placed}
    for k, v in metrics.items():
        parts = k.split("|")
        if profiled and parts[0] == "occ" and len(parts) == 3 and parts[2] not in seen:
            seen.add(parts[2])
            rows.append(
                OpRow(
                    parts[2],
                    f"{parts[1]} (rewritten graph)",
                    0,
                    int(occ[parts[2]]),
                    self_us.get(parts[2]),
                    kernel.get(parts[2]),
                    parts[2] in PLUMBING,
                )
            )
    rows.sort(key=lambda o: (o.plumbing, -(o.self_us or 0.0), -o.nodes, o.op_type))
    copies = Copies(
        int(metrics.get("copies", 0)),
        int(metrics.get("copy_bytes", 0)),
        int(metrics.get("copies_unknown_size", 0)),
        by_dir,
    )
    return DevicePlacement(
        device,
        rows,
        copies,
        int(metrics.get("feed_tensors", 0)),
        int(metrics.get("feed_bytes", 0)),
        int(metrics.get("profiled_steps", 0)),
        step_s,
        profiled,
        bool(metrics.get("profiler_on", 1.0)),
    )
