"""Does the next replica pay? Scaling efficiency, the all-reduce share and the crossover of a
``scale`` record (pure functions over the record; the sentences are in ``present/scale.py``).

For each framework, replicas N and global batch B (the same B split over N replicas):

- ``step_s``: median steady step time (the timing core's samples, warm-up apart);
  ``samples_per_s`` = B / step_s.
- ``vs_one``: the claim "N replicas vs 1 at the same global batch" — the ratio of step times
  (= the throughput ratio) with its 95 % interval and sample count, judged by THE rule of
  ``analysis/significance.py`` (the whole interval beyond the noise threshold, ≥ 5
  samples a side). ``ratio > 1``: N replicas are faster.
- ``efficiency`` = throughput_N / (N × throughput_1) = ratio / N (its interval: the ratio's / N).
  1.0 is perfect scaling; below 1/N the N replicas are slower than one.
- ``allreduce_share``: the part of the N-replica step spent in the gradient all-reduce.
  ``no_sync`` (DDP): (step − step inside ``no_sync()``) / step. ``isolated`` (TensorFlow, JAX):
  (all-reduce of gradient-sized tensors alone − the same call without the collective) / step.
  A difference inside the noise reads as 0 (``share_in_noise``); an all-reduce that took longer
  alone than the whole step gives no share (``share_exceeds_step``: None).
- ``accum_gain`` (DDP): the fix "gradient accumulation over 4 micro-batches" (one all-reduce per 4
  batches) against syncing every step, per sample, and ``accum_vs_one`` against 1 replica.
- ``crossover`` per N: the smallest measured global batch from which N replicas beat 1
  (significantly, and at every larger measured batch), with the log-log interpolated estimate of
  ``analysis/crossover.py`` between the last batch where 1 wins and that one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from whichdevice import frameworks
from whichdevice.analysis import significance
from whichdevice.analysis.crossover import find_crossover
from whichdevice.core.records import CaseResult, RunRecord, Timing

ACCUM = 4  # micro-batches of the ``accum4`` variant (frameworks/torch/scale.py)


def _method(framework: str) -> str:
    """How the framework's all-reduce is isolated: ``no_sync`` or ``isolated`` (its ``env.py``'s ``SCALE_METHOD``)."""
    return frameworks.declared(framework, "SCALE_METHOD", "isolated")


@dataclass(frozen=True)
class Point:
    framework: str
    replicas: int
    global_batch: int
    step: Timing | None
    error: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    comm: Timing | None = None  # no_sync step, or the all-reduce alone
    comm_base: Timing | None = None  # the all-reduce call without the collective
    vs_one: significance.Claim | None = None
    accum: Timing | None = None  # DDP: gradient accumulation over ACCUM micro-batches per call
    one: Timing | None = None  # the 1-replica step at the same global batch

    @property
    def accum_gain(self) -> significance.Claim | None:
        """Gradient accumulation vs syncing every step, per sample (A / B of per-sample times:
        > 1 means accumulation is faster)."""
        if self.accum is None or self.step is None:
            return None
        per_sample = [s / ACCUM for s in self.accum.samples_s]
        return significance.from_samples(self.step.samples_s, per_sample)

    @property
    def accum_vs_one(self) -> significance.Claim | None:
        """N replicas with gradient accumulation vs 1 replica, per sample (> 1: N is faster)."""
        if self.accum is None or self.one is None:
            return None
        return significance.from_samples(self.one.samples_s, [s / ACCUM for s in self.accum.samples_s])

    @property
    def ok(self) -> bool:
        return self.step is not None

    @property
    def step_s(self) -> float | None:
        return self.step.median_s if self.step else None

    @property
    def samples_per_s(self) -> float | None:
        return self.global_batch / self.step.median_s if self.step else None

    @property
    def replicas_seen(self) -> int | None:
        v = self.metrics.get("replicas_seen")
        return int(v) if v is not None else None

    @property
    def efficiency(self) -> float | None:
        """throughput_N / (N × throughput_1)."""
        if self.vs_one is None or not math.isfinite(self.vs_one.ratio):
            return None
        return self.vs_one.ratio / self.replicas

    @property
    def efficiency_ci(self) -> tuple[float, float] | None:
        if self.vs_one is None or not math.isfinite(self.vs_one.lo) or not math.isfinite(self.vs_one.hi):
            return None
        return self.vs_one.lo / self.replicas, self.vs_one.hi / self.replicas

    @property
    def allreduce_raw(self) -> float | None:
        """The all-reduce's seconds per step (unclamped; None when not measured)."""
        if self.step is None or self.comm is None:
            return None
        if _method(self.framework) == "no_sync":
            return self.step.median_s - self.comm.median_s
        if self.comm_base is None:
            return None
        return self.comm.median_s - self.comm_base.median_s

    @property
    def share_in_noise(self) -> bool:
        """The difference the share rests on is not significant (same rule as every claim)."""
        if self.step is None or self.comm is None:
            return True
        if _method(self.framework) == "no_sync":
            a, b = self.step.samples_s, self.comm.samples_s
        elif self.comm_base is not None:
            a, b = self.comm.samples_s, self.comm_base.samples_s
        else:
            return True
        # A / B of times, "faster" = B (without the all-reduce) significantly faster than A.
        return significance.from_samples(a, b).status != "faster"

    @property
    def share_exceeds_step(self) -> bool:
        """The all-reduce, timed alone, took longer than the whole step (isolated method on a
        loaded machine): no share can be read from it."""
        raw = self.allreduce_raw
        return raw is not None and self.step is not None and raw > self.step.median_s and not self.share_in_noise

    @property
    def allreduce_share(self) -> float | None:
        raw = self.allreduce_raw
        if raw is None or self.step is None or self.share_exceeds_step:
            return None
        if self.share_in_noise:
            return 0.0
        return max(0.0, raw / self.step.median_s)


