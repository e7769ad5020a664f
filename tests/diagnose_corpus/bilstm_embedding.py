"""A Bidirectional LSTM over an Embedding of variable-length int32 sequences (`--input-shape 40`)."""

import keras
from keras import layers

INPUT_SHAPE = (40,)
TARGETS = ["binary"]


def build():
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = layers.Embedding(5000, 16)(inputs)
    x = layers.Bidirectional(layers.LSTM(8))(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model
