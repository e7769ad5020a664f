"""``predict``: measured CPU steps beside the cost model's GPU steps; and the validation of
the model on recorded GPU runs. Pure functions of records, descriptions and profiles.

The GPU band is calibrated on the model's validation errors (``errormodel.py``). The CPU's
step at each batch is the one load disturbs least (``gpudecision.cpu_step``: the least
disturbed process's median, its band from the lower half of its samples), the same for
``run`` and ``predict``. The predicted winner at a batch is "too close: measure it" when the
ratio band of the two straddles 1 (gpudecision.batch_winner); the crossover is
``analysis.crossover.find_crossover`` on the CPU medians and the GPU band mids.

``gpu_would_help`` is the one-call answer for other commands (``run`` on a CPU-only
machine): measured CPU steps and the traced op lists in, one row per batch out.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, cast

from whichdevice.analysis import costmodel, errormodel
from whichdevice.analysis.gpudecision import (
    TOO_CLOSE,
    VARIED,
    GpuDecision,
    batch_winner,
    cpu_step,
    decide,
    ratio_band,
)
from whichdevice.core import stats
from whichdevice.analysis.crossover import Crossover, find_crossover
from whichdevice.analysis.costmodel import LaunchMode, OpCost, Prediction, WorkloadDescription
from whichdevice.analysis.deviceprofile import DeviceCosts, DeviceProfile
from whichdevice.analysis.values import as_int
from whichdevice.core.records import CaseResult, CaseSpec, RunRecord
from whichdevice.workloads import fixes
from whichdevice.workloads.fixes import params_of

_BATCH = fixes.BATCH.param  # a case's batch, as the catalogue names its parameter


def description_from_metrics(metrics: dict[str, float], batch: int) -> WorkloadDescription:
    """Rebuild the op list a ``describe`` case flattened into its metrics (workloads/calibrate.py)."""
    ops: dict[str, dict[str, Any]] = {}
    mode: LaunchMode = "graph"
    for key, value in metrics.items():
        if key.startswith("launch_mode.") and value:
            mode = cast(LaunchMode, key.split(".", 1)[1])  # WorkloadDescription (pydantic) checks it
        if not key.startswith("op."):
            continue
        head, _, field = key.rpartition(".")
        _, index, kind, op_type = head.split(".", 3)
        ops.setdefault(index, {"op_type": op_type, "kind": kind})[field] = value
    return WorkloadDescription(
        batch=batch,
        ops=[OpCost(**ops[i]) for i in sorted(ops)],
        input_bytes=metrics.get("input_bytes", 0.0),
        free_ops=int(metrics.get("free_ops", 0)),
        launch_mode=mode,
        compiled=mode != "eager",
        tf32=bool(metrics.get("tf32", 0.0)),
    )


def winner(cpu_low: float, cpu_high: float, gpu: costmodel.Band, cpu_median: float | None = None) -> str:
    """The winner only when the band of the ratio GPU / CPU excludes 1 (gpudecision.batch_winner)."""
    mid = cpu_median if cpu_median is not None else math.sqrt(cpu_low * cpu_high)
    return batch_winner(ratio_band(mid, cpu_low, cpu_high, gpu))


HOST_OVERHEAD_BATCHES = 3


def host_overhead(cpu_measured: dict[int, float], cpu_compute: dict[int, float]) -> float:
    """Per-step host time, measured: the median, over the ``HOST_OVERHEAD_BATCHES`` smallest
    batches, of the measured CPU step minus the cost model's CPU *compute* at that batch (its
    CPU step without the per-kernel dispatch floor: ``cpu_compute_s``), clamped at 0."""
    bs = sorted(b for b in cpu_measured if b in cpu_compute)[:HOST_OVERHEAD_BATCHES]
    if not bs:
        return 0.0
    return max(stats.median([cpu_measured[b] - cpu_compute[b] for b in bs]), 0.0)


def cpu_compute_s(work: WorkloadDescription, profile: DeviceProfile) -> float:
    """The cost model's CPU step for ``work`` without its per-kernel dispatch floor."""
    p = costmodel.predict(work.model_copy(update={"input_bytes": 0.0}), profile.cpu, profile.dispatch_mode)
    if p.step is None:
        return 0.0
    return max(p.step.mid - p.parts_s.get("dispatch/launch", 0.0), 0.0)


