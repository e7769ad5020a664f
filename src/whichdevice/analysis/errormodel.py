"""The cost model's uncertainty, calibrated on its own validation errors.

A predicted step is only as good as the model's record on real GPU runs. Each validation
point (a step measured on a real GPU, and the cost model's prediction of it made without
looking at it) gives a residual ``r = ln(measured / predicted)``. The band a user sees is

    low  = mid · exp(c_f + q_lo)        mid' = mid · exp(c_f)        high = mid · exp(c_f + q_hi)

- ``c_f``: the median residual of framework f in the point's regime (the step bound by host
  dispatch, or by device work): the model's bias there — e.g. Python per step that the per-op
  figure misses when host-bound, a matmul curve when device-bound; 0 when that framework and
  regime have fewer than ``MIN_POINTS`` (a bias found where the host bounds the step says
  nothing about a step the device bounds).
- ``q_lo``, ``q_hi``: how far the residuals scatter once the framework's bias is taken out,
  from the framework's own points, for the point's regime (the step bound by host dispatch,
  or by device work) when that regime has ``MIN_EMPIRICAL`` of them:
  with ``MIN_EMPIRICAL`` points or more, the (1 - coverage)/2 and (1 + coverage)/2
  quantiles of the centred residuals; with fewer (but ``MIN_POINTS``), the normal-theory
  prediction interval ``± t(n-1) · s · sqrt(1 + 1/n)`` (s their standard deviation) — wide
  on purpose: four points say little; with fewer than ``MIN_POINTS``, every framework's
  points pooled.

The model's own band (extrapolation, unknown ops) widens this further (``apply``). The
validation is leave-one-out (``leave_one_out``): each point's band is fitted on the other
points only, so its coverage is an honest estimate of how often the truth lands inside.

The fitted model ships as ``whichdevice/profiles/errors/<name>.json`` (written by
benchmarks/predict_validation.py --write from the shared H100 reference); it is the
model's error, measured on one GPU machine, and is applied to every profile (said so).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from whichdevice.analysis.costmodel import Band
from whichdevice.core import stats

COVERAGE = 0.8
MIN_POINTS = 3
MIN_EMPIRICAL = 10
# Student's t, 0.9 quantile (the 80 % two-sided interval), by degrees of freedom.
T90 = {1: 3.078, 2: 1.886, 3: 1.638, 4: 1.533, 5: 1.476, 6: 1.440, 7: 1.415, 8: 1.397, 9: 1.383, 10: 1.372}
ERRORS_VERSION = 1


class Spread(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    q_lo: float
    q_hi: float
    n: int


class ErrorModel(BaseModel):
    """Per framework and regime ("torch/host dispatch"): bias (median log residual) and count;
    residual quantiles per framework/regime, framework, or all."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    errors_version: int = ERRORS_VERSION
    coverage: float = Field(gt=0, lt=1)
    source: str
    bias: dict[str, float]
    bias_n: dict[str, int]
    spread: dict[str, Spread]  # "framework/regime", "framework" or "all" -> quantiles; "all" always present

    def spread_for(self, framework: str, regime: str) -> Spread:
        return self.spread.get(f"{framework}/{regime}") or self.spread.get(framework) or self.spread["all"]

    def band(self, mid: float, framework: str, regime: str, model_band: Band | None = None) -> Band:
        """The calibrated band of a prediction ``mid`` (seconds), widened by ``model_band``."""
        c = self.bias.get(f"{framework}/{regime}", 0.0)
        sp = self.spread_for(framework, regime)
        lo, hi = mid * math.exp(c + sp.q_lo), mid * math.exp(c + sp.q_hi)
        centre = mid * math.exp(c)
        if model_band is not None and mid > 0:
            lo = min(lo, model_band.low * math.exp(c + sp.q_lo))
            hi = max(hi, model_band.high * math.exp(c + sp.q_hi))
        return Band(lo, centre, hi)


