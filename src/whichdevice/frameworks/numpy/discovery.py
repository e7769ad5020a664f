"""NumPy sees one device: the CPU."""

from __future__ import annotations

import numpy as np

from whichdevice.core.machine import cpu_model
from whichdevice.core.records import DeviceInfo, FrameworkInfo


def framework_info() -> FrameworkInfo:
    return FrameworkInfo(name="numpy", version=np.__version__, details={})


def list_devices() -> list[DeviceInfo]:
    return [DeviceInfo(name="CPU:0", kind="cpu", description=cpu_model())]


def no_gpu_reasons() -> list[str]:
    return ["numpy computes on the CPU only"]
