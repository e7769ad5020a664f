"""A GRU forecaster, many-to-one, `loss="huber"` (real targets)."""

import keras
from keras import layers

TARGETS = ["real"]


def build():
    model = keras.Sequential([keras.Input((24, 3)), layers.GRU(16), layers.Dense(1)])
    model.compile(optimizer="adam", loss="huber", metrics=["mae"])
    return model
