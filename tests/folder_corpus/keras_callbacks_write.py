"""Keras model.fit with the callbacks that write beside the script, as keras-io's examples use
them: a CSVLogger log, a ModelCheckpoint that keeps the best model (with validation data, which
diagnose takes away, so Keras saves on every epoch) and BackupAndRestore (TensorBoard is not in the test install)."""

import numpy as np
import keras

x, y = np.random.rand(2048, 16).astype("float32"), np.random.randint(0, 2, size=(2048, 1))
xv, yv = np.random.rand(256, 16).astype("float32"), np.random.randint(0, 2, size=(256, 1))
model = keras.Sequential([keras.Input(shape=(16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss=keras.losses.BinaryCrossentropy(from_logits=True))
callbacks = [
    keras.callbacks.CSVLogger("log.csv"),
    keras.callbacks.ModelCheckpoint("best.keras", save_best_only=True),
    keras.callbacks.BackupAndRestore("backup"),
]
model.fit(x, y, validation_data=(xv, yv), epochs=5, batch_size=32, callbacks=callbacks)
