"""One way to write a measured ratio: the ratio, its 95 % interval and what it rests on.

Every presenter (terminal, HTML, tables, plots' captions) writes a claimed ratio through
:func:`ratio_text`, so a change reads the same everywhere and never appears without its
interval and its sample/round count (the verdict comes from ``analysis/significance.py``)::

    2.9× faster (95 % CI 2.1–3.8×, 5 rounds)
    2× slower (95 % CI 1.6–2.5×, 12 samples)
    no clear change (1.8×, CI 0.8–3.1×, n=3)
    not enough samples (2.1× from n=1; 1 sample: at least 5 needed)

Ratios are of times, A/B: > 1 means B is faster (analysis/compare.py's convention). The words
themselves are ``Claim.text`` (analysis/significance.py), so the analysis layer's own sentences
(fix lines, verdict lines) and the presenters' cells are one implementation.
"""

from __future__ import annotations

from whichdevice.analysis.compare import Comparison
from whichdevice.analysis.significance import Claim


def ratio_text(claim: Claim | Comparison, *, subject: str = "") -> str:
    """The claim in words. ``subject`` (e.g. 'GPU:0') is put before 'faster'/'slower'.
    A ``Comparison`` is written through its claim."""
    if isinstance(claim, Comparison):
        claim = claim.claim
    return claim.text(subject)


def is_claim(claim: Claim | Comparison) -> bool:
    """True when the ratio counts as a change (analysis/significance.py's rule)."""
    return (claim.claim if isinstance(claim, Comparison) else claim).significant
