"""`whichdevice predict`: would a GPU win? From this (CPU-only or not) machine.

Measures the training step on the local CPU over batch sizes (train workload, ``steady``
cases), reads the step's op list from its traced graph at each batch (calibrate workload,
``describe`` cases), and models the step on the profiled GPU (costmodel.py). The record
embeds the profile used, so `whichdevice report` redraws it without the profile file.
The cases go through the one measuring path (measure/session.py) with a journal, so an
interrupted run finishes with ``--resume`` (against the profile as it was read at the start).
"""

from __future__ import annotations

import socket

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from whichdevice import frameworks
from whichdevice.cli.base import app
from whichdevice.cli import options as opt
from whichdevice.jobs import Job
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import (
    parse_int_list,
    parse_choice,
    parse_positive_int,
    parse_shape,
)

if TYPE_CHECKING:
    from whichdevice.analysis import deviceprofile
    from whichdevice.measure.journal import JournalState


FRAMEWORK = "tensorflow"  # the default
QUICK_MIN_TIME_S = 0.05


@dataclass
class PredictPlan(Job):
    """A checked `predict` run: everything its cases and its record need (JSON values only),
    journaled in the header so that ``--resume`` runs the same thing — with the profile as
    it was read at the start, whatever has become of its file since."""

    profile: str  # --profile as typed, for the record
    profile_json: str  # the profile read from it
    params: dict  # the model's case parameters (seed 001's, or the user's as the pre-flight found them)
    model: str  # --model as typed, or "seed001", for the record
    batches: list[int]
    png_file: str
    linear: bool
    framework: str = FRAMEWORK
    steps_per_execution: int = 1


# This command's own options (the shared ones are cli/options.py's), kept out of the signature
# so that it reads as one line per option.
PROFILE_OPTION = typer.Option(
    "h100",
    "--profile",
    help="The GPU machine to predict: a shipped profile (h100), a name saved by `whichdevice calibrate`, or a profile JSON file.",
)
MODEL_OPTION = typer.Option(
    None, "--model", help="Your model: FILE.py:FUNCTION returning a Keras model. Default: the built-in small MLP."
)
BATCHES_OPTION = typer.Option(
    None, "--batches", help="Batch sizes, comma-separated. Default 8,16,...,8192 (--quick: 8,32,128,512,2048,8192)."
)
QUICK_OPTION = opt.quick(
    f"Short measurements ({QUICK_MIN_TIME_S:g} s per batch size) at 6 batch sizes: < 60 s on 2 cores."
)
FRAMEWORK_OPTION = opt.framework("predict", "Framework whose training step is predicted", default=FRAMEWORK)
STEPS_PER_EXECUTION_OPTION = typer.Option(
    None,
    "--steps-per-execution",
    help="Predict with Keras' steps_per_execution=N: the per-step host overhead paid once per N steps "
    "(compiled steps only; default 1).",
)
VERBOSE_OPTION = opt.verbose("Also print the full table, the calibration and the model's assumptions.")


