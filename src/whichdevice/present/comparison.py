"""``whichdevice compare``'s table and its JSON: one comparison of two runs, for people and scripts.

The rule that decides each row (analysis/diff.py, analysis/significance.py) is the one the CI
gate applies (``--fail-on-regression``): a row the table calls "slower" is a regression, and
so is a case that ran in the first run and failed in the second.
"""

from __future__ import annotations

import math
from typing import Any, TYPE_CHECKING

from whichdevice.core import stats
from whichdevice.core.records import RunRecord
from whichdevice.core.units import seconds
from whichdevice.present import names
from whichdevice.present.claims import ratio_text
from whichdevice.present.tables import Grid, GridCell
from whichdevice.workloads.fixes import params_of

if TYPE_CHECKING:
    from whichdevice.analysis.diff import ContextChange, PointChange, RunDiff

# The JSON's own version: a script reading it checks this, not whichdevice's version.
COMPARISON_SCHEMA = 1


def context_text(c: ContextChange) -> str:
    """One set-up difference: 'machine cpu_model: A -> B', 'CPU:0: tensorflow 2.21 -> not measured'."""
    if c.kind == "machine":
        return f"machine {c.name}: {c.before} -> {c.after}"
    if c.kind == "framework":
        was = "not measured" if c.before is None else c.before
        now = "not measured" if c.after is None else c.after
        return f"{c.name}: {was} -> {now}"
    if c.kind == "device":
        return f"{c.name} is another device: {c.before} -> {c.after}"
    return f"option {c.name}: {c.before} -> {c.after}"


def failure_text(p: PointChange) -> str | None:
    """What a failed side says, e.g. 'failed before (timeout), ran now'; None if both ran."""
    a, b = p.before_failure, p.after_failure

    def words(k: str) -> str:
        return k.replace("_", " ")

    if "skipped" in (a, b):  # the time budget skipped it: not measured, it did not fail
        return _skipped_text(a, b)
    if a and b:
        return f"failed in both ({words(a)} -> {words(b)})" if a != b else f"failed in both ({words(a)})"
    if a:
        return f"failed before ({words(a)}), ran now"
    if b:
        return f"ran before, failed now ({words(b)})"
    return None


def _skipped_text(a: str | None, b: str | None) -> str:
    """A point one side of which the time budget skipped: 'not measured now (time budget)'."""

    def side(k: str | None) -> str:
        if k is None:
            return "ran"
        return "not measured (time budget)" if k == "skipped" else f"failed ({k.replace('_', ' ')})"

    return f"before: {side(a)}; now: {side(b)}"


def comparison_grid(d: RunDiff) -> Grid:
    """'Point by point': case, before, after, change (the claim in words, toned)."""
    rows = []
    for p in d.points:
        c = p.comparison
        if c is None:
            change = GridCell(failure_text(p) or "not timed", "neutral" if p.status == "not_measured" else "bad")
        elif not c.significant:
            change = GridCell(ratio_text(c), "neutral")
        else:
            change = GridCell(ratio_text(c), "good" if c.ratio > 1 else "bad")
        rows.append(
            [GridCell(names.case_name(p.spec)), GridCell(seconds(p.before_s)), GridCell(seconds(p.after_s)), change]
        )
    return Grid(
        "Point by point", ["case", "before", "after", "change"], rows, [], align=("left", "right", "right", "left")
    )


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def comparison_json(
    d: RunDiff,
    a: RunRecord,
    b: RunRecord,
    *,
    refs: tuple[str, str],
    paths: tuple[str, str],
    threshold: float,
    learned: int,
) -> dict[str, Any]:
    """The whole comparison as JSON values: both runs, what differs between them, every case
    (times in seconds; ``ratio`` = before / after, > 1 faster now, with its interval), the
    rule's parameters and the gate's verdict (``regression``: what ``--fail-on-regression``
    exits 1 on)."""
    points = []
    for p in d.points:
        c = p.comparison
        points.append(
            {
                "key": p.key,
                "case": names.case_name(p.spec),
                "workload": p.spec.workload,
                "framework": p.spec.framework,
                "device": p.spec.device,
                "params": dict(params_of(p.spec)),
                "before_s": _finite(p.before_s),
                "after_s": _finite(p.after_s),
                "status": p.status,
                "regressed": p.regressed,
                "ratio": _finite(c.ratio) if c else None,
                "ratio_lo": _finite(c.ratio_lo) if c else None,
                "ratio_hi": _finite(c.ratio_hi) if c else None,
                "n": c.n if c else None,
                "unit": c.claim.unit if c else None,
                "threshold": c.claim.threshold if c else None,
                "confidence": c.claim.confidence if c else None,
                "text": ratio_text(c) if c else (failure_text(p) or "not timed"),
                "before_failure": p.before_failure,
                "after_failure": p.after_failure,
            }
        )
    regressions = d.regressions
    return {
        "schema": COMPARISON_SCHEMA,
        "before": {"ref": refs[0], "path": paths[0], "experiment": a.experiment, "created_at": a.created_at},
        "after": {"ref": refs[1], "path": paths[1], "experiment": b.experiment, "created_at": b.created_at},
        "context": [context_text(c) for c in d.context],
        "rule": {
            "threshold": threshold,
            "learned_thresholds": learned,
            "confidence_each": d.confidence,
            "confidence_together": stats.CONFIDENCE,
            "run_spread": _finite(d.run_sd),
            "min_samples": stats.MIN_SAMPLES,
        },
        "points": points,
        "only_before": [names.case_name(s) for s in d.only_before],
        "only_after": [names.case_name(s) for s in d.only_after],
        "summary": {
            "cases": len(d.points),
            "faster": sum(p.status == "faster" for p in d.points),
            "slower": sum(p.status == "slower" for p in d.points),
            "no_change": sum(p.status == "no_change" for p in d.points),
            "not_enough": sum(p.status == "not_enough" for p in d.points),
            "failed": sum(p.status == "failed" for p in d.points),
            "not_measured": sum(p.status == "not_measured" for p in d.points),
            "regressions": len(regressions),
        },
        "regression": bool(regressions),
    }


def regression_line(d: RunDiff) -> str:
    """The gate's verdict in one line, e.g. 'Regression: 2 of 12 cases ... (exit 1)'."""
    bad = d.regressions
    if not bad:
        return f"No regression: none of {len(d.points)} cases is slower beyond the noise or failed only in RUN_B."
    slower = [p for p in bad if p.comparison is not None]
    failed = [p for p in bad if p.comparison is None]
    parts = []
    if slower:
        parts.append(f"{len(slower)} slower beyond the noise")
    if failed:
        parts.append(f"{len(failed)} ran in RUN_A and failed in RUN_B")
    first = names.case_name(bad[0].spec)
    return f"Regression: {' and '.join(parts)} of {len(d.points)} cases (first: {first})."
