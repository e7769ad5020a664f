"""The page of a ``scale`` record: the verdict, one table per framework, the scaling-efficiency
plot and the HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from whichdevice.present import html, terminal
from whichdevice.present.pages import write_page
from whichdevice.present import scale as present_scale

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Scale


def render(console: Console, result: Scale, png: Path, *, loglog: bool) -> None:
    """Terminal verdict and table, the efficiency plot and the HTML report (``png`` with .html)."""
    record, report = result.record, result.report
    terminal.render_header(console, record)
    for line in present_scale.lines(report):
        console.print(f"[bold]{escape(line)}[/bold]", soft_wrap=True)
    for fs in report.frameworks:
        terminal.render_grid(console, present_scale.grid(fs))
    terminal.render_notes(console, record, [], present_scale.failures(report), skipped=result.skipped)
    png.parent.mkdir(parents=True, exist_ok=True)
    present_scale.plot(report, png, title="Scaling efficiency vs global batch — whichdevice scale")
    page = html.render_html(
        record,
        present_scale.sections(report, png),
        verdict=present_scale.lines(report),
        failures=present_scale.failures(report),
        skipped=result.skipped,
    )
    write_page(console, png, page)
