"""Order statistics for raw timing samples (median, quartiles, IQR).

Statistics are always derived from the raw samples kept in the records; they are never
stored on their own (STYLE.md principle 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# torch.utils.benchmark's Measurement warns when IQR/median > 0.10 ("system fluctuation").
NOISY_REL_IQR = 0.10


def quantile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default 'linear' method) of ``samples``."""
    if not samples:
        raise ValueError("quantile of no samples")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    xs = sorted(samples)
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(samples: Sequence[float]) -> float:
    return quantile(samples, 0.5)


def iqr(samples: Sequence[float]) -> float:
    """Interquartile range: q3 - q1. Zero for a single sample."""
    return quantile(samples, 0.75) - quantile(samples, 0.25)


def rel_iqr(samples: Sequence[float]) -> float:
    """IQR / median: the spread as a fraction of the typical value."""
    m = median(samples)
    return iqr(samples) / m if m > 0 else 0.0


def is_noisy(samples: Sequence[float], threshold: float = NOISY_REL_IQR) -> bool:
    """True when IQR/median exceeds ``threshold`` (torch.utils.benchmark: 0.10)."""
    return len(samples) >= 2 and rel_iqr(samples) > threshold


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median from order statistics (the binomial
    method): the narrowest symmetric ranks (j, n+1-j) whose coverage is ≥ ``confidence``. None
    when there are too few samples for that confidence (fewer than 6 at 95 %)."""
    xs = sorted(samples)
    n = len(xs)
    best: tuple[float, float] | None = None
    # coverage of [x_(j), x_(n+1-j)] (1-based) = P(j <= B(n, 1/2) <= n - j)
    for j in range(1, n // 2 + 1):
        cover = sum(math.comb(n, i) for i in range(j, n - j + 1)) / 2**n
        if cover < confidence:
            break
        best = (xs[j - 1], xs[n - j])
    return best


def median_rel_halfwidth(samples: Sequence[float], confidence: float = 0.95) -> float:
    """Half the median's confidence interval over the median; ``inf`` until it can be formed."""
    ci = median_ci(samples, confidence)
    if ci is None:
        return math.inf
    m = median(samples)
    return (ci[1] - ci[0]) / 2 / m if m > 0 else math.inf
