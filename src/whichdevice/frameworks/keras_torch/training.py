"""Keras-on-torch pieces of ``workloads/train.py``: seed 001's custom train step as eager
torch (Keras 3's recipe for a torch training loop: ``zero_grad``, forward, loss,
``backward``, ``optimizer.apply`` under ``no_grad``), where TensorFlow uses ``tf.function`` +
``GradientTape``. The data pieces are Keras' (numpy batches in place of tf.data)."""

from __future__ import annotations

import keras
import torch

from whichdevice.frameworks.common.keras import dataset, is_dataset, on_device, read_back, user_dataset

__all__ = ["train_step", "dataset", "is_dataset", "on_device", "read_back", "user_dataset"]


def train_step(model, optimizer, loss_fn):
    """A callable ``step(x, y) -> loss`` (not read back). Numpy batches are converted to
    tensors on Keras' current device inside the step (the seeds' host data)."""
    optimizer.build(model.trainable_variables)
    weights = list(model.trainable_weights)

    def step(x, y):
        put = keras.ops.convert_to_tensor  # each array of a dict or tuple (several inputs or outputs)
        x, y = keras.tree.map_structure(put, x), keras.tree.map_structure(put, y)
        model.zero_grad()
        loss = loss_fn(y, model(x, training=True))
        loss.backward()
        grads = [w.value.grad for w in weights]
        with torch.no_grad():
            optimizer.apply(grads, weights)
        return loss

    return step
