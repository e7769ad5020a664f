"""Seed 003 (and seed 002's "input pipeline bottlenecks"): is the model waiting for data,
which stage is slow, which fix helps.

Written against ``contracts.Pipeline``: each framework's ``pipeline.py`` (tf.data, PyTorch's
DataLoader, Keras' PyDataset) provides the datasets, and its ladder (``frameworks/common/ladders.py``,
via its env.py) names the variants, the stages, which variant reads files and which rungs are GPU
only (planned on GPU devices alone; the analysis says they were not measured on a CPU). Below,
tf.data's words; the other loaders' are in their modules.

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
  first pass, as above; utilization telemetry is sampled over the steady steps. The ``both``
  variants of one child are compared with each other and timed interleaved, in two halves
  each (A B C | C B A: :func:`time_group`).
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
    from whichdevice.frameworks.contracts import Framework, Pipeline

import atexit
import dataclasses
import math
import shutil
import tempfile
import time
from pathlib import Path

from whichdevice.core.records import CaseSpec, Timing
from whichdevice.core.timing import TimingPolicy, abba_turns, measure, take_turns, turns_timing
from whichdevice.frameworks.common.ladders import TF_DATA, Ladder
from whichdevice.workloads import defaults, dispatch
from whichdevice.workloads.fixes import BATCH


def ladder(framework: str) -> Ladder:
    """Framework ``framework``'s input-pipeline ladder (its env.py's ``PIPELINE``); KeyError
    when it has none."""
    from whichdevice import frameworks

    found = getattr(frameworks.env_module(framework), "PIPELINE", None) if framework in frameworks.FRAMEWORKS else None
    if found is None:
        raise KeyError(f"{framework} has no input-pipeline ladder")
    return found


def installed_variants(framework: str, variants: list[str]) -> tuple[list[str], list[str]]:
    """``variants`` less those whose module is not installed here (``Ladder.needs``: Keras'
    tf.data variant needs TensorFlow), and a note for each one left out."""
    import importlib.util

    needs = ladder(framework).needs
    kept, notes = [], []
    for v in variants:
        module = needs.get(v)
        if module is not None and importlib.util.find_spec(module) is None:
            notes.append(f"{v}: not measured here ({module} is not installed; pip install {module}).")
            continue
        kept.append(v)
    return kept, notes


def planned_variants(framework: str, device: str, variants) -> list[str]:
    """``variants`` less those a device cannot run: a GPU-only variant on a CPU device (the
    analysis says it was not measured there)."""
    gpu_only = ladder(framework).gpu_only
    return [v for v in variants if not (v in gpu_only and not device.startswith("GPU"))]


PARTS = ("pipeline", "model", "both", "stage")
NETS = ("tiny", "small", "heavy")
USER_VARIANTS = ("user", "user+prefetch")
# TensorFlow's stages (tf.data); every framework's ladder is its env.py's ``PIPELINE`` (:func:`ladder`).
STAGES = TF_DATA.stages
# The variant the ``model`` case takes its one batch from (same shapes and values as any other).
MODEL_BATCH_FROM = TF_DATA.model_batch_from

QUICK_IMAGES, QUICK_SIZE = defaults.PIPELINE_QUICK_IMAGES, defaults.PIPELINE_QUICK_SIZE
SEED_BATCH = defaults.PIPELINE_SEED_BATCH
STAGE_IMAGES = 256  # elements per stage pass: enough for a steady rate, bounded memory
# A steady window of per-step samples stops at this many steps even if short of min_time.
MAX_STEPS = 2000
# A fresh TensorFlow train step of the pipeline's CNN runs 20-35 % slower for its first 50-200
# calls (the tiny net on the 2-core machine, three processes: ~0.9 ms, then ~0.7 ms; the seeds'
# MLP step drifts by 4-5 % only; benchmarks/settle_trajectory.py, benchmarks/pipeline.md). A
# likely cause, not measured: TensorFlow's executor learns over its first runs which ops are
# cheap enough to run inline. Measured right after its model was built, the model-alone case
# caught that start (0.75 ms in round 1, 0.65 ms in round 2 of the same run). So a new
# model is run this many steps (at most SETTLE_MAX_S), untimed: every case that uses it — the
# model alone, the loops — is measured past that start, as a real training run would be.
SETTLE_STEPS = 250
SETTLE_MAX_S = 0.5


def cache_bytes(images: int, size: int) -> int:
    """Memory the ``cache`` variant holds: the normalized float32 images."""
    return images * size * size * 3 * 4


def build_cases(  # noqa: PLR0913 (the pipeline's knobs, keyword-only)
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
    base = {"images": images, "image_size": size, BATCH.param: batch, "net": net, **(user or {})}
    variants = planned_variants(framework, device, variants)
    lad = ladder(framework)
    if heavy:
        base.update(heavy_stage=heavy[0], heavy_factor=heavy[1])

    def spec(**params) -> CaseSpec:
        return CaseSpec(workload="pipeline", framework=framework, device=device, params={**base, **params})

    cases = [spec(part="model", variant=variants[0])]
    for v in variants:
        cases.append(spec(part="pipeline", variant=v))
        cases.append(spec(part="both", variant=v))
    if stages:
        at = lad.file_variants[0] if lad.file_variants else lad.variants[0]
        cases.extend(spec(part="stage", variant=at, stage=s) for s in lad.stages)
    return cases


# --------------------------------------------------------------------------- child side

_DATA: dict = {}
_FILES: dict = {}
_MODELS: dict = {}
_TMP: list[str] = []
_LADDERS: dict[str, Ladder] = {}  # pipeline module -> its framework's ladder (_tfp)


def _tfp(fw: Framework) -> Pipeline:
    from whichdevice import frameworks

    module = frameworks.part(fw.name, "pipeline")
    _LADDERS[getattr(module, "__name__", "")] = ladder(fw.name)
    return module


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
        files = tfp.write_files(images, labels, f"{_TMP[0]}/{key[0]}x{key[1]}")
        _FILES[key] = (files, time.perf_counter() - t0)
    return _FILES[key]


def _user_data(p):
    from whichdevice.frameworks.common.userload import call_data_function

    return call_data_function(p["data_file"], str(p["data_fn"]))


def _dataset(tfp, p, variant: str):
    """The batched, repeated dataset of one variant, and the steps in one pass of the data."""
    batch = int(p[BATCH.param])
    if variant in USER_VARIANTS:
        return tfp.user_variant(_user_data(p), variant, batch)
    images, labels = _arrays(tfp, p)
    files = _files(tfp, p)[0] if variant in _ladder_of(tfp).file_variants else None
    ds = tfp.build_variant(variant, images, labels, batch, files=files, heavy=_heavy(p))
    return ds, int(getattr(ds, "steps_per_pass", 0)) or math.ceil(len(images) / batch)


def _ladder_of(tfp) -> Ladder:
    """The ladder of the framework whose pipeline module ``tfp`` is (:func:`_tfp` noted it)."""
    return _LADDERS.get(getattr(tfp, "__name__", ""), TF_DATA)


def _model(tfp, fw, p, device: str):
    """(model, train step), built once per child and device inside the device's scope."""
    key = (p.get("net"), p.get("model_file"), p.get("model_fn"), int(p["image_size"]), _classes(p), device)
    if key not in _MODELS:
        with fw.placement.scope(device):
            if p.get("model_file"):
                from whichdevice.frameworks.common.userload import call_model_function

                model = call_model_function(p["model_file"], str(p["model_fn"]))
                out_dim = int(p.get("out_dim") or _classes(p))
            else:
                model = tfp.build_model(str(p["net"]), int(p["image_size"]), _classes(p))
                out_dim = _classes(p)
            step = tfp.train_step(model, tfp.loss_for(model, out_dim))
        _settle(tfp, fw, p, device, step)
        _MODELS[key] = (model, step)
    return _MODELS[key]


