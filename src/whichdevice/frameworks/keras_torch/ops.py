"""Workload ops for Keras on torch: ``keras.ops`` (``frameworks/_keras.py``)."""

from __future__ import annotations

from whichdevice.frameworks.common import keras as _keras
from whichdevice.frameworks.torch.ops import PlacementError, noop
from whichdevice.frameworks.keras_torch.placement import scope
from whichdevice.frameworks.torch.placement import ran_on

__all__ = ["PlacementError", "noop", "matmul_steady", "matmul_seed"]


def _check(tensor, device: str) -> None:
    if ran_on(tensor) != device.split(":")[0]:
        raise PlacementError(f"op asked for {device} ran on {ran_on(tensor)}")


def matmul_steady(n: int, dtype: str, device: str):
    return _keras.matmul_steady(n, dtype, device, _check, scope)


def matmul_seed(n: int, dtype: str, device: str):
    return _keras.matmul_seed(n, dtype, device, _check, scope)
