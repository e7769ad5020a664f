"""`whichdevice calibrate`: this machine's devices -> a device profile for `predict`.

Runs the calibration probes (workloads/calibrate.py) on every device in its own child,
writes the RunRecord (every raw sample) and the profile derived from it
(analysis/calibration.py), and saves the profile under a name `predict --profile` finds.
"""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from whichdevice.analysis import deviceprofile
from whichdevice.measure import experiment
from whichdevice.core import records
from whichdevice.analysis.calibration import profile_from_record
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
from whichdevice.core.errors import UsageError
from whichdevice.present import prediction as present
from whichdevice.core.timing import TimingPolicy
from whichdevice.core.validate import (
    check_output_dir,
    check_output_file,
    parse_choice,
    parse_positive_float,
    parse_positive_int,
)
from whichdevice.workloads import calibrate as calibrate_workload

CALIBRATE_FRAMEWORKS = ("tensorflow",)
DEFAULT_MIN_TIME_S = 0.05  # per probe point: ~25 points, a 60 s budget on 2 cores with two TF imports
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_name(name: str, argument: str = "--name") -> str:
    if not _NAME.match(name) or name.endswith(".json"):
        raise UsageError(argument, f"'{name}' is not a profile name",
                         "Use letters, digits, '.', '_' or '-' (up to 64), e.g. --name my-laptop.")
    if name in deviceprofile.shipped_names():
        raise UsageError(argument, f"'{name}' is the name of a shipped profile",
                         "Pick another name, e.g. --name my-" + name + ".")
    return name


@app.command()
def calibrate(
    name: Optional[str] = typer.Option(None, "--name", help="Profile name for `predict --profile NAME` (default: this host's name)."),
    device: Optional[str] = typer.Option(None, "--device", help="Only these devices, e.g. CPU:0,GPU:0. Default: every device."),
    min_time: Optional[str] = typer.Option(None, "--min-time", help=f"Seconds of steady samples per probe point (default {DEFAULT_MIN_TIME_S:g})."),
    cpu_threads: Optional[str] = typer.Option(None, "--cpu-threads", help="Limit the CPU run to N threads (default: all cores)."),
    case_timeout: str = typer.Option("120", "--case-timeout", help="Seconds one probe may take before it is killed and recorded as failed."),
    framework: str = typer.Option("tensorflow", "--framework", help="Framework to calibrate (tensorflow)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the JSON record, the profile and the plot."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the JSON record here instead of OUT/calibrate-<time>.json."),
) -> None:
    """Measure this machine's per-op, copy, matmul and memory costs into a device profile."""
    fw = parse_choice(framework, "--framework", CALIBRATE_FRAMEWORKS)
    profile_name = check_name(name if name is not None else
                              re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname())[:64] or "local")
    wanted = experiment.parse_device_filter(device)
    mt = parse_positive_float(min_time, "--min-time", "0.05") or DEFAULT_MIN_TIME_S
    threads = parse_positive_int(cpu_threads, "--cpu-threads", "4")
    timeout_s = parse_positive_float(case_timeout, "--case-timeout", "120")
    out_dir = check_output_dir(out, "--out")
    ts = stamp()
    json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"calibrate-{ts}.json"
    saved = deviceprofile.user_dir() / f"{profile_name}.json"
    check_output_dir(saved.parent, "WHICHDEVICE_HOME")
    experiment.require_installed(fw)

    err_console.print(f"Looking for devices ({escape(fw)} import takes a few seconds)…")
    found = experiment.discover(fw)
    chosen = experiment.select_devices(found, wanted)
    if not any(d.kind == "cpu" for d in chosen):
        raise UsageError("--device", "the CPU must be calibrated too", "Add CPU:0, e.g. --device CPU:0,GPU:0.")
    policy = TimingPolicy(min_time_s=mt, max_samples=20, telemetry_period_s=None)

    def cases_for(d):
        return calibrate_workload.build_cases(fw, d.name, d.kind)

    total = sum(len(cases_for(d)) for d in chosen)
    with progress() as bar:
        task = bar.add_task("starting", total=total)
        sessions, results, notes = experiment.run_devices(
            fw, chosen, cases_for, policy=policy, cpu_threads=threads, case_timeout_s=timeout_s,
            on_start=lambda key: bar.update(task, description=escape(describe_key(key))[:90]),
            on_result=lambda r: bar.advance(task),
        )
    options = {"name": profile_name, "devices": [d.name for d in chosen], "min_time_s": mt, "cpu_threads": threads,
               "case_timeout_s": timeout_s, "framework": fw}
    record = experiment.make_record("calibrate", ["whichdevice", *sys.argv[1:]], options, fw, found,
                                    sessions, results, notes)
    png = json_file.with_suffix(".png") if json_path else out_dir / f"calibrate-{ts}.png"
    profile = render_calibrate(record, png, loglog=True)
    write_record(record, json_file, png)
    text = deviceprofile.dumps(profile)
    profile_file = json_file.with_name(json_file.stem + ".profile.json")
    records.write_atomic(profile_file, text)
    saved.parent.mkdir(parents=True, exist_ok=True)
    records.write_atomic(saved, text)
    console.print(f"Profile: {escape(str(profile_file))}")
    console.print(f"Saved as '{escape(profile_name)}': whichdevice predict --profile {escape(profile_name)}")


def render_calibrate(record: records.RunRecord, png: Path, *, loglog: bool) -> deviceprofile.DeviceProfile:
    profile = profile_from_record(record, str(record.options.get("name") or "local"))
    present.render_profile(console, profile)
    for r in record.results:
        if r.status != "ok":
            console.print(f"[red]Failed:[/red] {escape(describe_key(r.spec.key))}: {escape(r.error or '')}")
    for n in record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")
    present.plot_profile(profile, png)
    return profile


REPORTERS["calibrate"] = render_calibrate
