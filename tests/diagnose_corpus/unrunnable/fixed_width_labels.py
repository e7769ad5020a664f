"""A custom loss that reshapes its labels to a width the output does not have: its own data
trains (labels of 7 values per sample), synthetic labels shaped like the output cannot."""

import keras
from keras import layers, ops


def seven_wide(y_true, y_pred):
    return ops.mean(ops.square(ops.reshape(y_true, (-1, 7))[:, :3] - y_pred))


def build():
    model = keras.Sequential([keras.Input((5,)), layers.Dense(3)])
    model.compile(optimizer="adam", loss=seven_wide)
    return model
