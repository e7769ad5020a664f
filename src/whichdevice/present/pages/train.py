"""The page of a ``train`` record: the terminal tables and verdict, the precision table, and
the batch-sweep plot (or the step-time plot of a run without a sweep)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from whichdevice.present import names, notes, plots, terminal
from whichdevice.present import precision as present_precision
from whichdevice.workloads.fixes import params_of

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Train


def render(console: Console, result: Train, png: Path, *, loglog: bool) -> None:
    record, report = result.record, result.report
    warnings, failures = notes.timing_warnings(result.warnings), notes.failures(record)
    terminal.render_train(console, record, report, warnings, failures, result.warnings, skipped=result.skipped)
    present_precision.render(console, result)
    png.parent.mkdir(parents=True, exist_ok=True)
    if report.sweep:
        plots.plot_batch_sweep(
            report.sweep, png, loglog=loglog, title="Training step time and samples/s vs batch size — whichdevice"
        )
        return
    run = next((r for r in record.results if r.timing is not None and r.timing.number_per_sample == 1), None)
    if run is None:
        run = next((r for r in record.results if r.timing is not None), None)
    steps = list(run.timing.warmup_s) + list(run.timing.samples_s) if run and run.timing else []
    plots.plot_steps(
        steps,
        len(run.timing.warmup_s) if run and run.timing else 0,
        png,
        title=f"{run.spec.device} {names.workload_name(params_of(run.spec), framework=run.spec.framework)}"
        if run
        else "no data",
    )
