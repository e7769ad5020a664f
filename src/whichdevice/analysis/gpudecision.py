"""Would a GPU help? One decision from a prediction, the same for every command that shows one.

Per measured batch the predicted step ratio GPU / CPU has a band: the GPU's calibrated band
(analysis/errormodel.py) over this CPU's measured quartiles (``ratio_band``). A batch has a
winner only when that band excludes 1 (the GPU when it lies below, the CPU when above); when
it straddles 1 the batch is *too close to call*, whatever the medians say: the prediction's
own error cannot separate the two there, and a crossover read from the medians alone moved
from one run to the next under load.

``decide`` turns the per-batch verdicts into runs of consecutive batches (``Span``) and says
what would settle the too-close ones: measuring them on the GPU, and, where this CPU's median
alone lies outside the band, a steadier CPU measurement. Nothing is claimed past the largest
batch measured: planned batches the run did not measure (the time budget cut them) are named.
``run`` (present/firstscreen.py) and ``predict`` (present/predictscreen.py) both word this one
decision with present/claims.gpu_decision_words.

**The CPU's inputs** (``cpu_step``) are the ones load disturbs least, so that the same machine
gives the same answer at load 4 and at load 9. Other programs on the cores only ever add time
to a step, never take it away: Python's timeit says of its repeats that the lowest gives the
machine's speed and the higher ones are "typically ... other processes interfering", and pyperf
runs many processes because one process's numbers do not predict the next one's. So each
process's undisturbed step is read from the quickest quarter of its steps, which load reaches
last: its lower quartile and its 10th percentile give the spread of the undisturbed steps
(normal quantiles: q1 - p10 = 0.607 sigma), hence their median (q1 + 0.674 sigma) and their
quartiles (``low`` = q1, ``high`` = q1 + 1.35 sigma); the least disturbed process (the lowest
such median) gives the CPU's step. Three recorded runs of the same sweep on the 2-core machine
(load 6.5 to 10.7, tests/data/run_cpu_*) had pooled medians of 0.70-0.80 ms at batch 8 and pooled
upper quartiles of 0.96-3.2 ms; with the pooled figures they gave answers far apart (too close at
8-512; the CPU at 8 and too close from 10), with this estimate they differ at batch 128 alone. A
run's own quartiles do not hold what the next run of the same command reads, so the CPU's edges
are never nearer its step than the between-run spread (``CPU_RUN_FACTOR``). A step whose quiet
steps are skewed to the right is read a little quick: the CPU's side of a "GPU wins" answer is
then, if anything, favoured. How far the CPU's times varied (``CpuStep.varied``) is kept; above
``VARIED`` load may have reached even the quickest quarter of the steps (at load 12 on 2 cores
each process gets a sixth of a core), so
the band's lower edge is widened to the quickest step of any process (timeit's lower bound).
Only that edge: load only makes the CPU look slower, so what it can make wrong is a GPU said to
win; a GPU then wins only where it beats even the quickest CPU step measured. The screen says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from whichdevice.analysis.costmodel import Band
from whichdevice.core import stats

if TYPE_CHECKING:
    from whichdevice.analysis.prediction import GpuAnswer

TOO_CLOSE = "too_close"  # the ratio band straddles 1 (present/prediction.winner_text words it)


# Above this, the CPU's times are said to have varied under load (``CpuStep.varied``): a
# quieter process of the recorded sweeps (tests/data/run_cpu_readme.json's round 1) keeps its
# upper quartile within 1.2-1.65x of its median; the loaded ones reach 2-5x.
VARIED = 2.0


@dataclass(frozen=True)
class CpuStep:
    """The CPU's step at one batch as the prediction takes it (seconds): ``mid`` the undisturbed
    median of the least disturbed process, ``low``..``high`` its undisturbed quartiles
    (``cpu_step``); ``varied``: the largest of the pooled upper quartile over ``mid``, the
    slowest process's median over ``mid``, and ``mid`` over the quickest step (a process slowed
    throughout: at load 20 one predict sweep's steps were 7x its quickest); ``processes``: how many."""

    mid: float
    low: float
    high: float
    varied: float
    processes: int


