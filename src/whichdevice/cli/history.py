"""`whichdevice history` and `whichdevice compare`."""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape

from whichdevice.cli.base import app, console, err_console
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import check_output_dir, parse_positive_float, parse_positive_int

if TYPE_CHECKING:
    from whichdevice.core import records
    from whichdevice.analysis.diff import RunDiff
    from whichdevice.measure.history import Entry
    from whichdevice.present.tables import GridCell


HISTORY_HELP = "The folder holding history.sqlite (default: $WHICHDEVICE_HOME, else ~/.whichdevice)."


def _use_history(folder: str | None) -> None:
    """``--history DIR``: checked like an output folder (compare writes learned noise there);
    without it, ``$WHICHDEVICE_HOME`` (reset each command: the CLI may run in-process twice)."""
    from whichdevice.measure import history

    history.use(check_output_dir(Path(folder), "--history") if folder is not None else None)


@app.command("history")
def history_cmd(
    limit: str = typer.Option("20", "--limit", help="How many runs to list (newest first)."),
    experiment: str = typer.Option(
        None, "--experiment", help="Only runs of this experiment (matmul, train, run, ...)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the runs as a JSON list (for scripts), no table."),
    history_dir: Optional[str] = typer.Option(None, "--history", help=HISTORY_HELP, metavar="DIR"),
) -> None:
    """List the runs recorded on this machine (newest first)."""
    from whichdevice.measure import history
    from whichdevice.present import terminal
    from whichdevice.present.tables import Grid, GridCell

    n = parse_positive_int(limit, "--limit", "20", maximum=100_000)
    _use_history(history_dir)
    rows = history.entries(n, experiment)
    if as_json:
        sys.stdout.write(json.dumps([dataclasses.asdict(e) for e in rows], indent=2, ensure_ascii=False) + "\n")
        return
    if not rows:
        console.print(f"No runs recorded yet in {escape(str(history.db_path()))}.")
        return
    grid = Grid(
        "Runs",
        ["id", "when", "experiment", "devices", "frameworks", "cases", "failed", "skipped", "record"],
        [
            [
                GridCell(str(e.id)),
                GridCell(e.created_at),
                GridCell(e.experiment),
                GridCell(e.devices),
                GridCell(e.frameworks),
                GridCell(str(e.n_results)),
                _failed_cell(e),
                GridCell("?" if e.n_skipped is None else str(e.n_skipped)),  # not measured: the time budget
                GridCell(e.path),
            ]
            for e in rows
        ],
        [UNSPLIT] if any(e.n_skipped is None and e.n_failed for e in rows) else [],
        align=("right", "left", "left", "left", "left", "right", "right", "right", "left"),
    )
    terminal.render_grid(console, grid)


# A row indexed by a version that counted the cases the time budget did not reach as failed,
# whose record can no longer be read to split them: its count is an upper bound, not failures.
UNSPLIT = (
    "≤ N: indexed by an older version, which counted the cases the time budget did not reach with the failed "
    "ones; its record is gone, so at most N failed (the others were not measured)"
)


def _failed_cell(e: Entry) -> GridCell:
    """The failed count: red only when it counts failures alone (see UNSPLIT)."""
    from whichdevice.present.tables import GridCell

    if e.n_skipped is None and e.n_failed:
        return GridCell(f"≤ {e.n_failed}")
    return GridCell(str(e.n_failed), "bad" if e.n_failed else "")


def _path(ref: str, argument: str) -> Path:
    """The record a run id from `history`, or a path, names. An id is ASCII digits ('²' and
    '١٢' are digits to str.isdigit, not to int or to the user); one too large for the history's
    integers names no run, like any other id it does not hold."""
    from whichdevice.core import safeio
    from whichdevice.measure import history

    if ref.isascii() and ref.isdigit() and not safeio.exists_quietly(ref):
        fits = len(ref.lstrip("0")) <= len(str(history.MAX_ID)) and int(ref) <= history.MAX_ID
        entry = history.get(int(ref)) if fits else None
        if entry is None:
            raise UsageError(
                argument,
                f"no run with id {ref} in the history",
                "See `whichdevice history` for ids, or pass a JSON path.",
            )
        return Path(entry.path)
    return Path(ref)


def _how_judged(d: RunDiff) -> str:
    """compare's second summary line: why its intervals are wider than one run's."""
    from whichdevice.analysis import significance
    from whichdevice.core import units

    judged = sum(1 for p in d.points if p.comparison is not None and p.comparison.claim.enough)
    ci = units.percent(d.confidence)
    together = f"Each case's CI is {ci} so that all {judged} hold together at 95 % (Bonferroni)" if judged > 1 else ""
    if d.run_sd is None:
        moved = (
            f"too few cases (under {significance.MIN_CASES_FOR_RUN_SPREAD}) to see how far the runs moved as a whole"
        )
    else:
        moved = f"it includes how far these two runs' cases moved between the runs (±{math.expm1(d.run_sd):.0%}, spread across cases)"
    return f"{together}; {moved}." if together else f"{moved[0].upper()}{moved[1:]}."


def parse_threshold(text: str | None) -> float:
    """``--threshold``: a relative change, '0.1' or '10%' (at most 10, i.e. 11×)."""
    from whichdevice.analysis import significance

    if text is None:
        return significance.NOISE_THRESHOLD
    t = text.strip()
    scale = 100.0 if t.endswith("%") else 1.0
    value = parse_positive_float(
        t.rstrip("%").strip() or t, "--threshold", "0.1", unit="relative change", maximum=10.0 * scale
    )
    assert value is not None
    return value / scale


