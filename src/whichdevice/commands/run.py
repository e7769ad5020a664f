"""`whichdevice run`: the default suite on this machine, one verdict, proven fixes, one report."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from whichdevice import experiment, records
from whichdevice.analysis import quality
from whichdevice.analysis.suite import SuiteVerdict, suite_verdict
from whichdevice.commands.common import (
    DEFAULT_OUT, REPORTERS, app, console, describe_key, err_console, progress, stamp, write_record,
)
from whichdevice.errors import UsageError
from whichdevice.journal import Journal, journal_path
from whichdevice.present import html, plots, terminal
from whichdevice.present.tables import Grid, GridCell, creation_grid, runs_grid, sweep_grid, sync_cost_grid
from whichdevice.suite import suite_cases
from whichdevice.timing import TimingPolicy
from whichdevice.validate import check_output_dir, check_output_file, parse_choice, parse_positive_float, parse_positive_int

DEFAULT_BUDGET_S = 90.0  # per device; the budget for a CPU-only machine
MIN_BUDGET_S = 20.0  # below this not even the framework import and one experiment fit
RUN_MIN_TIME_S = 0.05  # steady seconds per point: short, the suite has many points
MAX_TERMINAL_WARNINGS = 3


@app.command()
def run(
    budget: Optional[str] = typer.Option(None, "--budget", help=f"Seconds per device (default {DEFAULT_BUDGET_S:g}). Cases that do not fit are recorded as skipped."),
    device: Optional[str] = typer.Option(None, "--device", help="Only these devices, e.g. CPU:0,GPU:0. Default: every device."),
    cpu_threads: Optional[str] = typer.Option(None, "--cpu-threads", help="Limit the CPU run to N threads (default: all cores)."),
    framework: str = typer.Option("tensorflow", "--framework", help="Framework to measure (tensorflow)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the JSON record, the plots and the HTML report."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the JSON record here instead of OUT/run-<time>.json."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Finish an interrupted run: its .partial.jsonl journal (or the folder holding it). Its options are reused; finished cases are kept."),
) -> None:
    """The default suite: matmul crossover, the seeds' training cases, a batch sweep and the
    automatic fixes, each measured; then one verdict and an HTML report."""
    resumed = None
    if resume is not None:
        resumed = Journal.read(resume, "--resume", experiment="run")
        o = resumed.header["options"]
        fw, budget_s, wanted, threads = o["framework"], o["budget_s"], o["devices_wanted"], o["cpu_threads"]
        json_file = Path(resumed.header["json_file"])
    else:
        fw = parse_choice(framework, "--framework", ("tensorflow",))
        budget_s = parse_positive_float(budget, "--budget", "90") or DEFAULT_BUDGET_S
        if budget_s < MIN_BUDGET_S:
            raise UsageError("--budget", f"{budget_s:g} s is too short to measure anything",
                             f"Pass at least {MIN_BUDGET_S:g} seconds, e.g. --budget 90.")
        wanted = experiment.parse_device_filter(device)
        threads = parse_positive_int(cpu_threads, "--cpu-threads", "4")
        out_dir = check_output_dir(out, "--out")
        ts = stamp()
        json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"run-{ts}.json"
    experiment.require_installed(fw)

    err_console.print(f"Looking for devices ({escape(fw)} import takes a few seconds)…")
    found = experiment.discover(fw)
    chosen = experiment.select_devices(found, wanted)
    gpu_present = bool(found.gpus)
    policy = TimingPolicy(min_time_s=RUN_MIN_TIME_S)
    journal = Journal(journal_path(json_file)) if resumed else Journal.create(journal_path(json_file), {
        "experiment": "run", "json_file": str(json_file.absolute()),
        "options": {"framework": fw, "budget_s": budget_s, "devices_wanted": wanted, "cpu_threads": threads}})
    total = sum(len(suite_cases(fw, d.name, gpu_present=gpu_present)) for d in chosen)
    sessions, results, notes = [], [], []
    with progress() as bar:
        task = bar.add_task("starting", total=total)
        for dev in chosen:  # one device at a time, each with its own share of the budget
            s, r, n = experiment.run_devices(
                fw, [dev], lambda d: suite_cases(fw, d.name, gpu_present=gpu_present), policy=policy,
                cpu_threads=threads, case_timeout_s=max(budget_s, 60.0), deadline=time.time() + budget_s,
                on_start=lambda key: bar.update(task, description=escape(describe_key(key))[:90]),
                on_result=lambda r: bar.advance(task), journal=journal, resumed=resumed,
            )
            sessions += [x for x in s if all(y.device.name != x.device.name for y in sessions)]
            results += r
            notes += n
    options = {"budget_s": budget_s, "devices": [d.name for d in chosen], "min_time_s": RUN_MIN_TIME_S,
               "cpu_threads": threads, "framework": fw}
    record = experiment.make_record("run", ["whichdevice", *sys.argv[1:]], options, fw, found, sessions, results,
                                    notes)
    png = json_file.with_suffix(".png")  # the stem of the plots and the report
    render_run(record, png, loglog=True)
    write_record(record, json_file, None)
    journal.finish()  # the record is complete: the journal has done its job


def _fix_grid(v: SuiteVerdict, *, with_how: bool = True) -> Grid:
    rows = []
    for rec in v.recommendations:
        status = GridCell("measured", "good") if rec.measured else GridCell("not measured", "neutral")
        detail = "\n".join(rec.results) if rec.results else rec.note
        row = [GridCell(f"{rec.order}. {rec.name}"), status, GridCell(detail)]
        rows.append(row + [GridCell(rec.advice, "dim")] if with_how else row)
    headers = ["fix", "", "measured effect"] + (["how"] if with_how else [])
    return Grid("Fixes, in seed 002's order (+ steps_per_execution, jit_compile, sync, mixed precision)",
                headers, rows, [], align=("left",) * len(headers))


def render_run(record: records.RunRecord, png: Path, *, loglog: bool) -> None:
    """Terminal verdict page, two PNGs (matmul, batch sweep) and the HTML report beside ``png``."""
    v = suite_verdict(record)
    warnings, failures = quality.timing_warnings(record), quality.failures(record)
    terminal.render_header(console, record)
    png.parent.mkdir(parents=True, exist_ok=True)
    mm_png = png.with_name(png.stem + "-matmul.png")
    sweep_png = png.with_name(png.stem + "-batch.png")
    sections = []
    if v.matmul:
        plots.plot_sweep(v.matmul, mm_png, x_label="matrix size n (n x n)", loglog=loglog,
                         title="Seed 000: matrix multiplication time vs size — whichdevice")
        sections.append(html.Section("Seed 000: matmul crossover", [sweep_grid(t, "n", "FLOP/s") for t in v.matmul],
                                     pngs=[mm_png]))
    train_grids = []
    if v.training.creation:
        train_grids.append(creation_grid(v.training))
    if v.training.runs:
        train_grids.append(runs_grid(v.training))
    if v.training.sync_costs:
        train_grids.append(sync_cost_grid(v.training))
    train_grids += [sweep_grid(t, "batch", "samples/s") for t in v.training.sweep]
    train_pngs = []
    if v.training.sweep:
        plots.plot_batch_sweep(v.training.sweep, sweep_png, loglog=loglog,
                               title="Training step time and samples/s vs batch size — whichdevice")
        train_pngs.append(sweep_png)
    if train_grids:
        sections.append(html.Section("Seeds 001/002: training", train_grids, pngs=train_pngs))
    fix_grid = _fix_grid(v)
    sections.insert(0, html.Section("Fixes, each measured on the same workload", [fix_grid],
                                    lines=[f"{f.text}" + (f" — {f.advice}" if f.advice else "") for f in v.findings]))

    # The terminal gets the verdict page; every table is in the HTML report (and `report`).
    console.rule("Verdict")
    for line in v.headline:
        console.print(f"• {escape(line)}")
    for f in v.findings:
        console.print(f"  [bold]{escape(f.rule)}[/bold] {escape(f.text)}" + (f" → {escape(f.advice)}" if f.advice else ""))
    terminal.render_grid(console, _fix_grid(v, with_how=False))
    shown = warnings[:MAX_TERMINAL_WARNINGS]
    terminal.render_notes(console, record, shown, failures)
    if len(warnings) > len(shown):
        console.print(f"[yellow]…and {len(warnings) - len(shown)} more measurement warnings in the HTML report.[/yellow]")
    page = html.render_html(record, sections, verdict=v.headline, warnings=warnings, failures=failures)
    html.write_html(png.with_suffix(".html"), page)
    for p in (mm_png, sweep_png):
        if p.exists():
            console.print(f"Plot:   {escape(str(p))}")
    console.print(f"Report: {escape(str(png.with_suffix('.html')))}")


REPORTERS["run"] = render_run