def with_host_overhead(work: WorkloadDescription, overhead_s: float, profile: DeviceProfile) -> WorkloadDescription:
    """``work`` with the measured host overhead, and the CPU per-kernel dispatch it already
    holds: the eager figure for an eager step; for a compiled one the in-graph figure when
    the profile has it, else 0 (a lower bound: the GPU's extra per kernel is then an upper one)."""
    if work.launch_mode == "eager":
        paid = profile.cpu.dispatch_eager_s
    else:
        paid = profile.cpu.dispatch_graph_s or 0.0
    return work.model_copy(update={"host_overhead_s": overhead_s, "host_dispatch_paid_s": paid})


def framework_key(framework: str) -> str:
    """The error model's name for a framework (its launch mode differs, its bias too)."""
    return framework.replace("_", "-")


@dataclass(frozen=True)
class GpuAnswer:
    """One batch: the measured CPU step, the calibrated GPU prediction, who wins."""

    batch: int
    # the CPU's step as gpudecision.cpu_step takes it: its undisturbed median, its band's low and
    # high edges (named for the quartiles they are when its times held steady)
    cpu_s: float | None
    cpu_q1_s: float | None
    cpu_q3_s: float | None
    gpu: Prediction  # the cost model's own prediction (parts, bound, assumptions)
    band: costmodel.Band | None  # calibrated on the validation errors (None: cannot predict)
    kernels: int
    winner: str  # "CPU" | "GPU" | TOO_CLOSE | "—"

    @property
    def too_close(self) -> bool:
        """The ratio band straddles 1: no winner, measure it."""
        return self.winner == TOO_CLOSE

    @property
    def ratio(self) -> costmodel.Band | None:
        """The predicted step ratio GPU / CPU with its band (None: no prediction or no CPU step)."""
        if self.band is None or self.cpu_s is None or self.cpu_q1_s is None or self.cpu_q3_s is None:
            return None
        return ratio_band(self.cpu_s, self.cpu_q1_s, self.cpu_q3_s, self.band)


def gpu_would_help(
    framework: str,
    cpu_steps: dict[int, tuple[float, float, float]],
    described: dict[int, WorkloadDescription],
    profile: DeviceProfile,
    errors: errormodel.ErrorModel | None,
    *,
    steps_per_execution: int = 1,
) -> list[GpuAnswer]:
    """Would a GPU help? Pure: per batch, the measured CPU step ``(mid, low, high)`` (``gpudecision.cpu_step``) beside
    the GPU step predicted on ``profile`` from the traced op list, with its calibrated band,
    and the winner only when the two do not overlap.

    The per-step host overhead is measured from ``cpu_steps`` (``host_overhead``) and added
    to every batch's GPU host time. The batch is taken to be on the GPU already, as the CPU
    steps were measured. ``errors`` (``errormodel.shipped()``) calibrates the band (None: the
    model's own band only — narrower than the truth, say so)."""
    gpu_costs = profile.gpu
    if gpu_costs is None:
        raise ValueError("the profile has no GPU")
    compute = {b: cpu_compute_s(w, profile) for b, w in described.items()}
    overhead = host_overhead({b: v[0] for b, v in cpu_steps.items()}, compute)
    out = []
    for b in sorted(described):
        work = with_host_overhead(described[b], overhead, profile).model_copy(
            update={"steps_per_execution": steps_per_execution, "input_bytes": 0.0}
        )
        out.append(answer(framework, b, cpu_steps.get(b), work, gpu_costs, profile.dispatch_mode, errors))
    return out