@dataclass(frozen=True)
class Point:
    """One validation point: a GPU step measured on a real GPU and its prediction."""

    framework: str
    batch: int
    quantity: str
    measured_s: float
    predicted: Band  # the cost model's own band (before calibration)
    regime: str  # "host dispatch" | "device work"
    cpu_measured_s: float | None = None  # the same step measured on that machine's CPU

    @property
    def residual(self) -> float:
        return math.log(self.measured_s / self.predicted.mid)


def _spread(v: Sequence[float], coverage: float) -> Spread:
    if len(v) >= MIN_EMPIRICAL or len(v) < 2:
        return Spread(q_lo=stats.quantile(v, (1 - coverage) / 2), q_hi=stats.quantile(v, (1 + coverage) / 2), n=len(v))
    if coverage != COVERAGE:
        raise ValueError(f"the small-sample interval is tabulated for coverage {COVERAGE} only")
    mean = sum(v) / len(v)
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1))
    half = T90[min(len(v) - 1, max(T90))] * sd * math.sqrt(1 + 1 / len(v))
    return Spread(q_lo=mean - half, q_hi=mean + half, n=len(v))


def fit(points: Sequence[Point], source: str, coverage: float = COVERAGE) -> ErrorModel:
    """An error model from validation points (at least two)."""
    by_group: dict[str, list[float]] = {}
    for p in points:
        by_group.setdefault(f"{p.framework}/{p.regime}", []).append(p.residual)
    bias = {g: (stats.median(r) if len(r) >= MIN_POINTS else 0.0) for g, r in by_group.items()}
    centred: dict[str, list[float]] = {"all": []}
    for p in points:
        r = p.residual - bias[f"{p.framework}/{p.regime}"]
        centred["all"].append(r)
        centred.setdefault(p.framework, []).append(r)
        centred.setdefault(f"{p.framework}/{p.regime}", []).append(r)
    spread = {}
    for k, v in centred.items():
        need = MIN_EMPIRICAL if "/" in k else MIN_POINTS
        if k == "all" or len(v) >= need:
            spread[k] = _spread(v, coverage)
    return ErrorModel(
        coverage=coverage,
        source=source,
        bias=bias,
        bias_n={g: len(r) for g, r in by_group.items()},
        spread=spread,
    )


@dataclass(frozen=True)
class HeldOut:
    point: Point
    band: Band  # calibrated on the other points only

    @property
    def error(self) -> float:
        return self.band.mid / self.point.measured_s - 1.0

    @property
    def inside(self) -> bool:
        return self.band.low <= self.point.measured_s <= self.band.high

    @property
    def winner(self) -> tuple[str, str] | None:
        """(measured winner, predicted winner or "too close") against the measured CPU step."""
        cpu = self.point.cpu_measured_s
        if cpu is None:
            return None
        measured = "CPU" if cpu <= self.point.measured_s else "GPU"
        if cpu < self.band.low:
            return measured, "CPU"
        if cpu > self.band.high:
            return measured, "GPU"
        return measured, "too close"


def leave_one_out(points: Sequence[Point], coverage: float = COVERAGE) -> list[HeldOut]:
    """Each point's calibrated band, fitted on all the other points."""
    out = []
    for i, p in enumerate(points):
        rest = [q for j, q in enumerate(points) if j != i]
        em = fit(rest, "leave-one-out", coverage)
        out.append(HeldOut(p, em.band(p.predicted.mid, p.framework, p.regime, p.predicted)))
    return out


# ---------------- the shipped error model ----------------


def dumps(model: ErrorModel) -> str:
    return json.dumps(model.model_dump(mode="json"), indent=1) + "\n"


def shipped(name: str = "h100-2026-11-22") -> ErrorModel | None:
    """The error model measured on the shared reference (None when not shipped)."""
    f = resources.files("whichdevice") / "profiles" / "errors" / f"{name}.json"
    if not f.is_file():
        return None
    return ErrorModel.model_validate(json.loads(f.read_text(encoding="utf-8")))
