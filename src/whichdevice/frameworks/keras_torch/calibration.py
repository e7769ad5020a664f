"""Keras 3 on PyTorch: the training step's kernels for ``predict`` — eager, op by op, as
plain PyTorch (``frameworks/torch/calibration.py`` records the ATen ops). Keras keeps its
optimizer's iteration counter on the device, so 0-dimensional ops are kernels here. The
``calibrate`` probes are plain PyTorch's: Keras on PyTorch computes with torch tensors."""

from __future__ import annotations

from whichdevice.frameworks.torch.calibration import (
    d2h,
    elementwise,
    graph_chain,
    h2d,
    record_step,
    tf32_matmul,
    tiny_eager,
    tiny_sync,
)

__all__ = ["d2h", "describe_train", "elementwise", "graph_chain", "h2d", "tiny_eager", "tiny_sync"]


def describe_train(model, optimizer, loss_fn, training, x, y) -> dict:
    step = training.train_step(model, optimizer, loss_fn)
    return {"ops": record_step(step, x, y, scalar_ops_on_host=False), "launch_mode": "eager", "tf32": tf32_matmul()}
