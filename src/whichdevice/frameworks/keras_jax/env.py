"""Environment for a Keras-on-JAX child, decided before ``import keras``: the backend
(``KERAS_BACKEND=jax``) and JAX's own device environment (``frameworks/jax/env.py``)."""

from __future__ import annotations

import os

from whichdevice.frameworks.common.ladders import PY_DATASET
from whichdevice.frameworks.common.writers import H5PY
from whichdevice.frameworks.jax import env as _jax_env

# Whose words a report uses for this framework (frameworks.declared; default: TensorFlow's).
WORDS_FAMILY = "jax"

# What a script's capture watches (frameworks.declared), for the line that says none was reached.
CAPTURE_WATCHES: tuple[str, ...] = ("keras Model.fit", "Model.train_on_batch")
# The registry's entry for this framework (frameworks/__init__.py: what each name means).
PARTS: tuple[str, ...] = (
    "training",
    "calibration",
    "probes",
    "scale",
    "pipeline",
    "optrace",
    "pitfalls",
    "scriptfixes",
)
REQUIRES: tuple[str, ...] = ("keras", "jax")
# The files Keras writes from native code, which Python's audit events do not show
# (workloads/scriptwrites.py; frameworks.declared; common/writers.py): .h5 and .weights.h5 through
# h5py. Keras' TensorBoard callback writes through TensorFlow's summary writer on every backend:
# TensorFlow declares it (every framework's declarations are wrapped in a script's process).
NATIVE_WRITERS: tuple[tuple[str, str, str, str, str], ...] = (H5PY,)
INSTALL = "pip install 'whichdevice[jax]'"
KERAS = True
KERAS_BACKEND = "jax"  # the backend a script's Keras names (frameworks.keras_on)
# Declarations read by the parent (frameworks.declared): pitfalls time every step, the jitted
# loop's first step compiles.
PITFALLS_TIMING = "jit"
# Why the pre-flight has no traced step of a script here (frameworks.declared; default: none).
STEP_UNTRACED = "this version does not trace Keras' fit step (its train function is jitted inside fit)"
# ``pitfalls``' words (frameworks.declared): how the wrong and the right figure of each mistake
# are taken in JAX (keras_jax/pitfalls.py), and --quick's line.
PITFALLS_METHODS: dict[str, tuple[str, str]] = {
    "no_sync": ("clock read after each call, no block_until_ready", "the same clock after block_until_ready"),
    "sync_each": ("float(loss) after every step", "one sync per block of steps"),
    "compile_in_timing": (
        "100-step loop timed with jit's trace and compile in its first step",
        "the same loop's steady steps (median)",
    ),
    "device_put": ("jax.device_put(x), jax.device_put(y) every step", "the batch put on the device once"),
}
PITFALLS_QUICK = (
    "[yellow]--quick:[/yellow] 0.05 s of steady samples per point, 100 no-sync steps "
    "(the full run: whichdevice pitfalls --framework keras-jax)"
)
# ``scale`` (frameworks.declared): its data-parallel engine and how the all-reduce is isolated
# for N > 1 replicas: timed alone on gradient-sized tensors, and the same call without the
# collective (its dispatch).
SCALE_ENGINE = "keras.distribution.DataParallel"
SCALE_METHOD = "isolated"
SCALE_VARIANTS: tuple[str, ...] = ("allreduce", "allreduce_base")
SAYS: dict[str, str] = {
    "scale": "DataParallel",
    "replicas": "JAX host devices",
    "predict": "XLA fusions",
    "diagnose": "your Keras model on JAX",
    "pipeline": "PyDataset; tf.data where installed",
}

_NUMPY_INPUT = (
    "keras-jax: the seeds' tf.data pipelines are TensorFlow-only; here they are numpy batches "
    "(keras.utils.PyDataset: same batches, shuffled per epoch where the seed shuffles, no prefetch). "
    "The custom loop's step is a jax.jit-compiled stateless step (Keras' JAX training-loop recipe)."
)
NOTES: dict[str, list[str]] = {"train": [_NUMPY_INPUT], "run": [_NUMPY_INPUT]}
NOTES["placement"] = [
    "keras-jax: the small MLP (Keras) trained by a jax.jit-compiled stateless step fed the NumPy batch, the loss "
    "read back each step; traced with jax.profiler's Perfetto trace (XLA ops per device, DevicePut copies)."
]
NOTES["pitfalls"] = [
    "keras-jax: the small MLP (Keras) in a jax.jit-compiled stateless step; JAX's own mistakes: no "
    "block_until_ready, the compile inside the timing, jax.device_put every step."
]

# ``pipeline``: the variant ladder of this framework's input-pipeline API (parent-safe).
PIPELINE = PY_DATASET


def child_env(device_kind: str, cpu_threads: int | None = None) -> dict[str, str]:
    return {**_jax_env.child_env(device_kind, cpu_threads), "KERAS_BACKEND": "jax"}


def scale_worker_envs(base: dict[str, str], replicas: int | None, max_replicas: int) -> list[dict[str, str]]:
    """``scale``'s one worker: JAX's host platform split into ``max_replicas`` devices."""
    flags = os.environ.get("XLA_FLAGS", "")
    xla = f"{flags} --xla_force_host_platform_device_count={max_replicas}".strip()
    return [{**base, "XLA_FLAGS": xla, "KERAS_BACKEND": "jax"}]
