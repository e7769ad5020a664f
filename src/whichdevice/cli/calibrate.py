"""`whichdevice calibrate`: this machine's devices -> a device profile for `predict`.

Runs the calibration probes (workloads/calibrate.py) on every device in its own child,
writes the RunRecord (every raw sample) and the profile derived from it
(analysis/calibration.py), and saves the profile under a name `predict --profile` finds.
The probes go through the one measuring path (measure/session.py) with a journal, so an
interrupted run finishes with ``--resume``; the record and the profile are written at the end.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape

from whichdevice import frameworks
from whichdevice.cli.base import app, console, err_console
from whichdevice.cli import options as opt
from whichdevice.jobs import Job
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import (
    check_output_dir,
    parse_choice,
)

if TYPE_CHECKING:
    from whichdevice.measure.journal import JournalState


DEFAULT_MIN_TIME_S = 0.05  # per probe point: ~25 points, a 60 s budget on 2 cores with two TF imports
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_name(name: str, argument: str = "--name") -> str:
    from whichdevice.analysis import deviceprofile

    if not _NAME.match(name) or name.endswith(".json"):
        raise UsageError(
            argument,
            f"'{name}' is not a profile name",
            "Use letters, digits, '.', '_' or '-' (up to 64), e.g. --name my-laptop.",
        )
    if name in deviceprofile.shipped_names():
        raise UsageError(
            argument, f"'{name}' is the name of a shipped profile", "Pick another name, e.g. --name my-" + name + "."
        )
    return name


@dataclass
class CalibratePlan(Job):
    """A checked `calibrate` run: everything its probes, its record and its profile need
    (JSON values only), journaled in the header so that ``--resume`` runs the same thing."""

    framework: str
    name: str  # the profile's name (`predict --profile NAME`)
    png_file: str
    profile_file: str  # the profile beside the record
    saved_file: str  # ... and under WHICHDEVICE_HOME, where `predict --profile NAME` finds it


@app.command()
def calibrate(
    ctx: typer.Context,
    name: Optional[str] = typer.Option(
        None,
        "--name",
        help="Profile name for `predict --profile NAME` (default: this host's name, or HOST-FRAMEWORK where that name holds another framework's profile).",
    ),
    device: Optional[str] = opt.device(),
    min_time: Optional[str] = opt.min_time("probe point", DEFAULT_MIN_TIME_S),
    cpu_threads: Optional[str] = opt.cpu_threads(),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(120, "probe"),
    framework: str = opt.framework("calibrate", "Framework to calibrate"),
    out: Path = opt.out("the profile", "the plot"),
    json_path: Optional[Path] = opt.json("calibrate"),
    resume: Optional[Path] = opt.resume(kept="probes"),
) -> None:
    """Measure this machine's per-op, copy, matmul and memory costs into a device profile."""
    from whichdevice import jobs
    from whichdevice.analysis import deviceprofile
    from whichdevice.cli.common import resume_if_asked
    from whichdevice.measure import experiment

    if resume_if_asked(ctx, resume, "calibrate", CalibratePlan, run_calibrate):
        return
    fw = parse_choice(framework, "--framework", frameworks.offering("calibrate"))
    profile_name = check_name(name if name is not None else deviceprofile.default_name(fw, socket.gethostname()))
    fields = jobs.checked(ctx.params, "calibrate", min_time=(DEFAULT_MIN_TIME_S, "0.05"), case_timeout="120")
    json_file = Path(fields["json_file"])
    saved = deviceprofile.user_dir() / f"{profile_name}.json"
    check_output_dir(saved.parent, "WHICHDEVICE_HOME")
    experiment.require_installed(fw)
    plan = CalibratePlan(
        framework=fw,
        name=profile_name,
        profile_file=str(json_file.with_name(json_file.stem + ".profile.json").absolute()),
        saved_file=str(saved.absolute()),
        **fields,
    )
    run_calibrate(plan, None)


def run_calibrate(plan: CalibratePlan, resumed: JournalState | None) -> None:
    """Measure ``plan`` (continuing ``resumed``'s journal), render it, write the record and
    the profile (beside the record and under its name)."""
    from whichdevice import jobs
    from whichdevice.analysis import deviceprofile
    from whichdevice.cli.common import find_devices, open_journal
    from whichdevice.core import records
    from whichdevice.measure import experiment
    from whichdevice.workloads import calibrate as calibrate_workload

    fw = plan.framework
    # Discovery first: the CPU must be among the chosen devices, refused before anything is written.
    found = find_devices(fw)
    chosen = experiment.select_devices(found, plan.devices_wanted)
    if not any(d.kind == "cpu" for d in chosen):
        raise UsageError("--device", "the CPU must be calibrated too", "Add CPU:0, e.g. --device CPU:0,GPU:0.")
    journal = open_journal("calibrate", plan, resumed)

    def cases_for(found, d):
        return calibrate_workload.build_cases(fw, d.name, d.kind)

    refused: list[UsageError] = []

    def save_profile(drawn, refusal: UsageError | None) -> None:
        """The profile fitted in the page's analysis, beside the record and under its name; none
        where a fitted value came out non-positive (no profile from noise: the samples are kept)."""
        if refusal is not None:
            refused.append(refusal)
            return
        text = deviceprofile.dumps(drawn.profile)
        profile_file, saved = Path(plan.profile_file), Path(plan.saved_file)
        records.write_atomic(profile_file, text)
        saved.parent.mkdir(parents=True, exist_ok=True)
        records.write_atomic(saved, text)
        console.print(f"Profile: {escape(str(profile_file))}")
        console.print(f"Saved as '{escape(plan.name)}': whichdevice predict --profile {escape(plan.name)}")

    request = plan.request("calibrate", fw, cases_for, {"name": plan.name})
    jobs.run(plan, request, loglog=True, resumed=resumed, journal=journal, found=found, then=save_profile)
    if refused:
        err_console.print(f"error: {escape(str(refused[0]))}", soft_wrap=True)
        raise typer.Exit(1) from None
