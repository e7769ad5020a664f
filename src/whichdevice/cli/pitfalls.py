"""`whichdevice pitfalls`: each benchmarking mistake measured next to the correct method on
the same workload (seed 001's model), with the distortion as a ratio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from whichdevice.measure import experiment
from whichdevice.core import records
from whichdevice.analysis import quality
from whichdevice.analysis.pitfalls import PitfallRow, analyze_pitfalls
from whichdevice.cli.common import (
    DEFAULT_OUT,
    REPORTERS,
    app,
    console,
    describe_key,
    err_console,
    progress,
    stamp,
    write_record,
)
from whichdevice.present import html, terminal
from whichdevice.present.tables import Grid, GridCell
from whichdevice.core.units import seconds
from whichdevice.core.timing import TimingPolicy
from whichdevice.core.validate import check_output_dir, check_output_file, parse_choice, parse_positive_float
from whichdevice.workloads import pitfalls as pitfalls_workload

QUICK_MIN_TIME_S = 0.05
MIN_TIME_S = 0.2


@app.command()
def pitfalls(
    device: Optional[str] = typer.Option(None, "--device", help="Only these devices, e.g. CPU:0,GPU:0. Default: every device."),
    quick: bool = typer.Option(False, "--quick", help="Shorter points (0.05 s of steady samples, 2 epochs): < 60 s on 2 cores."),
    min_time: Optional[str] = typer.Option(None, "--min-time", help="Seconds of steady samples per point (default 0.2; 0.05 with --quick)."),
    case_timeout: str = typer.Option("300", "--case-timeout", help="Seconds one case may take before it is killed and recorded as failed."),
    framework: str = typer.Option("tensorflow", "--framework", help="Framework to measure (tensorflow)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the JSON record and the HTML report."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the JSON record here instead of OUT/pitfalls-<time>.json."),
) -> None:
    """Each timing mistake (first epoch, no sync, sync every step, one CPU thread, XLA on one device, tiny batch) next to the correct measurement, with the distortion as a ratio."""  # noqa: E501
    fw = parse_choice(framework, "--framework", ("tensorflow",))
    wanted = experiment.parse_device_filter(device)
    mt = parse_positive_float(min_time, "--min-time", "0.2") or (QUICK_MIN_TIME_S if quick else MIN_TIME_S)
    timeout_s = parse_positive_float(case_timeout, "--case-timeout", "300")
    out_dir = check_output_dir(out, "--out")
    ts = stamp()
    json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"pitfalls-{ts}.json"
    experiment.require_installed(fw)

    err_console.print(f"Looking for devices ({escape(fw)} import takes a few seconds)…")
    found = experiment.discover(fw)
    chosen = experiment.select_devices(found, wanted)
    policy = TimingPolicy(min_time_s=mt)
    plan = {d.name: pitfalls_workload.build_cases(fw, d.name, quick=quick, is_cpu=d.kind == "cpu") for d in chosen}
    total = sum(len(a) + len(b) for a, b in plan.values())
    sessions, results, notes = [], [], []
    with progress() as bar:
        task = bar.add_task("starting", total=total)
        for dev in chosen:
            main_cases, one_thread = plan[dev.name]
            # The one-thread case runs in its own child: threads are fixed when TensorFlow starts.
            for cases, threads in ((main_cases, None), (one_thread, 1)):
                if not cases:
                    continue
                s, r, n = experiment.run_devices(
                    fw, [dev], lambda d, c=cases: c, policy=policy, cpu_threads=threads, case_timeout_s=timeout_s,
                    on_start=lambda key: bar.update(task, description=escape(describe_key(key))[:90]),
                    on_result=lambda r: bar.advance(task))
                sessions += s
                results += r
                notes += n
    options = {"devices": [d.name for d in chosen], "min_time_s": mt, "quick": quick, "case_timeout_s": timeout_s,
               "framework": fw, "model": "seed001"}
    record = experiment.make_record("pitfalls", ["whichdevice", *sys.argv[1:]], options, fw, found, sessions, results,
                                    notes)
    html_path = json_file.with_suffix(".html")
    render_pitfalls(record, html_path.with_suffix(".png"), loglog=True)
    write_record(record, json_file, None)


def pitfalls_grid(rows: list[PitfallRow]) -> Grid:
    out = []
    for r in rows:
        tone = "neutral" if not r.significant else ("bad" if abs(r.ratio - 1) > 0.1 else "")
        out.append([GridCell(r.short), GridCell(r.device), GridCell(seconds(r.wrong_s)), GridCell(seconds(r.right_s)),
                    GridCell(f"{r.ratio:.3g}x", tone), GridCell(r.verdict(), tone), GridCell(r.unit, "dim")])
    footer = [f"{r.short} ({r.device}): wrong = {r.wrong_method}; right = {r.right_method}"
              + (f". {r.note}" if r.note else "") for r in rows]
    return Grid("Benchmarking mistakes: the wrong figure, the right one, wrong / right",
                ["pitfall", "device", "wrong", "right", "ratio", "what it does", "per"], out, footer,
                align=("left", "left", "right", "right", "right", "left", "left"))


def render_pitfalls(record: records.RunRecord, png: Path, *, loglog: bool) -> None:
    """Terminal table and an HTML report beside ``png`` (no plot: one table says it all)."""
    rows = analyze_pitfalls(record)
    warnings, failures = quality.timing_warnings(record), quality.failures(record)
    terminal.render_header(console, record)
    if record.options.get("quick"):
        console.print("[yellow]--quick:[/yellow] 0.05 s of steady samples per point, 2 epochs for the first-epoch "
                      "pitfall (the full run: whichdevice pitfalls)")
    grid = pitfalls_grid(rows)
    terminal.render_grid(console, grid)
    if not any(d.startswith("GPU") for d in {r.device for r in rows}):
        console.print("Only the CPU was measured: the unsynchronized-clock pitfall cannot distort a CPU timing; "
                      "run on a GPU machine to measure it there.")
    terminal.render_notes(console, record, warnings[:3], failures)
    png.parent.mkdir(parents=True, exist_ok=True)
    page = html.render_html(record, [html.Section("Benchmarking mistakes", [grid])], warnings=warnings,
                            failures=failures)
    html.write_html(png.with_suffix(".html"), page)
    console.print(f"Report: {escape(str(png.with_suffix('.html')))}")


REPORTERS["pitfalls"] = render_pitfalls
