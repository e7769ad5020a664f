"""Workload ops for PyTorch (as the reference's gpu_probe.py: ``torch.mm``)."""

from __future__ import annotations

import torch

from whichdevice.frameworks.contracts import PlacementError
from whichdevice.frameworks.torch.placement import ran_on, torch_device

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _check(tensor, device: str) -> None:
    if ran_on(tensor) != device.split(":")[0]:
        raise PlacementError(f"op asked for {device} ran on {ran_on(tensor)}")


def noop():
    return lambda: None


def matmul_steady(n: int, dtype: str, device: str):
    """``torch.mm(A, B)`` with A, B already on ``device``."""
    dev, dt = torch_device(device), DTYPES[dtype]
    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(n, n, dtype=dt, device=dev, generator=g)
    b = torch.randn(n, n, dtype=dt, device=dev, generator=g)
    _check(torch.mm(a, b), device)
    return lambda: torch.mm(a, b)


def matmul_seed(n: int, dtype: str, device: str):
    """Seed 000's cycle (gpu_probe.py's ``e2e``): two random (n, n) tensors drawn on the
    device, multiplied, the product copied to the host."""
    dev, dt = torch_device(device), DTYPES[dtype]

    def call():
        a = torch.randn(n, n, dtype=dt, device=dev)
        b = torch.randn(n, n, dtype=dt, device=dev)
        c = torch.mm(a, b)
        _check(c, device)
        return c.cpu()

    return call
