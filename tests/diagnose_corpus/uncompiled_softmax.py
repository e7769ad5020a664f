"""Uncompiled: whichdevice compiles it (softmax out: sparse cross-entropy, Adam)."""

import keras
from keras import layers

TARGETS = ["sparse"]


def build():
    return keras.Sequential(
        [
            keras.Input((28, 28)),
            layers.Flatten(),
            layers.Dense(32, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ]
    )
