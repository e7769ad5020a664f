"""Block until the GPU has finished queued kernels (nothing to do on the CPU)."""

from __future__ import annotations

import torch


def sync(result=None) -> None:
    """CUDA kernels run asynchronously from Python; ``torch.cuda.synchronize`` waits for all
    of them. A CPU run (CUDA hidden, never initialized) has nothing to wait for: torch CPU
    ops return when done. ``result`` is unused (JAX needs it)."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
