"""The one rule for "significant": when a measured ratio counts as a change.

Every ratio whichdevice claims — device vs device, fix off vs on, a grid value, ``compare``
of two runs, the audit's corrected ratio — goes through :func:`judge` (or one of the builders
below that end in it). A change counts only when

1. there are at least ``MIN_SAMPLES`` (5) samples on each side (fewer: ``not_enough``, never
   recommended, never "best");
2. its **whole** 95 % confidence interval lies beyond the noise threshold, on one side:
   ``lo > 1 + threshold`` (faster) or ``hi < 1 / (1 + threshold)`` (slower) — criterion.rs's
   ``compare_to_threshold`` (both CI bounds beyond ``±noise``), so an interval that reaches
   into the noise band is "no clear change" even when it excludes 1 (with the point
   estimate alone beyond the band, claims like 1.1× with CI 1.0–1.2× turned significant in one
   of two identical runs and not in the other). Default ``NOISE_THRESHOLD`` = 5 %
   (criterion.rs's default noise threshold is 1 %, pyperf calls a change under 5 % "not
   significant" in ``compare_to``'s summary; on a shared 2-core machine 5 % is the smaller of
   the two that two identical runs do not cross, benchmarks/stability.md).
   ``compare`` learns a per-case threshold from repeated runs in the history DB
   (:func:`learned_threshold`).

The interval: a **t-interval on log ratios**. With rounds (the same A/B measured in several
fresh child processes, order alternated), the values are the per-round log ratios
``log(median(A_round) / median(B_round))`` and the interval reflects between-process
variation, which is what differs between two runs (pyperf's reason for worker processes).
Without rounds (one process, or an old record) it is Welch's interval on the log samples of
the two sides, and ``unit`` says ``"samples"``: it only knows within-process noise, which the
noise threshold is there to absorb.

Why a t-interval and not a bootstrap: the interval rests on 2–10 rounds; a percentile bootstrap
of so few values is too narrow (it cannot be wider than the values' own range, and with 2 rounds
it has 3 distinct resamples), while the t-interval widens honestly as rounds get few
(t(1) = 12.7). Logs make the ratio symmetric (2× faster and 2× slower are equally far from 1)
and the interval multiplicative. It is also deterministic: the same record gives the same
verdict every time ``report`` recomputes it.

The t-interval assumes the round ratios are roughly normal; on a busy machine they are not:
threads contending for busy cores put a whole process in a slow mode or a fast one, so the
ratios fall in two clusters. From ``MIN_ROUNDS_RANK`` (6) rounds a claim's interval is also never
narrower than the **distribution-free interval for the median** of the round ratios, built
from their order statistics by the sign test (:func:`median_interval`; Hollander, Wolfe &
Chicco, *Nonparametric Statistical Methods*, 3rd ed., 2014, §3.6; Conover, *Practical
Nonparametric Statistics*, 3rd ed., 1999, §3.2): its 95 % holds whatever the distribution —
no normality, no symmetry, two modes included — since it only counts how many rounds fall on
each side. It needs no fewer than 6 rounds (with 5 the widest such interval, the rounds' range,
holds at 94 %), which is why later rounds go to the pairs still undecided
(``analysis/fixes.undecided``, ``measure/session.py``), and why a pair with two processes in two modes
is no claim at all (``analysis/fixes.processes_disagree``).

Claims made together (``compare``): one run against another judges ~40 cases at once. Each at
95 % would call two of them changed in two identical runs even with the right noise; and two
runs a minute apart differ by more than either run's rounds show (the machine drifts over
minutes, and both rounds of a run share its moment). :func:`together` gives each case's interval
at ``1 - 5 % / cases`` (Bonferroni: all hold at once at 95 %) and adds the between-run spread
that the two runs' cases show (:func:`run_spread`, a robust scale of their log ratios). The
rule (:func:`judge`) stays the same; only the intervals it is given are wider.

API (pure functions, no I/O, no third-party imports)::

    claim = from_rounds(a_rounds, b_rounds)       # per-round samples, paired by round
    claim = from_samples(a_samples, b_samples)    # one process each side
    claim = judge(ratio, lo, hi, n, unit="rounds", threshold=0.05)
    claim.status        # "faster" | "slower" | "no_change" | "not_enough"
    claim.significant   # status in ("faster", "slower")
    bimodal(medians) / rounds_bimodal(rounds)     # clusters of round medians -> Modes | None
    learned_threshold(between_run_log_ratios)     # compare's per-case threshold
    together(claims, run_sd=run_spread(log_ratios))   # compare's cases, all at once

Ratios are ``A / B`` of times (baseline / other): > 1 means B (the other, the fix, the later run)
is faster — the convention of ``analysis/compare.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from whichdevice.core import stats

# A change must exceed this relative size to count (see the module doc for the source).
NOISE_THRESHOLD = 0.05
MIN_SAMPLES = stats.MIN_SAMPLES  # no claim from fewer samples per side
# A claim in rounds whose ratio lies beyond the noise band says "no clear change" only from at
# least this many rounds: with 2 rounds the interval rests on one degree of freedom (t = 12.7),
# so a 3.3x gain read "no clear change (CI 0.79-13.5x)" for want of rounds, not for want of a
# change. Such a claim is "not enough" (too few rounds), and so is one whose ratio is
# inside the band but whose interval reaches out of it: "n=2, CI 0.71-1.5x" on the H200 could hide a
# 1.4x change. Only an interval wholly inside the band (no change, measured) stays "no clear change"
# from 2 rounds.
MIN_ROUNDS_NO_CHANGE = 3
# From this many rounds the sign test's interval for the median ratio exists at 95 % (two-sided:
# all 6 on one side has probability 2 / 2^6 = 3.1 %), and a rounded claim's interval is never
# narrower than it (module doc).
MIN_ROUNDS_RANK = 6
# While the rounds are fewer than MIN_ROUNDS_RANK, a change is claimed only where its interval's
# near end clears this factor, not just the noise band. The sd of 2-5 round ratios is itself a
# guess, and a second run of the same command reads it anew: on the 2-core machine, claims from
# 2-3 rounds whose near end lay at 1.1-1.2x ("autocast 1.2x, CI 1.1-1.4x"; "one thread 2x,
# CI 1.2-3.4x") read "not enough" or "no clear change" in the next run of the same command
# (benchmarks/stable_verdicts.md, sets E and F), while none whose near end cleared 1.4x was
# contradicted. Such a claim is "not enough" until the rounds that decide it are measured.
FEW_ROUNDS_MARGIN = 1.25
# "No clear change" says the change, if any, is small. An interval that cannot rule out a change of
# this factor either way (the keras-io weather LSTM's prefetch pair on a busy machine: 0.062-6.7x from
# 5 samples) says nothing of the kind: the samples were too few for their spread, so the claim is "not
# enough" (too wide), never "no clear change".
WIDE_FACTOR = 2.0
CONFIDENCE = stats.CONFIDENCE
# A point's median is precise enough when its 95 % CI half-width is within this share of the
# median (MATLAB runperf's default target, 5 %); configurable per policy (core/timing.py).
TARGET_REL_HALFWIDTH = 0.05
# Bimodal: process medians fall into two clusters separated by more than this relative gap and
# by more than BIMODAL_SPREAD_FACTOR times the spread inside the clusters (matmul
# n=500 at 1.6 ms in one process, 3.1 ms in another, each tight on its own).
BIMODAL_GAP = 0.25
BIMODAL_SPREAD_FACTOR = 3.0

Status = Literal["faster", "slower", "no_change", "not_enough"]

# Two-sided 95 % Student t quantiles t(0.975, df), df = 1..30; beyond 30 the normal 1.96 is
# within 4 %. (Standard table values; scipy is not a dependency.)
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: float) -> float:
    """Two-sided 95 % t quantile for ``df`` degrees of freedom (fractional df: rounded down,
    i.e. the wider interval)."""
    if df < 1:
        return math.inf
    d = int(math.floor(df))
    if d <= len(_T975):
        return _T975[d - 1]
    if d <= 60:
        return 2.000 + (2.042 - 2.000) * (60 - d) / 30
    return 1.96


@dataclass(frozen=True)
class ClaimNote:
    """Why a claim is not enough, or what else its reader must know: no samples; too few
    samples (``n`` of the ``needed``); too few rounds (``n``); the rounds fell in two clusters
    (``modes``); a side's processes disagree by as much as the change (``modes``, per step: no
    claim, analysis/fixes.py)."""

    kind: Literal[
        "no_samples", "too_few_samples", "too_few_rounds", "near_band", "too_wide", "bimodal", "disagree", "one_process"
    ]
    n: int = 0
    needed: int = 0
    modes: Modes | None = None
    margin: float = 0.0  # near_band: the factor the interval's near end had to clear


@dataclass(frozen=True)
class Claim:
    """A measured ratio A/B with its 95 % interval, the count it rests on, and the verdict."""

    ratio: float  # A / B of times: > 1 means B is faster
    lo: float
    hi: float
    n: int  # rounds (processes) or samples per side (the fewer of the two sides)
    unit: Literal["rounds", "samples"]
    threshold: float  # the relative noise threshold applied
    status: Status
    note: ClaimNote | None = None  # why not enough, or the rounds were bimodal (present/claims.py words it)
    # The interval's confidence: 95 %, or more for one of many claims made together
    # (:func:`together`: ``compare``'s cases hold at 95 % all at once).
    confidence: float = CONFIDENCE

    @property
    def significant(self) -> bool:
        return self.status in ("faster", "slower")

    @property
    def enough(self) -> bool:
        return self.status != "not_enough"

    @property
    def claim(self) -> Claim:
        """Itself: a Claim reads like a ``compare.Comparison``, whose ``claim`` it is."""
        return self


def judge(  # noqa: PLR0913 (THE rule's parameters, keyword-only)
    ratio: float,
    lo: float,
    hi: float,
    n: int,
    *,
    unit: Literal["rounds", "samples"] = "samples",
    threshold: float = NOISE_THRESHOLD,
    enough: bool = True,
    note: ClaimNote | None = None,
    confidence: float = CONFIDENCE,
) -> Claim:
    """THE rule. ``enough``: the caller's sample-count check (``from_*`` pass it; a bare
    ratio with ``n < MIN_SAMPLES`` samples is not enough either)."""
    if not enough or (unit == "samples" and n < MIN_SAMPLES) or not (ratio > 0 and math.isfinite(ratio)):
        status: Status = "not_enough"
    elif lo > 1.0 + threshold and ratio > 1:  # the whole CI beyond the noise band (module doc)
        status = "faster"
    elif hi < 1.0 / (1.0 + threshold) and ratio < 1:
        status = "slower"
    elif lo < 1.0 / WIDE_FACTOR or hi > WIDE_FACTOR:
        status, note = "not_enough", ClaimNote("too_wide", n) if note is None or note.kind != "bimodal" else note
    else:
        status = "no_change"
    return Claim(ratio, lo, hi, n, unit, threshold, status, note, confidence)


def _mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, 0.0
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _logs(xs: Sequence[float]) -> list[float]:
    return [math.log(x) for x in xs if x > 0]


def _median(xs: Sequence[float]) -> float:
    s = stats.sorted_samples(xs)  # sorted once per point's samples (0.4 s of a 3,000-sample report)
    k = len(s)
    return s[k // 2] if k % 2 else 0.5 * (s[k // 2 - 1] + s[k // 2])


def from_samples(a: Sequence[float], b: Sequence[float], *, threshold: float = NOISE_THRESHOLD) -> Claim:
    """A/B from one set of samples per side (one process each, or pooled): the ratio of
    medians, Welch's 95 % interval on the log samples (centred on the ratio of medians)."""
    la, lb = _logs(a), _logs(b)
    n = min(len(la), len(lb))
    if n == 0:
        return judge(math.nan, math.nan, math.nan, 0, threshold=threshold, enough=False, note=ClaimNote("no_samples"))
    ratio = _median(a) / _median(b)
    ma, sa = _mean_sd(la)
    mb, sb = _mean_sd(lb)
    va, vb = sa**2 / len(la), sb**2 / len(lb)
    se = math.sqrt(va + vb)
    if se > 0 and len(la) > 1 and len(lb) > 1:
        df = (va + vb) ** 2 / ((va**2 / (len(la) - 1) if va else 0.0) + (vb**2 / (len(lb) - 1) if vb else 0.0))
        half = t975(df) * se
    else:
        half = 0.0 if n >= MIN_SAMPLES else math.inf
    centre = math.log(ratio)
    enough = n >= MIN_SAMPLES
    note = None if enough else ClaimNote("too_few_samples", n, MIN_SAMPLES)
    return judge(
        ratio,
        math.exp(centre - half),
        math.exp(centre + half),
        n,
        unit="samples",
        threshold=threshold,
        enough=enough,
        note=note,
    )