def _learned_thresholds(a: records.RunRecord, b: records.RunRecord, margin: float) -> dict:
    """A threshold per case, learned from earlier repeat runs on this machine (none when the
    two runs are from two machines, or the history cannot be read)."""
    from whichdevice.analysis import significance
    from whichdevice.measure import history

    if a.machine.hostname != b.machine.hostname:
        return {}
    try:
        learned = history.noise_samples(a.machine.hostname, exclude=(a.created_at, b.created_at))
    except sqlite3.Error:
        return {}
    return {k: max(margin, significance.learned_threshold(v, default=margin)) for k, v in learned.items()}


def _changed_line(d: RunDiff, margin: float, margin_from: str, n_learned: int) -> str:
    """How many cases changed beyond the noise, and the noise threshold that says so."""
    from whichdevice.core import units

    flagged = sum(1 for p in d.points if p.comparison is not None and p.comparison.significant)
    return (
        f"  {flagged} of {len(d.points)} cases changed beyond the noise (the whole "
        f"{units.percent(d.confidence)} CI beyond the noise threshold: {margin:.0%} {margin_from}"
        + (f", learned from earlier repeat runs for {n_learned} cases" if n_learned else "")
        + ")"
    )


def _learn_noise(a: records.RunRecord, b: records.RunRecord) -> None:
    """Two runs of one experiment on this machine with nothing changed between them: their
    differences are this machine's noise, kept for the next comparisons' thresholds."""
    from whichdevice.analysis.diff import log_ratios
    from whichdevice.measure import history

    if a.machine.hostname != b.machine.hostname or a.experiment != b.experiment:
        return
    try:
        history.add_repeat(a.machine.hostname, a.experiment, a.created_at, b.created_at, log_ratios(a, b))
    except sqlite3.Error:
        pass


@app.command()
def compare(
    run_a: str = typer.Argument(..., help="The earlier run: an id from `whichdevice history` or a JSON record."),
    run_b: str = typer.Argument(..., help="The later run: an id or a JSON record."),
    fail_on_regression: bool = typer.Option(
        False,
        "--fail-on-regression",
        help="Exit 1 when a case is slower in RUN_B by the table's rule (its whole CI beyond the threshold), "
        "or ran in RUN_A and failed in RUN_B (not: skipped by the budget); exit 0 otherwise, 2 on bad input "
        "or when no case is in both runs. For CI.",
    ),
    threshold: Optional[str] = typer.Option(
        None,
        "--threshold",
        help="The smallest change that counts, relative: 0.1 or 10% (default 5%; a case's noise learned from "
        "repeat runs on this machine is used where larger).",
        metavar="RATIO|PCT",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the whole comparison as JSON on stdout; the table goes to stderr."
    ),
    history_dir: Optional[str] = typer.Option(None, "--history", help=HISTORY_HELP, metavar="DIR"),
) -> None:
    """Point by point, what changed between two runs, and whether the change is beyond the noise."""
    from whichdevice.analysis.diff import diff_runs
    from whichdevice.core import records
    from whichdevice.present import names, terminal
    from whichdevice.present.comparison import comparison_grid, comparison_json, context_text, regression_line

    margin = parse_threshold(threshold)
    _use_history(history_dir)
    path_a = _path(run_a, "RUN_A")
    a = records.load_run(path_a, "RUN_A")  # RUN_A's error first, as the arguments are read
    path_b = _path(run_b, "RUN_B")
    b = records.load_run(path_b, "RUN_B")
    out = err_console if as_json else console
    thresholds = _learned_thresholds(a, b, margin)
    d = diff_runs(a, b, thresholds=thresholds, default_threshold=margin)
    out.print(
        f"[bold]{escape(a.experiment)}[/bold] {escape(a.created_at)} -> [bold]{escape(b.experiment)}[/bold] "
        f"{escape(b.created_at)}"
    )
    for line in [context_text(c) for c in d.context] or ["same machine, framework versions and options"]:
        out.print(f"  {escape(line)}")
    terminal.render_grid(out, comparison_grid(d))
    n_learned = sum(1 for p in d.points if p.key in thresholds and thresholds[p.key] > margin)
    out.print(_changed_line(d, margin, "by default" if threshold is None else "(--threshold)", n_learned))
    out.print(f"  {escape(_how_judged(d))}")
    # two runs (not one record with itself or its copy: two runs may start in the same second,
    # created_at's resolution, so that cannot tell them apart) with nothing changed between them
    if not d.context and path_a.resolve() != path_b.resolve() and a != b:
        _learn_noise(a, b)
    for spec in d.only_before:
        out.print(f"  only in RUN_A: {escape(names.case_name(spec))}")
    for spec in d.only_after:
        out.print(f"  only in RUN_B: {escape(names.case_name(spec))}")
    if fail_on_regression and not d.points:  # a gate that compared nothing must not pass
        raise UsageError(
            "RUN_B",
            f"no case of RUN_A is in RUN_B ({len(d.only_before)} only in RUN_A, {len(d.only_after)} only in RUN_B), "
            "so there is nothing to gate",
            "Compare two runs of the same command, options and model.",
        )
    if fail_on_regression:
        out.print(escape(regression_line(d)))
    if as_json:
        doc = comparison_json(
            d, a, b, refs=(run_a, run_b), paths=(str(path_a), str(path_b)), threshold=margin, learned=n_learned
        )
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    if fail_on_regression and d.regressions:
        raise typer.Exit(1)
