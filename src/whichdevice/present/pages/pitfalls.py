"""The page of a ``pitfalls`` record: the table of benchmarking mistakes (the wrong figure, the
right one, their ratio) and the HTML report; no plot."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from whichdevice.analysis.pitfalls import PitfallRow, analyze_pitfalls
from whichdevice.core import records
from whichdevice.core.units import seconds
from whichdevice.present import html, terminal
from whichdevice.present.tables import Grid, GridCell
from whichdevice.present import notes


def pitfalls_grid(rows: list[PitfallRow]) -> Grid:
    out: list[list[GridCell]] = []
    for r in rows:
        tone = "neutral" if not r.significant else ("bad" if abs(r.ratio - 1) > 0.1 else "")
        out.append(
            [
                GridCell(r.short),
                GridCell(r.device),
                GridCell(seconds(r.wrong_s)),
                GridCell(seconds(r.right_s)),
                GridCell(f"{r.ratio:.3g}x", tone),
                GridCell(r.verdict(), tone),
                GridCell(r.unit, "dim"),
            ]
        )
    footer = [
        f"{r.short} ({r.device}): wrong = {r.wrong_method}; right = {r.right_method}"
        + (f". {r.note}" if r.note else "")
        for r in rows
    ]
    return Grid(
        "Benchmarking mistakes: the wrong figure, the right one, wrong / right",
        ["pitfall", "device", "wrong", "right", "ratio", "what it does", "per"],
        out,
        footer,
        align=("left", "left", "right", "right", "right", "left", "left"),
    )


def render(console: Console, record: records.RunRecord, png: Path, *, loglog: bool) -> None:
    """Terminal table and an HTML report beside ``png`` (no plot: one table says it all)."""
    rows = analyze_pitfalls(record)
    warnings, failures = notes.timing_warnings(record), notes.failures(record)
    terminal.render_header(console, record)
    if record.options.get("quick"):
        console.print(
            "[yellow]--quick:[/yellow] 0.05 s of steady samples per point, 2 epochs for the first-epoch "
            "pitfall (the full run: whichdevice pitfalls)"
        )
    grid = pitfalls_grid(rows)
    terminal.render_grid(console, grid)
    if not any(d.startswith("GPU") for d in {r.device for r in rows}):
        console.print(
            "Only the CPU was measured: the unsynchronized-clock pitfall cannot distort a CPU timing; "
            "run on a GPU machine to measure it there."
        )
    terminal.render_notes(console, record, warnings, failures)  # one line per kind
    png.parent.mkdir(parents=True, exist_ok=True)
    page = html.render_html(
        record, [html.Section("Benchmarking mistakes", [grid])], warnings=warnings, failures=failures
    )
    html.write_html(png.with_suffix(".html"), page)
    console.print(f"Report: {escape(str(png.with_suffix('.html')))}")