@dataclass(frozen=True)
class ScaleCrossover:
    replicas: int
    batch: int | None  # smallest measured global batch from which N beats 1 (None: never)
    estimate: float | None  # log-log interpolated between the last batch 1 wins and ``batch``
    gain: significance.Claim | None  # the claim at ``batch``
    never_at: int | None = None  # no batch from which N always wins: the largest batch measured (None: no data)


@dataclass(frozen=True)
class FrameworkScale:
    framework: str
    method: str  # how the all-reduce share was measured: "no_sync" | "isolated"
    replicas: list[int]
    batches: list[int]
    points: dict[tuple[int, int], Point]
    crossovers: dict[int, ScaleCrossover]

    accum: ClassVar[int] = ACCUM  # micro-batches of the gradient-accumulation fix

    def point(self, n: int, b: int) -> Point | None:
        return self.points.get((n, b))

    @property
    def verdicts(self) -> list[Verdict]:
        """One verdict per replica count above 1 (:func:`verdicts`)."""
        return verdicts(self)

    def replicas_ok(self) -> bool:
        """Every measured point ran the replicas asked (read back from the engine)."""
        return all(p.replicas_seen == p.replicas for p in self.points.values() if p.ok)


@dataclass(frozen=True)
class ScaleReport:
    frameworks: list[FrameworkScale]
    failed: list[CaseResult]  # the failed cases, in the record's order


def _by_variant(results: list[CaseResult]) -> dict[tuple[str, int, int, str], CaseResult]:
    out = {}
    for r in results:
        p = r.spec.params
        if r.spec.workload != "scale":
            continue
        out[(r.spec.framework, int(p["replicas"]), int(p["global_batch"]), str(p["variant"]))] = r  # type: ignore[arg-type]
    return out


def _timing(r: CaseResult | None) -> Timing | None:
    return r.timing if r is not None and r.status == "ok" else None


