"""Keras 3 on PyTorch: the training step's kernels for ``predict`` — eager, op by op, as
plain PyTorch (``frameworks/torch/calibration.py`` records the ATen ops). Keras keeps its
optimizer's iteration counter on the device, so 0-dimensional ops are kernels here."""

from __future__ import annotations

from whichdevice.frameworks.torch.calibration import record_step, tf32_matmul


def describe_train(model, optimizer, loss_fn, training, x, y) -> dict:
    step = training.train_step(model, optimizer, loss_fn)
    return {"ops": record_step(step, x, y, scalar_ops_on_host=False), "launch_mode": "eager", "tf32": tf32_matmul()}
