"""One way to write a measured ratio: the ratio, its 95 % interval and what it rests on.

Every presenter (terminal, HTML, tables, plots' captions) writes a claimed ratio through
:func:`ratio_text`, so a change reads the same everywhere and never appears without its
interval and its sample/round count (the verdict comes from ``analysis/significance.py``)::

    2.9× faster (95 % CI 2.1–3.8×, 5 rounds)
    1.6× slower (95 % CI 1.4–1.8×, 12 samples)
    no clear change (1.79×, CI 0.8–3.1×, n=3)
    not enough samples (64.4 ms from 1 sample; at least 5 needed)

Ratios are of times, A/B: > 1 means B is faster (analysis/compare.py's convention).
"""

from __future__ import annotations

from whichdevice.analysis.significance import Claim


def _x(v: float) -> str:
    return f"{v:.2g}" if v < 10 else f"{v:.3g}"


def interval_text(claim: Claim) -> str:
    """'95 % CI 2.1–3.8×, 5 rounds' in the direction of the claim (slower: inverted)."""
    lo, hi = (claim.lo, claim.hi) if claim.ratio >= 1 or claim.status == "no_change" else (1 / claim.hi, 1 / claim.lo)
    unit = claim.unit if claim.n != 1 else claim.unit[:-1]
    return f"95 % CI {_x(lo)}–{_x(hi)}×, {claim.n} {unit}"


def ratio_text(claim: Claim, *, subject: str = "") -> str:
    """The claim in words. ``subject`` (e.g. 'GPU:0') is put before 'faster'/'slower'."""
    who = f"{subject} " if subject else ""
    if claim.status == "not_enough":
        why = f"; {claim.note}" if claim.note else ""
        shown = f" ({_x(claim.ratio)}× from n={claim.n}{why})" if claim.ratio == claim.ratio else why
        return f"not enough samples{shown}"
    if claim.status == "no_change":
        extra = f"; {claim.note}" if claim.note else ""
        return f"no clear change ({_x(claim.ratio)}×, CI {_x(claim.lo)}–{_x(claim.hi)}×, n={claim.n}{extra})"
    if claim.ratio >= 1:
        text = f"{who}{_x(claim.ratio)}× faster ({interval_text(claim)})"
    else:
        text = f"{who}{_x(1 / claim.ratio)}× slower ({interval_text(claim)})"
    return f"{text}; {claim.note}" if claim.note else text
