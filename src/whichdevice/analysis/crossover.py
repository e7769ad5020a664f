"""Where does the GPU start to win? The crossover of two timing curves.

Given, for increasing sizes x, the CPU's and the GPU's median times, the crossover lies
between the **last size the CPU wins** and the next size (which the GPU then wins).
Inside that bracket we interpolate linearly in log-log space: with
``r(x) = log(t_gpu / t_cpu)`` taken as linear in ``log x`` between the two sizes, the
crossover is where ``r = 0``. Step and matmul times follow power laws in the size, which
is why log space is the right one for interpolating between two measured points.

We also report whether the two devices' sample ranges overlap at either bracketing size:
if they do, the crossover's position is no better than the bracket itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Crossover:
    kind: str  # "between" | "cpu_everywhere" | "gpu_everywhere" | "no_data"
    low: float | None = None  # last size the CPU wins
    high: float | None = None  # first size after it (the GPU wins)
    estimate: float | None = None  # interpolated in log-log space
    ranges_overlap: bool = False  # sample ranges overlap at a bracketing size
    gpu_wins_below: bool = False  # cpu_everywhere, yet the GPU won some smaller size (noise)


def find_crossover(
    xs: Sequence[float],
    cpu_s: Sequence[float],
    gpu_s: Sequence[float],
    cpu_ranges: Sequence[tuple[float, float]] | None = None,
    gpu_ranges: Sequence[tuple[float, float]] | None = None,
) -> Crossover:
    """Crossover of two curves sampled at the same increasing ``xs`` (medians in seconds).

    ``*_ranges`` are (low, high) sample ranges per point (e.g. min/max or quartiles).
    """
    if not (len(xs) == len(cpu_s) == len(gpu_s)):
        raise ValueError("xs, cpu_s and gpu_s must have the same length")
    no_ranges: list[tuple[float, float] | None] = [None] * len(xs)
    points = sorted(zip(xs, cpu_s, gpu_s, cpu_ranges or no_ranges, gpu_ranges or no_ranges))
    if not points:
        return Crossover("no_data")
    cpu_wins = [c <= g for _, c, g, _, _ in points]
    if not any(cpu_wins):
        return Crossover("gpu_everywhere", high=points[0][0])
    last = max(i for i, w in enumerate(cpu_wins) if w)
    if last == len(points) - 1:
        return Crossover("cpu_everywhere", low=points[-1][0], gpu_wins_below=not all(cpu_wins))
    (x0, c0, g0, cr0, gr0), (x1, c1, g1, cr1, gr1) = points[last], points[last + 1]
    r0, r1 = math.log(g0 / c0), math.log(g1 / c1)
    lx0, lx1 = math.log(x0), math.log(x1)
    estimate = math.exp(lx0 + (0.0 - r0) * (lx1 - lx0) / (r1 - r0)) if r1 != r0 else math.sqrt(x0 * x1)
    overlap = _overlaps(cr0, gr0) or _overlaps(cr1, gr1)
    return Crossover("between", low=x0, high=x1, estimate=estimate, ranges_overlap=overlap)


def _overlaps(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    if a is None or b is None:
        return False
    return a[0] <= b[1] and b[0] <= a[1]
