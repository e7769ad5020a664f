"""An LSTM with an output per time step (sequence labelling): sparse class ids per step."""

import keras
from keras import layers

TARGETS = ["sparse"]


def build():
    model = keras.Sequential(
        [
            keras.Input((20, 6)),
            layers.LSTM(16, return_sequences=True),
            layers.TimeDistributed(layers.Dense(4, activation="softmax")),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model
