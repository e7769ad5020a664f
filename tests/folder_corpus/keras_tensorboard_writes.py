"""Keras model.fit with a TensorBoard callback, as keras-io's examples use it: its event files
are written by TensorFlow's C++ summary writer under ``logs/train`` and ``logs/validation``
(no Python open for them), plus a checkpoint of the variables through tf.train.Checkpoint (C++
ops under its prefix, its ``checkpoint`` file renamed into place in C++)."""

import keras
import numpy as np
import tensorflow as tf

x, y = np.random.rand(2048, 16).astype("float32"), np.random.randint(0, 2, size=(2048, 1))
model = keras.Sequential([keras.Input(shape=(16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss=keras.losses.BinaryCrossentropy(from_logits=True))


class Save(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        tf.train.Checkpoint(model=model).save("ckpts/ckpt")


model.fit(x, y, epochs=5, batch_size=32, callbacks=[keras.callbacks.TensorBoard("logs"), Save()])
