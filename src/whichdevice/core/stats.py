"""Order statistics for raw timing samples (median, quartiles, IQR).

Statistics are always derived from the raw samples kept in the records; they are never
stored on their own (STYLE.md principle 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# torch.utils.benchmark's Measurement warns when IQR/median > 0.10 ("system fluctuation").
NOISY_REL_IQR = 0.10
# No claim from fewer samples per side; also the fewest samples a point takes.
MIN_SAMPLES = 5
# The confidence of every interval a claim is judged on (analysis/significance.py).
CONFIDENCE = 0.95

# The last few sorted sample lists, by content: a report asks the median, quartiles and interval
# of one point's samples dozens of times, and sorting 3,000 samples each time cost more than the
# rest of the analysis. Keyed by the values themselves, so a changed list is a miss.
# The oldest lists leave first once the kept lists hold _SORTED_KEEP_SAMPLES samples in all (a
# 118-point record of 3,000 samples a point fits; cleared all at once, it sorted 731 times).
_SORTED: dict[tuple[float, ...], list[float]] = {}
_SORTED_KEEP_SAMPLES = 1_000_000
_SORT_BELOW = 64  # short lists are sorted directly: the key would cost as much as the sort
_sorted_held = 0


def sorted_samples(samples: Sequence[float]) -> list[float]:
    """``samples`` sorted (the list is shared with later calls on the same values: do not change it)."""
    global _sorted_held
    if len(samples) < _SORT_BELOW:
        return sorted(samples)
    key = tuple(samples)
    xs = _SORTED.get(key)
    if xs is None:
        while _SORTED and _sorted_held + len(key) > _SORTED_KEEP_SAMPLES:
            _sorted_held -= len(_SORTED.pop(next(iter(_SORTED))))
        xs = _SORTED[key] = sorted(key)
        _sorted_held += len(key)
    return xs


def quantile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default 'linear' method) of ``samples``."""
    if not samples:
        raise ValueError("quantile of no samples")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    xs = sorted_samples(samples)
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


# Up to this many samples the coverage is summed in exact integers (math.comb(n, n/2) costs 0.1 s
# at 100,000); above it in floating point, whose error (< 1e-8 of coverage) moves the interval
# only when the coverage of a rank lies that close to the confidence level.
EXACT_MEDIAN_CI_MAX = 100_000


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median from order statistics (the binomial
    method; W. J. Conover, *Practical Nonparametric Statistics*, 3rd ed. 1999, §3.2; Hollander &
    Wolfe, *Nonparametric Statistical Methods*, §3.6): the narrowest symmetric ranks (j, n+1-j)
    whose coverage is ≥ ``confidence``. None when there are too few samples for that confidence
    (fewer than 6 at 95 %).

    The coverage of [x_(j), x_(n+1-j)] (1-based) is P(j ≤ B(n, ½) ≤ n-j) = Σ_{i=j}^{n-j} C(n, i)/2ⁿ.
    It grows as j falls, so the answer is the largest j whose coverage reaches ``confidence``,
    found from the centre outwards in about √n steps after the sort: O(n log n) in all, where
    summing each tail from rank 1 took about n⁴ (2,000 samples took 116 s). Up to
    ``EXACT_MEDIAN_CI_MAX`` samples the sums are the same exact integers, divided the same way,
    so the interval is identical to that of the rank-by-rank sum."""
    xs = sorted_samples(samples)
    n = len(xs)
    j = _median_rank(n, confidence)
    return None if j == 0 else (xs[j - 1], xs[n - j])


def _median_rank(n: int, confidence: float) -> int:
    """The largest j in 1..n//2 with P(j ≤ B(n, ½) ≤ n-j) ≥ ``confidence``; 0 when none."""
    if n < 2:
        return 0
    j = n // 2
    both = 1 if n == 2 * j else 2  # the centre is one rank (n even) or two (n odd)
    if n <= EXACT_MEDIAN_CI_MAX:
        term: float = math.comb(n, j)  # C(n, j), exact while j falls
        inside: float = both * term
        total: float = 2**n
    else:
        # the same walk in floating point, C(n, j)/2ⁿ from log-gamma
        term = math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) - n * math.log(2))
        inside, total = both * term, 1.0
    exact = n <= EXACT_MEDIAN_CI_MAX
    while inside / total < confidence:
        if j == 1:
            return 0
        term = term * j // (n - j + 1) if exact else term * j / (n - j + 1)  # C(n, j-1)
        j -= 1
        inside += 2 * term
    return j


def median_rel_halfwidth(samples: Sequence[float], confidence: float = 0.95) -> float:
    """Half the median's confidence interval over the median; ``inf`` until it can be formed."""
    ci = median_ci(samples, confidence)
    if ci is None:
        return math.inf
    m = median(samples)
    return (ci[1] - ci[0]) / 2 / m if m > 0 else math.inf
