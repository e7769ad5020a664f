"""One input, two named outputs, a dict of losses with loss weights (dict targets)."""

import keras
from keras import layers

TARGETS = ["sparse", "real"]


def build():
    inputs = keras.Input((16,))
    h = layers.Dense(32, activation="relu")(inputs)
    kind = layers.Dense(4, activation="softmax", name="kind")(h)
    price = layers.Dense(1, name="price")(h)
    model = keras.Model(inputs, [kind, price])
    model.compile(
        optimizer="adam",
        loss={"kind": "sparse_categorical_crossentropy", "price": "mse"},
        loss_weights={"kind": 1.0, "price": 0.5},
        metrics={"kind": "accuracy"},
    )
    return model
