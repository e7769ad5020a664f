"""Terminal rendering (rich). Every string that came from a record is escaped, so a
device name or an error message can never inject rich markup."""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table as RichTable

from whichdevice.present.tables import (
    Grid,
    column_align,
    creation_grid,
    runs_grid,
    sweep_grid,
    sync_cost_grid,
)
from whichdevice.core.units import nbytes, seconds
from whichdevice.core.records import RunRecord

if TYPE_CHECKING:
    from collections.abc import Sequence

    from whichdevice.analysis.fixes import NotMeasured
    from whichdevice.analysis.quality import TimingWarning
    from whichdevice.analysis.train import TrainReport


def machine_line(record: RunRecord) -> str:
    m = record.machine
    return (
        f"{m.cpu_model} — {m.cpu_cores_logical} logical cores"
        f"{f' ({m.cpu_cores_physical} physical)' if m.cpu_cores_physical else ''}, RAM {nbytes(m.ram_bytes)}"
    )


def render_header(console: Console, record: RunRecord) -> None:
    console.print(f"[bold]whichdevice {escape(record.experiment)}[/bold]  {escape(record.created_at)}")
    console.print(f"Machine: {escape(machine_line(record))}")
    for s in record.sessions:
        d = s.device
        extra = ""
        if d.kind == "cpu":
            onednn = "" if s.onednn is None else f", oneDNN {'on' if s.onednn else 'off'}"
            extra = (
                f", {s.cpu_threads_intra} intra-op / {s.cpu_threads_inter} inter-op threads "
                f"[{s.cpu_threads_source}]{onednn}"
            )
        else:
            mem = f", {nbytes(d.memory_bytes)}" if d.memory_bytes else ""
            cc = f", compute capability {d.compute_capability}" if d.compute_capability else ""
            drv = f", driver {d.driver}" if d.driver else ""
            extra = f"{mem}{cc}{drv}"
        console.print(
            f"  {escape(d.name)}: {escape(d.description)}{escape(extra)} — {escape(s.framework.name)} "
            f"{escape(s.framework.version)}, import {s.import_s:.1f} s, timer+sync {seconds(s.overhead_s)}"
        )


_TONES = {"good": "green", "bad": "red", "neutral": "yellow", "dim": "dim"}


# Set by :func:`capturing_grids`: every grid rendered to a terminal is also kept (report --markdown
# of an experiment whose renderer writes no HTML page, e.g. train).
_grids: list[Grid] | None = None


@contextmanager
def capturing_grids() -> Iterator[list[Grid]]:
    global _grids
    saved, _grids = _grids, []
    try:
        yield _grids
    finally:
        _grids = saved


def render_grid(console: Console, grid: Grid) -> None:
    if _grids is not None:
        _grids.append(grid)
    rt = RichTable(title=escape(grid.title), title_justify="left", header_style="bold")
    for i, h in enumerate(grid.headers):
        # fold, never "…": an identifier cut short is worse than a taller table
        rt.add_column(escape(h), justify=column_align(grid, i), overflow="fold")
    for row in grid.rows:
        rt.add_row(
            *[f"[{_TONES[c.tone]}]{escape(c.text)}[/{_TONES[c.tone]}]" if c.tone else escape(c.text) for c in row]
        )
    print_table(console, rt)
    for line in grid.footer:
        console.print(f"  {escape(line)}")


def print_table(console: Console, renderable: RenderableType) -> None:
    """Piped or redirected, a table gets its natural width, never the 80 columns rich assumes
    for a file (a grep on a row must find the whole row); on a terminal, its width."""
    if console.is_terminal:
        console.print(renderable)
        return
    from rich.measure import Measurement

    natural = Measurement.get(console, console.options.update(max_width=100_000), renderable).maximum
    saved = console._width  # the console's own setting (None: from the environment)
    console.width = max(console.width, natural)
    try:
        console.print(renderable)
    finally:
        console._width = saved


def render_notes(
    console: Console,
    record: RunRecord,
    warnings: list[str],
    failures: list[str],
    measured: list[TimingWarning] | None = None,
    *,
    skipped: Sequence[NotMeasured | None],
) -> None:
    """Notes and failures one by one; the measurement warnings (``measured``: those of ``warnings``,
    typed) one line per kind with a count (`train --quick` printed 24 of them), any
    other warning as it is. ``skipped``: each skipped case's own reason (analysis/facade.Analysis.skipped)."""
    from whichdevice.present.firstscreen import OTHER, aggregate_warnings, named_failures, skip_reasons, skipped_summary

    for n in record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")
    named, failed = named_failures(record, failures, skipped)
    for f in failed:
        console.print(f"[red]Failed:[/red] {escape(f)}")
    if named:
        console.print(f"[yellow]{skipped_summary(skip_reasons(skipped), failed)}[/yellow]; listed in the report")
    for g in aggregate_warnings(measured or [], warnings):
        if g.kind == OTHER:
            for w in g.items:
                console.print(f"[yellow]Warning:[/yellow] {escape(w)}")
        else:
            console.print(f"[yellow]Warning:[/yellow] {g.count} {escape(g.text)}")


# ---------------- whichdevice train ----------------


def render_train(
    console: Console,
    record: RunRecord,
    report: TrainReport,
    warnings: list[str],
    failures: list[str],
    measured: list[TimingWarning] | None = None,
    *,
    skipped: Sequence[NotMeasured | None],
) -> None:
    render_header(console, record)
    if record.options.get("quick"):
        console.print(f"[yellow]--quick:[/yellow] {escape(str(record.options.get('quick_sizes', 'reduced sizes')))}")
    # seed 001: model creation per device; every training run; what reading the loss back
    # every step costs against syncing once per block; the batch sweep
    grids = [creation_grid(report)] if report.creation else []
    grids += [runs_grid(report)] if report.runs else []
    grids += [sync_cost_grid(report)] if report.sync_costs else []
    for g in grids + [sweep_grid(t, "batch", "samples/s") for t in report.sweep]:
        render_grid(console, g)
    render_notes(console, record, warnings, failures, measured, skipped=skipped)
