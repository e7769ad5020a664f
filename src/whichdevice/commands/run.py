"""`whichdevice run`: the default suite on this machine, one verdict, proven fixes, one report."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from whichdevice import experiment, frameworks, records, userfile
from whichdevice.api import fix_grid, suite_report
from whichdevice.commands.common import (
    DEFAULT_OUT, REPORTERS, app, console, describe_key, err_console, progress, stamp, write_record,
)
from whichdevice.errors import UsageError
from whichdevice.journal import Journal, journal_path
from whichdevice.present import html, terminal
from whichdevice.suite import measure_suite, suite_cases, user_cases
from whichdevice.validate import (
    check_output_dir,
    check_output_file,
    parse_choice_list,
    parse_int_list,
    parse_positive_float,
    parse_positive_int,
)

DEFAULT_BUDGET_S = 90.0  # per device; the budget for a CPU-only machine
MIN_BUDGET_S = 20.0  # below this not even the framework import and one experiment fit
RUN_MIN_TIME_S = 0.05  # steady seconds per point: short, the suite has many points
MAX_TERMINAL_WARNINGS = 3


def _parse_budget(text: str | None) -> float:
    budget_s = parse_positive_float(text, "--budget", "90") or DEFAULT_BUDGET_S
    if budget_s < MIN_BUDGET_S:
        raise UsageError("--budget", f"{budget_s:g} s is too short to measure anything",
                         f"Pass at least {MIN_BUDGET_S:g} seconds, e.g. --budget 90.")
    return budget_s


@app.command()
def run(
    budget: Optional[str] = typer.Option(None, "--budget", help=f"Seconds per device (default {DEFAULT_BUDGET_S:g}). Cases that do not fit are recorded as skipped."),
    device: Optional[str] = typer.Option(None, "--device", help="Only these devices, e.g. CPU:0,GPU:0. Default: every device."),
    cpu_threads: Optional[str] = typer.Option(None, "--cpu-threads", help="Limit the CPU run to N threads (default: all cores)."),
    framework: str = typer.Option("tensorflow", "--framework", help="Framework(s) to measure: tensorflow, keras-jax, keras-torch, torch; several comma-separated give one report with the frameworks side by side."),
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
        fw_list = parse_choice_list(framework, "--framework", frameworks.TRAINING)
        fw = fw_list[0]
        budget_s = _parse_budget(budget)
        wanted = experiment.parse_device_filter(device)
        threads = parse_positive_int(cpu_threads, "--cpu-threads", "4")
        out_dir = check_output_dir(out, "--out")
        ts = stamp()
        json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"run-{ts}.json"
    if resumed is None and len(fw_list) > 1:  # frameworks side by side: one after the other, one record
        record = _run_frameworks(fw_list, wanted, budget_s, threads, json_file)
        render_run(record, json_file.with_suffix(".png"), loglog=True)
        write_record(record, json_file, None)
        return
    experiment.require_installed(fw)

    err_console.print(f"Looking for devices ({escape(fw)} import takes a few seconds)…")
    found = experiment.discover(fw)
    chosen = experiment.select_devices(found, wanted)
    gpu_present = bool(found.gpus)
    header_options = {"framework": fw, "budget_s": budget_s, "devices_wanted": wanted, "cpu_threads": threads}
    record = _measure_suite("run", fw, found, chosen, lambda d: suite_cases(fw, d.name, gpu_present=gpu_present),
                            budget_s=budget_s, threads=threads, json_file=json_file, resumed=resumed,
                            header_options=header_options, options={})
    png = json_file.with_suffix(".png")  # the stem of the plots and the report
    render_run(record, png, loglog=True)
    write_record(record, json_file, None)
    Journal(journal_path(json_file)).finish()  # the record is complete: the journal has done its job


def _run_frameworks(fw_list, wanted, budget_s, threads, json_file) -> records.RunRecord:
    """``run`` for each framework in turn (each device of each its own budget, never two at
    once), merged into one record; each framework journals beside the record under its name
    (``run-X.keras-jax.partial.jsonl``), so an interrupted one can be finished on its own."""
    for f in fw_list:  # fail before measuring anything if one is missing
        experiment.require_installed(f)
    parts = []
    for f in fw_list:
        err_console.print(f"Looking for devices ({escape(f)} import takes a few seconds)…")
        found = experiment.discover(f)
        chosen = experiment.select_devices(found, wanted)
        gpu = bool(found.gpus)
        part_json = json_file.with_name(f"{json_file.stem}.{f}{json_file.suffix}")
        header = {"framework": f, "budget_s": budget_s, "devices_wanted": wanted, "cpu_threads": threads}
        parts.append(_measure_suite("run", f, found, chosen,
                                    lambda d, f=f, gpu=gpu: suite_cases(f, d.name, gpu_present=gpu),
                                    budget_s=budget_s, threads=threads, json_file=part_json, resumed=None,
                                    header_options=header, options={}))
        Journal(journal_path(part_json)).finish()
    options = {**parts[0].options, "framework": ",".join(fw_list)}
    return experiment.merge_records(parts, options)


def _measure_suite(name, fw, found, chosen, cases_for, **kw) -> records.RunRecord:
    with progress() as bar:
        task = bar.add_task("starting", total=None)
        return measure_suite(name, fw, found, chosen, cases_for, min_time_s=RUN_MIN_TIME_S,
                             on_total=lambda n: bar.update(task, total=n),
                             on_start=lambda key: bar.update(task, description=escape(describe_key(key))[:90]),
                             on_result=lambda r: bar.advance(task), **kw)


@app.command()
def diagnose(
    model: str = typer.Option(..., "--model", help="Your model: FILE.py:FUNCTION returning a Keras model (compiled or not)."),
    input_shape: Optional[str] = typer.Option(None, "--input-shape", help="Input shape of one sample, e.g. 100 or 28,28,1 (default: the model's declared input)."),
    classes: Optional[str] = typer.Option(None, "--classes", help="Number of classes for synthetic labels (1: binary; leave out: regression)."),
    data: Optional[str] = typer.Option(None, "--data", help="FILE.py:FUNCTION returning a tf.data.Dataset of (x, y) (default: synthetic data)."),
    samples: Optional[str] = typer.Option(None, "--samples", help="Samples per epoch (default 10000)."),
    batch: Optional[str] = typer.Option(None, "--batch", help="Your batch size (default 32): the baseline every fix is measured against."),
    budget: Optional[str] = typer.Option(None, "--budget", help=f"Seconds per device (default {DEFAULT_BUDGET_S:g})."),
    device: Optional[str] = typer.Option(None, "--device", help="Only these devices, e.g. CPU:0,GPU:0."),
    cpu_threads: Optional[str] = typer.Option(None, "--cpu-threads", help="Limit the CPU run to N threads (default: all cores)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the JSON record, the plots and the HTML report."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the JSON record here instead of OUT/diagnose-<time>.json."),
) -> None:
    """The suite on YOUR model: who wins at your batch, the batch sweep, every automatic fix
    measured — and the device and settings to use."""
    fw = "tensorflow"
    model_fn = userfile.parse_spec(model, "--model")
    data_fn = userfile.parse_spec(data, "--data") if data else None
    shape = tuple(parse_int_list(input_shape, "--input-shape", maximum=1 << 20, example="100")) if input_shape else None
    n_classes = parse_positive_int(classes, "--classes", "10", maximum=1_000_000)
    n_samples = parse_positive_int(samples, "--samples", "10000", maximum=10_000_000) or 10_000
    user_batch = parse_positive_int(batch, "--batch", "32", maximum=65536) or 32
    budget_s = _parse_budget(budget)
    wanted = experiment.parse_device_filter(device)
    threads = parse_positive_int(cpu_threads, "--cpu-threads", "4")
    out_dir = check_output_dir(out, "--out")
    json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"diagnose-{stamp()}.json"
    experiment.require_installed(fw)
    err_console.print(f"Checking {escape(model_fn.text)} (imports {escape(fw)})…")
    user = userfile.user_model_params(model_fn, shape, n_classes, data_fn, frameworks.env_module(fw).child_env("cpu"))
    err_console.print(f"Looking for devices ({escape(fw)} import takes a few seconds)…")
    found = experiment.discover(fw)
    chosen = experiment.select_devices(found, wanted)
    record = _measure_suite(
        "diagnose", fw, found, chosen,
        lambda d: user_cases(fw, d.name, user=user, batch=user_batch, samples=n_samples),
        budget_s=budget_s, threads=threads, json_file=json_file, resumed=None,
        header_options={"framework": fw}, options={"model": model_fn.text, "data": data_fn.text if data_fn else None,
                                                   "batch": user_batch, "samples": n_samples})
    png = json_file.with_suffix(".png")
    render_run(record, png, loglog=True)
    write_record(record, json_file, None)
    Journal(journal_path(json_file)).finish()


def render_run(record: records.RunRecord, png: Path, *, loglog: bool) -> None:
    """Terminal verdict page, two PNGs (matmul, batch sweep) and the HTML report beside ``png``."""
    rep = suite_report(record, png, loglog=loglog)
    v = rep.verdict
    terminal.render_header(console, record)
    # The terminal gets the verdict page; every table is in the HTML report (and `report`).
    console.rule("Verdict")
    for line in v.headline:
        console.print(f"• {escape(line)}")
    for f in v.findings:
        console.print(f"  [bold]{escape(f.rule)}[/bold] {escape(f.text)}" + (f" → {escape(f.advice)}" if f.advice else ""))
    terminal.render_grid(console, fix_grid(v, with_how=False))
    for line in rep.advice:
        console.print(f"[bold green]{escape(line)}[/bold green]")
    shown = rep.warnings[:MAX_TERMINAL_WARNINGS]
    terminal.render_notes(console, record, shown, rep.failures)
    if len(rep.warnings) > len(shown):
        console.print(f"[yellow]…and {len(rep.warnings) - len(shown)} more measurement warnings in the HTML "
                      "report.[/yellow]")
    html.write_html(png.with_suffix(".html"), rep.page)
    for p in rep.pngs:
        console.print(f"Plot:   {escape(str(p))}")
    console.print(f"Report: {escape(str(png.with_suffix('.html')))}")


REPORTERS["run"] = render_run
REPORTERS["diagnose"] = render_run
