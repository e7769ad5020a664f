"""Seed 003 (and seed 002's "input pipeline bottlenecks"): is the model waiting for data,
which stage is slow, which fix helps.

One workload (``pipeline``), four kinds of case (the ``part`` parameter), all on one device:

- ``pipeline`` — the input pipeline alone, one ``variant`` of the ladder
  (frameworks/tensorflow/pipeline.py): every ``next()`` on its iterator timed on its own, no
  model. The first pass over the data is the warm-up and its first batch is kept apart (as
  ``tfds.benchmark`` does: start-up, autotuning, a cache being filled are not steady
  state); the batches after it are the steady samples. examples/s = batch / seconds per batch.
- ``model`` — the train step alone, on one batch already on the device, timed in synchronized
  blocks by ``timing.measure``: what the model costs when input is free.
- ``both`` — the training loop as a user writes it: ``next()``, copy the batch to the device,
  train step, synchronize — every step timed, the time until the batch is on the device
  counted as *waiting for input*. XProf counts the same: the host waiting on
  ``IteratorGetNext`` plus host-to-device copies is "Input" (ANCHORS.md). Warm-up = the
  first pass, as above; utilization telemetry is sampled over the steady steps.
- ``stage`` — one stage of the TFRecord version (read, parse, normalize, augment, batch) in
  isolation: its input is the output of the stages before it, run once and cached in memory,
  so only this stage's work is timed; one sample = one pass over up to ``STAGE_IMAGES``
  elements, consumed inside TensorFlow (``Dataset.reduce``) so Python's per-element cost does
  not drown a cheap stage; that consumer's own per-element cost (counting the stage's input
  alone, metric ``floor_s``) is measured beside it and subtracted in the analysis. Serial
  (one thread): the cost of the work, not of its scheduling.

Trade-offs: ``both`` synchronizes after every step (a real loop may queue a few GPU steps
ahead), so on a GPU the step includes one sync; the harness's sync cost is recorded
(``overhead_s``). ``model`` synchronizes once per block, as ``timing.measure`` does.
Per-step input waits are kept as their sums (``input_wait_s``, ``loop_s``) in the metrics;
the per-step totals are the case's samples.

The data arrays, the TFRecord files (a temporary folder, written once per child, removed
when the child exits) and the built models are kept between the cases of one child.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import Framework

import atexit
import dataclasses
import importlib
import math
import shutil
import tempfile
import time
from pathlib import Path

from whichdevice.core.records import CaseSpec, Timing
from whichdevice.core.timing import TimingPolicy, measure

PARTS = ("pipeline", "model", "both", "stage")
NETS = ("tiny", "small", "heavy")
VARIANTS = ("serial", "parallel", "prefetch", "cache", "tfrecord", "pyfunc")
USER_VARIANTS = ("user", "user+prefetch")
STAGES = ("read", "parse", "normalize", "augment", "batch")
HEAVY_STAGES = ("parse", "normalize", "augment")
# The variant the ``model`` case takes its one batch from (same shapes and values as any other).
MODEL_BATCH_FROM = "prefetch"

DEFAULT_IMAGES, DEFAULT_SIZE = 512, 128
QUICK_IMAGES, QUICK_SIZE = 256, 64
SEED_IMAGES, SEED_SIZE, SEED_BATCH = 1000, 256, 32  # seed 003 as written
STAGE_IMAGES = 256  # elements per stage pass: enough for a steady rate, bounded memory
# A steady window of per-step samples stops at this many steps even if short of min_time.
MAX_STEPS = 2000


def cache_bytes(images: int, size: int) -> int:
    """Memory the ``cache`` variant holds: the normalized float32 images."""
    return images * size * size * 3 * 4


def build_cases(
    framework: str,
    device: str,
    *,
    images: int,
    size: int,
    batch: int,
    net: str,
    variants,
    stages: bool,
    heavy: tuple[str, int] | None = None,
    user: dict | None = None,
) -> list[CaseSpec]:
    """Cases for one device: the model alone first, then per variant the pipeline alone and
    the loop, then the stages. ``user``: the user's model / data parameters."""
    base = {"images": images, "image_size": size, "batch": batch, "net": net, **(user or {})}
    if heavy:
        base.update(heavy_stage=heavy[0], heavy_factor=heavy[1])

    def spec(**params) -> CaseSpec:
        return CaseSpec(workload="pipeline", framework=framework, device=device, params={**base, **params})

    cases = [spec(part="model", variant=variants[0])]
    for v in variants:
        cases.append(spec(part="pipeline", variant=v))
        cases.append(spec(part="both", variant=v))
    if stages:
        cases.extend(spec(part="stage", variant="tfrecord", stage=s) for s in STAGES)
    return cases


# --------------------------------------------------------------------------- child side