def _one_batch(tfp, fw, p, device: str):
    """The model's one batch: the first of the user's dataset for user variants, else of
    ``MODEL_BATCH_FROM``'s; ``(x, x on the device, y on the device)``."""
    variant = str(p["variant"]) if p.get("variant") in USER_VARIANTS else _ladder_of(tfp).model_batch_from
    ds, _ = _dataset(tfp, p, variant)
    x, y = next(iter(ds))
    xd, yd = tfp.to_device(x, y, fw.placement.scope(device))
    return x, xd, yd


def _settle(tfp, fw, p, device: str, step) -> int:
    """Run a new model's train step ``SETTLE_STEPS`` times (at most ``SETTLE_MAX_S``) on one
    batch, untimed (see SETTLE_STEPS); the steps it ran."""
    _, xd, yd = _one_batch(tfp, fw, p, device)
    end = time.perf_counter() + SETTLE_MAX_S
    n, out = 0, None
    with fw.placement.scope(device):
        while n < SETTLE_STEPS and (n == 0 or time.perf_counter() < end):
            out = step(xd, yd)
            n += 1
    fw.sync.sync(out)
    return n


def run_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict]:
    runners = {"pipeline": _run_pipeline, "model": _run_model, "both": _run_both, "stage": _run_stage}
    return dispatch(runners, spec.params["part"], "pipeline case part")(spec, fw, policy, overhead_s)


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
    return turns_timing(warmup, samples, overhead_s, stop_reason=None, telemetry=telemetry)