# Standard normal quantiles: the 10th percentile and the lower quartile lie 1.2816 and 0.6745
# standard deviations below the median.
_Z10, _Z25 = 1.2816, 0.6745


def cpu_step(rounds: Sequence[Sequence[float]]) -> CpuStep:
    """The CPU's step from its samples per process (``Timing.rounds``): per process, the
    undisturbed steps' spread from its quickest quarter (sigma = (q1 - p10) / 0.607), their
    median q1 + 0.674 sigma and upper quartile q1 + 1.35 sigma; the process with the lowest
    such median gives the step. When the times varied more than ``VARIED``, the band reaches
    down to the quickest step measured."""
    per = []
    for r in rounds:
        if not r:
            continue
        q1, p10 = stats.quantile(r, 0.25), stats.quantile(r, 0.10)
        sigma = (q1 - p10) / (_Z10 - _Z25)
        per.append((q1 + _Z25 * sigma, q1, q1 + 2 * _Z25 * sigma, stats.median(r)))
    if not per:
        raise ValueError("a CPU step from no samples")
    mid, low, high, _ = min(per)
    pooled = [x for r in rounds for x in r]
    slowest = max(m for *_, m in per)
    quickest = min(pooled)
    # a process slowed throughout (every step disturbed) shows as its quickest step far below the rest
    varied = max(stats.quantile(pooled, 0.75) / mid, slowest / mid, mid / quickest) if quickest > 0 else 1.0
    if varied > VARIED:  # load may have slowed even the quickest quarter: the band reaches the quickest step
        low = min(low, quickest)
    return CpuStep(mid, low, high, varied, len(per))


# Between-run sd of the log CPU step as ``cpu_step`` reads it: the same command run 6 times back to
# back on the 2-core machine (3 x `run --budget 60`, 3 x `predict --quick`, load 0.4-2.4, the
# records in tests/data/stable_prediction/) read one batch's step from 0.90 to 1.08 ms; per batch
# the sd of the log step was 0.011-0.070 (8192 aside, 0.22, far from any crossover), 0.070 its
# upper quartile. One run's own quartiles (its steps within a process) are narrower: they said
# "CPU" at batch 128 in one run and "too close" in the next.
CPU_RUN_SD = 0.07
# Two runs' CPU steps differ by sqrt(2) x that sd; 95 % of them lie within 1.96 of it.
CPU_RUN_FACTOR = math.exp(1.96 * math.sqrt(2) * CPU_RUN_SD)


def ratio_band(cpu_median: float, cpu_q1: float, cpu_q3: float, gpu: Band) -> Band:
    """The predicted step ratio GPU / CPU: its middle from the two medians, its edges from the
    GPU band's edges over the CPU's far edges (the widest the two together allow). The CPU's
    edges are its own quartiles, never nearer its median than another run of the same command
    would read it (``CPU_RUN_FACTOR``): a batch is called only where a second run's CPU step
    would call it too."""
    low = min(cpu_q1, cpu_median / CPU_RUN_FACTOR)
    high = max(cpu_q3, cpu_median * CPU_RUN_FACTOR)
    return Band(gpu.low / high, gpu.mid / cpu_median, gpu.high / low)


def batch_winner(ratio: Band) -> str:
    """ "GPU" when the whole band is below 1, "CPU" when above, else TOO_CLOSE."""
    if ratio.high < 1:
        return "GPU"
    if ratio.low > 1:
        return "CPU"
    return TOO_CLOSE


@dataclass(frozen=True)
class Span:
    """Consecutive measured batches with the same verdict."""

    winner: str  # "CPU" | "GPU" | TOO_CLOSE
    batches: tuple[int, ...]


