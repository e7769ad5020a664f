"""Keras model.fit with validation data and the usual callbacks (early stopping, LR schedule, CSV log)."""

import os
import tempfile

import numpy as np
import keras

x, y = np.random.rand(3072, 16).astype("float32"), np.random.randint(0, 2, size=(3072, 1))
xv, yv = np.random.rand(512, 16).astype("float32"), np.random.randint(0, 2, size=(512, 1))
model = keras.Sequential([keras.Input(shape=(16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss=keras.losses.BinaryCrossentropy(from_logits=True), metrics=["accuracy"])
log = os.path.join(tempfile.mkdtemp(), "log.csv")
callbacks = [
    keras.callbacks.EarlyStopping(patience=3, restore_best_weights=True),
    keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.95),
    keras.callbacks.CSVLogger(log),
]
model.fit(x, y, validation_data=(xv, yv), epochs=50, batch_size=32, callbacks=callbacks)
