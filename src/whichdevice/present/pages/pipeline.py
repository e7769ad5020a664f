"""The page of a ``pipeline`` record: the variant and stage tables, the verdict, the stacked
bars (waiting for input vs computing) and the HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from whichdevice.present import html, plots, terminal
from whichdevice.present.pages import write_page
from whichdevice.present.pipeline import device_verdict, stage_grid, step_jitter_note, variant_grid, wait_bars
from whichdevice.present import notes
from whichdevice.workloads.fixes import BATCH

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Pipeline


def render(console: Console, result: Pipeline, png: Path, *, loglog: bool = False) -> None:
    """Terminal tables and verdict, the stacked-bar PNG and the HTML report (``png`` with .html)
    of a pipeline record. ``loglog`` is accepted for ``report`` and unused (bars are linear)."""
    record, reports = result.record, result.reports
    jitter = step_jitter_note(result.jitter)
    warnings = notes.timing_warnings(result.block_warnings) + ([jitter] if jitter else [])
    failures = notes.failures(record)
    terminal.render_header(console, record)
    o = record.options
    what = (
        f"data {o.get('data')}"
        if o.get("data")
        else (f"the image input pipeline on {o.get('images')} images of {o.get('image_size')}x{o.get('image_size')}x3")
    )
    heavy = f"; constructed slow stage: {o.get('heavy_stage')} x{o.get('heavy_factor')}" if o.get("heavy_stage") else ""
    console.print(
        f"{escape(what)}, batch {o.get(BATCH.param)}, model {escape(str(o.get('model') or o.get('net')))}{escape(heavy)}"
    )
    sections: list[html.Section] = []
    verdict: list[str] = []
    for rep in reports:
        grids = [g for g in (variant_grid(rep), stage_grid(rep)) if g is not None]
        for g in grids:
            terminal.render_grid(console, g)
        verdict.extend(device_verdict(rep))
        sections.append(html.Section(f"{rep.device}: input pipeline", grids=grids))
    for line in verdict:
        console.print(f"[bold]→[/bold] {escape(line)}")
    terminal.render_notes(console, record, warnings, failures, result.warnings, skipped=result.skipped)
    png.parent.mkdir(parents=True, exist_ok=True)
    panels = [(rep.device, wait_bars(rep)) for rep in reports]
    plots.plot_input_wait(panels, png, title="Training step: waiting for input vs computing, per variant — whichdevice")
    if sections:
        sections[-1].pngs.append(png)
    page = html.render_html(
        record,
        sections,
        verdict=verdict,
        warnings=warnings,
        failures=failures,
        measured=result.warnings,
        skipped=result.skipped,
    )
    write_page(console, png, page)
