"""Sequential MLP, softmax, `loss="sparse_categorical_crossentropy"` (integer class ids)."""

import keras
from keras import layers

TARGETS = ["sparse"]


def build():
    model = keras.Sequential(
        [keras.Input((32,)), layers.Dense(64, activation="relu"), layers.Dense(10, activation="softmax")]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
