"""The page of a ``matmul`` record: the sweep tables, the time-vs-size plot and the HTML report."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from whichdevice.analysis.sweep import Table, analyze_sweep
from whichdevice.core.records import RunRecord
from whichdevice.present import html, plots, terminal
from whichdevice.present.tables import sweep_grid
from whichdevice.present import notes


def matmul_report(record: RunRecord, png: Path, *, loglog: bool = True) -> tuple[list[Table], str]:
    """Analysis tables, the PNG plot written to ``png`` and the HTML page (as a string)."""
    tables = analyze_sweep(record, "n", work_metric="flops_per_call")
    dtype = record.options.get("dtype", "")
    plots.plot_sweep(
        tables,
        png,
        x_label="matrix size n (n x n)",
        loglog=loglog,
        title=f"Matrix multiplication time vs size ({dtype}) — whichdevice",
    )
    section = html.Section(
        "Matrix multiplication", grids=[sweep_grid(t, "n", "FLOP/s") for t in tables], pngs=[png], source="seed000"
    )
    page = html.render_html(record, [section], warnings=notes.timing_warnings(record), failures=notes.failures(record))
    return tables, page


def render(console: Console, record: RunRecord, png: Path, *, loglog: bool) -> None:
    """Terminal tables, the PNG plot and the HTML report (``png`` with .html) of a matmul record."""
    terminal.render_header(console, record)
    png.parent.mkdir(parents=True, exist_ok=True)
    tables, page = matmul_report(record, png, loglog=loglog)
    for t in tables:
        terminal.render_grid(console, sweep_grid(t, "n", "FLOP/s"))
    terminal.render_notes(console, record, notes.timing_warnings(record), notes.failures(record))
    html.write_html(png.with_suffix(".html"), page)
    console.print(f"Report: {escape(str(png.with_suffix('.html')))}")
