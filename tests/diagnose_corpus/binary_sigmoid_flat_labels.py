"""`Dense(1, sigmoid)` + `binary_crossentropy`, the user's labels of shape (n,) (their own fit
trains fine: Keras' compiled loss squeezes the output's last axis): `--data` with those labels."""

import keras
import numpy as np
from keras import layers

TARGETS = ["binary"]
DATA = "data"


def build():
    model = keras.Sequential(
        [keras.Input((20,)), layers.Dense(16, activation="relu"), layers.Dense(1, activation="sigmoid")]
    )
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def data():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((512, 20)).astype("float32")
    y = rng.integers(0, 2, size=(512,)).astype("float32")  # shape (n,), not (n, 1)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
