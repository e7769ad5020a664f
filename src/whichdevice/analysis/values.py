"""Typed reads of a record's loosely typed parts: a case's timing (present exactly when the
case was measured: ``records.CaseResult`` checks it) and the JSON values of ``params`` and
``options`` read as numbers."""

from __future__ import annotations

from whichdevice.core.records import CaseResult, Timing


def timing_of(result: CaseResult) -> Timing:
    """The timing of a measured case; a failed case has none, and asking for it is a bug."""
    if result.timing is None:
        raise ValueError(f"case {result.spec.key} was not measured ({result.error})")
    return result.timing


def _scalar(value: object) -> int | float | str:
    """A JSON value that can be a number; anything else raises TypeError."""
    if isinstance(value, (int, float, str)):
        return value
    raise TypeError(f"not a number: {value!r}")


def as_int(value: object, default: int = 0) -> int:
    """``int(value)`` for a JSON value of a record (``default`` for a missing one, None)."""
    return default if value is None else int(_scalar(value))


def as_float(value: object) -> float:
    """``float(value)`` for a JSON value of a record (0.0 for a missing one, None)."""
    return 0.0 if value is None else float(_scalar(value))


def as_number(value: object) -> float:
    """A swept parameter's value as it is (an int stays an int); anything else than a number is
    not a point of a sweep."""
    if isinstance(value, (int, float)):
        return value
    raise TypeError(f"not a number: {value!r}")
