"""Human-readable numbers with units: the one formatter every presenter writes through.

A figure is rounded to three significant digits *before* its unit is chosen, so a value just
under a unit's boundary reads in the larger unit (999.96 µs is "1 ms", never "1e+03 µs"), and
the largest unit never shows an exponent (4000 s is "4000 s")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

# (scale, unit), smallest first
_TIME: tuple[tuple[float, str], ...] = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
_RATE: tuple[tuple[float, str], ...] = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"))
_BYTES: tuple[tuple[float, str], ...] = ((2**10, "KiB"), (2**20, "MiB"), (2**30, "GiB"))

TimeUnit = Literal["ns", "µs", "ms", "s"]


def _g3(x: float) -> str:
    """Three significant digits, without an exponent for figures up to 10^15."""
    text = f"{x:.3g}"
    if "e+" in text:  # only from the largest unit: the figure is >= 1000
        text = f"{x:.0f}"
    return text


def figure(x: float | None) -> str:
    """A plain figure to three significant digits, never with an exponent: 1634.2 is '1630',
    0.5 is '0.5' (a crossover's batch or matrix size, a count)."""
    if x is None:
        return "—"
    text = f"{x:.3g}"
    return f"{float(text):.0f}" if "e+" in text else text


def scaled(value: float, units: tuple[tuple[float, str], ...]) -> tuple[str, str]:
    """(figure, unit) for ``value`` in the smallest of ``units`` (smallest first) whose rounded
    figure stays under 1000; the largest unit takes whatever is left."""
    for scale, unit in units[:-1]:
        if abs(float(f"{value / scale:.3g}")) < 1000:
            return _g3(value / scale), unit
    scale, unit = units[-1]
    return _g3(value / scale), unit


def seconds(s: float | None, smallest: TimeUnit = "ns") -> str:
    """A duration: '1.23 ms', '1 s'; ``smallest`` is the smallest unit shown ('0.5 µs')."""
    if s is None:
        return "—"
    units = _TIME[[u for _, u in _TIME].index(smallest) :]
    figure, unit = scaled(s, units)
    return f"{figure} {unit}"


def rate(per_s: float | None, unit: str = "FLOP/s") -> str:
    if per_s is None:
        return "—"
    figure, prefix = scaled(per_s, _RATE)
    return f"{figure} {prefix}{unit}"


_COUNT: tuple[tuple[float, str], ...] = ((1.0, ""), (1e3, " thousand"), (1e6, " million"), (1e9, " billion"))


def count_rate(per_s: float | None, noun: str) -> str:
    """'41.6 thousand examples/s': a rate of things counted, in words a reader knows ("kex/s"
    reads as a unit nobody uses)."""
    if per_s is None:
        return "—"
    figure, scale = scaled(per_s, _COUNT)
    return f"{figure}{scale} {noun}/s"


def nbytes(n: int | None) -> str:
    if n is None:
        return "—"
    if abs(n) < 2**10:
        return f"{n} B"
    figure, unit = scaled(n, _BYTES)
    return f"{figure} {unit}"


def times(v: float) -> str:
    """A ratio's figure, as in '1.8×', '12.5×' or '1,120×': two significant digits below 10,
    three up to 1,000, the whole number from there (never '1.12e+03'). Every multiplier in every
    output is written with it and the '×' sign (present/claims.py words the claims)."""
    return f"{v:.2g}" if v < 10 else f"{v:.3g}" if v < 1000 else f"{v:,.0f}"


def percent(confidence: float) -> str:
    """'95 %', '97.5 %', '99.8 %': a confidence as the text writes it — exact when it has at most
    two decimals in percent, else rounded down to one (never up: 99.98 % is not 100 %)."""
    pct = confidence * 100
    for digits in (0, 1, 2):
        if abs(round(pct, digits) - pct) < 1e-9:
            return f"{round(pct, digits):g} %"
    return f"{math.floor(pct * 10) / 10:g} %"


def listed(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
