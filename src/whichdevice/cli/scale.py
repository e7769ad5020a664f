"""`whichdevice scale`: does the next device pay? The same training step on 1…N replicas, on the
framework's own distribution engine (TensorFlow MirroredStrategy, Keras-on-JAX DataParallel,
PyTorch DDP) — step time, samples/s, scaling efficiency, the all-reduce share and the crossover
batch from which N replicas beat one."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape

from whichdevice import frameworks
from whichdevice.cli.base import app, err_console
from whichdevice.cli import options as opt
from whichdevice.jobs import Job
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import (
    parse_choice,
    parse_int_list,
)

if TYPE_CHECKING:
    from whichdevice.measure.journal import JournalState


BUILTIN_MODELS = {
    "seed001": "small MLP (100 features → Dense 128 → 10 classes)",
    "seed002": "MLP (128 features → 256 → 128 → 1, seed 002)",
}


@dataclass
class ScalePlan(Job):
    """A checked `scale` run (JSON values only), journaled so ``--resume`` runs the same."""

    framework: str
    replicas: list[int]
    batches: list[int]
    model: dict  # the built-in's name, or the user's model as the pre-flight found it
    png_file: str


def parse_replicas(text: str, cores: int) -> list[int]:
    """``--devices 1,2``: replica counts; 1 (the baseline) is always measured; N may not exceed
    the devices available (on a CPU-only machine: the usable cores)."""
    values = parse_int_list(text, "--devices", maximum=1024, example="1,2") or [1, 2]
    too_many = [n for n in values if n > cores]
    if too_many:
        raise UsageError(
            "--devices",
            f"{max(too_many)} replicas asked but this machine has {cores} usable CPU cores (one per replica at least)",
            f"Pass replica counts up to {cores}, e.g. --devices {','.join(str(n) for n in (1, 2, 4, 8) if n <= cores)}.",
        )
    return sorted({1, *values})


def check_batches(batches: list[int], replicas: list[int]) -> None:
    for b in batches:
        bad = [n for n in replicas if b % n]
        if bad:
            lcm = math.lcm(*replicas)
            raise UsageError(
                "--batches",
                f"global batch {b:,} is not divisible by {bad[0]} replicas",
                f"Use multiples of {lcm} (every replica gets the same share), e.g. --batches {lcm * 16},{lcm * 128}.",
            )


@app.command()
def scale(
    ctx: typer.Context,
    framework: str = opt.framework("scale", "Engine"),
    model: str = typer.Option(
        "seed001",
        "--model",
        help="seed001 (the built-in small MLP), seed002 (the 3-layer MLP), or your Keras model as FILE.py:FUNCTION (tensorflow, keras-jax).",
    ),
    devices: str = typer.Option("1,2", "--devices", help="Replica counts, e.g. 1,2 (1, the baseline, is always run)."),
    batches: Optional[str] = typer.Option(
        None, "--batches", help="Global batch sizes (split over the replicas). Default 32,256,2048."
    ),
    min_time: Optional[str] = opt.min_time("point", 0.2),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(600, "point"),
    out: Path = opt.out("the PNG plot", "the HTML"),
    json_path: Optional[Path] = opt.json("scale"),
    resume: Optional[Path] = opt.resume(kept="points"),
) -> None:
    """Does the next device pay? 1…N replicas on the framework's own engine: efficiency, all-reduce share, crossover."""
    from whichdevice import jobs
    from whichdevice.cli.common import resume_if_asked, user_model
    from whichdevice.core.machine import usable_cores
    from whichdevice.measure import experiment
    from whichdevice.workloads import scale as scale_workload, userfile

    if resume_if_asked(ctx, resume, "scale", ScalePlan, run_scale):
        return
    fw = parse_choice(framework, "--framework", frameworks.offering("scale"))
    replicas = parse_replicas(devices, usable_cores())
    batch_list = parse_int_list(batches, "--batches", maximum=scale_workload.MAX_BATCH, example="32,256,2048")
    batch_list = batch_list or list(scale_workload.DEFAULT_BATCHES)
    check_batches(batch_list, replicas)
    model_fn = None
    if model not in BUILTIN_MODELS:
        if ":" not in model:
            raise UsageError(
                "--model",
                f"'{model}' is neither a built-in model nor FILE.py:FUNCTION",
                "Use seed001, seed002 or FILE.py:FUNCTION.",
            )
        if fw not in frameworks.KERAS:
            raise UsageError(
                "--model",
                f"a Keras model (FILE.py:FUNCTION) cannot be trained by {fw} {frameworks.says(fw, 'scale')}".strip(),
                "Use --framework tensorflow or keras-jax, or --model seed001 / seed002.",
            )
        model_fn = userfile.parse_spec(model, "--model")
    fields = jobs.checked(ctx.params, "scale", min_time=(0.2, "0.2"), case_timeout="600")
    experiment.require_installed(fw)
    model_params: dict = {"model": model}
    if model_fn is not None:
        model_params = user_model(model_fn, fw, fields)
        check_replicable(fw, model_params, max(replicas), model_fn.text)
    plan = ScalePlan(framework=fw, replicas=replicas, batches=batch_list, model=model_params, **fields)
    run_scale(plan, None)