def answer(
    framework: str,
    batch: int,
    cpu: tuple[float, float, float] | None,
    work: WorkloadDescription,
    gpu: DeviceCosts,
    dispatch_mode: str,
    errors: errormodel.ErrorModel | None,
) -> GpuAnswer:
    """One batch: the cost model's GPU step for ``work``, its band calibrated on ``errors`` for
    the framework and the step's regime (None: the model's own band), and the winner beside the
    measured CPU step ``cpu`` (median, low, high; None: not measured, no winner)."""
    pred = costmodel.predict(work, gpu, dispatch_mode)
    band = None
    if pred.step is not None:
        regime = pred.bound or "host dispatch"
        band = (
            errors.band(pred.step.mid, framework_key(framework), regime, pred.step) if errors is not None else pred.step
        )
    w = "—" if band is None or cpu is None else winner(cpu[1], cpu[2], band, cpu[0])
    median, q1, q3 = cpu if cpu is not None else (None, None, None)
    return GpuAnswer(batch, median, q1, q3, gpu=pred, band=band, kernels=work.kernels, winner=w)


def measure_command(framework: str, batches: list[int]) -> str:
    """The command that settles a "too close" batch on a machine with a GPU."""
    return f"whichdevice train --framework {framework} --batches {','.join(str(b) for b in batches)}"


@dataclass(frozen=True)
class PredictReport:
    rows: list[GpuAnswer]
    crossover: Crossover
    assumptions: tuple[costmodel.Assumption, ...]
    extrapolated: tuple[costmodel.Extrapolation, ...]
    cannot_predict: costmodel.CannotPredict | None
    failures: list[str]
    framework: str = "tensorflow"
    calibrated: str | None = None  # where the band's calibration comes from (None: not calibrated)
    too_close_command: str | None = None  # measure the "too close" batches with this
    decision: GpuDecision = GpuDecision(())  # the one answer run and predict show (gpudecision.decide)
    # (factor, batch): the most the CPU's times varied at a batch (gpudecision.CpuStep.varied),
    # when above gpudecision.VARIED; None: they held steady
    cpu_varied: tuple[float, int] | None = None


def predict_report(
    record: RunRecord, profile: DeviceProfile, errors: errormodel.ErrorModel | None = None
) -> PredictReport:
    """Rows per batch from a ``predict`` record: its describe cases and its measured steps."""
    described, measured, failures = _traces_and_steps(record.results)
    framework = str(record.options.get("framework") or "tensorflow")
    spe = as_int(record.options.get(fixes.STEPS_PER_EXECUTION.param) or 1)
    planned = [
        as_int(params_of(r.spec).get(_BATCH, 0)) for r in record.results if params_of(r.spec).get("probe") != "describe"
    ]
    report = _report(framework, measured, described, failures, profile, errors, spe, planned)
    return dataclasses.replace(report, cpu_varied=_varied(record.results))


def _varied(results: list[CaseResult]) -> tuple[float, int] | None:
    """The most the CPU's measured steps varied at one batch, with the batch, when above
    ``VARIED`` (gpudecision.CpuStep.varied); None when every batch held steady."""
    worst = max(
        (
            (cpu_step(r.timing.rounds).varied, as_int(params_of(r.spec).get(_BATCH, 0)))
            for r in results
            if r.status == "ok" and r.timing is not None and params_of(r.spec).get("probe") != "describe"
        ),
        default=None,
    )
    return worst if worst is not None and worst[0] > VARIED else None


def _traces_and_steps(
    results: list[CaseResult],
) -> tuple[dict[int, WorkloadDescription], dict[int, tuple[float, float, float]], list[str]]:
    """The op traces by batch, the measured CPU steps by batch as the prediction takes them
    (``gpudecision.cpu_step``: the least disturbed median, the low and high edges of its band),
    and the failures."""
    described: dict[int, WorkloadDescription] = {}
    measured: dict[int, tuple[float, float, float]] = {}
    failures = []
    for r in results:
        b = as_int(params_of(r.spec).get(_BATCH, 0))
        if r.status != "ok":
            failures.append(f"{params_of(r.spec).get('probe', params_of(r.spec).get('kind'))} batch {b}: {r.error}")
            continue
        if params_of(r.spec).get("probe") == "describe":
            described[b] = description_from_metrics(r.metrics, b)
        elif r.timing is not None:
            step = cpu_step(r.timing.rounds)
            measured[b] = (step.mid, step.low, step.high)
    return described, measured, failures


