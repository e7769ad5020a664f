"""``predict``: measured CPU steps beside the cost model's GPU steps; and the validation of
the model on recorded GPU runs. Pure functions of records, descriptions and profiles.

The predicted winner at a batch is "too close to call" when the CPU's measured quartile
range overlaps the GPU's predicted band (the model cannot separate them there); the
crossover is ``analysis.crossover.find_crossover`` on the CPU medians and the GPU band mids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from whichdevice.analysis import costmodel
from whichdevice.core import stats
from whichdevice.analysis.crossover import Crossover, find_crossover
from whichdevice.analysis.costmodel import OpCost, Prediction, WorkloadDescription
from whichdevice.analysis.deviceprofile import DeviceProfile
from whichdevice.core.records import RunRecord


def description_from_metrics(
    metrics: dict[str, float], batch: int, *, syncs_per_step: int = 0, copy_input: bool = True
) -> WorkloadDescription:
    """Rebuild the op list a ``describe`` case flattened into its metrics (workloads/calibrate.py)."""
    ops: dict[str, dict] = {}
    for key, value in metrics.items():
        if not key.startswith("op."):
            continue
        head, _, field = key.rpartition(".")
        _, index, kind, op_type = head.split(".", 3)
        ops.setdefault(index, {"op_type": op_type, "kind": kind})[field] = value
    return WorkloadDescription(
        batch=batch,
        ops=[OpCost(**ops[i]) for i in sorted(ops)],
        input_bytes=metrics.get("input_bytes", 0.0) if copy_input else 0.0,
        free_ops=int(metrics.get("free_ops", 0)),
        syncs_per_step=syncs_per_step,
    )


def winner(cpu_low: float, cpu_high: float, gpu: costmodel.Band) -> str:
    if cpu_high < gpu.low:
        return "CPU"
    if gpu.high < cpu_low:
        return "GPU"
    return "too close"


@dataclass(frozen=True)
class PredictRow:
    batch: int
    cpu_s: float | None  # measured median
    cpu_q1_s: float | None
    cpu_q3_s: float | None
    gpu: Prediction
    kernels: int
    winner: str


@dataclass(frozen=True)
class PredictReport:
    rows: list[PredictRow]
    crossover: Crossover
    assumptions: tuple[str, ...]
    extrapolated: tuple[str, ...]
    cannot_predict: str | None
    failures: list[str]


def predict_report(record: RunRecord, profile: DeviceProfile) -> PredictReport:
    """Rows per batch from a ``predict`` record: its describe cases and its measured steps."""
    gpu_costs = profile.gpu
    assert gpu_costs is not None, "checked at the boundary: predict needs a profile with a GPU"
    described: dict[int, WorkloadDescription] = {}
    measured: dict[int, tuple[float, float, float]] = {}
    failures = []
    for r in record.results:
        b = int(r.spec.params.get("batch", 0))
        if r.status != "ok":
            failures.append(f"{r.spec.params.get('probe', r.spec.params.get('kind'))} batch {b}: {r.error}")
            continue
        if r.spec.params.get("probe") == "describe":
            described[b] = description_from_metrics(r.metrics, b)
        elif r.timing is not None:
            t = r.timing
            measured[b] = (t.median_s, t.q1_s, t.q3_s)
    rows = []
    assumptions: list[str] = []
    extrapolated: list[str] = []
    cannot = None
    for b in sorted(described):
        pred = costmodel.predict(described[b], gpu_costs, profile.dispatch_mode)
        cannot = cannot or pred.cannot_predict
        assumptions += [a for a in pred.assumptions if a not in assumptions]
        extrapolated += [e for e in pred.extrapolated if e not in extrapolated]
        cpu = measured.get(b)
        w = "—" if pred.step is None or cpu is None else winner(cpu[1], cpu[2], pred.step)
        rows.append(PredictRow(b, *(cpu or (None, None, None)), gpu=pred, kernels=described[b].kernels, winner=w))
    ok = [r for r in rows if r.cpu_s is not None and r.gpu.step is not None]
    cross = find_crossover(
        [r.batch for r in ok],
        [r.cpu_s for r in ok],
        [r.gpu.step.mid for r in ok],
        [(r.cpu_q1_s, r.cpu_q3_s) for r in ok],
        [(r.gpu.step.low, r.gpu.step.high) for r in ok],
    )
    return PredictReport(rows, cross, tuple(assumptions), tuple(extrapolated), cannot, failures)


# ---------------- validation on the recorded H100 run ----------------

# (reference key, syncs per step, input copied from the host) — see the reference README.
GPU_VARIANTS = (("cuda_step_s", 0, False), ("cuda_step_item_s", 1, False), ("cuda_step_from_host_s", 1, True))


@dataclass(frozen=True)
class ValidationPoint:
    batch: int
    quantity: str  # reference key
    measured_s: float
    predicted: costmodel.Band | None
    dominant: str | None

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured."""
        return None if self.predicted is None else self.predicted.mid / self.measured_s - 1.0

    @property
    def inside_band(self) -> bool:
        return self.predicted is not None and self.predicted.low <= self.measured_s <= self.predicted.high


