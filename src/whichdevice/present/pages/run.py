"""The page of a ``run`` or ``diagnose`` record: the first screen, and with ``verbose`` every
finding, the fix table, the notes and every warning; the plots and the HTML report beside ``png``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from whichdevice.present import firstscreen, names, output, terminal
from whichdevice.present.suitepage import finding_text, fix_grid, headline, suite_report

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Suite


PREDICTION_NOTE = (
    "The GPU prediction: this CPU's measured steps beside the cost model's GPU steps (the shipped h100 "
    "profile, its calibrated 80 % band), from the step's ops traced at batch 8 and 8192 and interpolated "
    "between (exact for dense layers); `whichdevice predict --quick` traces every batch and shows each."
)


def render(
    console: Console,
    result: Suite,
    png: Path,
    *,
    loglog: bool,
    verbose: bool = False,
    quiet: bool = False,
) -> None:
    """The first screen (present/firstscreen.py), two PNGs (matmul, batch sweep) and the HTML
    report beside ``png``; ``verbose`` adds every finding, the fix table, the notes and every
    warning; ``quiet`` prints only where the report is."""
    record = result.record
    rep = suite_report(result, png, loglog=loglog)
    output.write_html(png.with_suffix(".html"), rep.page)
    report = str(png.with_suffix(".html"))
    if quiet:
        console.print(f"Report: {escape(report)}", soft_wrap=True)
        return
    first = rep.first
    firstscreen.render_terminal(console, first, report=None if verbose else report)
    if not verbose:
        return
    v = rep.verdict
    console.print()
    terminal.render_header(console, record)
    console.rule("Findings, line by line")
    for line in headline(v):
        console.print(f"• {escape(names.plain(line))}")
    for f in v.findings:
        console.print(f"  [bold]{escape(f.rule)}[/bold] {escape(finding_text(f))}")
    terminal.render_grid(console, fix_grid(v, with_how=False, record=record))
    for line in rep.advice:
        console.print(f"[bold green]{escape(names.plain(line))}[/bold green]")
    if v.gpu_profile is not None:  # no GPU measured, the GPU modelled from the traced ops
        console.print(PREDICTION_NOTE)
    terminal.render_notes(console, record, [], rep.failures, skipped=result.skipped)
    for g in first.warnings:  # grouped by kind, each point by its people's name
        console.print(f"[yellow]Warning:[/yellow] {g.count} {escape(g.text)}")
        for item in g.items:
            console.print(f"  {escape(item)}")
    for p in rep.pngs:
        console.print(f"Plot:   {escape(str(p))}", soft_wrap=True)
    console.print(f"Report: {escape(report)}", soft_wrap=True)
