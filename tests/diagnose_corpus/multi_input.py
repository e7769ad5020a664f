"""Two named inputs (a list), one regression output, `loss="mae"`."""

import keras
from keras import layers

TARGETS = ["real"]


def build():
    a = keras.Input((10,), name="numeric")
    b = keras.Input((4, 4), name="grid")
    x = layers.Concatenate()([a, layers.Flatten()(b)])
    x = layers.Dense(16, activation="relu")(x)
    model = keras.Model([a, b], layers.Dense(2)(x))
    model.compile(optimizer="adam", loss="mae")
    return model
