"""BatchNormalization and Dropout; one logit out, `BinaryCrossentropy(from_logits=True)`."""

import keras
from keras import layers

TARGETS = ["binary"]


def build():
    model = keras.Sequential(
        [
            keras.Input((20,)),
            layers.Dense(64),
            layers.BatchNormalization(),
            layers.Activation("relu"),
            layers.Dropout(0.3),
            layers.Dense(1),
        ]
    )
    model.compile(optimizer="adam", loss=keras.losses.BinaryCrossentropy(from_logits=True), metrics=["accuracy"])
    return model
