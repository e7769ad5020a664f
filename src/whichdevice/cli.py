"""Command line: ``whichdevice matmul | report | devices``.

Thin on purpose: parse and check arguments, call the experiment, hand the record to the
analysis and the presenters. Bad input ends here with one line and exit code 2.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from whichdevice import experiment, records
from whichdevice.analysis import quality
from whichdevice.analysis.sweep import analyze_sweep
from whichdevice.errors import UsageError
from whichdevice.frameworks import FRAMEWORKS
from whichdevice.present import plots, terminal
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

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure when the GPU pays off against the CPU for TensorFlow/Keras work, and why it does not.",
)
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

DEFAULT_OUT = Path("whichdevice-results")
MAX_MATMUL_N = 32768  # two float32 operands + result = 12 GiB: beyond that, not a laptop question


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err_console, transient=True)


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


@app.command()
def devices(
    framework: str = typer.Option("tensorflow", "--framework", help="Framework to ask."),
) -> None:
    """List the devices the framework sees, and why a GPU is missing if it is."""
    fw = parse_choice(framework, "--framework", FRAMEWORKS)
    found = experiment.discover(fw)
    console.print(f"{escape(fw)} {escape(found.framework.version)} (import {found.import_s:.1f} s) sees:")
    for d in found.devices:
        console.print(f"  {escape(d.name)}: {escape(d.description)}")
    note = experiment.no_gpu_note(fw, found)
    if note:
        console.print(f"[yellow]Note:[/yellow] {escape(note)}")


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
    stamp = _stamp()
    json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"matmul-{stamp}.json"
    experiment.require_installed(fw)

    err_console.print(f"Looking for devices ({escape(fw)} import takes a few seconds)…")
    found = experiment.discover(fw)
    chosen = experiment.select_devices(found, wanted)
    policy = TimingPolicy(min_time_s=mt)
    total = len(chosen) * len(size_list) * len(modes)
    with _progress() as progress:
        task = progress.add_task("starting", total=total)
        sessions, results, notes = experiment.run_devices(
            fw, chosen,
            lambda d: matmul_workload.build_cases(fw, d.name, size_list, modes, dt),
            policy=policy, cpu_threads=threads, case_timeout_s=timeout_s,
            on_start=lambda key: progress.update(task, description=escape(_describe_key(key))),
            on_result=lambda r: progress.advance(task),
        )
    options = {"sizes": size_list, "modes": modes, "dtype": dt, "devices": [d.name for d in chosen],
               "min_time_s": mt, "quick": quick, "cpu_threads": threads, "case_timeout_s": timeout_s,
               "framework": fw}
    record = experiment.make_record("matmul", ["whichdevice", *sys.argv[1:]], options, fw, found,
                                    sessions, results, notes)
    png = json_file.with_suffix(".png") if json_path else out_dir / f"matmul-{stamp}.png"
    _render_matmul(record, png, loglog=not linear)
    _write_record(record, json_file, png)


def _describe_key(key: str) -> str:
    workload, _, device, params = key.split("|", 3)
    return f"{device} {workload} {params.replace(',', ' ')}"


def _render_matmul(record: records.RunRecord, png: Path, *, loglog: bool) -> None:
    tables = analyze_sweep(record, "n", work_metric="flops_per_call")
    terminal.render_header(console, record)
    for t in tables:
        terminal.render_sweep_table(console, t, "n", "FLOP/s")
    terminal.render_notes(console, record, quality.timing_warnings(record), quality.failures(record))
    png.parent.mkdir(parents=True, exist_ok=True)
    dtype = record.options.get("dtype", "")
    plots.plot_sweep(tables, png, x_label="matrix size n (n x n)", loglog=loglog,
                     title=f"Matrix multiplication time vs size ({dtype}) — whichdevice")


def _write_record(record: records.RunRecord, json_file: Path, png: Path | None) -> None:
    try:
        json_file.parent.mkdir(parents=True, exist_ok=True)
        records.save_run(record, json_file)
    except OSError as e:
        if png is not None:
            png.unlink(missing_ok=True)
        raise UsageError("--json", f"cannot write '{json_file}' ({e.strerror})", "Pass a writable path.") from None
    console.print(f"Record: {escape(str(json_file))}")
    if png is not None:
        console.print(f"Plot:   {escape(str(png))}")


@app.command()
def report(
    result: Path = typer.Argument(..., help="A JSON record written by a whichdevice command."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for the re-drawn plot (default: next to RESULT)."),
    linear: bool = typer.Option(False, "--linear", help="Linear axes in the plot (default log-log)."),
) -> None:
    """Re-render the table and plot from a saved record, without measuring again."""
    record = records.load_run(result, "RESULT")
    out_dir = check_output_dir(out, "--out") if out else result.parent
    png = out_dir / (result.stem + ".png")
    if record.experiment == "matmul":
        _render_matmul(record, png, loglog=not linear)
        console.print(f"Plot:   {escape(str(png))}")
    else:
        raise UsageError("RESULT", f"experiment '{record.experiment}' has no report in this version",
                         "Upgrade whichdevice.")


# typer >= 0.20 vendors click privately; find its UsageError through a public class
# instead of importing either click by name.
_CLICK_USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def main(argv: list[str] | None = None) -> None:
    """Entry point: usage errors become one line on stderr and exit code 2."""
    try:
        app(args=argv, standalone_mode=False)
    except UsageError as e:
        err_console.print(f"error: {escape(str(e))}", soft_wrap=True)
        sys.exit(2)
    except _CLICK_USAGE_ERROR as e:
        if type(e).__name__.startswith("NoArgsIsHelp"):  # bare `whichdevice`: help was printed
            sys.exit(0)
        err_console.print(f"error: {escape(e.format_message())} (see --help)", soft_wrap=True)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except experiment.FrameworkUnavailable as e:
        err_console.print(f"error: {escape(str(e))}", soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