def _report(
    framework: str,
    measured: dict[int, tuple[float, float, float]],
    described: dict[int, WorkloadDescription],
    failures: list[str],
    profile: DeviceProfile,
    errors: errormodel.ErrorModel | None,
    spe: int = 1,
    planned: list[int] | None = None,
) -> PredictReport:
    rows = gpu_would_help(framework, measured, described, profile, errors, steps_per_execution=spe)
    assumptions, extrapolated, cannot = rows_said(rows)
    h2d = profile.gpu.h2d if profile.gpu is not None else []
    if rows and h2d and described:
        big = max(described.values(), key=lambda w: w.input_bytes)
        copy, _ = costmodel.transfer_time(h2d, big.input_bytes)
        assumptions.append(costmodel.Assumption("batch_on_gpu", copy_s=copy.mid, batch=big.batch))
    if rows:
        assumptions.append(costmodel.Assumption("host_from_cpu"))
    return report_of(
        framework,
        rows,
        errors,
        (assumptions, extrapolated, cannot, failures),
        lambda close: measure_command(framework, close),
        [r for r in rows if r.batch in measured],
        planned or [],
    )


def rows_said(
    rows: list[GpuAnswer],
) -> tuple[list[costmodel.Assumption], list[costmodel.Extrapolation], costmodel.CannotPredict | None]:
    """What the rows' GPU predictions rest on, for the report: each assumption and each
    extrapolation once (in the rows' order), and the first row's reason it cannot predict."""
    assumptions: list[costmodel.Assumption] = []
    extrapolated: list[costmodel.Extrapolation] = []
    cannot = None
    for row in rows:
        cannot = cannot or row.gpu.cannot_predict
        assumptions += [a for a in row.gpu.assumptions if a not in assumptions]
        extrapolated += [e for e in row.gpu.extrapolated if e not in extrapolated]
    return assumptions, extrapolated, cannot


def report_of(
    framework: str,
    rows: list[GpuAnswer],
    errors: errormodel.ErrorModel | None,
    said: tuple[list[costmodel.Assumption], list[costmodel.Extrapolation], costmodel.CannotPredict | None, list[str]],
    command_for: Callable[[list[int]], str],
    decided: list[GpuAnswer],
    planned: list[int],
) -> PredictReport:
    """The report of ``rows`` with what was said of them (``said``: the assumptions, the
    extrapolations, why it cannot predict, the failures): the crossover of the measured CPU step
    and the predicted GPU step over the batches that have both (the CPU's band edges and the GPU's
    calibrated band as their ranges), the command that settles the "too close" batches
    (``command_for`` of them), and the one answer (``gpudecision.decide`` over ``decided``)."""
    assumptions, extrapolated, cannot, failures = said
    ok = [
        (row.batch, cpu, q1, q3, band)
        for row in rows
        if (cpu := row.cpu_s) is not None
        and (band := row.band) is not None
        and (q1 := row.cpu_q1_s) is not None
        and (q3 := row.cpu_q3_s) is not None
    ]
    cross = find_crossover(
        [b for b, *_ in ok],
        [cpu for _, cpu, *_ in ok],
        [band.mid for *_, band in ok],
        [(q1, q3) for _, _, q1, q3, _ in ok],
        [(band.low, band.high) for *_, band in ok],
    )
    close = [row.batch for row in rows if row.winner == TOO_CLOSE]
    command = command_for(close) if close else None
    calibrated = None if errors is None else errors.source
    decision = decide(decided, planned, command)
    return PredictReport(
        rows, cross, tuple(assumptions), tuple(extrapolated), cannot, failures, framework, calibrated, command, decision
    )


# ---------------- the GPU a `run` without one would have ----------------

RUN_PROFILE = "h100"  # the shipped reference GPU profile `run` predicts on a machine without a GPU
RUN_ERRORS = "h100-2026-11-22"  # its calibration (errormodel.shipped)


def is_trace(spec: CaseSpec) -> bool:
    """A case that traces the step's ops for the cost model (workloads/calibrate.py ``describe``)."""
    return spec.workload == "calibrate" and params_of(spec).get("probe") == "describe"


