"""What every ``scale`` worker shares (no framework import here).

A scale worker is ``python -m whichdevice.frameworks.<name>.scale JOB.json OUT.jsonl``, started
by ``workloads/scale.py`` through ``core.process`` with the environment its engine needs before
the framework is imported (``XLA_FLAGS`` host device count for JAX; ``RANK``/``WORLD_SIZE``/
``MASTER_ADDR``/``MASTER_PORT`` for a torch DDP process, as torchrun sets them). It measures every
point of its job — (replicas N, global batch B, variant) — and appends one JSON line per point to
OUT, flushed at once, so the launcher can hand each point to the measuring child as it arrives.

Lines: ``{"type": "hello", ...}`` (what the engine reports: replicas available, versions),
``{"type": "point", "key": [N, B, variant], "replicas_seen": k, "timing": {...}, "metrics": {...}}``
or the same with ``"error"`` instead of a timing.

Variants: ``step`` (the synchronized training step), ``no_sync`` (DDP: the same step inside
``no_sync()``: no gradient all-reduce), ``allreduce`` (TensorFlow / JAX: the all-reduce of the
model's gradient-sized tensors alone, on the same replicas, through the same engine), and
``allreduce_base`` (the same call without the collective: its dispatch cost, subtracted).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Calls of a point's step before the timing core's own warm-up (which stops after 3 calls): the
# first point of a fresh worker ran 2-6x slower than the same point later in the process on the
# loaded 2-core VM (thread pools, allocator, tf.data and XLA runtime still settling); a fixed
# count, not a time, so every rank of a DDP group makes the same number of steps.
SETTLE_CALLS = 20


def die_with_parent() -> None:
    """End this worker when its launcher dies (SIGKILL on a timeout, Ctrl-C, ``kill -9``): a
    worker in its own process group would otherwise go on competing for the cores."""
    parent = os.getppid()
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(3)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="whichdevice-scale-parent-watch", daemon=True).start()


def error_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in _ANSI.sub("", str(e)).splitlines() if ln.strip()]
    first = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", lines[0]) if lines else ""
    return f"{type(e).__name__}: {first[:300]}" if first else type(e).__name__


class Emitter:
    """Appends JSON lines to OUT (or does nothing: ranks other than 0 of a DDP group)."""

    def __init__(self, path: str | None) -> None:
        self.out = open(path, "a", encoding="utf-8") if path else None

    def __call__(self, obj: dict[str, Any]) -> None:
        if self.out is not None:
            self.out.write(json.dumps(obj) + "\n")
            self.out.flush()


def read_job(argv: list[str]) -> tuple[dict[str, Any], str]:
    with open(argv[1], encoding="utf-8") as f:
        return json.load(f), argv[2]


def start(run: Callable[[dict[str, Any], Emitter], None], argv: list[str], *, emits: bool = True) -> int:
    """A worker's ``main``: tied to its launcher's life, the job read from ``argv`` (JOB OUT),
    ``run`` on it, its results appended to OUT (nowhere unless ``emits``: rank 0 of a group emits)."""
    die_with_parent()
    job, out = read_job(argv)
    run(job, Emitter(out if emits else None))
    return 0


def points(job: dict[str, Any], replicas: int) -> list[tuple[int, str]]:
    """The (global batch, variant) points of ``replicas`` in the job, in order."""
    return [(int(b), str(v)) for n, b, v in job["points"] if int(n) == replicas]


def timing_policy(job: dict[str, Any]):
    from whichdevice.core.timing import TimingPolicy

    policy = {**job.get("policy", {}), "telemetry_period_s": None}
    # A claim needs MIN_SAMPLES (5) samples a side (analysis/significance.py).
    policy["min_samples"] = max(5, int(policy.get("min_samples", 5)))
    policy["max_samples"] = max(policy["min_samples"], int(policy.get("max_samples", 50)))
    return TimingPolicy(**policy)


def measure_point(  # noqa: PLR0913 (one worker's settings, passed by keyword)
    emit: Emitter,
    replicas: int,
    batch: int,
    variant: str,
    make: Callable[[], tuple[Callable[[], Any], Callable[[Any], None], dict[str, float]]],
    policy,
    *,
    clock: Callable[[], float] = time.perf_counter,
    overhead_s: float | None = None,
    fatal: bool = False,
) -> None:
    """Build the point's step (``make`` -> (fn, sync, metrics)), time it with the project's
    timing core, emit the line. An exception is emitted as the point's error (the worker goes
    on with the next point; with ``fatal``, as in a DDP group whose other ranks would wait for
    this one forever, the worker ends after emitting it)."""
    from whichdevice.core.timing import measure

    key = [replicas, batch, variant]
    try:
        fn, sync, metrics = make()
        result = None
        for _ in range(SETTLE_CALLS):  # unmeasured: see SETTLE_CALLS
            result = fn()
        sync(result)
        timing = measure(fn, sync=sync, clock=clock, policy=policy, overhead_s=overhead_s)
    except Exception as e:  # one failing point is recorded, the others go on
        import traceback

        traceback.print_exc(file=sys.stderr)
        emit({"type": "point", "key": key, "error": error_line(e)})
        if fatal:
            raise
        return
    emit({"type": "point", "key": key, "timing": timing.model_dump(mode="json"), "metrics": metrics})


def _shape(text: str | None) -> tuple[int, ...] | None:
    return tuple(int(x) for x in text.split(",")) if text else None


def keras_model(model: dict[str, Any]):
    """A fresh Keras model of the job (a seed's, or the user's ``--model``), weights initialized.
    Called inside the engine's scope (``strategy.scope()``, a set ``keras.distribution``)."""
    from whichdevice.frameworks.common import models

    if model["model"] == "user":
        from whichdevice.frameworks.common.usermodel import call_model_function

        return call_model_function(model["model_file"], model["model_fn"])
    return models.build(model["model"])


def keras_loss(model: dict[str, Any], **kwargs):
    """The seed's loss, or for ``--model`` the loss its labels call for (``models.default_loss``)."""
    import keras

    from whichdevice.frameworks.common import models

    if model["model"] == "user":
        classes = model.get("label_classes")
        if classes is None:
            return keras.losses.MeanSquaredError(**kwargs)
        if classes == 1:
            return keras.losses.BinaryCrossentropy(**kwargs)
        return keras.losses.SparseCategoricalCrossentropy(**kwargs)
    return type(models.optimizer_and_loss(model["model"])[1])(**kwargs)


def data(model: dict[str, Any], n: int):
    """``n`` synthetic samples (float32 inputs, labels matching the loss)."""
    from whichdevice.frameworks.common import models

    if model["model"] == "user":
        return models.synthetic_data(
            n,
            _shape(model["input_shape"]) or (1,),
            model.get("label_classes"),
            output_shape=_shape(model.get("output_shape")),
        )
    spec = models.SPECS[model["model"]]
    return models.synthetic_data(n, (spec.features,), spec.classes)
