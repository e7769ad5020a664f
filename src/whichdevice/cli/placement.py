"""`whichdevice placement`: which ops of a training step ran on which device, their time, and
the copies between host and device."""

from __future__ import annotations

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
    parse_choice,
    parse_positive_int,
    parse_shape,
)
from whichdevice.workloads.defaults import PLACEMENT_QUICK_STEPS, PLACEMENT_STEPS
from whichdevice.workloads.fixes import BATCH

if TYPE_CHECKING:
    from whichdevice.measure.journal import JournalState


DEFAULT_MODEL = "seed001 + string op (no GPU kernel)"
_TRACED_MODEL = "seed001 (small MLP; batch from NumPy, loss read back each step)"


@dataclass
class PlacementPlan(Job):
    """A checked `placement` run: everything its cases and its record need (JSON values only),
    journaled in the header so that ``--resume`` runs the same thing."""

    framework: str
    batch: int
    steps: int
    user: dict | None  # the user's model, as the pre-flight found it (None: seed 001 + string op)


@app.command()
def placement(
    ctx: typer.Context,
    model: Optional[str] = typer.Option(
        None,
        "--model",
        help="Your model: FILE.py:FUNCTION returning a Keras model. Default: the built-in small MLP with a string op in the step (no GPU kernel).",
    ),
    input_shape: Optional[str] = opt.input_shape(),
    classes: Optional[str] = opt.classes(),
    batch: Optional[str] = typer.Option(None, "--batch", help="Batch size of the step (default 32)."),
    steps: Optional[str] = typer.Option(
        None,
        "--steps",
        help=f"Steps profiled after warm-up (default {PLACEMENT_STEPS}; {PLACEMENT_QUICK_STEPS} with --quick).",
    ),
    device: Optional[str] = opt.device(),
    quick: bool = opt.quick(f"Profile {PLACEMENT_QUICK_STEPS} steps: < 60 s on 2 cores."),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(300, "device's run"),
    framework: str = opt.framework("placement"),
    out: Path = opt.out("the HTML report"),
    json_path: Optional[Path] = opt.json("placement"),
    resume: Optional[Path] = opt.resume(),
) -> None:
    """Per device: the ops of one training step by type (count, time), the host<->device copies (pageable or pinned) and syncs, and on a GPU the ops that ran on the CPU, with why."""  # noqa: E501
    from whichdevice import jobs
    from whichdevice.cli.common import only_with_model, resume_if_asked, user_model
    from whichdevice.measure import experiment
    from whichdevice.workloads import userfile

    if resume_if_asked(ctx, resume, "placement", PlacementPlan, run_placement):
        return
    fw = parse_choice(framework, "--framework", frameworks.offering("placement"))
    shape = parse_shape(input_shape)
    n_classes = parse_positive_int(classes, "--classes", "10", maximum=1_000_000)
    b = parse_positive_int(batch, "--batch", "32", maximum=65536) or 32
    n_steps = parse_positive_int(steps, "--steps", "20", maximum=10_000) or (
        PLACEMENT_QUICK_STEPS if quick else PLACEMENT_STEPS
    )
    only_with_model(model, input_shape=input_shape, classes=classes)
    if model is not None and fw not in frameworks.KERAS:
        raise UsageError(
            "--model",
            f"takes a Keras model here; --framework {fw} traces the built-in MLP",
            f"Drop --model, or use --framework keras-torch for a Keras model (diagnose --framework {fw} takes your nn.Module).",
        )
    model_fn = userfile.parse_spec(model, "--model") if model else None
    fields = jobs.checked(ctx.params, "placement", case_timeout="300", png=False)
    experiment.require_installed(fw)

    user = None
    if model_fn is not None:  # no --data here: the data keys (both None) stay out of the case's parameters
        user = {
            k: v for k, v in user_model(model_fn, fw, fields, shape, n_classes).items() if not k.startswith("data_")
        }
    plan = PlacementPlan(framework=fw, batch=b, steps=n_steps, user=user, **fields)
    run_placement(plan, None)


def case_params(plan: PlacementPlan) -> dict:
    """The one case's parameters (the same on every device)."""
    params: dict = {
        "kind": "placement",
        "model": "seed001",
        BATCH.param: plan.batch,
        "steps": plan.steps,
        "string_op": True,
    }
    if "optrace" in frameworks.PARTS[plan.framework]:
        del params["string_op"]  # a TensorFlow op: torch and JAX trace the plain step
    if plan.user is not None:
        params.update(plan.user, string_op=False)
    return params


def run_placement(plan: PlacementPlan, resumed: JournalState | None) -> None:
    """Measure ``plan`` (continuing ``resumed``'s journal), render it, write the record."""
    from whichdevice import jobs
    from whichdevice.cli.common import find_devices, open_journal, user_text
    from whichdevice.core.records import CaseSpec
    from whichdevice.measure import experiment

    fw = plan.framework
    experiment.require_installed(fw)
    found = find_devices(fw)
    experiment.select_devices(found, plan.devices_wanted)  # a --device this machine lacks: before any journal
    journal = open_journal("placement", plan, resumed)
    params = case_params(plan)

    def cases_for(_found, d):
        return [CaseSpec(workload="train", framework=fw, device=d.name, params=params)]

    default = _TRACED_MODEL if "optrace" in frameworks.PARTS[fw] else DEFAULT_MODEL
    options = {
        "quick": plan.quick,
        BATCH.param: plan.batch,
        "steps": plan.steps,
        "model": user_text(plan.user) or default,
    }
    request = plan.request("placement", fw, cases_for, options)
    jobs.run(plan, request, loglog=True, resumed=resumed, journal=journal, found=found)