def interpolated(described: dict[int, WorkloadDescription], batches: list[int]) -> dict[int, WorkloadDescription]:
    """The op list at every batch of ``batches`` from traces at two batches: each op's FLOPs
    and bytes, and the input's bytes, affine in the batch (a dense layer's matmul is 2·B·K·N
    FLOPs and (B·K + K·N + B·N)·4 bytes; an optimizer update does not depend on B). Empty when
    there are not two traces, or they differ in their ops (then it is no such model)."""
    if len(described) < 2:
        return {}
    lo, hi = min(described), max(described)
    a, b = described[lo], described[hi]
    if [(o.op_type, o.kind) for o in a.ops] != [(o.op_type, o.kind) for o in b.ops] or a.launch_mode != b.launch_mode:
        return {}

    def at(x0: float, x1: float, batch: int) -> float:
        return max(x0 + (x1 - x0) * (batch - lo) / (hi - lo), 0.0)

    out = {}
    for k in batches:
        ops = [
            o.model_copy(update={"flops": at(o.flops, p.flops, k), "bytes": at(o.bytes, p.bytes, k)})
            for o, p in zip(a.ops, b.ops)
        ]
        out[k] = described.get(k) or a.model_copy(
            update={"batch": k, "ops": ops, "input_bytes": at(a.input_bytes, b.input_bytes, k)}
        )
    return out


def run_sweep(record: RunRecord) -> list[CaseResult]:
    """The measured CPU steps a ``run``'s prediction rests on: the seed's steady batch sweep
    (no sync) in the record's framework."""
    framework = str(record.options.get("framework") or "tensorflow")
    return [
        r
        for r in record.results
        if r.spec.workload == "train"
        and r.spec.framework == framework
        and params_of(r.spec).get("kind") == "steady"
        and params_of(r.spec).get(fixes.SYNC.param) == "none"
        and params_of(r.spec).get("model") == "seed001"
    ]


def run_prediction(
    record: RunRecord, profile: DeviceProfile, errors: errormodel.ErrorModel | None
) -> PredictReport | None:
    """A ``run`` on a machine without a GPU: its measured CPU batch sweep (steady steps, no
    sync) beside ``profile``'s GPU predicted from the op traces it took (workloads/suite.py
    ``TRACED_BATCHES``, interpolated between: :func:`interpolated`). None when the record has no trace (a run from
    before the traces, or a diagnose) or no sweep step to set beside them."""
    framework = str(record.options.get("framework") or "tensorflow")
    traces = [r for r in record.results if is_trace(r.spec) and r.spec.framework == framework]
    sweep = run_sweep(record)
    if not traces or not sweep:
        return None
    described, measured, failures = _traces_and_steps(traces + sweep)
    every = interpolated(described, sorted(measured)) if described else {}
    planned = [as_int(params_of(r.spec).get(_BATCH, 0)) for r in sweep]
    report = _report(framework, measured, every or described, failures, profile, errors, planned=planned)
    return dataclasses.replace(report, cpu_varied=_varied(sweep))


# ---------------- validation points from a reference GPU run ----------------

# probe_torch.json's mlp keys: (GPU key, the CPU key of the same loop, syncs per step, input copied)
TORCH_VARIANTS = (
    ("cuda_step_s", "cpu_step_s", 0, False),
    ("cuda_step_item_s", "cpu_step_item_s", 1, False),
    ("cuda_step_from_host_s", "cpu_step_from_host_s", 1, True),
)
# The framework probe_torch.json's loops ran in (its rows are predicted with its op list).
PROBE_FRAMEWORK = "torch"
# probe_torch.json's seed001 loops: (key prefix, samples, batch) — whole-loop seconds, one pass
SEED001_LOOPS = (("ex2_small", 1000, 10), ("ex3_large_b32", 100000, 32), ("ex3_large_b1024", 100000, 1024))
KERAS_FIT = re.compile(r"^fit_(\d+)_b(\d+)_epoch_s$")


