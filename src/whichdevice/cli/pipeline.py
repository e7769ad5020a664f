"""`whichdevice pipeline`: seed 003's input pipeline (or the user's dataset) — is the model
waiting for data, which stage is slow, which fix helps."""

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
    check_output_dir,
    parse_choice,
    parse_choice_list,
    parse_positive_int,
)
from whichdevice.frameworks.common.ladders import TF_DATA
from whichdevice.workloads import defaults
from whichdevice.workloads.fixes import BATCH

if TYPE_CHECKING:
    from whichdevice.frameworks.common.ladders import Ladder
    from whichdevice.workloads import userfile
    from whichdevice.measure.journal import JournalState


PIPELINE_FRAMEWORKS = frameworks.offering("pipeline")  # derived: the frameworks with a pipeline part
QUICK_MIN_TIME_S = 0.1
MAX_IMAGE_SIZE = 4096
MAX_IMAGES = 1_000_000
# The cache variant runs only when the cached float32 images take at most this share of the
# memory available now: the rest is needed by the source arrays, TensorFlow and the model.
CACHE_MEMORY_SHARE = 0.5


@dataclass
class PipelinePlan(Job):
    """A checked `pipeline` run: everything its cases and its record need (JSON values only),
    journaled in the header so that ``--resume`` runs the same thing."""

    framework: str
    images: int
    size: int
    batch: int
    net: str
    variants: list[str]  # in ladder order, the cache variant already dropped if it would not fit
    stages: bool
    heavy: list | None  # [stage, factor] of --heavy-stage
    user: dict | None  # the user's model / data, as the pre-flight found it
    trace_dir: str | None
    notes: list[str]
    png_file: str


def _ladder(framework: str) -> Ladder:
    """``framework``'s input-pipeline ladder, as workloads/pipeline.py's ``ladder`` finds it,
    read here without importing that module (the records, the timing) for ``--help``."""
    found: Ladder | None = frameworks.declared(framework, "PIPELINE", None)
    if found is None:
        raise KeyError(f"{framework} has no input-pipeline ladder")
    return found


# This command's own options (the shared ones are cli/options.py's), kept out of the signature
# so that it reads as one line per option. Their defaults are workloads/defaults.py's: the
# workload module itself is imported only to measure.
IMAGES_OPTION = typer.Option(
    None,
    "--images",
    help=f"Number of synthetic images (default {defaults.PIPELINE_IMAGES}; {defaults.PIPELINE_QUICK_IMAGES} with --quick; "
    f"the article's: {defaults.PIPELINE_SEED_IMAGES}).",
)
IMAGE_SIZE_OPTION = typer.Option(
    None,
    "--image-size",
    help=f"Image side in pixels, size x size x 3 uint8 (default {defaults.PIPELINE_SIZE}; {defaults.PIPELINE_QUICK_SIZE} "
    f"with --quick; the article's: {defaults.PIPELINE_SEED_SIZE}).",
)
BATCH_OPTION = typer.Option(
    None, "--batch", help=f"Batch size (default {defaults.PIPELINE_SEED_BATCH}, the article's)."
)
NET_OPTION = typer.Option(
    "small", "--net", help="Built-in model behind the pipeline: tiny, small or heavy (ignored with --model)."
)
VARIANTS_OPTION = typer.Option(
    None,
    "--variants",
    help="Which variants, in ladder order (default: all; the first is the baseline): "
    + "; ".join(f"{f}: {','.join(_ladder(f).variants)}" for f in PIPELINE_FRAMEWORKS)
    + ".",
)
NO_STAGES_OPTION = typer.Option(
    False,
    "--no-stages",
    help="Skip the per-stage measurements (each stage of the loader in isolation: tf.data's read, parse, "
    "normalize, augment, batch; the DataLoader's and PyDataset's read, ..., collate / batch).",
)
HEAVY_STAGE_OPTION = typer.Option(
    None,
    "--heavy-stage",
    help=f"Construct a known slow stage to check the analyzer: {', '.join(TF_DATA.heavy_stages)} (torch, Keras: "
    "normalize, augment) does --heavy-factor times its work.",
)
HEAVY_FACTOR_OPTION = typer.Option(
    None, "--heavy-factor", help="How many times the --heavy-stage does its work (default 20)."
)
MODEL_OPTION = typer.Option(
    None,
    "--model",
    help="Your model: FILE.py:FUNCTION returning a Keras model for (size, size, 3) images or for --data's inputs.",
)
DATA_OPTION = typer.Option(
    None, "--data", help="Your input: FILE.py:FUNCTION returning a tf.data.Dataset of (x, y) (needs --model)."
)
QUICK_OPTION = opt.quick(
    f"{defaults.PIPELINE_QUICK_IMAGES} images of {defaults.PIPELINE_QUICK_SIZE}x{defaults.PIPELINE_QUICK_SIZE}, "
    f"{QUICK_MIN_TIME_S:g} s per point: under 60 s on 2 cores "
    "with tf.data (torch's DataLoader rungs start their workers every pass: 2-3 min on the busy 2-core machine)."
)
TRACE_OPTION = typer.Option(
    None,
    "--trace",
    help="Profile each variant's training loop over its steady steps only (not warm-up) into this folder; open with: tensorboard --logdir DIR (Profile tab).",
)


