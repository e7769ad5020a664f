"""Measurements that flag their own problems, typed: present/notes.py says what each means and
what to do next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from whichdevice.analysis import significance
from whichdevice.analysis.utilization import others_busy, summarize
from whichdevice.core import stats
from whichdevice.core.records import CaseResult, CaseSpec, RunRecord, Timing
from whichdevice.core.stats import NOISY_REL_IQR
from whichdevice.core.telemetry import TelemetrySummary

# Above this share of a per-call time, the harness's own timer + sync cost matters.
OVERHEAD_WARN_FRACTION = 0.05


# A round timed step by step (one call per sample) with at least this many steps: its spread
# is the steps' own variation, which more --min-time cannot remove.
_STEP_SERIES_MIN = 10

# Single steps are not averaged over a block, so they vary more than block means; they warn
# at torch.utils.benchmark's second level, IQR/median > 25 % ("significant environmental
# influence", torch/utils/benchmark/utils/common.py, _IQR_GROSS_WARN_THRESHOLD). Block means
# warn at its first, 10 % (_IQR_WARN_THRESHOLD, core/stats.NOISY_REL_IQR).
UNEVEN_REL_IQR = 0.25


# The kinds of measurement warning, each with its threshold's source:
# bimodal: process medians in two clusters (significance.rounds_bimodal);
# not_converged: the point's median 95 % CI is wider than the target (core/timing.py's
#   precision-targeted sampling, MATLAB runperf's 5 %) after a cap stopped its sampling: the
#   interval decides, as printed; a cap that stopped a point already inside the target is
#   no warning;
# uneven_steps / noisy: IQR/median within one round (one process: the spread between rounds is
#   the bimodal warning's) above UNEVEN_REL_IQR for a step-by-step series, above
#   NOISY_REL_IQR (torch.utils.benchmark's 10 %) for block means;
# overhead: the harness's timer+sync cost above OVERHEAD_WARN_FRACTION of a call.
WarningKind = Literal["bimodal", "not_converged", "uneven_steps", "noisy", "overhead"]


@dataclass(frozen=True)
class TimingWarning:
    """One measurement that flags its own problem: what kind, on which case, the measured value
    against its threshold (both relative: 0.12 is 12 %), and what the presenters need to say it
    (present/notes.py writes the sentence): the two clusters of a bimodal point, the sampling
    rule that stopped an unsettled one with its sample count, the utilization while it was
    measured and whether other programs kept the machine busy then (``others_busy``:
    analysis/utilization.others_busy; None: not known)."""

    kind: WarningKind
    case: CaseSpec
    value: float
    threshold: float
    modes: significance.Modes | None = None  # bimodal
    stop_reason: str | None = None  # not_converged: "time cap" | "sample cap"
    n_samples: int = 0
    telemetry: TelemetrySummary | None = None  # the utilization while it was measured
    others_busy: bool | None = None
    rounds: int = 1  # the rounds (fresh processes) the case was measured in
    round_index: int = 0  # uneven_steps / noisy / not_converged: the round the value is of


def _spread(rounds: list[list[float]], number_per_sample: int) -> tuple[float, int, bool] | None:
    """The widest spread (IQR/median) of one round, its round's index, and whether that round is
    a step series; None when no round has two samples."""
    spreads = [(stats.rel_iqr(r), i) for i, r in enumerate(rounds) if len(r) >= 2]
    if not spreads:
        return None
    value, i = max(spreads)
    return value, i, number_per_sample == 1 and len(rounds[i]) >= _STEP_SERIES_MIN


def _one_point(r: CaseResult, t: Timing) -> list[TimingWarning]:
    """The warnings of one measured point, in the kinds' order."""
    tele = summarize(t.telemetry) if t.telemetry is not None else None
    busy = others_busy(tele) if tele is not None else None
    n_rounds = len(t.rounds)
    out = []
    modes = significance.rounds_bimodal(t.rounds) if t.rounds_s else None
    if modes is not None:  # say so instead of averaging two modes
        gap = modes.high / modes.low - 1  # the relative gap between the clusters
        out.append(
            TimingWarning(
                "bimodal",
                r.spec,
                gap,
                significance.BIMODAL_GAP,
                modes=modes,
                n_samples=len(t.samples_s),
                telemetry=tele,
                others_busy=busy,
                rounds=n_rounds,
            )
        )
    # The stop reason is the first round's (measure/session.merge_rounds keeps it): so is the interval.
    # (Only for a capped point: the interval costs O(n^2) on a long step series.)
    first = t.rounds[0]
    capped = t.stop_reason in ("time cap", "sample cap")
    halfwidth = stats.median_rel_halfwidth(first) if capped else 0.0  # inf: the interval is not formed yet
    unsettled = capped and halfwidth > significance.TARGET_REL_HALFWIDTH
    if unsettled:  # precision-targeted sampling
        out.append(
            TimingWarning(
                "not_converged",
                r.spec,
                halfwidth,
                significance.TARGET_REL_HALFWIDTH,
                stop_reason=t.stop_reason,
                n_samples=len(first),
                telemetry=tele,
                others_busy=busy,
                rounds=n_rounds,
            )
        )
    spread = None if unsettled else _spread(t.rounds, t.number_per_sample)
    if spread is not None:
        value, i, steps = spread
        limit = UNEVEN_REL_IQR if steps else NOISY_REL_IQR
        if value > limit:
            kind: WarningKind = "uneven_steps" if steps else "noisy"
            out.append(
                TimingWarning(
                    kind,
                    r.spec,
                    value,
                    limit,
                    n_samples=len(t.rounds[i]),
                    telemetry=tele,
                    others_busy=busy,
                    rounds=n_rounds,
                    round_index=i,
                )
            )
    per_call_overhead = t.overhead_s / t.number_per_sample
    if t.median_s > 0 and per_call_overhead / t.median_s > OVERHEAD_WARN_FRACTION:
        share = per_call_overhead / t.median_s
        out.append(TimingWarning("overhead", r.spec, share, OVERHEAD_WARN_FRACTION, n_samples=len(t.samples_s)))
    return out


def measurement_warnings(record: RunRecord) -> list[TimingWarning]:
    """Bimodal rounds, unsettled points, noise (IQR/median within a round > 10 %, torch.utils.
    benchmark's threshold; single steps > 25 %, its gross one) and harness overhead, typed."""
    out = []
    for r in record.results:
        if r.timing is not None:
            out += _one_point(r, r.timing)
    return out
