"""Which ops ran where, and the host<->device copies a training step makes: a placement case's
metrics (the framework's own log and profile, parsed in the measuring child by
``frameworks/tensorflow/logparse.py``, which says what each source can say) rebuilt into tables.

Pure: numbers in, tables out (no framework import), so it is tested on real output captured on
a CPU (``tests/data/placement/``).
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
    PYTHON_OPS,
    RESOURCE_OPS,
)


# ---------------- why an op is on the CPU ----------------


CpuOpCause = Literal["python", "no_gpu_kernel", "plumbing", "variable", "dtype_or_host_memory", "unknown"]


def cpu_op_cause(op_type: str, kernel_devices: set[str] | None) -> CpuOpCause:
    """Why ``op_type`` ran on the CPU in a GPU run (present/pages/placement.py words it).

    ``kernel_devices``: the device types TensorFlow has kernels for (``CPU``, ``GPU``,
    ``DEFAULT`` = any device), from the kernel registry; None when unknown."""
    if op_type in PYTHON_OPS:
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


# ---------------- torch and JAX: a traced step (frameworks/<fw>/optrace.py) -> tables ----------------

# ATen ops that only make a new view of a tensor or mark it (no kernel, no data moved), and the
# profiler's own markers: counted apart, as TensorFlow's graph plumbing is.
VIEW_OPS = frozenset(
    {
        "t",
        "view",
        "_unsafe_view",
        "detach",
        "lift_fresh",
        "as_strided",
        "transpose",
        "expand",
        "alias",
        "reshape",
        "permute",
        "squeeze",
        "unsqueeze",
        "slice",
        "select",
        "_record_function_enter_new",
        "_record_function_exit",
        "resolve_conj",
        "resolve_neg",
    }
)
NESTED = "composite or nested"  # ops the profiler timed that the dispatch mode did not see: composites
# (linear, cross_entropy_loss: decomposed before dispatch) and ops called inside other ops


@dataclass(frozen=True)
class TracedOp:
    """One op type of a traced step: where it ran, its calls and self times per step.
    ``host_us``: its time on the host (the CPU: the work itself on a CPU, the launch on a GPU);
    ``gpu_us``: its kernels' time on the GPU; None: not measured."""

    op_type: str
    ran_on: str  # CPU:0, GPU:0, "CPU:0,GPU:0", or NESTED
    calls: float  # per step
    host_us: float | None
    gpu_us: float | None
    view: bool

    @property
    def nested(self) -> bool:
        """Timed by the profiler, not seen by the dispatch mode (:data:`NESTED`)."""
        return self.ran_on == NESTED


@dataclass(frozen=True)
class TracedPlacement:
    """One device's traced step (torch, JAX): ops, copies between host and device, syncs."""

    device: str
    ops: list[TracedOp]  # busiest first, views last
    copies: dict[str, int]  # per step, by direction: H2D, D2H, D2D
    copy_bytes: dict[str, int]  # per step, by direction (absent: unknown)
    pinned: int
    pageable: int
    syncs: dict[str, int]  # per step, by cause: item, copy_to_host, read_back, nonzero...
    host_reads: int  # scalar reads to Python per step (a sync only of a GPU value)
    read_backs: int  # loss reads per step the loop makes (the seeds' loop: 1)
    feed_tensors: int
    feed_bytes: int
    memcpy: dict[str, int]  # GPU copy kernels by the profiler's name, per step
    profiled_steps: int
    step_s: float
    profiled: bool

    @property
    def on_cpu_in_gpu_run(self) -> list[TracedOp]:
        """Ops that ran on the CPU although the step was asked to run on a GPU (work only)."""
        if not self.device.startswith("GPU"):
            return []
        return [o for o in self.ops if o.ran_on.startswith("CPU") and "GPU" not in o.ran_on and not o.view]


def is_traced(metrics: dict[str, float]) -> bool:
    """A placement case of torch or JAX (``workloads/placement.run_traced``)."""
    return bool(metrics.get("traced"))


def traced_placement(device: str, metrics: dict[str, float], step_s: float) -> TracedPlacement:
    """Rebuild one device's traced step from a placement case's metrics."""
    steps = max(1, int(metrics.get("profiled_steps", 1)))
    calls: dict[str, tuple[str, float]] = {}
    per: dict[str, dict[str, float]] = defaultdict(dict)
    copies: dict[str, int] = {}
    copy_bytes: dict[str, int] = {}
    syncs: dict[str, int] = {}
    memcpy: dict[str, int] = {}
    for k, v in metrics.items():
        parts = k.split("|")
        if parts[0] == "op_calls" and len(parts) == 3:
            calls[parts[2]] = (parts[1], v)
        elif parts[0] in ("op_host_us", "op_gpu_us", "op_occ") and len(parts) == 2:
            per[parts[1]][parts[0]] = v
        elif parts[0] == "copies" and len(parts) == 2:
            copies[parts[1]] = round(v)
        elif parts[0] == "copy_bytes" and len(parts) == 2:
            copy_bytes[parts[1]] = int(v)
        elif parts[0] == "syncs" and len(parts) == 2:
            syncs[parts[1]] = round(v)
        elif parts[0] == "memcpy" and len(parts) == 2:
            memcpy[parts[1]] = round(v / steps)
    profiled = bool(metrics.get("op_stats"))
    gpu = device.startswith("GPU")
    rows = []
    for name in sorted(set(calls) | set(per)):
        where, n = calls.get(name, (NESTED, per[name].get("op_occ", 0.0) / steps))
        host = per[name].get("op_host_us")
        dev = per[name].get("op_gpu_us", 0.0 if gpu and profiled else None)
        rows.append(
            TracedOp(
                name,
                where,
                n,
                None if host is None else host / steps,
                None if dev is None else dev / steps,
                name in VIEW_OPS,
            )
        )
    rows.sort(key=lambda o: (o.view, -((o.host_us or 0.0) + (o.gpu_us or 0.0)), -o.calls, o.op_type))
    return TracedPlacement(
        device,
        rows,
        copies,
        copy_bytes,
        int(metrics.get("copies_pinned", 0)),
        int(metrics.get("copies_pageable", 0)),
        syncs,
        int(metrics.get("host_reads", 0)),
        int(metrics.get("read_backs", 0)),
        int(metrics.get("feed_tensors", 0)),
        int(metrics.get("feed_bytes", 0)),
        memcpy,
        steps,
        step_s,
        profiled,
    )
