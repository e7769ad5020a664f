"""Uncompiled subclassed model (`--input-shape`): a sigmoid output -> binary targets."""

import keras
from keras import layers

INPUT_SHAPE = (9,)
TARGETS = ["binary"]


class Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.a = layers.Dense(8, activation="relu")
        self.b = layers.Dense(1, activation="sigmoid")

    def call(self, x):
        return self.b(self.a(x))


def build():
    return Net()
