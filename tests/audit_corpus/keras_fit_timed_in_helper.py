# Keras: the epochs are fit and timed by a helper module of the project, the script prints its times.
import numpy as np
import keras

from keras_timing_helper import train_timed

x = np.random.rand(256, 8).astype("float32")
y = np.random.rand(256, 1).astype("float32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
model.compile("adam", "mse")
print("epoch times:", train_timed(model, x, y))