def crossover(fs_points: dict[tuple[int, int], Point], n: int, batches: list[int]) -> ScaleCrossover:
    """The smallest measured global batch from which N replicas beat 1 at every larger one."""
    rows = [  # the batches where both ran and N replicas were compared with 1
        (b, one_s, p_s, claim)
        for b in batches
        if (one := fs_points.get((1, b))) is not None
        and (one_s := one.step_s) is not None
        and (p := fs_points.get((n, b))) is not None
        and (p_s := p.step_s) is not None
        and (claim := p.vs_one) is not None
    ]
    if not rows:
        return ScaleCrossover(n, None, None, None)
    first = None
    for i in range(len(rows)):
        if all(claim.status == "faster" for *_, claim in rows[i:]):
            first = i
            break
    if first is None:
        largest = rows[-1][0]
        return ScaleCrossover(n, None, None, rows[-1][3], never_at=largest)
    b, _, _, vs_one = rows[first]
    estimate = None
    if first > 0:
        xs = [rows[first - 1][0], b]
        one_steps = [rows[first - 1][1], rows[first][1]]
        n_steps = [rows[first - 1][2], rows[first][2]]
        c = find_crossover(xs, one_steps, n_steps)  # "cpu" = 1 replica, "gpu" = N replicas
        estimate = c.estimate if c.kind == "between" else None
    return ScaleCrossover(n, b, estimate, vs_one)


def analyze_framework(record: RunRecord, framework: str) -> FrameworkScale:
    results = [r for r in record.results if r.spec.framework == framework and r.spec.workload == "scale"]
    table = _by_variant(results)
    replicas = sorted({int(r.spec.params["replicas"]) for r in results})  # type: ignore[arg-type]
    batches = sorted({int(r.spec.params["global_batch"]) for r in results})  # type: ignore[arg-type]
    points: dict[tuple[int, int], Point] = {}
    for n in replicas:
        for b in batches:
            step = table.get((framework, n, b, "step"))
            if step is None:
                continue
            comm_name = "no_sync" if _method(framework) == "no_sync" else "allreduce"
            one = _timing(table.get((framework, 1, b, "step")))
            st = _timing(step)
            claim = significance.from_samples(one.samples_s, st.samples_s) if one and st and n > 1 else None
            points[(n, b)] = Point(
                framework=framework,
                replicas=n,
                global_batch=b,
                step=st,
                error=step.error,
                metrics=dict(step.metrics),
                comm=_timing(table.get((framework, n, b, comm_name))),
                comm_base=_timing(table.get((framework, n, b, "allreduce_base"))),
                vs_one=claim,
                accum=_timing(table.get((framework, n, b, f"accum{ACCUM}"))),
                one=one,
            )
    crossovers = {n: crossover(points, n, batches) for n in replicas if n > 1}
    return FrameworkScale(framework, _method(framework), replicas, batches, points, crossovers)


def analyze_scale(record: RunRecord) -> ScaleReport:
    fws = list(dict.fromkeys(r.spec.framework for r in record.results if r.spec.workload == "scale"))
    failed = [r for r in record.results if r.status == "failed"]
    return ScaleReport([analyze_framework(record, f) for f in fws], failed)


@dataclass(frozen=True)
class Verdict:
    """The facts of the one-line verdict for N replicas (``present/scale.py`` words them)."""

    framework: str
    replicas: int
    worst: Point | None  # the smallest batch, where the fixed costs weigh most
    best: Point | None  # the point where N replicas gain most
    crossover: ScaleCrossover | None


def verdicts(fs: FrameworkScale) -> list[Verdict]:
    out = []
    for n in fs.replicas:
        if n == 1:
            continue
        pts = [fs.points[(n, b)] for b in fs.batches if (n, b) in fs.points and fs.points[(n, b)].vs_one]
        if not pts:
            out.append(Verdict(fs.framework, n, None, None, fs.crossovers.get(n)))
            continue
        best = max(pts, key=lambda p: p.vs_one.ratio)  # type: ignore[union-attr]
        out.append(Verdict(fs.framework, n, pts[0], best, fs.crossovers.get(n)))
    return out