@app.command()
def pipeline(
    ctx: typer.Context,
    images: Optional[str] = IMAGES_OPTION,
    image_size: Optional[str] = IMAGE_SIZE_OPTION,
    batch: Optional[str] = BATCH_OPTION,
    net: str = NET_OPTION,
    variants: Optional[str] = VARIANTS_OPTION,
    no_stages: bool = NO_STAGES_OPTION,
    heavy_stage: Optional[str] = HEAVY_STAGE_OPTION,
    heavy_factor: Optional[str] = HEAVY_FACTOR_OPTION,
    model: Optional[str] = MODEL_OPTION,
    data: Optional[str] = DATA_OPTION,
    device: Optional[str] = opt.device(),
    quick: bool = QUICK_OPTION,
    min_time: Optional[str] = opt.min_time("measurement", 0.2, quick=QUICK_MIN_TIME_S),
    cpu_threads: Optional[str] = opt.cpu_threads("the framework"),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(600),
    framework: str = opt.framework("pipeline"),
    out: Path = opt.out("the PNG plot", "the HTML report"),
    json_path: Optional[Path] = opt.json("pipeline"),
    trace: Optional[Path] = TRACE_OPTION,
    resume: Optional[Path] = opt.resume(),
) -> None:
    """An image input pipeline (or --data): alone, the model alone, both — waiting-for-input share, variant ladder,
    slowest stage."""
    from whichdevice import jobs
    from whichdevice.cli.common import resume_if_asked, user_model
    from whichdevice.measure import experiment
    from whichdevice.workloads import pipeline as wl, userfile

    if resume_if_asked(ctx, resume, "pipeline", PipelinePlan, run_pipeline):
        return
    # Each option is checked in this order: the first bad one is the error.
    fw = parse_choice(framework, "--framework", frameworks.offering("pipeline"))
    n_images, size = _images(images, image_size, quick)
    n_batch = parse_positive_int(batch, "--batch", "32", maximum=65536) or wl.SEED_BATCH
    net_name = parse_choice(net, "--net", wl.NETS)
    heavy = _heavy(heavy_stage, heavy_factor, wl.ladder(fw).heavy_stages)
    tf_only(fw, ("--model", model), ("--data", data), ("--trace", trace))
    seed_only = (("--heavy-stage", heavy_stage), ("--images", images), ("--image-size", image_size))
    variant_list = _variant_list(variants, model, data, seed_only, wl.ladder(fw).variants)
    model_fn = userfile.parse_spec(model, "--model") if model else None
    data_fn = userfile.parse_spec(data, "--data") if data else None
    fields = jobs.checked(
        ctx.params, "pipeline", min_time=(QUICK_MIN_TIME_S if quick else 0.2, "0.2"), case_timeout="600"
    )
    trace_dir = check_output_dir(trace, "--trace").resolve() if trace is not None else None
    experiment.require_installed(fw)

    variant_list, notes = _measurable(fw, variant_list, n_images, size)
    user = None
    if model_fn is not None:
        shape = None if data_fn else (size, size, 3)
        facts = user_model(model_fn, fw, fields, shape, None, data_fn, check=userfile.preflight)
        user = _user(model_fn, data_fn, facts)
    if data_fn is not None:
        notes.append("per-stage throughput is not measured for --data: a user's dataset is one opaque pipeline.")
    plan = PipelinePlan(
        framework=fw,
        images=n_images,
        size=size,
        batch=n_batch,
        net=net_name,
        variants=variant_list,
        stages=not no_stages and data_fn is None,
        heavy=heavy,
        user=user,
        trace_dir=str(trace_dir) if trace_dir else None,
        notes=notes,
        **fields,
    )
    run_pipeline(plan, None)


