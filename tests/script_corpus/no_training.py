"""Builds a model and predicts, never trains: diagnose has no training step to measure."""

import numpy as np
import keras

model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)])
print(model.predict(np.zeros((3, 4)), verbose=0))