_DATA: dict = {}
_FILES: dict = {}
_MODELS: dict = {}
_TMP: list[str] = []


def _tfp(fw):
    return importlib.import_module(f"whichdevice.frameworks.{fw.name}.pipeline")


def _heavy(p) -> tuple[str, int] | None:
    stage = p.get("heavy_stage")
    return (str(stage), int(p.get("heavy_factor") or 1)) if stage else None


def _classes(p) -> int:
    return int(p.get("classes") or 10)


def _arrays(tfp, p):
    key = (int(p["images"]), int(p["image_size"]), _classes(p))
    if key not in _DATA:
        _DATA[key] = tfp.synthetic_images(key[0], key[1], classes=key[2])
    return _DATA[key]


def _files(tfp, p) -> tuple[list[str], float]:
    """TFRecord files of the case's images, written once per child; (files, seconds to write)."""
    key = (int(p["images"]), int(p["image_size"]), _classes(p))
    if key not in _FILES:
        if not _TMP:
            _TMP.append(tempfile.mkdtemp(prefix="whichdevice-tfrecord-"))
            atexit.register(shutil.rmtree, _TMP[0], True)
        images, labels = _arrays(tfp, p)
        t0 = time.perf_counter()
        files = tfp.write_tfrecords(images, labels, f"{_TMP[0]}/{key[0]}x{key[1]}")
        _FILES[key] = (files, time.perf_counter() - t0)
    return _FILES[key]


def _user_data(p):
    from whichdevice.workloads import userfile

    return userfile.call_data_function(p["data_file"], str(p["data_fn"]))


def _dataset(tfp, p, variant: str):
    """The batched, repeated dataset of one variant, and the steps in one pass of the data."""
    batch = int(p["batch"])
    if variant in USER_VARIANTS:
        return tfp.user_variant(_user_data(p), variant, batch)
    images, labels = _arrays(tfp, p)
    files = _files(tfp, p)[0] if variant == "tfrecord" else None
    ds = tfp.build_variant(variant, images, labels, batch, files=files, heavy=_heavy(p))
    return ds, math.ceil(len(images) / batch)


def _model(tfp, fw, p, device: str):
    """(model, train step), built once per child and device inside the device's scope."""
    key = (p.get("net"), p.get("model_file"), p.get("model_fn"), int(p["image_size"]), _classes(p), device)
    if key not in _MODELS:
        with fw.placement.scope(device):
            if p.get("model_file"):
                from whichdevice.workloads import userfile

                model = userfile.call_model_function(p["model_file"], str(p["model_fn"]))
                out_dim = int(p.get("out_dim") or _classes(p))
            else:
                model = tfp.build_model(str(p["net"]), int(p["image_size"]), _classes(p))
                out_dim = _classes(p)
            step = tfp.train_step(model, tfp.loss_for(model, out_dim))
        _MODELS[key] = (model, step)
    return _MODELS[key]


def run_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict]:
    part = spec.params["part"]
    run = {"pipeline": _run_pipeline, "model": _run_model, "both": _run_both, "stage": _run_stage}.get(part)
    if run is None:
        raise ValueError(f"unknown pipeline case part {part!r}")
    return run(spec, fw, policy, overhead_s)


def _steady_done(n: int, total_s: float, policy: TimingPolicy, per_pass: int) -> bool:
    """Enough steady steps: ``min_time`` of them and at least one pass over the data and
    ``min_samples``; or out of time / at the cap."""
    if n >= MAX_STEPS or (total_s >= policy.max_time_s and n >= policy.min_samples):
        return True
    return total_s >= policy.min_time_s and n >= max(policy.min_samples, per_pass)


def _steps(step, warm: int, policy: TimingPolicy, per_pass: int, overhead_s: float, record=None) -> Timing:
    """Call ``step()`` (which times itself and returns its seconds) ``warm`` times as the
    warm-up, then as steady samples until :func:`_steady_done`; telemetry over the steady
    steps only (the policy's window, as ``timing.measure`` does)."""
    warmup = [step() for _ in range(max(1, warm))]
    if record is not None:
        record.clear()  # the caller's per-step extras count for steady steps only
    sampler = policy.window() if policy.window is not None else None
    if sampler is not None:
        sampler.start()
    samples: list[float] = []
    total = 0.0
    while not _steady_done(len(samples), total, policy, per_pass):
        s = step()
        samples.append(s)
        total += s
    telemetry = sampler.stop() if sampler is not None else None
    return Timing(
        first_call_s=warmup[0],
        warmup_s=warmup,
        samples_s=samples,
        number_per_sample=1,
        overhead_s=overhead_s,
        telemetry=telemetry,
    )


