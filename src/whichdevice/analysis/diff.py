"""What changed between two runs, point by point: the same case (workload, framework,
device, parameters) measured twice, its ratio and whether the change is outside the noise.

"Outside the noise" is analysis/significance.py's rule, fed with what two runs can know about
their noise (within a run a point is tight, between runs it moves more than its IQR):

- each run's rounds (fresh child processes): between-process variation per case;
- for a case measured in one round only, the between-process spread of the other cases of the
  same two runs (``significance.process_spread``) widens its interval;
- ``thresholds``: per case key, a noise threshold learned from earlier repeat runs on this
  machine (measure/history.py stores them; ``significance.learned_threshold``); other cases use
  ``default_threshold``;
- the cases' intervals hold **together** (``significance.together``): at 95 % for all cases at
  once (Bonferroni), each widened by how far the cases of these two runs moved between them
  (``significance.run_spread``, from 10 cases on) — two identical runs a minute apart differ
  by 3–30 % on the 2-core machine, more than either run's rounds show (benchmarks/stability.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import math
from collections.abc import Mapping

from whichdevice.analysis import significance
from whichdevice.analysis.compare import Comparison
from whichdevice.core.records import CaseSpec, RunRecord
from whichdevice.workloads.fixes import params_of


@dataclass(frozen=True)
class PointChange:
    key: str
    spec: CaseSpec  # what was measured (present/names.case_name says it in words)
    before_s: float | None
    after_s: float | None
    comparison: Comparison | None  # before vs after: ratio > 1 means faster now
    before_failure: str | None = None  # the failure kind (failures.py) where a side failed
    after_failure: str | None = None

    @property
    def regressed(self) -> bool:
        """The CI gate's rule (``compare --fail-on-regression``): slower after by the table's own
        rule (the whole interval beyond the noise, enough samples), or ran before and failed after
        (crashed, raised, timed out, ran out of memory; not skipped by the time budget)."""
        c = self.comparison
        if c is not None:
            return c.significant and c.ratio < 1
        # a case the time budget skipped (failures.py "skipped") was not measured: not a failure
        return self.before_failure is None and self.after_failure not in (None, "skipped")

    @property
    def status(self) -> str:
        """One word for scripts: faster, slower, no_change, not_enough, failed, or not_measured
        (a side the time budget skipped, and neither failed)."""
        if self.comparison is None:
            sides = {self.before_failure, self.after_failure} - {None}
            return "not_measured" if sides == {"skipped"} else "failed"
        return self.comparison.claim.status

    @property
    def label(self) -> str:
        """The case's parameters as written in the record (for scripts; people get names.case_name)."""
        return _label(self.spec)


@dataclass(frozen=True)
class ContextChange:
    """One way the two runs' set-up differs: a machine field, a device's framework (or whether it
    was measured: None), a device that is another one under the same name, or an option."""

    kind: Literal["machine", "framework", "device", "option"]
    name: str  # the field, the device or the option
    before: object
    after: object


@dataclass(frozen=True)
class RunDiff:
    context: list[ContextChange]  # differences in machine, framework versions, devices, options
    points: list[PointChange]
    only_before: list[CaseSpec]
    only_after: list[CaseSpec]
    # How far the cases moved between the two runs (sd of log ratios, significance.run_spread;
    # None: too few cases to tell), and the confidence each case's interval is given at.
    run_sd: float | None = None
    confidence: float = significance.CONFIDENCE

    @property
    def regressions(self) -> list[PointChange]:
        """The cases ``compare --fail-on-regression`` fails on (:attr:`PointChange.regressed`)."""
        return [p for p in self.points if p.regressed]


def _label(spec: CaseSpec) -> str:
    return f"{spec.framework} {spec.device} {spec.workload} " + " ".join(f"{k}={v}" for k, v in params_of(spec).items())


def _context(a: RunRecord, b: RunRecord) -> list[ContextChange]:
    out = []
    ma, mb = a.machine, b.machine
    for field in ("hostname", "cpu_model", "cpu_cores_logical", "ram_bytes", "os", "python"):
        va, vb = getattr(ma, field), getattr(mb, field)
        if va != vb:
            out.append(ContextChange("machine", field, va, vb))
    fa = {f"{s.device.name}": f"{s.framework.name} {s.framework.version}" for s in a.sessions}
    fb = {f"{s.device.name}": f"{s.framework.name} {s.framework.version}" for s in b.sessions}
    for dev in sorted(set(fa) | set(fb)):
        if fa.get(dev) != fb.get(dev):
            out.append(ContextChange("framework", dev, fa.get(dev), fb.get(dev)))
    da = {s.device.name: s.device.description for s in a.sessions}
    db = {s.device.name: s.device.description for s in b.sessions}
    for dev in sorted(set(da) & set(db)):
        if da[dev] != db[dev]:
            out.append(ContextChange("device", dev, da[dev], db[dev]))
    for k in sorted(set(a.options) | set(b.options)):
        if a.options.get(k) != b.options.get(k):
            out.append(ContextChange("option", k, a.options.get(k), b.options.get(k)))
    return out


def log_ratios(before: RunRecord, after: RunRecord) -> dict[str, float]:
    """Per case key measured in both: log(median before / median after) — what a repeat run of
    the same command stores as one between-run noise sample (measure/history.py)."""
    ra = {r.spec.identity: r.timing for r in before.results if r.timing is not None}
    rb = {r.spec.identity: r.timing for r in after.results if r.timing is not None}
    return {
        k: math.log(ra[k].median_s / rb[k].median_s)
        for k in ra
        if k in rb and ra[k].median_s > 0 and rb[k].median_s > 0
    }


def diff_runs(
    before: RunRecord,
    after: RunRecord,
    *,
    thresholds: Mapping[str, float] | None = None,
    default_threshold: float = significance.NOISE_THRESHOLD,
) -> RunDiff:
    ra = {r.spec.identity: r for r in before.results}
    rb = {r.spec.identity: r for r in after.results}
    thresholds = thresholds or {}
    both = [k for k in ra if k in rb]
    process_sd = significance.process_spread(
        [t.rounds for k in both for t in (ra[k].timing, rb[k].timing) if t is not None]
    )
    alone: dict[str, significance.Claim] = {}
    for key in both:
        a, b = ra[key].timing, rb[key].timing
        if a is not None and b is not None:
            alone[key] = significance.between_runs(
                a.rounds, b.rounds, threshold=thresholds.get(key, default_threshold), process_sd=process_sd
            )
    run_sd = significance.run_spread([math.log(c.ratio) for c in alone.values() if c.enough])
    claims = dict(zip(alone, significance.together(list(alone.values()), run_sd=run_sd)))
    points = []
    for key in both:
        was, now = ra[key], rb[key]
        claim = claims.get(key)
        points.append(
            PointChange(
                key,
                was.spec,
                was.timing.median_s if was.timing else None,
                now.timing.median_s if now.timing else None,
                Comparison("before", "after", claim) if claim is not None else None,
                was.failure,
                now.failure,
            )
        )
    judged = [c for c in claims.values() if c.enough]
    return RunDiff(
        _context(before, after),
        points,
        [ra[k].spec for k in ra if k not in rb],
        [rb[k].spec for k in rb if k not in ra],
        run_sd,
        judged[0].confidence if judged else significance.CONFIDENCE,
    )
