"""Workload ops for Keras on JAX: ``keras.ops`` (``frameworks/_keras.py``)."""

from __future__ import annotations

from whichdevice.frameworks.common import keras as _keras
from whichdevice.frameworks.jax.ops import PlacementError, noop
from whichdevice.frameworks.jax.placement import ran_on

__all__ = ["PlacementError", "noop", "matmul_steady", "matmul_seed"]


def _check(array, device: str) -> None:
    if ran_on(array) != device.split(":")[0]:
        raise PlacementError(f"op asked for {device} ran on {ran_on(array) or 'an unknown device'}")


def matmul_steady(n: int, dtype: str, device: str):
    return _keras.matmul_steady(n, dtype, device, _check)


def matmul_seed(n: int, dtype: str, device: str):
    return _keras.matmul_seed(n, dtype, device, _check)
