"""Pieces shared by the Keras 3 frameworks (``keras-jax``, ``keras-torch``): written once
against Keras (``keras.ops``, ``keras.random``, ``keras.device``), so the two folders only
add what their backend does differently (discovery, sync, the custom train step).
Imported inside a child only (it imports Keras, which imports the backend)."""

from __future__ import annotations

import keras
import numpy as np

from whichdevice.frameworks.common.batches import dataset, user_dataset  # noqa: F401 (the Keras training parts')
from whichdevice.frameworks.common.nvidia import dist_version
from whichdevice.core.records import FrameworkInfo


def framework_info(name: str, backend_details: dict) -> FrameworkInfo:
    """Keras' version as the framework's, the backend's versions and settings in details.
    Compile mode: ``model.fit``'s ``jit_compile="auto"`` resolves per backend (Keras 3
    ``Trainer._resolve_auto_jit_compile``: XLA on JAX, eager on torch); each fit case records
    what it resolved to (metric ``jit_compile``); the custom loop's step is described here."""
    return FrameworkInfo(
        name=name,
        version=keras.__version__,
        details={
            "backend": keras.backend.backend(),
            "backend_version": dist_version(keras.backend.backend()),
            "floatx": keras.config.floatx(),
            **backend_details,
        },
    )


def scope(device: str):
    """``keras.device("cpu:0")`` / ``("gpu:0")``: Keras' own placement on every backend."""
    return keras.device(device.lower())


# ---------------- ops ----------------


def matmul_steady(n: int, dtype: str, device: str, check, scope=scope):
    """``keras.ops.matmul(A, B)`` with A, B already on ``device`` (eager, as a Keras user
    calls it outside a model)."""
    with scope(device):
        a = keras.random.normal((n, n), dtype=dtype, seed=0)
        b = keras.random.normal((n, n), dtype=dtype, seed=1)
        check(keras.ops.matmul(a, b), device)

    def call():
        with scope(device):
            return keras.ops.matmul(a, b)

    return call


def matmul_seed(n: int, dtype: str, device: str, check, scope=scope):
    """Seed 000's cycle in Keras: two random (n, n) tensors drawn on the device, multiplied,
    the product read back to the host (``convert_to_numpy``; bfloat16 via float32, which
    numpy lacks)."""
    gen = keras.random.SeedGenerator(0)

    def call():
        with scope(device):
            a = keras.random.normal((n, n), dtype=dtype, seed=gen)
            b = keras.random.normal((n, n), dtype=dtype, seed=gen)
            c = keras.ops.matmul(a, b)
        check(c, device)
        return keras.ops.convert_to_numpy(c if dtype != "bfloat16" else keras.ops.cast(c, "float32"))

    return call


# ---------------- training ----------------


def is_dataset(obj) -> bool:
    return isinstance(obj, keras.utils.PyDataset)


def on_device(x, y, device_scope):
    """One batch copied to the device once (steady steps without input costs)."""
    with device_scope:
        put = keras.ops.convert_to_tensor
        return keras.tree.map_structure(put, x), keras.tree.map_structure(put, y)  # dicts, tuples: each array


def read_back(loss) -> float:
    """The loss as a host number (the per-step read the seeds do: a device sync)."""
    return float(np.asarray(keras.ops.convert_to_numpy(keras.ops.stop_gradient(loss))))


def clone_model(model):
    """``keras.models.clone_model``: seed 001 ex1's second way to make a model."""
    return keras.models.clone_model(model)
