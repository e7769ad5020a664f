"""Keras on JAX: the ``pipeline`` command's loader, model and step. The loader is
Keras' ``PyDataset`` (``frameworks/common/keraspipeline.py``, shared with keras-torch); the
step is the ``jax.jit``-compiled stateless step of ``training.py`` with SGD (the first call
compiles)."""

from __future__ import annotations

from whichdevice.frameworks.common.keraspipeline import *  # noqa: F403
from whichdevice.frameworks.common.keraspipeline import sgd_step
from whichdevice.frameworks.keras_jax import training

train_step = sgd_step(training)
