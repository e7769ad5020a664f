"""`whichdevice train`: seeds 001 and 002 (or the user's model) on every device —
model creation, warm-up vs steady steps, break-even, the cost of syncing every step and
the batch-size sweep with its crossover."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from whichdevice import frameworks
from whichdevice.cli.base import app
from whichdevice.cli import options as opt
from whichdevice.workloads import fixes
from whichdevice.jobs import Job
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import (
    check_output_dir,
    parse_choice,
    parse_choice_list,
    parse_int_list,
    parse_positive_int,
    parse_shape,
)

if TYPE_CHECKING:
    from whichdevice.measure.journal import JournalState


PARTS = ("create", "loop", "fit", "sync", "sweep")
QUICK_MIN_TIME_S = 0.05


def _quick_text(batches) -> str:
    from whichdevice.workloads import train as train_workload

    return (
        f"reduced sizes — the small MLP's tf.data loop on {train_workload.QUICK_SAMPLES['ex3']:,} samples instead of 100,000; "
        f"batch sweep {','.join(map(str, batches))}; {QUICK_MIN_TIME_S:g} s of steady samples per sweep point "
        "(the full run: whichdevice train)"
    )


@dataclass
class TrainPlan(Job):
    """A checked `train` run: everything its cases and its record need (JSON values only),
    journaled in the header so that ``--resume`` runs the same thing."""

    framework: str
    parts: list[str]
    batches: list[int]
    user: dict | None  # the user's model, as the pre-flight found it (None: the seeds' models)
    samples: int | None
    user_batch: int
    trace_dir: str | None
    precisions: list[str] | None
    png_file: str
    linear: bool


# This command's own options (the shared ones are cli/options.py's), kept out of the signature
# so that it reads as one line per option.
MODEL_OPTION = typer.Option(
    None,
    "--model",
    help="Your model: FILE.py:FUNCTION returning a Keras model (compiled or not). Default: the seeds' models.",
)
DATA_OPTION = typer.Option(
    None,
    "--data",
    help="FILE.py:FUNCTION returning a tf.data.Dataset of (x, y) for --model (instead of synthetic data).",
)
BATCH_OPTION = typer.Option(None, "--batch", help="Batch size of --model's loop and fit runs (default 32).")
BATCHES_OPTION = typer.Option(
    None, "--batches", help="Batch sizes of the sweep, comma-separated. Default 8,16,...,8192."
)
PARTS_OPTION = typer.Option(
    ",".join(PARTS),
    "--parts",
    help="Which measurements: create (building and cloning the small MLP), loop (custom tf.function loops), fit (model.fit), sync (.numpy() every step vs not), sweep (batch sizes).",
)
QUICK_OPTION = opt.quick("Reduced sizes (ex3 on 10,000 samples, 6 batch sizes, short points): < 60 s on 2 cores.")
TRACE_OPTION = typer.Option(
    None,
    "--trace",
    help="Profile the model.fit runs' steady epochs (not the first) into this folder; open with: tensorboard --logdir DIR (Profile tab).",
)
PRECISION_OPTION = typer.Option(
    None,
    "--precision",
    help="Also train with these Keras precision policies, side by side: float32,mixed_float16,mixed_bfloat16.",
)


@app.command()
def train(
    ctx: typer.Context,
    model: Optional[str] = MODEL_OPTION,
    input_shape: Optional[str] = opt.input_shape(),
    classes: Optional[str] = opt.classes(),
    data: Optional[str] = DATA_OPTION,
    samples: Optional[str] = opt.samples(),
    batch: Optional[str] = BATCH_OPTION,
    batches: Optional[str] = BATCHES_OPTION,
    parts: str = PARTS_OPTION,
    device: Optional[str] = opt.device(),
    quick: bool = QUICK_OPTION,
    min_time: Optional[str] = opt.min_time("sweep / creation point", 0.2, quick=QUICK_MIN_TIME_S),
    cpu_threads: Optional[str] = opt.cpu_threads(),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(600),
    framework: str = opt.framework("train"),
    out: Path = opt.out("the PNG plot"),
    json_path: Optional[Path] = opt.json("train"),
    linear: bool = opt.linear(),
    trace: Optional[Path] = TRACE_OPTION,
    precision: Optional[str] = PRECISION_OPTION,
    resume: Optional[Path] = opt.resume(),
) -> None:
    """The small MLP and the 3-layer MLP (or --model): warm-up vs steady steps, break-even, sync cost, batch-size
    crossover."""
    from whichdevice import jobs
    from whichdevice.cli.common import only_with_model, resume_if_asked, user_model
    from whichdevice.measure import experiment
    from whichdevice.workloads import precision_cases, train as train_workload, userfile

    if resume_if_asked(ctx, resume, "train", TrainPlan, run_train):
        return
    # Each option is checked in this order: the first bad one is the error.
    fw = parse_choice(framework, "--framework", frameworks.offering("train"))
    part_list = _parts(parse_choice_list(parts, "--parts", PARTS), fw, model, data)
    batch_list = _batch_list(batches, quick)
    shape = parse_shape(input_shape)
    n_classes = parse_positive_int(classes, "--classes", "10", maximum=1_000_000)
    n_samples = parse_positive_int(samples, "--samples", "10000", maximum=10_000_000)
    user_batch = parse_positive_int(batch, "--batch", "32", maximum=train_workload.MAX_BATCH) or 32
    only_with_model(model, input_shape=input_shape, classes=classes, data=data, samples=samples, batch=batch)
    model_fn = userfile.parse_spec(model, "--model") if model else None
    data_fn = userfile.parse_spec(data, "--data") if data else None
    fields = jobs.checked(ctx.params, "train", min_time=(QUICK_MIN_TIME_S if quick else 0.2, "0.2"), case_timeout="600")
    trace_dir = check_output_dir(trace, "--trace").resolve() if trace is not None else None
    precisions = parse_choice_list(precision, "--precision", precision_cases.POLICIES)
    experiment.require_installed(fw)

    user = user_model(model_fn, fw, fields, shape, n_classes, data_fn) if model_fn is not None else None
    plan = TrainPlan(
        framework=fw,
        parts=part_list,
        batches=batch_list,
        user=user,
        samples=n_samples,
        user_batch=user_batch,
        trace_dir=str(trace_dir) if trace_dir else None,
        precisions=precisions,
        linear=linear,
        **fields,
    )
    run_train(plan, None)


def _batch_list(batches: str | None, quick: bool) -> list[int]:
    """``--batches``, or the sweep's default batch sizes (fewer with ``--quick``)."""
    from whichdevice.workloads import train as train_workload

    batch_list = parse_int_list(batches, "--batches", maximum=train_workload.MAX_BATCH, example="8,64,512,4096")
    if batch_list is None:
        return list(train_workload.QUICK_BATCHES if quick else train_workload.DEFAULT_BATCHES)
    return list(batch_list)


