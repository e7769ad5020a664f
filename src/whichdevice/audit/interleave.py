"""Interleaved A/B re-measurement for the audit's corrected ratio (framework-neutral, no framework import).

Timing all of A and then all of B lets anything that drifts during the run (another process
taking a core, clock boost, caches, a warming allocator) land on one side only. Instead each
round times one block of A and one block of B, in an order drawn at random for that round,
in the same process; the ratio of the round is A/B (as ``compare`` reads a change: above 1, B
is faster), and the answer is the median of the
per-round ratios with a distribution-free 95 % interval of that median (order statistics of
the binomial, no normality assumed). For two identical blocks that interval contains 1.0 in
≥ 95 % of runs when rounds are independent (measured: ``benchmarks/audit.md``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from math import comb

from whichdevice.core import stats

MIN_ROUNDS = 9  # below this the 95 % interval of a median is the whole range: no claim
MAX_ROUNDS = 41


def median_ci(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval [x_(j), x_(n-j+1)] for the median: the largest j with
    2·P(Binomial(n, ½) ≤ j-1) ≤ 1-level (the whole range when n is too small for that)."""
    s = sorted(values)
    n = len(s)
    if n == 0:
        raise ValueError("no values")
    alpha = 1.0 - level
    j, cum = 0, 0.0
    while j < n:
        nxt = cum + comb(n, j) / 2**n  # P(Bin <= j)
        if 2 * nxt > alpha:
            break
        cum, j = nxt, j + 1
    j = max(j, 1)
    return s[j - 1], s[n - j]


def run_rounds(
    time_a: Callable[[], float],
    time_b: Callable[[], float],
    *,
    budget_s: float,
    min_rounds: int = MIN_ROUNDS,
    max_rounds: int = MAX_ROUNDS,
    seed: int = 0,
    clock: Callable[[], float] = time.perf_counter,
) -> list[dict]:
    """Rounds of ``time_a()`` and ``time_b()`` (each returns the seconds of one block), order random
    per round, until ``budget_s`` is spent (at least ``min_rounds``, at most ``max_rounds``).

    Returns one dict per round: ``a_s``, ``b_s``, ``first`` ('a' or 'b')."""
    rng = random.Random(seed)
    rounds: list[dict] = []
    t0 = clock()
    while len(rounds) < max_rounds and (len(rounds) < min_rounds or clock() - t0 < budget_s):
        first = rng.choice("ab")
        if first == "a":
            a = time_a()
            b = time_b()
        else:
            b = time_b()
            a = time_a()
        rounds.append({"a_s": a, "b_s": b, "first": first})
    return rounds


def summarize(rounds: list[dict]) -> dict:
    """Median ratio A/B over the rounds (above 1: B faster), its 95 % interval, the per-round ratios
    and the sides' medians."""
    ratios = [r["a_s"] / r["b_s"] for r in rounds if r["b_s"] > 0]
    if not ratios:
        return {"ratios": [], "ratio": None, "low": None, "high": None, "a_s": None, "b_s": None}
    lo, hi = median_ci(ratios)
    return {
        "ratios": ratios,
        "ratio": stats.median(ratios),
        "low": lo,
        "high": hi,
        "a_s": stats.median([r["a_s"] for r in rounds]),
        "b_s": stats.median([r["b_s"] for r in rounds]),
    }
