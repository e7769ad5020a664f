"""Keras model.fit on numpy arrays: the most common way a Keras user trains."""

import numpy as np
import keras

x = np.random.rand(4096, 32).astype("float32")
y = np.random.randint(0, 10, size=(4096,))

model = keras.Sequential([keras.Input(shape=(32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(
    optimizer=keras.optimizers.Adam(1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
model.fit(x, y, batch_size=32, epochs=20)
print("done training")