def _parts(part_list: list[str], fw: str, model: str | None, data: str | None) -> list[str]:
    """``--parts`` for ``fw``: plain torch has no model.fit (the record's notes say so) and
    trains no Keras ``--model``; a ``--data`` dataset is TensorFlow's."""
    if fw not in frameworks.KERAS:
        if model is not None:
            raise UsageError(
                "--model",
                f"a Keras model cannot be trained by --framework {fw}",
                "Use --framework tensorflow, keras-jax or keras-torch.",
            )
        part_list = [p for p in part_list if p != "fit"] or ["loop"]
    if data is not None and fw not in frameworks.TFDATA:
        raise UsageError(
            "--data",
            "a tf.data dataset needs --framework tensorflow",
            "Drop --data (synthetic numpy data is used), or use --framework tensorflow.",
        )
    return part_list


def run_train(plan: TrainPlan, resumed: JournalState | None) -> None:
    """Measure ``plan`` (continuing ``resumed``'s journal), render it, write the record."""
    from whichdevice import jobs
    from whichdevice.cli.common import traced, user_text
    from whichdevice.workloads import precision_cases, train as train_workload

    fw = plan.framework

    def cases_for(found, d):
        cases = train_workload.build_cases(
            fw,
            d.name,
            quick=plan.quick,
            batches=plan.batches,
            parts=set(plan.parts),
            user=plan.user,
            samples=plan.samples,
            user_batch=plan.user_batch,
        )
        cases = traced(cases, plan.trace_dir, kind="fit")  # the profiler around the fit runs' steady epochs
        return cases + precision_cases.cases(
            fw,
            d.name,
            plan.precisions or [],
            user=plan.user,
            quick=plan.quick,
            samples=plan.samples,
            user_batch=plan.user_batch,
        )

    options = {
        "parts": plan.parts,
        "batches": plan.batches,
        "quick": plan.quick,
        "model": user_text(plan.user) or "seeds 001+002",
        "data": user_text(plan.user, "data"),
    }
    if plan.quick:
        options["quick_sizes"] = _quick_text(plan.batches)
    if plan.trace_dir is not None:
        options["trace"] = plan.trace_dir
    if plan.precisions:
        options[fixes.PRECISION.param] = plan.precisions
    request = plan.request("train", fw, cases_for, options)
    jobs.run(plan, request, loglog=not plan.linear, resumed=resumed)
