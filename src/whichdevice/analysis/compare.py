"""Compare two timings of the same work on two devices, with their spread.

The ratio is ``t_cpu / t_gpu`` (> 1: the GPU is faster). Its range comes from the
quartiles: from ``q1_cpu / q3_gpu`` to ``q3_cpu / q1_gpu``. When the two interquartile
ranges overlap the difference is within the noise and we say so (STYLE.md principle 8)
instead of naming a winner.
"""

from __future__ import annotations

from dataclasses import dataclass

from whichdevice.core.records import Timing


@dataclass(frozen=True)
class Comparison:
    baseline: str  # e.g. "CPU:0"
    other: str  # e.g. "GPU:0"
    ratio: float  # baseline median / other median: > 1 means `other` is faster
    ratio_lo: float
    ratio_hi: float
    significant: bool  # interquartile ranges do not overlap

    @property
    def winner(self) -> str | None:
        """The faster device, or None when the difference is within the noise."""
        if not self.significant:
            return None
        return self.other if self.ratio > 1 else self.baseline

    @property
    def faster(self) -> str:
        """The device with the lower median, significant or not."""
        return self.other if self.ratio > 1 else self.baseline

    def describe(self) -> str:
        """'GPU:0 3.1x faster (2.9-3.3)', 'GPU:0 1.6x slower (1.5-1.7)' or 'no significant difference'."""
        if not self.significant:
            return f"no significant difference ({self.other} {_times(self.ratio)})"
        if self.ratio >= 1:
            return f"{self.other} {self.ratio:.3g}x faster ({self.ratio_lo:.3g}-{self.ratio_hi:.3g})"
        inv, lo, hi = 1 / self.ratio, 1 / self.ratio_hi, 1 / self.ratio_lo
        return f"{self.other} {inv:.3g}x slower ({lo:.3g}-{hi:.3g})"


def _times(ratio: float) -> str:
    return f"{ratio:.3g}x faster" if ratio >= 1 else f"{1 / ratio:.3g}x slower"


def compare(baseline_name: str, baseline: Timing, other_name: str, other: Timing) -> Comparison:
    ratio = baseline.median_s / other.median_s
    lo = baseline.q1_s / other.q3_s if other.q3_s > 0 else ratio
    hi = baseline.q3_s / other.q1_s if other.q1_s > 0 else ratio
    overlap = baseline.q1_s <= other.q3_s and other.q1_s <= baseline.q3_s
    # A single sample on each side has a zero-width range: equal medians only overlap.
    return Comparison(baseline_name, other_name, ratio, min(lo, ratio), max(hi, ratio), not overlap)