def check_replicable(framework: str, model: dict, replicas: int, text: str) -> None:
    """Before anything is written: one step of the user's model on ``replicas`` replicas of the
    engine (global batch = ``replicas``). A model the strategy cannot replicate is bad input."""
    from whichdevice.workloads import scale as scale_workload

    if replicas < 2:
        return
    err_console.print(f"Checking that {escape(scale_workload.engine(framework))} can replicate it {replicas}×…")
    job = {
        "points": [[replicas, replicas, "step"]],
        "model": model,
        "policy": {"min_time_s": 1e-3, "warmup_calls": 0, "max_samples": 5},
    }
    # The parent's environment plus the framework's CPU child environment (GPUs hidden, quiet logs),
    # as the measuring child would pass it on to its workers.
    cpu_env = {k: v for k, v in frameworks.env_module(framework).child_env("cpu").items() if k != "XLA_FLAGS"}
    envs = [{**env, **cpu_env} for env in scale_workload.worker_envs(framework, replicas, replicas)]
    workers = scale_workload.Workers(framework, job, envs)
    try:
        point = workers.wait_for((replicas, replicas, "step"))
    except RuntimeError as e:
        point = {"error": str(e)}
    finally:
        workers.close()
        workers.tmp.cleanup()
    if "error" in point:
        raise UsageError(
            "--model",
            f"{scale_workload.engine(framework)} cannot replicate {text} over {replicas} replicas ({point['error']})",
            "Build every layer and variable inside FUNCTION (not at import time), with no fixed batch size",
        )


def run_scale(plan: ScalePlan, resumed: JournalState | None) -> None:
    from whichdevice import jobs
    from whichdevice.workloads import scale as scale_workload

    def cases_for(found, d):
        return scale_workload.build_cases(plan.framework, d.name, plan.replicas, plan.batches, plan.model)

    m = plan.model  # in the record: a built-in's description, or the user's FILE.py:FUNCTION
    options = {
        "replicas": plan.replicas,
        "batches": plan.batches,
        "model": f"your model {m['model_file']}:{m['model_fn']}" if "model_file" in m else BUILTIN_MODELS[m["model"]],
        "engine": scale_workload.engine(plan.framework),
    }
    notes = [
        f"Replicas are {frameworks.says(plan.framework, 'replicas')}"
        " sharing this machine's CPU cores: this measures the engine's fixed costs (all-reduce, per-replica dispatch, "
        "input sharding) against the work per step, not what N GPUs would add (see docs/commands.md, `scale` design note).",
    ]
    request = plan.request("scale", plan.framework, cases_for, options, devices=["CPU:0"], notes=notes)
    jobs.run(plan, request, loglog=True, resumed=resumed)
