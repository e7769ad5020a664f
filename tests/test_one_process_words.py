"""A fix pair whose samples a side all came from one process (one round) is "not enough samples"
and says so: the line counts its steps and names the one process, instead of "fewer than 5
samples (n=11)", which the count contradicted."""

from __future__ import annotations

from types import SimpleNamespace

from whichdevice.analysis import suite
from whichdevice.analysis.significance import ClaimNote
from whichdevice.present import fixes as present_fixes


def _fix(n: int, note: ClaimNote | None, unit: str = "samples") -> SimpleNamespace:
    return SimpleNamespace(claim=SimpleNamespace(unit=unit, n=n, note=note))


def test_a_one_process_pair_is_named_so_in_the_fix_table():
    why = suite._too_few([_fix(11, ClaimNote("one_process"))])
    assert why.reason == "too_few_samples" and why.one_process
    text = present_fixes._too_few_text(why)
    assert text == "not enough samples: 11 steps, from one process a side; a second round decides it"
    assert "fewer than" not in text


def test_too_few_samples_still_reads_as_before():
    why = suite._too_few([_fix(3, ClaimNote("too_few_samples", 3, 5))])
    assert not why.one_process
    assert present_fixes._too_few_text(why) == "not enough samples: fewer than 5 samples (n=3)"
    rounds = suite._too_few([_fix(2, ClaimNote("too_few_rounds", 2, 3), unit="rounds")])
    assert present_fixes._too_few_text(rounds) == (
        "not enough samples: 2 rounds, at least 3 needed to tell a change from none"
    )