@dataclass(frozen=True)
class GpuDecision:
    spans: tuple[Span, ...]  # by batch; empty: nothing to decide from
    unmeasured_above: tuple[int, ...] = ()  # planned batches past the largest measured one, not measured
    cpu_spread: tuple[int, ...] = ()  # too-close batches where the CPU median alone lies outside the GPU band
    command: str | None = None  # the measurement on the GPU that settles the too-close batches
    crossing: tuple[float, int, int] | None = None  # (≈ batch, CPU's last, GPU's first) when they are neighbours

    @property
    def kind(self) -> str:
        """ "none", the one verdict of every batch ("GPU", "CPU", TOO_CLOSE), or "mixed"."""
        if not self.spans:
            return "none"
        return self.spans[0].winner if len(self.spans) == 1 else "mixed"

    @property
    def measured(self) -> tuple[int, ...]:
        return tuple(b for s in self.spans for b in s.batches)

    @property
    def too_close(self) -> tuple[int, ...]:
        return tuple(b for s in self.spans if s.winner == TOO_CLOSE for b in s.batches)

    @property
    def gpu_from(self) -> int | None:
        """The first batch of the last span when the GPU wins it (where its step is worth describing)."""
        return self.spans[-1].batches[0] if self.spans and self.spans[-1].winner == "GPU" else None

    @property
    def gist(self) -> str:
        """What is decided, without figures: the verdict per batch (round 2 is checked against it)."""
        runs = ", ".join(f"{s.winner} {s.batches[0]}–{s.batches[-1]}" for s in self.spans) or "none"
        return f"predicted per batch: {runs}" + (
            f"; unmeasured {self.unmeasured_above[0]}+" if self.unmeasured_above else ""
        )


def decide(rows: Sequence[GpuAnswer], planned: Sequence[int] = (), command: str | None = None) -> GpuDecision:
    """The decision from ``rows`` (analysis/prediction.GpuAnswer, whose ``winner`` is
    ``batch_winner`` of its ratio band); ``planned``: every batch the run meant to measure;
    ``command``: what settles the too-close batches on a GPU."""
    decided = [r for r in sorted(rows, key=lambda r: r.batch) if r.winner in ("CPU", "GPU", TOO_CLOSE)]
    spans: list[Span] = []
    for r in decided:
        if spans and spans[-1].winner == r.winner:
            spans[-1] = Span(r.winner, (*spans[-1].batches, r.batch))
        else:
            spans.append(Span(r.winner, (r.batch,)))
    top = decided[-1].batch if decided else None
    above = tuple(sorted(b for b in set(planned) if top is None or b > top))
    spread = tuple(
        r.batch
        for r in decided
        if r.winner == TOO_CLOSE
        and r.band is not None
        and r.cpu_s is not None
        and not r.band.low <= r.cpu_s <= r.band.high
    )
    return GpuDecision(
        tuple(spans), above, spread, command if any(s.winner == TOO_CLOSE for s in spans) else None, _crossing(decided)
    )


def _crossing(rows: Sequence[GpuAnswer]) -> tuple[float, int, int] | None:
    """Where a CPU-won batch is followed directly by a GPU-won one: the batch where the medians'
    log ratio crosses 0, linear in log batch between them (step times follow power laws)."""
    for a, b in zip(rows, rows[1:]):
        if a.winner != "CPU" or b.winner != "GPU":
            continue
        if a.cpu_s is None or b.cpu_s is None or a.band is None or b.band is None:
            return None
        r0, r1 = math.log(a.band.mid / a.cpu_s), math.log(b.band.mid / b.cpu_s)
        if not r0 > 0 > r1:
            return None
        lx0, lx1 = math.log(a.batch), math.log(b.batch)
        return math.exp(lx0 + r0 * (lx1 - lx0) / (r0 - r1)), a.batch, b.batch
    return None