def _jax_matmul_points(
    keras_runs: dict[str, tuple[dict[str, Any], dict[str, Any]]], profile: DeviceProfile, gpu: DeviceCosts
) -> list[errormodel.Point]:
    """keras_probe.py's jitted matmul on Keras/JAX (CPU run, GPU run) with the cost model's
    prediction of each GPU size: the reference's device-bound points."""
    points: list[errormodel.Point] = []
    jax_runs = keras_runs.get("keras-jax")
    if jax_runs and jax_runs[0].get("jax_matmul") and jax_runs[1].get("jax_matmul"):
        # keras_probe.py's jitted float32 matmul (JAX's default precision: TF32 on the H100), operands
        # on the device, steady calls: one XLA kernel each, device-bound at large n ("batch" = n here)
        cpu_n = {int(r["n"]): r["steady_s"] for r in jax_runs[0]["jax_matmul"]}
        gpu_n = {int(r["n"]): r["steady_s"] for r in jax_runs[1]["jax_matmul"] if int(r["n"]) in cpu_n}
        mm = {
            n: WorkloadDescription(
                batch=n,
                ops=[OpCost(op_type="dot", kind="matmul", flops=2.0 * n**3, bytes=12.0 * n * n)],
                input_bytes=0.0,
                launch_mode="xla",
                tf32=True,
            )
            for n in gpu_n
        }
        h = host_overhead(cpu_n, {n: cpu_compute_s(w, profile) for n, w in mm.items()})
        for n in sorted(gpu_n):
            p = costmodel.predict(with_host_overhead(mm[n], h, profile), gpu, profile.dispatch_mode)
            if p.step is not None:
                points.append(errormodel.Point("jax", n, "jitted matmul", gpu_n[n], p.step, p.bound, cpu_n[n]))
    return points


@dataclass(frozen=True)
class _Loop:
    """One measured loop of a reference run: its CPU and GPU step (seconds) per batch, its syncs
    per step, whether the batch is copied from host each step, and its label."""

    cpu_step: dict[int, float]
    gpu_step: dict[int, float]
    syncs: int
    copy: bool
    quantity: str


def _loop_points(
    fw: str, ops: dict[str, dict[str, float]], loop: _Loop, profile: DeviceProfile, gpu: DeviceCosts
) -> list[errormodel.Point]:
    """``loop``'s GPU steps with the cost model's prediction of each: ``ops``' description per
    batch (``encode_ops`` metrics), the host overhead from the loop's CPU run."""
    cpu_step, gpu_step = loop.cpu_step, loop.gpu_step
    described = {b: description_from_metrics(ops[str(b)], b) for b in gpu_step}
    h = host_overhead(cpu_step, {b: cpu_compute_s(w, profile) for b, w in described.items()})
    points: list[errormodel.Point] = []
    for b in sorted(gpu_step):
        base = with_host_overhead(described[b], h, profile)
        update = {"input_bytes": base.input_bytes if loop.copy else 0.0, "syncs_per_step": loop.syncs}
        p = costmodel.predict(base.model_copy(update=update), gpu, profile.dispatch_mode)
        if p.step is not None:
            points.append(errormodel.Point(fw, b, loop.quantity, gpu_step[b], p.step, p.bound, cpu_step.get(b)))
    return points


def _mlp_points(
    probe: dict[str, Any], op_lists: dict[str, dict[str, dict[str, float]]], profile: DeviceProfile, gpu: DeviceCosts
) -> list[errormodel.Point]:
    """``probe_torch.json``'s ``mlp`` rows, each loop variant (``TORCH_VARIANTS``), predicted
    with TensorFlow's op list (when given) and then PyTorch's."""
    points: list[errormodel.Point] = []
    rows = {int(r["batch"]): r for r in probe.get("mlp", [])}
    for fw in ("tensorflow", "torch"):
        if fw not in op_lists or not rows:
            continue
        for key, cpu_key, syncs, copy in TORCH_VARIANTS:
            loop = _Loop(
                {b: r[cpu_key] for b, r in rows.items()}, {b: r[key] for b, r in rows.items()}, syncs, copy, key
            )
            points += _loop_points(fw, op_lists[fw], loop, profile, gpu)
    return points


