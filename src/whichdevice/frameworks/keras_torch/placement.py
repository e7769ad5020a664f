"""Keras on torch: torch's threads and current GPU, Keras' device scope."""

from __future__ import annotations

import keras

from whichdevice.frameworks.torch.placement import configure, ran_on

__all__ = ["configure", "scope", "ran_on"]


def scope(device: str):
    """``keras.device("cpu")`` / ``("gpu:0")``. Not ``"cpu:0"``: with Keras 3.15's torch backend,
    variables created under ``keras.device("cpu:0")`` are not autograd leaves (they are
    moved with ``.to``), so ``backward()`` leaves their ``.grad`` empty and every optimizer
    step fails with "No gradients provided" (found by this project's tests)."""
    return keras.device("cpu" if device.startswith("CPU") else device.lower())
