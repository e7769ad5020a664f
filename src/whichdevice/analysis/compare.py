"""Compare two timings of the same work (two devices, fix off vs on, two runs).

The ratio is ``t_baseline / t_other`` (> 1: ``other`` is faster). Whether it is a change is
decided by the one rule in ``analysis/significance.py``: at least 5 samples per side, a 95 %
interval wholly beyond the noise threshold (5 % unless a learned one is passed). When both timings were measured in several rounds (fresh child processes, paired
by round, ``Timing.rounds_s``) the interval comes from the per-round ratios, i.e. from
between-process variation; otherwise from the samples of the one process (STYLE.md
principle 8: within the noise, no winner is named).
"""

from __future__ import annotations

from dataclasses import dataclass

from whichdevice.analysis import significance
from whichdevice.analysis.significance import Claim
from whichdevice.core.records import RunRecord, Timing


@dataclass(frozen=True)
class Comparison:
    baseline: str  # e.g. "CPU:0"
    other: str  # e.g. "GPU:0"
    claim: Claim  # baseline / other: ratio > 1 means `other` is faster

    @property
    def ratio(self) -> float:
        return self.claim.ratio

    @property
    def ratio_lo(self) -> float:
        return self.claim.lo

    @property
    def ratio_hi(self) -> float:
        return self.claim.hi

    @property
    def significant(self) -> bool:
        """A change by significance.py's rule (the whole CI beyond the noise, ≥ 5 samples)."""
        return self.claim.significant

    @property
    def enough(self) -> bool:
        """False when a side has fewer than 5 samples: no claim either way."""
        return self.claim.enough

    @property
    def n(self) -> int:
        return self.claim.n

    @property
    def winner(self) -> str | None:
        """The faster device, or None when the difference is not a change."""
        if not self.significant:
            return None
        return self.other if self.ratio > 1 else self.baseline

    @property
    def faster(self) -> str:
        """The side with the lower median, significant or not."""
        return self.other if self.ratio > 1 else self.baseline


def compare(
    baseline_name: str,
    baseline: Timing,
    other_name: str,
    other: Timing,
    *,
    threshold: float = significance.NOISE_THRESHOLD,
    process_sd: float | None = None,
) -> Comparison:
    """``baseline`` vs ``other`` through significance.from_rounds (rounds when both have them;
    ``process_sd``: the record's between-process spread, :func:`process_sd`)."""
    claim = significance.from_rounds(baseline.rounds, other.rounds, threshold=threshold, process_sd=process_sd)
    return Comparison(baseline_name, other_name, claim)


def process_sd(record: RunRecord) -> float | None:
    """The record's between-process spread: how much the same case moves between two child
    processes of this run (significance.process_spread over its cases with ≥ 2 rounds); None
    when no case was measured twice. Every ratio of the record is widened by it, so a claim from
    two sequential measurements is no surer than two processes agree."""
    return significance.process_spread([r.timing.rounds for r in record.results if r.timing is not None])