def _run_pipeline(spec, fw, policy, overhead_s):
    import time as _t

    tfp = _tfp(fw)
    p = spec.params
    ds, per_pass = _dataset(tfp, p, str(p["variant"]))
    it = iter(ds)
    batch = int(p["batch"])

    def step() -> float:
        t0 = _t.perf_counter()
        next(it)
        return _t.perf_counter() - t0

    raw = _steps(step, per_pass, policy, per_pass, overhead_s)
    first_pass_s = sum(raw.warmup_s)
    metrics = {
        "examples_per_batch": float(batch),
        "steps_per_pass": float(per_pass),
        "first_batch_s": raw.first_call_s,
        "first_pass_s": first_pass_s,
    }
    if p["variant"] == "tfrecord":
        metrics["tfrecord_write_s"] = _files(tfp, p)[1]
    if p["variant"] == "cache":
        metrics["cache_bytes"] = float(cache_bytes(int(p["images"]), int(p["image_size"])))
    return raw, metrics


def _run_model(spec, fw, policy, overhead_s):
    tfp = _tfp(fw)
    p = spec.params
    _, step = _model(tfp, fw, p, spec.device)
    variant = str(p["variant"]) if p["variant"] in USER_VARIANTS else MODEL_BATCH_FROM
    ds, _ = _dataset(tfp, p, variant)
    x, y = next(iter(ds))
    xd, yd = tfp.to_device(x, y, fw.placement.scope(spec.device))

    def fn():
        with fw.placement.scope(spec.device):
            return step(xd, yd)

    raw = measure(fn, sync=fw.sync.sync, policy=policy, overhead_s=overhead_s)
    return raw, {"examples_per_step": float(x.shape[0])}


def _run_both(spec, fw, policy, overhead_s):
    tfp = _tfp(fw)
    p = spec.params
    _, train = _model(tfp, fw, p, spec.device)
    ds, per_pass = _dataset(tfp, p, str(p["variant"]))
    it = iter(ds)
    scope = fw.placement.scope
    sync, clock = fw.sync.sync, time.perf_counter
    waits: list[float] = []
    batch = [0]

    def step() -> float:
        t0 = clock()
        x, y = next(it)
        xd, yd = tfp.to_device(x, y, scope(spec.device))
        sync(None)  # the copy has landed: everything before this line is input
        t1 = clock()
        with scope(spec.device):
            loss = train(xd, yd)
        sync(loss)
        t2 = clock()
        waits.append(t1 - t0)
        batch[0] = int(x.shape[0])
        return t2 - t0

    if p.get("trace_dir"):
        # --trace: the profiler runs exactly over the steady steps (policy.window is started
        # after warm-up), around the telemetry sampler when there is one.
        from whichdevice.frameworks.tensorflow.profiler import TraceWindow

        logdir = Path(str(p["trace_dir"])) / f"{spec.device.replace(':', '')}-{p['variant']}"
        inner = policy.window
        policy = dataclasses.replace(policy, window=lambda: TraceWindow(logdir, inner() if inner else None))
    raw = _steps(step, per_pass, policy, per_pass, overhead_s, record=waits)
    steady_waits = waits[-len(raw.samples_s) :]
    return raw, {
        "examples_per_step": float(batch[0]),
        "input_wait_s": float(sum(steady_waits)),
        "loop_s": float(sum(raw.samples_s)),
        "input_wait_median_s": sorted(steady_waits)[len(steady_waits) // 2],
        "steps_per_pass": float(per_pass),
    }


def _run_stage(spec, fw, policy, overhead_s):
    tfp = _tfp(fw)
    p = spec.params
    stage = str(p["stage"])
    files, _ = _files(tfp, p)
    n = min(int(p["images"]), STAGE_IMAGES)
    size, batch = int(p["image_size"]), int(p["batch"])
    heavy = _heavy(p)
    upstream, apply = tfp.stage_input(stage, files, size, batch, heavy)
    if upstream is None:
        floor_ds, ds = tfp.floor_input(n), apply(n)
    else:
        floor_ds = tfp.materialize(upstream.take(n))
        ds = apply(floor_ds)
    # The consumer's own cost (counting the stage's input, ~tens of µs per element on a slow
    # core) is measured first and subtracted in the analysis: only the stage's work remains.
    floor = measure(tfp.counter(floor_ds), sync=fw.sync.sync, policy=policy, overhead_s=overhead_s)
    raw = measure(tfp.counter(ds), sync=fw.sync.sync, policy=policy, overhead_s=overhead_s)
    from whichdevice.core import stats

    return raw, {
        "examples_per_call": float(n),
        "floor_s": stats.median(floor.samples_s),
        "floor_q1_s": stats.quantile(floor.samples_s, 0.25),
        "floor_q3_s": stats.quantile(floor.samples_s, 0.75),
    }
