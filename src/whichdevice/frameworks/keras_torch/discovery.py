"""Keras on torch: torch's devices, Keras' version (runs inside a child)."""

from __future__ import annotations

from whichdevice.frameworks.common import keras as _keras
from whichdevice.frameworks.torch.discovery import list_devices, no_gpu_reasons, settings
from whichdevice.core.records import FrameworkInfo

__all__ = ["framework_info", "list_devices", "no_gpu_reasons"]


def framework_info() -> FrameworkInfo:
    return _keras.framework_info(
        "keras-torch", {**settings(), "compile": "eager: custom step eager torch; fit jit_compile='auto' -> False"}
    )
