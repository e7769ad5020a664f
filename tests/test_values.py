"""analysis/values.py: typed reads of a record's loose parts; a failed case has no timing."""

from __future__ import annotations

import pytest

from whichdevice.analysis.values import as_float, as_int, as_number, timing_of
from whichdevice.core.records import known
from whichdevice.core import records


def _spec() -> records.CaseSpec:
    return records.CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"n": 8})


def test_a_failed_case_has_no_timing_and_says_which():
    failed = records.failed(_spec(), "boom", "crash", 0.1)
    with pytest.raises(ValueError, match="was not measured"):
        timing_of(failed)


def test_numbers_from_json_values():
    assert as_int("3") == 3 and as_int(None, 7) == 7 and as_int(2.9) == 2
    assert as_float("0.5") == 0.5 and as_float(None) == 0.0
    assert as_number(1024) == 1024 and isinstance(as_number(1024), int)
    with pytest.raises(TypeError):
        as_int([1])
    with pytest.raises(TypeError):
        as_number("8")
    assert known(0) == 0
    with pytest.raises(ValueError, match="no estimate"):
        known(None, "estimate")
