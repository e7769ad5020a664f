"""The seeds' models and data, written against Keras 3 (``import keras``) so the same
builders run on any Keras backend (TensorFlow today; JAX / torch later).

Seed 001 (all three examples): ``Dense(128, relu)`` on 100 features -> ``Dense(10, softmax)``,
``Adam(0.001)``, ``SparseCategoricalCrossentropy``; inputs ``np.random.rand(N, 100)`` (float64,
as the seed draws them; the first layer casts to float32) and labels ``randint(0, 10, N)``.

Seed 002: ``Dense(256, relu) -> Dense(128, relu) -> Dense(1, sigmoid)`` on 128 features,
``compile(optimizer="adam", loss="binary_crossentropy")``, 10 000 samples, float32.

Only Keras and NumPy are imported here; anything TensorFlow-only (``tf.function``, ``tf.data``)
lives in ``whichdevice.frameworks.tensorflow.training``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ModelSpec:
    """How a built-in model is trained: its input width, label kind and loss."""

    name: str
    features: int
    classes: int  # > 1: integer labels 0..classes-1; 1: binary labels (0./1.)


SPECS = {
    "seed001": ModelSpec("seed001", features=100, classes=10),
    "seed002": ModelSpec("seed002", features=128, classes=1),
}


def build(name: str):
    """A fresh, uncompiled built-in model (weights initialized)."""
    import keras

    if name == "seed001":
        return keras.Sequential(
            [
                keras.Input((100,)),  # the seed writes input_shape=(100,) on the first Dense
                keras.layers.Dense(128, activation="relu"),
                keras.layers.Dense(10, activation="softmax"),
            ]
        )
    if name == "seed002":
        return keras.Sequential(
            [
                keras.Input((128,)),  # the seed builds on first call; declaring it builds now
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(128, activation="relu"),
                keras.layers.Dense(1, activation="sigmoid"),
            ]
        )
    raise KeyError(name)


def cnn(net: str, size: int, classes: int = 10):
    """The ``pipeline`` command's Keras image classifiers of three weights, for ``size x size x 3``
    inputs: ``tiny`` (pool + dense: almost no work), ``small`` (two strided convolutions, the
    default) and ``heavy`` (two full-resolution 3x3 convolutions of 32 channels)."""
    import keras
    from keras import layers

    body = {
        "tiny": [layers.GlobalAveragePooling2D()],
        "small": [
            layers.Conv2D(16, 3, strides=2, activation="relu"),
            layers.Conv2D(32, 3, strides=2, activation="relu"),
            layers.GlobalAveragePooling2D(),
        ],
        "heavy": [
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.GlobalAveragePooling2D(),
        ],
    }
    if net not in body:
        raise ValueError(f"unknown net {net!r}")
    return keras.Sequential([keras.Input((size, size, 3)), *body[net], layers.Dense(classes)], name=f"{net}_cnn")


def logits_loss(model, out_dim: int):
    """The model's own compiled loss when it has one; otherwise sparse categorical
    cross-entropy on logits for several outputs, binary cross-entropy on a logit for one."""
    import keras

    loss = getattr(model, "loss", None)
    if loss is not None:
        return keras.losses.get(loss) if isinstance(loss, str) else loss
    if out_dim > 1:
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return keras.losses.BinaryCrossentropy(from_logits=True)


def optimizer_and_loss(name: str):
    """The seed's optimizer and loss objects (fresh each call)."""
    import keras

    if name == "seed001":
        return keras.optimizers.Adam(0.001), keras.losses.SparseCategoricalCrossentropy()
    if name == "seed002":
        return keras.optimizers.Adam(), keras.losses.BinaryCrossentropy()
    raise KeyError(name)


def default_loss(classes: int | None):
    """Loss for a user's uncompiled model: sparse cross-entropy for ``classes > 1``,
    binary cross-entropy for ``classes == 1``, mean squared error without ``--classes``."""
    import keras

    if classes is None:
        return keras.losses.MeanSquaredError()
    if classes == 1:
        return keras.losses.BinaryCrossentropy()
    return keras.losses.SparseCategoricalCrossentropy()


def synthetic_data(
    n: int,
    input_shape: tuple[int, ...],
    classes: int | None,
    *,
    float64: bool = False,
    seed: int = 0,
    output_shape: tuple[int, ...] | None = None,
):
    """Random inputs of ``input_shape`` and labels matching ``classes`` (see ``default_loss``)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, *input_shape))
    x = x if float64 else x.astype("float32")
    if classes is None:
        y = rng.random((n, *(output_shape or (1,)))).astype("float32")
    elif classes == 1:
        y = rng.integers(0, 2, size=(n, 1)).astype("float32")
    else:
        y = rng.integers(0, classes, size=n)
    return x, y


def seed_data(name: str, n: int):
    """The seed's own data: seed 001 draws float64 inputs, seed 002 float32."""
    spec = SPECS[name]
    return synthetic_data(n, (spec.features,), spec.classes, float64=(name == "seed001"))
