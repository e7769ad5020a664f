"""Two outputs, a list of losses (a one-hot head and a multi-label sigmoid head)."""

import keras
from keras import layers

TARGETS = ["onehot", "binary"]


def build():
    inputs = keras.Input((8,))
    h = layers.Dense(16, activation="relu")(inputs)
    model = keras.Model(inputs, [layers.Dense(3, activation="softmax")(h), layers.Dense(5, activation="sigmoid")(h)])
    model.compile(optimizer="adam", loss=["categorical_crossentropy", "binary_crossentropy"])
    return model
