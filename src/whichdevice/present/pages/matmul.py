"""The page of a ``matmul`` record: the sweep tables, the time-vs-size plot and the HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from whichdevice.present import html, notes, plots, terminal
from whichdevice.present.pages import write_page
from whichdevice.present.tables import sweep_grid

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Matmul


def matmul_report(result: Matmul, png: Path, *, loglog: bool = True) -> str:
    """The PNG plot written to ``png`` and the HTML page (as a string)."""
    record, tables = result.record, result.tables
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
    return html.render_html(
        record,
        [section],
        warnings=notes.timing_warnings(result.warnings),
        failures=notes.failures(record),
        measured=result.warnings,
        skipped=result.skipped,
    )


def render(console: Console, result: Matmul, png: Path, *, loglog: bool) -> None:
    """Terminal tables, the PNG plot and the HTML report (``png`` with .html) of a matmul record."""
    record = result.record
    terminal.render_header(console, record)
    png.parent.mkdir(parents=True, exist_ok=True)
    page = matmul_report(result, png, loglog=loglog)
    for t in result.tables:
        terminal.render_grid(console, sweep_grid(t, "n", "FLOP/s"))
    terminal.render_notes(
        console,
        record,
        notes.timing_warnings(result.warnings),
        notes.failures(record),
        result.warnings,
        skipped=result.skipped,
    )
    write_page(console, png, page)