def _images(images: str | None, image_size: str | None, quick: bool) -> tuple[int, int]:
    """``--images`` and ``--image-size``, or their defaults (smaller with ``--quick``)."""
    n_images = parse_positive_int(images, "--images", "512", maximum=MAX_IMAGES)
    size = parse_positive_int(image_size, "--image-size", "128", maximum=MAX_IMAGE_SIZE)
    return (
        n_images or (defaults.PIPELINE_QUICK_IMAGES if quick else defaults.PIPELINE_IMAGES),
        size or (defaults.PIPELINE_QUICK_SIZE if quick else defaults.PIPELINE_SIZE),
    )


def tf_only(fw: str, *given: tuple[str, object]) -> None:
    """Refuse the options only TensorFlow's pipeline has (the user's model and tf.data dataset,
    the XProf trace) for another framework."""
    for arg, value in given:
        if value is not None and fw not in frameworks.TFDATA:
            raise UsageError(
                arg,
                f"is TensorFlow's (pipeline --framework {fw} measures the image input pipeline on its own loader)",
                f"Drop {arg}, or use --framework tensorflow.",
            )


def _heavy(heavy_stage: str | None, heavy_factor: str | None, stages: tuple[str, ...]) -> list | None:
    """``--heavy-stage`` (one of ``stages``) and ``--heavy-factor`` -> [stage, factor], or None
    without a stage."""
    if heavy_stage is not None:
        return [
            parse_choice(heavy_stage, "--heavy-stage", stages),
            parse_positive_int(heavy_factor, "--heavy-factor", "20", maximum=10_000) or 20,
        ]
    if heavy_factor is not None:
        raise UsageError(
            "--heavy-factor", "only applies to --heavy-stage", "Add e.g. --heavy-stage augment, or drop it."
        )
    return None


def _variant_list(
    variants: str | None,
    model: str | None,
    data: str | None,
    seed_only: tuple[tuple[str, str | None], ...],
    ladder: tuple[str, ...] = TF_DATA.variants,
) -> list[str]:
    """The variants to measure, in ladder order: ``--variants`` of seed 003's pipeline, or the
    user's dataset's own (``--data``, which needs ``--model`` and takes none of ``seed_only``,
    the (option, value) pairs of the synthetic images)."""
    if data is not None and model is None:
        raise UsageError(
            "--data",
            "needs --model (the built-in models take seed 003's images only)",
            "Add --model FILE.py:FUNCTION returning a Keras model for your data's inputs.",
        )
    if data is None:
        chosen = parse_choice_list(variants, "--variants", ladder) or list(ladder)
        return [v for v in ladder if v in chosen]
    for arg, value in (("--variants", variants), *seed_only):
        if value is not None:
            raise UsageError(
                arg,
                "does not apply to --data (your dataset is measured as given and prefetched)",
                f"Drop {arg}, or drop --data to measure the image input pipeline.",
            )
    from whichdevice.workloads import pipeline as wl

    return list(wl.USER_VARIANTS)