def _run_pipeline(spec, fw, policy, overhead_s):
    import time as _t

    tfp = _tfp(fw)
    p = spec.params
    ds, per_pass = _dataset(tfp, p, str(p["variant"]))
    it = iter(ds)
    batch = int(p[BATCH.param])

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
    metrics.update(getattr(ds, "settings", None) or {})  # a DataLoader's workers, prefetch, pinning
    if p["variant"] == "tfrecord":
        metrics["tfrecord_write_s"] = _files(tfp, p)[1]
    if p["variant"] == "cache":
        metrics["cache_bytes"] = float(cache_bytes(int(p["images"]), int(p["image_size"])))
    return raw, metrics


def _run_model(spec, fw, policy, overhead_s):
    tfp = _tfp(fw)
    p = spec.params
    _, step = _model(tfp, fw, p, spec.device)
    x, xd, yd = _one_batch(tfp, fw, p, spec.device)

    def fn():
        with fw.placement.scope(spec.device):
            return step(xd, yd)

    raw = measure(fn, sync=fw.sync.sync, policy=policy, overhead_s=overhead_s)
    return raw, {"examples_per_step": float(x.shape[0])}


class _Loop:
    """The ``both`` case's training loop: ``step()`` = next(), copy to the device, train step,
    synchronize; returns the step's seconds and records the time until the batch was on the
    device (waiting for input) in ``waits``."""

    def __init__(self, spec, fw, policy):
        self.spec, self.fw = spec, fw
        self.tfp = _tfp(fw)
        p = spec.params
        _, self.train = _model(self.tfp, fw, p, spec.device)
        self.ds, self.per_pass = _dataset(self.tfp, p, str(p["variant"]))
        self.it = iter(self.ds)
        self.waits: list[float] = []
        self.batch = 0
        self.warmup_s: list[float] = []

    def step(self) -> float:
        scope, sync, clock = self.fw.placement.scope, self.fw.sync.sync, time.perf_counter
        t0 = clock()
        x, y = next(self.it)
        xd, yd = self.tfp.to_device(x, y, scope(self.spec.device))
        sync(None)  # the copy has landed: everything before this line is input
        t1 = clock()
        with scope(self.spec.device):
            loss = self.train(xd, yd)
        sync(loss)
        t2 = clock()
        self.waits.append(t1 - t0)
        self.batch = int(x.shape[0])
        return t2 - t0

    def metrics(self, samples: list[float], waits: list[float]) -> dict[str, float]:
        return {
            "examples_per_step": float(self.batch),
            "input_wait_s": float(sum(waits)),
            "loop_s": float(sum(samples)),
            "input_wait_median_s": sorted(waits)[len(waits) // 2],
            "steps_per_pass": float(self.per_pass),
        }


def _run_both(spec, fw, policy, overhead_s):
    loop = _Loop(spec, fw, policy)
    p = spec.params
    if p.get("trace_dir"):
        # --trace: the profiler runs exactly over the steady steps (policy.window is started
        # after warm-up), around the telemetry sampler when there is one.
        from whichdevice.frameworks.tensorflow.profiler import TraceWindow, marked

        logdir = Path(str(p["trace_dir"])) / f"{spec.device.replace(':', '')}-{p['variant']}"
        inner = policy.window
        policy = dataclasses.replace(policy, window=lambda: TraceWindow(logdir, inner() if inner else None))
        # each step marked for XProf (the overview's step time, the input-pipeline analyzer)
        raw = _steps(marked(loop.step), loop.per_pass, policy, loop.per_pass, overhead_s, record=loop.waits)
        return raw, loop.metrics(raw.samples_s, loop.waits[-len(raw.samples_s) :])
    raw = _steps(loop.step, loop.per_pass, policy, loop.per_pass, overhead_s, record=loop.waits)
    return raw, loop.metrics(raw.samples_s, loop.waits[-len(raw.samples_s) :])


# ---------------------------------------------------------------- interleaved loops
#
# The ``both`` variants of one data set, net and batch (serial, prefetch, tf.py_function) are
# compared with each other, so they are timed in one group (``workloads.interleave_groups``).
# Not block by block as the steady train steps are: a prefetching pipeline keeps producing in
# its own threads while the other variants take their turns, so on its next turn its buffer is
# full and its first steps wait for nothing. Measured on this project's 2-core VM (load 0.9,
# quick size, tiny net; the script is kept with the issue-16 notes): after a 0.15 s pause the tf.py_function loop waited 0.5 ms per
# step for at least 6 steps against 13 ms steady; a fresh iterator per turn instead made the
# prefetch loop's steps 1.5-1.9x slower than steady (its threads refilling an empty buffer).
# So each variant is measured in two halves, each a steady window of the loop as a user runs
# it, in the order A B C | C B A (the first half's order shuffled, seeded; the second its
# reverse): a drift linear in time hits every variant's pooled samples alike. The second half
# starts on a fresh iterator warmed up over one pass (discarded), as the first half did, so no
# half ever sees a buffer filled during another variant's turn. Each half stops at half the
# case's rule (``_steady_done`` with half the steps and half the time); the pooled samples and
# the steady waits of both halves make the case's figures; the telemetry window is the first
# half's.


def prepare(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> _Loop:
    """One member of an interleaved group of loops: the model, the dataset and its iterator,
    warmed up over one pass (the first step traces the train step: ``first_call_s``)."""
    if spec.params.get("part") != "both":
        raise ValueError(f"only the loop (part=both) is timed interleaved, not {spec.params.get('part')!r}")
    loop = _Loop(spec, fw, policy)
    loop.warmup_s = [loop.step() for _ in range(max(1, loop.per_pass))]
    return loop


def _half_done(n: int, total_s: float, policy: TimingPolicy, per_pass: int) -> bool:
    if n >= MAX_STEPS // 2 or (total_s >= policy.max_time_s / 2 and n >= math.ceil(policy.min_samples / 2)):
        return True
    return total_s >= policy.min_time_s / 2 and n >= math.ceil(max(policy.min_samples, per_pass) / 2)


def time_group(prepared: list[_Loop], fw, policy: TimingPolicy, overhead_s: float, before=None) -> list:
    """The loops in two halves each, A B C | C B A (see the section comment): one
    ``(Timing, metrics)`` per loop, or the exception it raised (the others go on)."""
    n = len(prepared)
    waits: list[list[float]] = [[] for _ in prepared]
    telemetry: list = [None] * n
    capped = [False] * n

    def half(turn: int, i: int) -> list[float]:
        loop = prepared[i]
        try:
            if turn >= n:  # the second half: a fresh iterator, warmed up over one pass
                loop.it = iter(loop.ds)
                for _ in range(max(1, loop.per_pass)):
                    loop.step()
            sampler = policy.window() if policy.window is not None and turn < n else None
            if sampler is not None:
                sampler.start()
            got: list[float] = []
            mark = len(loop.waits)
            while not _half_done(len(got), sum(got), policy, loop.per_pass):
                got.append(loop.step())
            if sampler is not None:
                telemetry[i] = sampler.stop()
            waits[i] += loop.waits[mark:]
            capped[i] = capped[i] or len(got) >= MAX_STEPS // 2 or sum(got) >= policy.max_time_s / 2
            return got
        finally:
            del loop.waits[:]  # only this half's steady waits were wanted

    samples, errors = take_turns(n, abba_turns(n), half, before)
    out: list = []
    for i, loop in enumerate(prepared):
        if errors[i] is not None:
            out.append(errors[i])
            continue
        timing = turns_timing(
            loop.warmup_s,
            samples[i],
            overhead_s,
            stop_reason="time cap" if capped[i] else "min time",
            telemetry=telemetry[i],
        )
        metrics = loop.metrics(samples[i], waits[i])
        metrics.update({"interleaved_with": float(n - 1), "interleave_rounds": 2.0})
        out.append((timing, metrics))
        loop.it = None  # its threads stop now, not when the child exits
    return out


def _run_stage(spec, fw, policy, overhead_s):
    tfp = _tfp(fw)
    p = spec.params
    stage = str(p["stage"])
    files, _ = _files(tfp, p)
    n = min(int(p["images"]), STAGE_IMAGES)
    size, batch = int(p["image_size"]), int(p[BATCH.param])
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
