"""Keras model.fit on a keras.utils.PyDataset that makes its own batches."""

import math

import numpy as np
import keras


class Batches(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return math.ceil(len(self.x) / self.batch_size)

    def __getitem__(self, i):
        lo = i * self.batch_size
        return self.x[lo : lo + self.batch_size], self.y[lo : lo + self.batch_size]


x = np.random.rand(2048, 24).astype("float32")
y = np.random.rand(2048, 1).astype("float32")
model = keras.Sequential([keras.Input(shape=(24,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(Batches(x, y, 32), epochs=4)
