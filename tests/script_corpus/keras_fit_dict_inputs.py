"""Keras functional API with two named inputs and two named outputs, fit on dicts of arrays."""

import numpy as np
import keras

n = 2048
title = keras.Input(shape=(20,), name="title")
body = keras.Input(shape=(40,), name="body")
h = keras.layers.concatenate([keras.layers.Dense(16, activation="relu")(title), keras.layers.Dense(16)(body)])
priority = keras.layers.Dense(1, name="priority")(h)
department = keras.layers.Dense(4, name="department")(h)
model = keras.Model(inputs={"title": title, "body": body}, outputs={"priority": priority, "department": department})
model.compile(
    optimizer="adam",
    loss={"priority": "mse", "department": keras.losses.CategoricalCrossentropy(from_logits=True)},
    loss_weights={"priority": 1.0, "department": 0.2},
)
x = {"title": np.random.rand(n, 20).astype("float32"), "body": np.random.rand(n, 40).astype("float32")}
y = {"priority": np.random.rand(n, 1), "department": keras.utils.to_categorical(np.random.randint(4, size=n), 4)}
model.fit(x, y, epochs=5, batch_size=32)
