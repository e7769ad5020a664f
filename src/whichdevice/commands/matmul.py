"""`whichdevice matmul`: seed 000's sweep."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from whichdevice import experiment, records
from whichdevice.analysis import quality
from whichdevice.analysis.sweep import analyze_sweep
from whichdevice.commands.common import (
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
from whichdevice.frameworks import FRAMEWORKS
from whichdevice.present import html, plots, terminal
from whichdevice.present.tables import sweep_grid
from whichdevice.timing import TimingPolicy
from whichdevice.validate import (
    check_output_dir,
    check_output_file,
    parse_choice,
    parse_choice_list,
    parse_int_list,
    parse_positive_float,
    parse_positive_int,
)
from whichdevice.workloads import matmul as matmul_workload

MAX_MATMUL_N = 32768  # two float32 operands + result = 12 GiB: beyond that, not a laptop question


@app.command()
def matmul(
    sizes: Optional[str] = typer.Option(None, "--sizes", help="Matrix sizes n (n x n), comma-separated. Default: seed 000's 1,10,100,500,1000,2000,3000,4000,5000,8000,10000."),
    mode: str = typer.Option("steady,seed", "--mode", help="steady (operands on the device: the kernel) and/or seed (seed 000's create+init+multiply+read back)."),
    dtype: str = typer.Option("float32", "--dtype", help="float32, float16 or bfloat16."),
    device: Optional[str] = typer.Option(None, "--device", help="Only these devices, e.g. CPU:0,GPU:0. Default: every device."),
    quick: bool = typer.Option(False, "--quick", help="Sizes up to 2000 and shorter points (~30 s on 2 cores)."),
    min_time: Optional[str] = typer.Option(None, "--min-time", help="Seconds of steady samples per point (default 0.2; 0.05 with --quick)."),
    cpu_threads: Optional[str] = typer.Option(None, "--cpu-threads", help="Limit the CPU run to N threads (default: all cores)."),
    case_timeout: str = typer.Option("900", "--case-timeout", help="Seconds one case may take before it is killed and recorded as failed."),
    framework: str = typer.Option("tensorflow", "--framework", help="Framework to measure."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the JSON record and the PNG plot."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the JSON record here instead of OUT/matmul-<time>.json."),
    linear: bool = typer.Option(False, "--linear", help="Linear axes in the plot (default log-log)."),
) -> None:
    """Seed 000: matrix multiplication time vs size on every device; where the GPU starts to win."""
    fw = parse_choice(framework, "--framework", FRAMEWORKS)
    size_list = parse_int_list(sizes, "--sizes", maximum=MAX_MATMUL_N, example="100,1000,4000")
    if size_list is None:
        size_list = list(matmul_workload.QUICK_SIZES if quick else matmul_workload.SEED_SIZES)
    modes = parse_choice_list(mode, "--mode", matmul_workload.MODES)
    dt = parse_choice(dtype, "--dtype", matmul_workload.DTYPES)
    wanted = experiment.parse_device_filter(device)
    mt = parse_positive_float(min_time, "--min-time", "0.2") or (0.05 if quick else 0.2)
    threads = parse_positive_int(cpu_threads, "--cpu-threads", "4")
    timeout_s = parse_positive_float(case_timeout, "--case-timeout", "900")
    out_dir = check_output_dir(out, "--out")
    ts = stamp()
    json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"matmul-{ts}.json"
    experiment.require_installed(fw)

    err_console.print(f"Looking for devices ({escape(fw)} import takes a few seconds)…")
    found = experiment.discover(fw)
    chosen = experiment.select_devices(found, wanted)
    policy = TimingPolicy(min_time_s=mt)
    total = len(chosen) * len(size_list) * len(modes)
    with progress() as bar:
        task = bar.add_task("starting", total=total)
        sessions, results, notes = experiment.run_devices(
            fw, chosen,
            lambda d: matmul_workload.build_cases(fw, d.name, size_list, modes, dt),
            policy=policy, cpu_threads=threads, case_timeout_s=timeout_s,
            on_start=lambda key: bar.update(task, description=escape(describe_key(key))),
            on_result=lambda r: bar.advance(task),
        )
    options = {"sizes": size_list, "modes": modes, "dtype": dt, "devices": [d.name for d in chosen],
               "min_time_s": mt, "quick": quick, "cpu_threads": threads, "case_timeout_s": timeout_s,
               "framework": fw}
    record = experiment.make_record("matmul", ["whichdevice", *sys.argv[1:]], options, fw, found,
                                    sessions, results, notes)
    png = json_file.with_suffix(".png") if json_path else out_dir / f"matmul-{ts}.png"
    render_matmul(record, png, loglog=not linear)
    write_record(record, json_file, png)


def render_matmul(record: records.RunRecord, png: Path, *, loglog: bool) -> None:
    """Terminal tables, the PNG plot and the HTML report (``png`` with .html) of a matmul record."""
    tables = analyze_sweep(record, "n", work_metric="flops_per_call")
    warnings, failures = quality.timing_warnings(record), quality.failures(record)
    terminal.render_header(console, record)
    grids = [sweep_grid(t, "n", "FLOP/s") for t in tables]
    for g in grids:
        terminal.render_grid(console, g)
    terminal.render_notes(console, record, warnings, failures)
    png.parent.mkdir(parents=True, exist_ok=True)
    dtype = record.options.get("dtype", "")
    plots.plot_sweep(tables, png, x_label="matrix size n (n x n)", loglog=loglog,
                     title=f"Matrix multiplication time vs size ({dtype}) — whichdevice")
    section = html.Section("Matrix multiplication (seed 000)", grids=grids, pngs=[png])
    html.write_html(png.with_suffix(".html"), html.render_html(record, [section], warnings=warnings, failures=failures))
    console.print(f"Report: {escape(str(png.with_suffix('.html')))}")


REPORTERS["matmul"] = render_matmul