def _measurable(fw: str, variant_list: list[str], n_images: int, size: int) -> tuple[list[str], list[str]]:
    """The variants that can be measured here (the cache fits in memory, the modules are
    installed) and the notes on those left out; refused when none is left."""
    from whichdevice.workloads import pipeline as wl

    variant_list, notes = _fit_cache(variant_list, n_images, size)
    variant_list, missing = wl.installed_variants(fw, variant_list)
    if not variant_list:
        raise UsageError(
            "--variants", "leaves nothing to measure", f"Pass one or more of: {', '.join(wl.ladder(fw).variants)}."
        )
    return variant_list, notes + missing


def _fit_cache(variant_list: list[str], n_images: int, size: int) -> tuple[list[str], list[str]]:
    """The variants without the cache variant when the cached images would not fit in memory,
    and the record's notes (what was dropped and why)."""
    import psutil

    from whichdevice.workloads import pipeline as wl

    if "cache" not in variant_list:
        return variant_list, []
    need, avail = wl.cache_bytes(n_images, size), psutil.virtual_memory().available
    if need <= CACHE_MEMORY_SHARE * avail:
        return variant_list, []
    note = (
        f"cache variant skipped: the cached float32 images need {need / 2**30:.3g} GiB, more than "
        f"{CACHE_MEMORY_SHARE:.0%} of the {avail / 2**30:.3g} GiB available; lower --images or --image-size."
    )
    return [v for v in variant_list if v != "cache"], [note]


def _user(model_fn: userfile.UserFunction, data_fn: userfile.UserFunction | None, facts: dict) -> dict:
    """The plan's ``user``: the user's model (and dataset) as the pre-flight found it (``facts``)."""
    out_shape = facts.get("output_shape") or [1]
    out_dim = int(out_shape[-1]) if out_shape else 1
    user = {
        "net": "user",
        "model_file": str(model_fn.path),
        "model_fn": model_fn.function,
        "out_dim": out_dim,
        "classes": out_dim if out_dim > 1 else 2,
    }
    if data_fn is not None:
        user.update(data_file=str(data_fn.path), data_fn=data_fn.function)
    return user


def run_pipeline(plan: PipelinePlan, resumed: JournalState | None) -> None:
    """Measure ``plan`` (continuing ``resumed``'s journal), render it, write the record."""
    from whichdevice import jobs
    from whichdevice.cli.common import traced, user_text
    from whichdevice.workloads import pipeline as wl

    fw = plan.framework

    def cases_for(found, d):
        # The loop ("both") of every variant is profiled over its steady steps.
        cases = wl.build_cases(
            fw,
            d.name,
            images=plan.images,
            size=plan.size,
            batch=plan.batch,
            net=plan.net,
            variants=plan.variants,
            stages=plan.stages,
            heavy=tuple(plan.heavy) if plan.heavy else None,
            user=plan.user,
        )
        return traced(cases, plan.trace_dir, part="both")

    heavy = plan.heavy
    options = {
        "images": plan.images,
        "image_size": plan.size,
        BATCH.param: plan.batch,
        "net": "user" if plan.user else plan.net,
        "variants": plan.variants,
        "stages": plan.stages,
        "heavy_stage": heavy[0] if heavy else None,
        "heavy_factor": heavy[1] if heavy else None,
        "quick": plan.quick,
        "model": user_text(plan.user),
        "data": user_text(plan.user, "data"),
        "trace": plan.trace_dir,
    }
    request = plan.request("pipeline", fw, cases_for, options, notes=list(plan.notes))
    jobs.run(plan, request, loglog=False, resumed=resumed)
