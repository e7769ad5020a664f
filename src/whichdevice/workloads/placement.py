"""Which ops of a training step ran on which device, how long they took, and the copies
between devices (``whichdevice placement``). Runs inside a child as kind ``placement`` of the
``train`` workload.

Method, per device (one child each):

1. Build the model (seed 001's, or the user's), its optimizer and loss, and one batch.
2. A short **probe process** (``frameworks.tensorflow.placement_log``) builds the same step with
   placement logging on from its first op and fds 1/2 captured, and runs it once: TensorFlow
   traces, places every node (one log line each) and runs it. That text is the placement
   record; the step graph's edges come with it.
3. In this child: three warm-up calls, then ``steps`` steps under the **profiler**, each synchronized
   and timed on its own: the steady window only, never the first call (TensorFlow's GPU guide:
   "avoid profiling the first few batches"). XProf's ``framework_op_stats`` gives per-op
   occurrences and self time.
4. Copies: the step graph's edges whose ends were placed on different devices, plus the
   batch fed from NumPy (two tensors a step) when the step runs on a GPU.

Everything is returned as float metrics with structured keys (``placed|CPU:0|MatMul``,
``self_us|Host|MatMul``, ``occ|Host|MatMul``, ``gpu_kernel|AsString``, ``copies|CPU:0->GPU:0``)
so the record keeps its schema and ``analysis.placement_report`` rebuilds the tables.

torch and JAX have no placer and no placement log: their framework's ``optrace``
part traces the same whole step (batch from NumPy, step, loss read back as the seeds' loop
does) with the framework's own tools (:func:`run_traced`); metrics ``op_calls|DEVICE|OP``,
``op_host_us|OP``, ``op_gpu_us|OP``, ``copies|H2D``, ``syncs|...`` (``analysis.placement.traced_placement``).

Trade-off: the profiler adds its own cost to the profiled steps, so their times are for
attributing time between ops, not for comparing devices (``whichdevice train`` does that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whichdevice.core.records import CaseSpec, Timing
    from whichdevice.core.timing import TimingPolicy
    from whichdevice.frameworks.contracts import Framework, PlacementLog

import contextlib
import tempfile
from pathlib import Path

from whichdevice.frameworks.tensorflow.logparse import (
    Edge,
    count_copies,
    op_type_counts,
    parse_op_stats,
    parse_placement_log,
    placement_map,
)
from whichdevice.core.records import scalar_int
from whichdevice.core.steps import raw_from_steps, time_loop
from whichdevice.workloads import defaults
from whichdevice.workloads.fixes import BATCH

DEFAULT_STEPS = defaults.PLACEMENT_STEPS
QUICK_STEPS = defaults.PLACEMENT_QUICK_STEPS


def run_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict[str, float]]:
    from whichdevice.frameworks.common.casemodel import CaseModel

    from whichdevice import frameworks

    if "optrace" in frameworks.PARTS[fw.name]:
        return run_traced(spec, fw, overhead_s)

    plog = frameworks.part(fw.name, "placement_log")
    prof = frameworks.part(fw.name, "profiler")
    training = frameworks.part(fw.name, "training")
    p = spec.params
    m = CaseModel(p)
    b, steps = scalar_int(p[BATCH.param]), scalar_int(p.get("steps", DEFAULT_STEPS))
    with fw.placement.scope(spec.device):
        model = m.build()
        opt, loss = m.optimizer_and_loss(model)
        step = plog.train_step(model, opt, loss, with_string_op=bool(p.get("string_op", False)))
        x, y = m.one_batch(training, b)
        sync = fw.sync.sync

        for _ in range(3):
            sync(plog.first(step(x, y)))
        trace_root = p.get("trace_dir")
        tmp = None if trace_root else tempfile.TemporaryDirectory(prefix="whichdevice-prof-")
        logdir = Path(tmp.name) if tmp is not None else Path(str(trace_root))
        try:
            # The profiler runs when its trace is kept (--trace) or xprof can read op times
            # from it; else it would only cost its start-up (~1 s) and slow the steps.
            profile = bool(trace_root) or prof.xprof_available()
            with prof.trace(logdir) if profile else contextlib.nullcontext():
                times = time_loop(range(steps), lambda _: plog.first(step(x, y)), sync=sync)
            files = prof.xplane_files(logdir) if profile else []
            stats_json = prof.framework_op_stats(files[-1]) if files else None
        finally:
            if tmp is not None:
                tmp.cleanup()

    if spec.device.startswith("CPU"):
        # A CPU child hides every GPU (CUDA_VISIBLE_DEVICES=-1): each node of the step can only be
        # placed on CPU:0, so the placer has nothing to tell. The step's own graph gives its
        # nodes without the probe's extra TensorFlow import (~4-7 s of `run`).
        placed, edges = plog.graph_placement(step.get_concrete_function(x, y), spec.device)
    else:  # a GPU: the placer decides, and only its log says where each node went
        probe = plog.run_probe(spec.device, dict(p))
        placed = parse_placement_log(probe["log"])
        edges = [Edge(a, b, n) for a, b, n in probe["edges"]]
    metrics: dict[str, float] = {
        "samples_per_step": float(b),
        "profiled_steps": float(len(times)),
        "placement_lines": float(len(placed)),
        "placement_from_graph": 1.0 if spec.device.startswith("CPU") else 0.0,
        "op_stats": 1.0 if stats_json is not None else 0.0,
        "profiler_on": 1.0 if profile else 0.0,
    }
    _placement_metrics(metrics, placed, edges, plog)
    metrics["feed_tensors"] = 2.0
    metrics["feed_bytes"] = float(x.nbytes + y.nbytes)
    if stats_json is not None:
        _op_stats_metrics(metrics, stats_json)
    return raw_from_steps(times, warmup_steps=1, overhead_s=overhead_s), metrics


def _placement_metrics(metrics: dict[str, float], placed: list, edges: list, plog: PlacementLog) -> None:
    """Where each op went (``placed|DEVICE|OP``), whether a GPU kernel exists for it
    (``gpu_kernel|OP``) and the copies between devices the placement implies."""
    for device, counter in op_type_counts(placed, include_plumbing=True).items():
        for op_type, n in counter.items():
            metrics[f"placed|{device}|{op_type}"] = float(n)
    for op_type in sorted({q.op_type for q in placed}):
        kd = plog.kernel_devices(op_type)
        if kd is not None:
            metrics[f"gpu_kernel|{op_type}"] = 1.0 if {"GPU", "DEFAULT"} & kd else 0.0
    copies = count_copies(edges, placement_map(placed))
    metrics["copies"] = float(copies.count)
    metrics["copy_bytes"] = float(copies.nbytes)
    metrics["copies_unknown_size"] = float(copies.unknown_size)
    for direction, n in copies.by_direction.items():
        metrics[f"copies|{direction}"] = float(n)


def _op_stats_metrics(metrics: dict[str, float], stats_json: bytes) -> None:
    """The profiler's op times, summed per (host or device, op type): ``occ|...``, ``self_us|...``."""
    for s in parse_op_stats(stats_json):
        k = f"{s.host_or_device}|{s.op_type}"
        metrics[f"occ|{k}"] = metrics.get(f"occ|{k}", 0.0) + s.occurrences
        metrics[f"self_us|{k}"] = metrics.get(f"self_us|{k}", 0.0) + s.self_us