@app.command()
def predict(
    ctx: typer.Context,
    profile: str = PROFILE_OPTION,
    model: Optional[str] = MODEL_OPTION,
    input_shape: Optional[str] = opt.input_shape(),
    classes: Optional[str] = opt.classes(),
    batches: Optional[str] = BATCHES_OPTION,
    quick: bool = QUICK_OPTION,
    min_time: Optional[str] = opt.min_time("batch size", 0.2, quick=QUICK_MIN_TIME_S),
    cpu_threads: Optional[str] = opt.cpu_threads(),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(600),
    framework: str = FRAMEWORK_OPTION,
    steps_per_execution: Optional[str] = STEPS_PER_EXECUTION_OPTION,
    out: Path = opt.out("the PNG plot"),
    json_path: Optional[Path] = opt.json("predict"),
    linear: bool = opt.linear(),
    resume: Optional[Path] = opt.resume(),
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Measure the step on this CPU, predict it on a profiled GPU: winner, crossover, what dominates."""
    from whichdevice import jobs
    from whichdevice.analysis import deviceprofile
    from whichdevice.cli.common import allow_with_resume, only_with_model, resume_if_asked, user_model
    from whichdevice.measure import experiment
    from whichdevice.workloads import train as train_workload, userfile

    allow_with_resume(ctx, "verbose")  # how to print: fine with --resume
    if resume_if_asked(
        ctx, resume, "predict", PredictPlan, lambda plan, resumed: run_predict(plan, resumed, verbose=verbose)
    ):
        return
    # Each option is checked in this order: the first bad one is the error.
    fw = parse_choice(framework, "--framework", frameworks.offering("predict"))
    spe = parse_positive_int(steps_per_execution, "--steps-per-execution", "10", maximum=100_000) or 1
    prof = _gpu_profile(profile)
    if frameworks.declared(fw, "PREDICT_LOCAL_CPU", True):  # TensorFlow's keeps its profile's CPU (env.py)
        prof = deviceprofile.with_local_cpu(prof, fw, socket.gethostname())
    batch_list = parse_int_list(batches, "--batches", maximum=train_workload.MAX_BATCH, example="8,64,512,4096")
    if batch_list is None:
        batch_list = list(train_workload.QUICK_BATCHES if quick else train_workload.DEFAULT_BATCHES)
    shape = parse_shape(input_shape)
    n_classes = parse_positive_int(classes, "--classes", "10", maximum=1_000_000)
    only_with_model(model, input_shape=input_shape, classes=classes)
    model_fn = userfile.parse_spec(model, "--model") if model else None
    fields = jobs.checked(
        ctx.params, "predict", min_time=(QUICK_MIN_TIME_S if quick else 0.2, "0.2"), case_timeout="600"
    )
    if model_fn is not None and fw not in frameworks.KERAS:
        raise UsageError(
            "--model", f"a Keras model cannot be trained by --framework {fw}", "Use --framework keras-torch."
        )
    experiment.require_installed(fw)

    params = user_model(model_fn, fw, fields, shape, n_classes) if model_fn is not None else {"model": "seed001"}
    plan = PredictPlan(
        profile=profile,
        profile_json=deviceprofile.dumps(prof),
        params=params,
        model=model_fn.text if model_fn else "seed001",
        batches=list(batch_list),
        linear=linear,
        framework=fw,
        steps_per_execution=spe,
        **fields,
    )
    run_predict(plan, None, verbose=verbose)


def _gpu_profile(profile: str) -> deviceprofile.DeviceProfile:
    """``--profile`` read: a profile with a GPU to predict."""
    from whichdevice.analysis import deviceprofile

    prof = deviceprofile.load(profile, "--profile")
    if prof.gpu is None:
        raise UsageError(
            "--profile",
            f"profile '{prof.name}' has no GPU",
            "Pass a profile calibrated on a machine with a GPU (e.g. --profile h100).",
        )
    return prof


def run_predict(plan: PredictPlan, resumed: JournalState | None, *, verbose: bool = False) -> None:
    """Measure ``plan`` on the CPU (continuing ``resumed``'s journal), render the prediction,
    write the record (the profile embedded)."""
    from whichdevice import jobs
    from whichdevice.cli.common import open_journal
    from whichdevice.core import records
    from whichdevice.workloads import calibrate as calibrate_workload
    from whichdevice.workloads import fixes

    journal = open_journal("predict", plan, resumed)

    fw = plan.framework

    def cases_for(found, d):
        described = calibrate_workload.describe_cases(fw, d.name, plan.params, plan.batches)
        steady = [
            records.CaseSpec(
                workload="train",
                framework=fw,
                device=d.name,
                params={**plan.params, "kind": "steady", fixes.BATCH.param: b, fixes.SYNC.param: "none"},
            )
            for b in sorted(plan.batches)
        ]
        return described + steady

    options = {
        "profile": plan.profile,
        "profile_json": plan.profile_json,
        "batches": plan.batches,
        "quick": plan.quick,
        "model": plan.model,
        "framework": fw,
        fixes.STEPS_PER_EXECUTION.param: plan.steps_per_execution,
    }
    request = plan.request("predict", fw, cases_for, options, devices=["CPU:0"])
    jobs.run(plan, request, loglog=not plan.linear, resumed=resumed, journal=journal, verbose=verbose)