@dataclass(frozen=True)
class Validation:
    points: list[ValidationPoint]
    measured_crossover: Crossover
    predicted_crossover: Crossover  # predicted CPU vs predicted GPU
    mixed_crossover: Crossover  # measured CPU vs predicted GPU (what `predict` does)
    winners: list[tuple[int, str, str, bool]]  # batch, measured winner, predicted winner, inside the close band

    def errors(self, quantity: str) -> list[float]:
        return [p.error for p in self.points if p.quantity == quantity and p.error is not None]

    def median_abs_error(self, quantity: str) -> float:
        return stats.median([abs(e) for e in self.errors(quantity)])


def validate_on_probe(
    mlp_rows: list[dict], profile: DeviceProfile, described: dict[int, WorkloadDescription]
) -> Validation:
    """Predict the reference's ``mlp`` rows (steady steps, no input copy unless the key says so)."""
    points = []
    pred_cpu: dict[int, costmodel.Band] = {}
    pred_gpu: dict[int, costmodel.Band] = {}
    for row in mlp_rows:
        b = int(row["batch"])
        base = described[b]
        cpu = costmodel.predict(base.model_copy(update={"input_bytes": 0.0}), profile.cpu, profile.dispatch_mode)
        points.append(ValidationPoint(b, "cpu_step_s", row["cpu_step_s"], cpu.step, cpu.dominant))
        pred_cpu[b] = cpu.step
        for key, syncs, copy in GPU_VARIANTS:
            work = base.model_copy(update={"input_bytes": base.input_bytes if copy else 0.0, "syncs_per_step": syncs})
            g = costmodel.predict(work, profile.gpu, profile.dispatch_mode)
            points.append(ValidationPoint(b, key, row[key], g.step, g.dominant))
            if key == "cuda_step_s":
                pred_gpu[b] = g.step
    bs = [int(r["batch"]) for r in mlp_rows]
    measured = find_crossover(bs, [r["cpu_step_s"] for r in mlp_rows], [r["cuda_step_s"] for r in mlp_rows])
    predicted = find_crossover(
        bs,
        [pred_cpu[b].mid for b in bs],
        [pred_gpu[b].mid for b in bs],
        [(pred_cpu[b].low, pred_cpu[b].high) for b in bs],
        [(pred_gpu[b].low, pred_gpu[b].high) for b in bs],
    )
    mixed = find_crossover(bs, [r["cpu_step_s"] for r in mlp_rows], [pred_gpu[b].mid for b in bs])
    winners = []
    for r in mlp_rows:
        b = int(r["batch"])
        mw = "CPU" if r["cpu_step_s"] <= r["cuda_step_s"] else "GPU"
        pw = winner(pred_cpu[b].low, pred_cpu[b].high, pred_gpu[b])
        if pw == "too close":
            pw_mid = "CPU" if pred_cpu[b].mid <= pred_gpu[b].mid else "GPU"
            winners.append((b, mw, pw_mid, True))
        else:
            winners.append((b, mw, pw, False))
    return Validation(points, measured, predicted, mixed, winners)


def crossover_ratio(a: Crossover, b: Crossover) -> float | None:
    """max(a/b, b/a) of two 'between' crossovers' estimates."""
    if a.kind != "between" or b.kind != "between":
        return None
    r = a.estimate / b.estimate
    return max(r, 1 / r) if r > 0 and math.isfinite(r) else None
