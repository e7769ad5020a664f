"""Keras-on-JAX pieces of ``workloads/train.py``: seed 001's custom train step as a
``jax.jit``-compiled *stateless* step (Keras 3's recipe for a JAX training loop:
``model.stateless_call`` + ``jax.value_and_grad`` + ``optimizer.stateless_apply``), where
TensorFlow uses ``tf.function`` + ``GradientTape``. The data pieces are Keras' (numpy
batches in place of tf.data; ``frameworks/_keras.py``)."""

from __future__ import annotations

import jax

from whichdevice.frameworks.common.keras import dataset, is_dataset, on_device, read_back, user_dataset

__all__ = ["compiled_step", "train_step", "dataset", "is_dataset", "on_device", "read_back", "user_dataset"]


def compiled_step(model, optimizer, loss_fn):
    """The step's ``jax.jit``-compiled function ``(state, x, y) -> (loss, state)`` and its
    initial state (the model's and the optimizer's variables as JAX arrays): Keras 3's
    stateless recipe. ``calibration.describe_train`` reads its compiled form."""
    optimizer.build(model.trainable_variables)

    def loss_and_state(trainable, non_trainable, x, y):
        y_pred, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        return loss_fn(y, y_pred), non_trainable

    grad_fn = jax.value_and_grad(loss_and_state, has_aux=True)

    @jax.jit
    def jitted(state, x, y):
        trainable, non_trainable, opt_vars = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, x, y)
        trainable, opt_vars = optimizer.stateless_apply(opt_vars, grads, trainable)
        return loss, (trainable, non_trainable, opt_vars)

    state = (
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables],
        [v.value for v in optimizer.variables],
    )
    return jitted, state


def train_step(model, optimizer, loss_fn):
    """A callable ``step(x, y) -> loss`` (not read back). The model's state lives in the
    step's closure as JAX arrays, threaded through each call (the model's own variables are
    not updated: nothing here reads them). The first call traces and compiles."""
    jitted, first = compiled_step(model, optimizer, loss_fn)
    state = [first]

    def step(x, y):
        loss, state[0] = jitted(state[0], x, y)
        return loss

    return step
