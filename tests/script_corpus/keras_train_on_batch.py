"""A hand-written epoch loop over numpy batches with model.train_on_batch (as older Keras code does)."""

import numpy as np
import keras

x = np.random.rand(2048, 12).astype("float32")
y = np.random.randint(0, 3, size=(2048,))
model = keras.Sequential([keras.Input(shape=(12,)), keras.layers.Dense(24, activation="relu"), keras.layers.Dense(3)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
for epoch in range(3):
    for i in range(0, len(x), 32):
        loss = model.train_on_batch(x[i : i + 32], y[i : i + 32])
    print("epoch", epoch, "loss", loss)
