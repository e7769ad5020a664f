"""`whichdevice history` and `whichdevice compare`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from whichdevice.measure import history
from whichdevice.core import records
from whichdevice.analysis.diff import diff_runs
from whichdevice.cli.common import app, console
from whichdevice.core.errors import UsageError
from whichdevice.present import terminal
from whichdevice.present.tables import Grid, GridCell
from whichdevice.core.units import seconds
from whichdevice.core.validate import parse_positive_int


@app.command("history")
def history_cmd(
    limit: str = typer.Option("20", "--limit", help="How many runs to list (newest first)."),
    experiment: str = typer.Option(
        None, "--experiment", help="Only runs of this experiment (matmul, train, run, ...)."
    ),
) -> None:
    """List the runs recorded on this machine (newest first)."""
    n = parse_positive_int(limit, "--limit", "20", maximum=100_000)
    rows = history.entries(n, experiment)
    if not rows:
        console.print(f"No runs recorded yet in {escape(str(history.db_path()))}.")
        return
    grid = Grid(
        "Runs",
        ["id", "when", "experiment", "devices", "frameworks", "cases", "failed", "record"],
        [
            [
                GridCell(str(e.id)),
                GridCell(e.created_at),
                GridCell(e.experiment),
                GridCell(e.devices),
                GridCell(e.frameworks),
                GridCell(str(e.n_results)),
                GridCell(str(e.n_failed), "bad" if e.n_failed else ""),
                GridCell(e.path),
            ]
            for e in rows
        ],
        [],
        align=("right", "left", "left", "left", "left", "right", "right", "left"),
    )
    terminal.render_grid(console, grid)


def _resolve(ref: str, argument: str) -> records.RunRecord:
    """A run id from `history`, or a path to a record."""
    if ref.isdigit() and not Path(ref).exists():
        entry = history.get(int(ref))
        if entry is None:
            raise UsageError(
                argument,
                f"no run with id {ref} in the history",
                "See `whichdevice history` for ids, or pass a JSON path.",
            )
        return records.load_run(entry.path, argument)
    return records.load_run(ref, argument)


@app.command()
def compare(
    run_a: str = typer.Argument(..., help="The earlier run: an id from `whichdevice history` or a JSON record."),
    run_b: str = typer.Argument(..., help="The later run: an id or a JSON record."),
) -> None:
    """Point by point, what changed between two runs, and whether the change is beyond the noise."""
    a, b = _resolve(run_a, "RUN_A"), _resolve(run_b, "RUN_B")
    d = diff_runs(a, b)
    console.print(
        f"[bold]{escape(a.experiment)}[/bold] {escape(a.created_at)} -> [bold]{escape(b.experiment)}[/bold] "
        f"{escape(b.created_at)}"
    )
    for line in d.context or ["same machine, framework versions and options"]:
        console.print(f"  {escape(line)}")
    rows = []
    for p in d.points:
        c = p.comparison
        if c is None:
            change = GridCell(p.failure_text or "not timed", "bad")
        elif not c.significant:
            change = GridCell(f"no significant change ({c.ratio:.3g}x)", "neutral")
        elif c.ratio > 1:
            change = GridCell(f"{c.ratio:.3g}x faster ({c.ratio_lo:.3g}-{c.ratio_hi:.3g})", "good")
        else:
            change = GridCell(f"{1 / c.ratio:.3g}x slower ({1 / c.ratio_hi:.3g}-{1 / c.ratio_lo:.3g})", "bad")
        rows.append([GridCell(p.label), GridCell(seconds(p.before_s)), GridCell(seconds(p.after_s)), change])
    terminal.render_grid(
        console,
        Grid(
            "Point by point", ["case", "before", "after", "change"], rows, [], align=("left", "right", "right", "left")
        ),
    )
    for label in d.only_before:
        console.print(f"  only in RUN_A: {escape(label)}")
    for label in d.only_after:
        console.print(f"  only in RUN_B: {escape(label)}")