def from_round_ratios(
    ratios: Sequence[float], *, threshold: float = NOISE_THRESHOLD, note: ClaimNote | None = None
) -> Claim:
    """A/B from per-round ratios (each round: one process, A and B in it): the geometric mean
    and the t-interval of the log ratios. Needs ≥ 2 rounds."""
    logs = _logs(ratios)
    k = len(logs)
    if k < 2:
        return judge(
            math.nan,
            math.nan,
            math.nan,
            k,
            unit="rounds",
            threshold=threshold,
            enough=False,
            note=ClaimNote("too_few_rounds", k, 2),
        )
    m, sd = _mean_sd(logs)
    half = t975(k - 1) * sd / math.sqrt(k)
    lo, hi = m - half, m + half
    rank = median_interval(logs)
    if rank is not None:  # never narrower than what holds without normality (module doc)
        lo, hi = min(lo, rank[0]), max(hi, rank[1])
    return judge(math.exp(m), math.exp(lo), math.exp(hi), k, unit="rounds", threshold=threshold, note=note)


def median_interval(xs: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The distribution-free interval for the median of ``xs`` (independent values, any
    distribution) from their order statistics: ``[x_(j), x_(k+1-j)]`` with the largest ``j`` whose
    coverage ``P(j <= B <= k - j)``, ``B ~ Binomial(k, 1/2)``, reaches ``confidence`` (the sign
    test's interval, ``core.stats.median_ci``). None with fewer than ``MIN_ROUNDS_RANK`` values: no
    such interval reaches 95 % from so few."""
    finite = [x for x in xs if math.isfinite(x)]
    return stats.median_ci(finite, confidence) if len(finite) >= MIN_ROUNDS_RANK else None


def _widen(claim: Claim, half: float, unit: Literal["rounds", "samples"], n: int) -> Claim:
    """``claim`` with its interval widened to at least ±``half`` (log) around its ratio."""
    c = math.log(claim.ratio)
    lo, hi = min(claim.lo, math.exp(c - half)), max(claim.hi, math.exp(c + half))
    return judge(claim.ratio, lo, hi, n, unit=unit, threshold=claim.threshold, note=claim.note)


def from_rounds(
    a_rounds: Sequence[Sequence[float]],
    b_rounds: Sequence[Sequence[float]],
    *,
    threshold: float = NOISE_THRESHOLD,
    process_sd: float | None = None,
) -> Claim:
    """A/B measured in rounds (round i of A and of B ran in the same process, in alternated
    order). With ≥ 2 paired rounds: :func:`from_round_ratios` on ``median(A_i)/median(B_i)``;
    the interval is then never narrower than the pooled samples' one (:func:`from_samples`),
    so a second round can only add caution. With one round: :func:`from_samples`. Either way
    fewer than ``MIN_SAMPLES`` samples per side in total is not enough.

    ``process_sd``: the machine's between-process spread (sd of log medians of the same case in
    two processes, :func:`process_spread` over the record's rounded cases), known from many
    cases. A one-round claim is widened to ±1.96·√2·process_sd (its two sides ran at different
    times, as two processes do); a rounded claim uses max(its own round sd, √2·process_sd) with
    the normal quantile instead of t(k-1), since that sd rests on many cases."""
    pooled_a = [x for r in a_rounds for x in r]
    pooled_b = [x for r in b_rounds for x in r]
    within = from_samples(pooled_a, pooled_b, threshold=threshold)
    pairs = [(ra, rb) for ra, rb in zip(a_rounds, b_rounds) if ra and rb]
    if not within.enough and not _too_wide(within):  # too few samples: the rounds cannot help
        return within
    if len(pairs) < 2:
        if process_sd:
            return _widen(within, 1.96 * math.sqrt(2) * process_sd, "samples", within.n)
        return within
    modes = rounds_bimodal(a_rounds) or rounds_bimodal(b_rounds)
    note = ClaimNote("bimodal", modes=modes) if modes else None
    ratios = [_median(ra) / _median(rb) for ra, rb in pairs]
    between = from_round_ratios(ratios, threshold=threshold, note=note)
    lo, hi = min(between.lo, within.lo), max(between.hi, within.hi)
    claim = judge(between.ratio, lo, hi, between.n, unit="rounds", threshold=threshold, note=note)
    if process_sd:
        _, sd = _mean_sd(_logs(ratios))
        half = 1.96 * max(sd, math.sqrt(2) * process_sd) / math.sqrt(len(ratios))
        c = math.log(between.ratio)
        lo, hi = min(within.lo, math.exp(c - half)), max(within.hi, math.exp(c + half))
        claim = judge(between.ratio, lo, hi, between.n, unit="rounds", threshold=threshold, note=note)
    return _few_rounds(claim)


def _too_wide(claim: Claim) -> bool:
    return claim.status == "not_enough" and claim.note is not None and claim.note.kind == "too_wide"


def _few_rounds(claim: Claim, *, margin: bool = True) -> Claim:
    """A rounded claim that is no change only for want of rounds (fewer than
    ``MIN_ROUNDS_NO_CHANGE``, its interval reaching beyond the noise band), or a change from fewer
    than ``MIN_ROUNDS_RANK`` rounds whose near end does not clear ``FEW_ROUNDS_MARGIN``: not
    enough, with why. ``margin`` False: two runs' claims made together (:func:`together`), whose
    intervals already hold the between-run spread their ~40 cases show."""
    if margin and claim.significant and claim.n < MIN_ROUNDS_RANK:
        near = claim.lo if claim.status == "faster" else 1.0 / claim.hi
        if near < FEW_ROUNDS_MARGIN:
            return dataclasses.replace(
                claim,
                status="not_enough",
                note=ClaimNote("near_band", claim.n, MIN_ROUNDS_RANK, margin=FEW_ROUNDS_MARGIN),
            )
        return claim
    inside = 1.0 / (1.0 + claim.threshold) <= claim.lo and claim.hi <= 1.0 + claim.threshold
    if not (claim.status == "no_change" or _too_wide(claim)) or claim.n >= MIN_ROUNDS_NO_CHANGE or inside:
        return claim
    few = ClaimNote("too_few_rounds", claim.n, MIN_ROUNDS_NO_CHANGE)
    return dataclasses.replace(claim, status="not_enough", note=few)


def between_runs(
    a_rounds: Sequence[Sequence[float]],
    b_rounds: Sequence[Sequence[float]],
    *,
    threshold: float = NOISE_THRESHOLD,
    process_sd: float | None = None,
) -> Claim:
    """The same case in two runs (``compare``): the runs share no process, so nothing pairs.

    - Both runs with ≥ 2 rounds: Welch's interval on the log per-round medians (between-process
      variation of each run), never narrower than the pooled samples' interval.
    - Otherwise: the pooled samples' interval, widened by the between-process spread
      ``process_sd`` (sd of log process medians) when the caller knows it from other cases of
      the same runs — two single processes differ by that much with no change at all.
    The ratio is the ratio of the pooled medians either way."""
    pooled_a = [x for r in a_rounds for x in r]
    pooled_b = [x for r in b_rounds for x in r]
    within = from_samples(pooled_a, pooled_b, threshold=threshold)
    if not within.enough:
        return within
    ma = [math.log(_median(r)) for r in a_rounds if r]
    mb = [math.log(_median(r)) for r in b_rounds if r]
    centre = math.log(within.ratio)
    modes = rounds_bimodal(a_rounds) or rounds_bimodal(b_rounds)
    note = ClaimNote("bimodal", modes=modes) if modes else None
    if len(ma) >= 2 and len(mb) >= 2:
        # Student's pooled-variance t on the log process medians (the two runs are the same
        # setup, so one between-process variance; Welch's df with 2 + 2 rounds is near 1 and
        # would hide even a 2x change), never below the machine-wide spread when known.
        ka, kb = len(ma), len(mb)
        ss = sum((x - sum(ma) / ka) ** 2 for x in ma) + sum((x - sum(mb) / kb) ** 2 for x in mb)
        sd = math.sqrt(ss / (ka + kb - 2))
        scale = math.sqrt(1 / ka + 1 / kb)
        half = max(t975(ka + kb - 2) * sd * scale, 1.96 * (process_sd or 0.0) * scale)
        lo, hi = min(within.lo, math.exp(centre - half)), max(within.hi, math.exp(centre + half))
        # (:func:`together` applies MIN_ROUNDS_NO_CHANGE after widening: the between-run spread is
        # estimated from these claims, each with its ratio, first)
        return judge(within.ratio, lo, hi, min(ka, kb), unit="rounds", threshold=threshold, note=note)
    if process_sd is not None and process_sd > 0:
        half = 1.96 * math.sqrt(2) * process_sd
        lo, hi = min(within.lo, math.exp(centre - half)), max(within.hi, math.exp(centre + half))
        return judge(within.ratio, lo, hi, within.n, unit="samples", threshold=threshold, note=note)
    return within


def process_spread(rounds_per_case: Sequence[Sequence[Sequence[float]]]) -> float | None:
    """The machine's between-process spread from the cases measured in ≥ 2 rounds: the upper
    quartile over cases of the sd of log round medians (None when no case has 2 rounds).

    The upper quartile, not the median: on a shared machine the spread is heavy-tailed (on the
    2-core machine at load 8–11, from 0.4 % to a factor of 7 between two rounds of the same
    case, benchmarks/stability.md) and a claim must survive most cases' variation, not only the
    typical one's. On a quiet machine every case's spread is small, and so is this."""
    sds = []
    for rounds in rounds_per_case:
        logs = [math.log(_median(r)) for r in rounds if r and _median(r) > 0]
        if len(logs) >= 2:
            sds.append(_mean_sd(logs)[1])
    return stats.quantile(sds, 0.75) if sds else None


# Fewest cases from which two runs' common between-run spread is estimated (:func:`run_spread`).
MIN_CASES_FOR_RUN_SPREAD = 10
# Qn's consistency factor: Qn = 2.2219 × the first quartile of the pairwise distances is the sd
# for normal data (Rousseeuw & Croux 1993, "Alternatives to the median absolute deviation").
_QN_FACTOR = 2.2219


def run_spread(log_ratios: Sequence[float]) -> float | None:
    """How far the cases of two runs moved between the runs, as an sd of log ratios: the Qn
    scale estimator of the cases' ``log(before / after)`` (None with fewer than ``MIN_CASES_FOR_RUN_SPREAD``).

    Why: within a run, a case's two rounds agree closely, yet two identical runs a
    minute apart differ by 3–30 % (sd across cases, 20 recorded pairs on the 2-core machine,
    benchmarks/stability.md): the machine drifts over minutes, and both rounds of one run share
    its moment. Only the two runs together show that spread. Qn, not the sd: it ignores up to
    half the cases, so real changes in some cases do not widen the others' intervals; and not
    the MAD around the median: with half the cases 2× slower, the MAD would be the size of the
    change and hide it, while Qn (built on pairwise distances, no centre) stays near the
    unchanged half's spread (at most ≈ 2× it)."""
    xs = sorted(x for x in log_ratios if math.isfinite(x))
    if len(xs) < MIN_CASES_FOR_RUN_SPREAD:
        return None
    distances = [b - a for i, a in enumerate(xs) for b in xs[i + 1 :]]
    return _QN_FACTOR * stats.quantile(distances, 0.25)


def _z(p: float) -> float:
    return NormalDist().inv_cdf(p)


def together(claims: Sequence[Claim], *, run_sd: float | None = None) -> list[Claim]:
    """``claims`` made at once (``compare``'s cases), each interval widened so that

    - all of them hold **together** at ``CONFIDENCE`` (95 %): each at ``1 - (1 - CONFIDENCE) / m``
      for ``m`` judged claims (Bonferroni). Forty claims at 95 % each call two of forty cases
      changed in two identical runs on average even when their noise is right; together at
      95 %, two identical runs show no change at all 19 times in 20;
    - each includes ``run_sd``, the between-run spread common to the two runs
      (:func:`run_spread`), added in quadrature to the claim's own spread.

    The normal quantile scales each side of an interval (its half-width at 95 % over 1.96 is the
    claim's standard error): the widening rests on spreads estimated across all cases of the two
    runs, dozens of degrees of freedom. Claims that were not enough stay as they are."""
    judged = {i for i, c in enumerate(claims) if c.enough and c.lo > 0 and math.isfinite(c.hi)}
    m = len(judged)
    if m == 0:
        return list(claims)
    confidence = 1 - (1 - CONFIDENCE) / m
    z, z95 = _z(1 - (1 - confidence) / 2), _z(1 - (1 - CONFIDENCE) / 2)
    tau = run_sd or 0.0
    out = []
    for i, c in enumerate(claims):
        if i not in judged:
            out.append(c)
            continue
        centre = math.log(c.ratio)
        below = math.hypot((centre - math.log(c.lo)) / z95, tau) * z
        above = math.hypot((math.log(c.hi) - centre) / z95, tau) * z
        widened = judge(
            c.ratio,
            math.exp(centre - below),
            math.exp(centre + above),
            c.n,
            unit=c.unit,
            threshold=c.threshold,
            note=c.note,
            confidence=confidence,
        )
        # no clear change from 2 rounds only inside the noise band, as from_rounds says it: compare
        # read "no clear change (1x, CI 0.65-1.7x, n=2)" of a keras-io script run twice
        out.append(_few_rounds(widened, margin=False) if c.unit == "rounds" else widened)
    return out


@dataclass(frozen=True)
class Modes:
    """Two clusters of process medians: the low and high cluster's medians and sizes."""

    low: float
    high: float
    n_low: int
    n_high: int


def rounds_bimodal(rounds: Sequence[Sequence[float]]) -> Modes | None:
    """:func:`bimodal` over one case's rounds: their medians, with each round's own spread
    (IQR/median) as ``within`` — two rounds 30 % apart are two modes only when each round is
    tight (≤ 10 % at the 3x factor), not when each is as noisy as the gap."""
    rs = [r for r in rounds if r]
    if len(rs) < 2:
        return None
    within = [stats.iqr(r) / _median(r) for r in rs if _median(r) > 0]
    return bimodal([_median(r) for r in rs], within=within)


def bimodal(medians: Sequence[float], *, within: Sequence[float] | None = None) -> Modes | None:
    """Do the per-process medians of one point form two clusters? Split at the largest
    relative gap between sorted medians; bimodal when that gap exceeds ``BIMODAL_GAP`` (25 %)
    and ``BIMODAL_SPREAD_FACTOR`` times the largest relative spread inside a cluster — or, for two processes,
    inside either process (``within``: each process's IQR/median; default 0). Averaging such
    a point would describe neither mode, so callers say "bimodal" instead."""
    xs = sorted(m for m in medians if m > 0)
    if len(xs) < 2:
        return None
    gaps = [(math.log(xs[i + 1] / xs[i]), i) for i in range(len(xs) - 1)]
    g, i = max(gaps)
    low, high = xs[: i + 1], xs[i + 1 :]
    spread = max(
        [math.log(c[-1] / c[0]) for c in (low, high) if len(c) > 1] + [math.log1p(w) for w in (within or [])] + [0.0]
    )
    if g <= math.log1p(BIMODAL_GAP) or g <= BIMODAL_SPREAD_FACTOR * spread:
        return None
    return Modes(_median(low), _median(high), len(low), len(high))


def learned_threshold(between_run_log_ratios: Sequence[float], *, default: float = NOISE_THRESHOLD) -> float:
    """A case's noise threshold from repeated identical runs on this machine: the largest of
    the default and 2 × the RMS of the between-run log ratios (two identical runs of a point
    whose run-to-run sd is s differ by up to ≈ 2·s·√2 at 95 %; 2 × RMS of differences already
    carries the √2). With fewer than 2 repeats: ``default``."""
    xs = [x for x in between_run_log_ratios if math.isfinite(x)]
    if len(xs) < 2:
        return default
    rms = math.sqrt(sum(x * x for x in xs) / len(xs))
    return max(default, math.expm1(2 * rms))