def _seed001_points(
    probe: dict[str, Any], op_lists: dict[str, dict[str, dict[str, float]]], profile: DeviceProfile, gpu: DeviceCosts
) -> list[errormodel.Point]:
    """``probe_torch.json``'s ``seed001`` loops as written (batch copied from host, ``.item()``
    each step), per step = loop seconds / steps, predicted with PyTorch's op list."""
    seed = probe.get("seed001", {})
    ops = op_lists.get(PROBE_FRAMEWORK)
    if ops is None or not seed:
        return []
    cpu_step: dict[int, float] = {}
    gpu_step: dict[int, float] = {}
    for key, n, b in SEED001_LOOPS:
        if f"{key}_cpu_s" in seed and f"{key}_cuda_s" in seed and str(b) in ops:
            steps = math.ceil(n / b)
            cpu_step[b], gpu_step[b] = seed[f"{key}_cpu_s"] / steps, seed[f"{key}_cuda_s"] / steps
    if not gpu_step:
        return []
    loop = _Loop(cpu_step, gpu_step, 1, True, "seed 001 loop")
    return _loop_points(PROBE_FRAMEWORK, ops, loop, profile, gpu)


def _keras_fit_points(
    keras_runs: dict[str, tuple[dict[str, Any], dict[str, Any]]],
    op_lists: dict[str, dict[str, dict[str, float]]],
    profile: DeviceProfile,
    gpu: DeviceCosts,
) -> list[errormodel.Point]:
    """``keras_probe.py``'s ``fit`` runs (framework -> CPU run, GPU run): epoch 2 of each / its
    steps, the batch copied from host every step."""
    points: list[errormodel.Point] = []
    for fw, (cpu_run, gpu_run) in sorted(keras_runs.items()):
        if fw not in op_lists:
            continue
        cpu_step: dict[int, float] = {}
        gpu_step: dict[int, float] = {}
        for key, epochs in gpu_run.items():
            m = KERAS_FIT.match(key)
            if not m or key not in cpu_run:
                continue
            n, b = int(m.group(1)), int(m.group(2))
            steps = math.ceil(n / b)
            gpu_step[b], cpu_step[b] = epochs[-1] / steps, cpu_run[key][-1] / steps
        points += _loop_points(fw, op_lists[fw], _Loop(cpu_step, gpu_step, 0, True, "fit step"), profile, gpu)
    return points


def reference_points(
    probe: dict[str, Any],
    keras_runs: dict[str, tuple[dict[str, Any], dict[str, Any]]],
    op_lists: dict[str, dict[str, dict[str, float]]],
    profile: DeviceProfile,
) -> list[errormodel.Point]:
    """Every GPU step of a reference run with the cost model's prediction of it.

    - ``probe``: ``probe_torch.json``; its ``mlp`` rows are predicted with ``op_lists["torch"]``
      (and with ``op_lists["tensorflow"]`` when given: TensorFlow's graph model checked
      against PyTorch's measured steps, labelled ``tensorflow``); its ``seed001`` loops (the
      seed's examples as written: batch copied from host and ``.item()`` every step) with
      ``op_lists["torch"]``, per step = loop seconds / steps;
    - ``keras_runs``: framework -> (CPU run, GPU run) of ``keras_probe.py``: epoch 2 of each
      ``fit`` / its steps, the batch copied from host every step; and the Keras/JAX runs'
      ``jax_matmul`` rows (a jitted float32 matmul, framework ``jax``, "batch" = n): the only
      device-bound points of the reference;
    - ``op_lists``: framework -> batch -> a describe case's metrics (``encode_ops``).

    The host overhead of each loop comes from the same machine's CPU run of that loop."""
    gpu = profile.gpu
    if gpu is None:
        raise ValueError("the profile has no GPU")
    return (
        _mlp_points(probe, op_lists, profile, gpu)
        + _seed001_points(probe, op_lists, profile, gpu)
        + _jax_matmul_points(keras_runs, profile, gpu)
        + _keras_fit_points(keras_runs, op_lists, profile, gpu)
    )
