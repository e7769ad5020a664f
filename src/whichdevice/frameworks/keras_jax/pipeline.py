"""Keras on JAX: the ``pipeline`` command's loader, model and step (issue #42). The loader is
Keras' ``PyDataset`` (``frameworks/common/keraspipeline.py``, shared with keras-torch); the
step is the ``jax.jit``-compiled stateless step of ``training.py`` with SGD."""

from __future__ import annotations

from whichdevice.frameworks.common.keraspipeline import (
    build_model,
    build_variant,
    counter,
    floor_input,
    loss_for,
    materialize,
    sgd,
    stage_input,
    synthetic_images,
    to_device,
    user_variant,
    write_files,
)
from whichdevice.frameworks.keras_jax import training

__all__ = [
    "build_model",
    "build_variant",
    "counter",
    "floor_input",
    "loss_for",
    "materialize",
    "stage_input",
    "synthetic_images",
    "to_device",
    "train_step",
    "user_variant",
    "write_files",
]


def train_step(model, loss_fn):
    """One SGD step, compiled by ``jax.jit`` (the first call compiles); returns the loss."""
    return training.train_step(model, sgd(), loss_fn)
