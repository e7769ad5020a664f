"""Keras on PyTorch: the ``pipeline`` command's loader, model and step. The loader is
Keras' ``PyDataset`` (``frameworks/common/keraspipeline.py``, shared with keras-jax); the
step is the eager torch step of ``training.py`` with SGD."""

from __future__ import annotations

from whichdevice.frameworks.common.keraspipeline import *  # noqa: F403
from whichdevice.frameworks.common.keraspipeline import sgd_step
from whichdevice.frameworks.keras_torch import training

train_step = sgd_step(training)
