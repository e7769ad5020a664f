"""TensorFlow-only training pieces: seed 001's ``tf.function`` + ``GradientTape`` train step
and the ``tf.data`` pipelines of seeds 001 and 002. Imported by ``workloads/train.py`` through
``whichdevice.frameworks.<name>.training`` inside a child (it imports TensorFlow)."""

from __future__ import annotations

import tensorflow as tf

from whichdevice.frameworks.common.tfdata import is_dataset, looks_batched

__all__ = [
    "train_step",
    "dataset",
    "is_dataset",
    "looks_batched",
    "user_dataset",
    "on_device",
    "read_back",
    "model_train_step",
]


def train_step(model, optimizer, loss_fn, jit_compile: bool | None = None):
    """Seed 001's train step. The seed passes model, optimizer and loss as arguments of the
    ``tf.function``; they are closed over here instead (same graph, and Keras 3 objects are
    not valid ``tf.function`` arguments). Returns the loss tensor (not read back).
    ``jit_compile=True``: the same body compiled with XLA (``calibration.py`` reads its HLO)."""

    @tf.function(jit_compile=jit_compile)
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def dataset(x, y, batch: int, *, shuffle: int | None = None, prefetch: bool = True):
    """``from_tensor_slices`` [+ ``shuffle``] + ``batch`` + ``prefetch(AUTOTUNE)``, as the seeds
    (``prefetch=False``: the same without prefetching, to measure what prefetch buys)."""
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle:
        ds = ds.shuffle(shuffle)
    ds = ds.batch(batch)
    return ds.prefetch(tf.data.AUTOTUNE) if prefetch else ds


def user_dataset(ds, batch: int, samples: int | None):
    """A user's dataset of (x, y) re-batched to ``batch`` (unbatched first if it was batched),
    cut to ``samples`` elements, prefetched."""
    if looks_batched(ds):
        ds = ds.unbatch()
    if samples:
        ds = ds.take(samples)
    return ds.batch(batch).prefetch(tf.data.AUTOTUNE)


def on_device(x, y, device_scope):
    """One batch copied to the device once (for steady steps without input costs)."""
    with device_scope:
        put = lambda a: tf.identity(tf.convert_to_tensor(a))  # noqa: E731
        return tf.nest.map_structure(put, x), tf.nest.map_structure(put, y)  # dicts, tuples: each array


def read_back(loss) -> float:
    """``.numpy()``: the host read that the seed does every step (a device sync)."""
    return loss.numpy()


def model_train_step(model):
    """The model's own ``train_step`` (a user model that overrides it) as a ``tf.function``, as
    ``fit`` runs it; returns its loss (the ``loss`` entry of what it returns, else the first)."""

    @tf.function
    def step(x, y):
        out = model.train_step((x, y))
        if isinstance(out, dict):
            out = out.get("loss", next(iter(out.values()), None)) if out else None
        flat = tf.nest.flatten(out)
        return flat[0] if flat else tf.constant(0.0)

    return step
