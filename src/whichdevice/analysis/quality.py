"""Measurements that flag their own problems, typed: present/notes.py says what each means and
what to do next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from whichdevice.analysis import significance
from whichdevice.analysis.utilization import summarize
from whichdevice.core import stats
from whichdevice.core.records import CaseSpec, RunRecord, Timing
from whichdevice.core.stats import NOISY_REL_IQR
from whichdevice.core.telemetry import TelemetrySummary

# Above this share of a per-call time, the harness's own timer + sync cost matters.
OVERHEAD_WARN_FRACTION = 0.05


# A run timed step by step (one call per sample) with at least this many steps: its spread
# is the steps' own variation, which more --min-time cannot remove.
_STEP_SERIES_MIN = 10


def _is_step_series(t: Timing) -> bool:
    return t.number_per_sample == 1 and len(t.samples_s) >= _STEP_SERIES_MIN


# The kinds of measurement warning, each with its threshold's source:
# bimodal: process medians in two clusters (significance.rounds_bimodal, issue 16);
# not_converged: the point's median CI stayed wider than the target when its cap stopped it
#   (core/timing.py's precision-targeted sampling, MATLAB runperf's 5 %);
# uneven_steps / noisy: IQR/median above NOISY_REL_IQR (torch.utils.benchmark's 10 %), for a
#   step-by-step series and for block means;
# overhead: the harness's timer+sync cost above OVERHEAD_WARN_FRACTION of a call.
WarningKind = Literal["bimodal", "not_converged", "uneven_steps", "noisy", "overhead"]


@dataclass(frozen=True)
class TimingWarning:
    """One measurement that flags its own problem: what kind, on which case, the measured value
    against its threshold (both relative: 0.12 is 12 %), and what the presenters need to say it
    (present/notes.py writes the sentence): the two clusters of a bimodal point, the sampling
    rule that stopped an unsettled one with its sample count and the utilization during it."""

    kind: WarningKind
    case: CaseSpec
    value: float
    threshold: float
    modes: significance.Modes | None = None  # bimodal
    stop_reason: str | None = None  # not_converged: "time cap" | "sample cap"
    n_samples: int = 0
    telemetry: TelemetrySummary | None = None  # not_converged: the utilization while it was measured


def measurement_warnings(record: RunRecord, rel_iqr_limit: float = NOISY_REL_IQR) -> list[TimingWarning]:
    """Bimodal rounds, unsettled points, noise (IQR/median > 10 %, torch.utils.benchmark's
    threshold) and harness overhead, typed."""
    out = []
    for r in record.results:
        t = r.timing
        if t is None:
            continue
        modes = significance.rounds_bimodal(t.rounds) if t.rounds_s else None
        if modes is not None:  # issue 16: say so instead of averaging two modes
            out.append(
                TimingWarning(
                    "bimodal",
                    r.spec,
                    modes.high / modes.low - 1,  # the relative gap between the clusters
                    significance.BIMODAL_GAP,
                    modes=modes,
                    n_samples=len(t.samples_s),
                )
            )
        if t.stop_reason in ("time cap", "sample cap"):  # precision-targeted sampling (issue 16)
            out.append(
                TimingWarning(
                    "not_converged",
                    r.spec,
                    stats.median_rel_halfwidth(t.samples_s),  # inf: the interval is not formed yet
                    significance.TARGET_REL_HALFWIDTH,
                    stop_reason=t.stop_reason,
                    n_samples=len(t.samples_s),
                    telemetry=summarize(t.telemetry) if t.telemetry is not None else None,
                )
            )
        elif len(t.samples_s) >= 2 and t.rel_iqr > rel_iqr_limit and _is_step_series(t):
            out.append(
                TimingWarning(
                    "uneven_steps",
                    r.spec,
                    t.rel_iqr,
                    rel_iqr_limit,
                    n_samples=len(t.samples_s),
                )
            )
        elif len(t.samples_s) >= 2 and t.rel_iqr > rel_iqr_limit:
            out.append(
                TimingWarning(
                    "noisy",
                    r.spec,
                    t.rel_iqr,
                    rel_iqr_limit,
                    n_samples=len(t.samples_s),
                )
            )
        per_call_overhead = t.overhead_s / t.number_per_sample
        if t.median_s > 0 and per_call_overhead / t.median_s > OVERHEAD_WARN_FRACTION:
            share = per_call_overhead / t.median_s
            out.append(
                TimingWarning(
                    "overhead",
                    r.spec,
                    share,
                    OVERHEAD_WARN_FRACTION,
                    n_samples=len(t.samples_s),
                )
            )
    return out