def run_traced(spec: CaseSpec, fw: Framework, overhead_s: float) -> tuple[Timing, dict[str, float]]:
    """torch and JAX: the framework's ``optrace`` part over the seeds' whole step (the batch
    from NumPy, the step, the loss read back), on the case's device."""
    from whichdevice import frameworks
    from whichdevice.frameworks.common.casemodel import CaseModel

    trace = frameworks.part(fw.name, "optrace")
    training = frameworks.part(fw.name, "training")
    p = spec.params
    m = CaseModel(p, training)
    b, steps = scalar_int(p[BATCH.param]), scalar_int(p.get("steps", DEFAULT_STEPS))
    with fw.placement.scope(spec.device):
        step, x, y = m.step_and_batch(training, b)

        def call():
            with fw.placement.scope(spec.device):
                return training.read_back(step(x, y))

        metrics, times = trace.trace_step(call, (x, y), steps, spec.device)
    metrics.update(
        {
            "samples_per_step": float(b),
            "traced": 1.0,
            "read_backs": 1.0,  # the loss read back once a step (the seeds' loop)
            "feed_tensors": 2.0,
            "feed_bytes": float(x.nbytes + y.nbytes),
            "profiled_steps": float(len(times)),
        }
    )
    return raw_from_steps(times, warmup_steps=1, overhead_s=overhead_s), metrics
