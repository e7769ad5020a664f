"""Functional CNN, softmax, a `CategoricalCrossentropy()` Loss object (one-hot labels)."""

import keras
from keras import layers

TARGETS = ["onehot"]


def build():
    inputs = keras.Input((16, 16, 3))
    x = layers.Conv2D(8, 3, activation="relu")(inputs)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(16, 3, activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(5, activation="softmax")(x)
    model = keras.Model(inputs, outputs, name="small_cnn")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.CategoricalCrossentropy())
    return model
