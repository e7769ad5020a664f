# Keras: trains and reads Keras's own epoch times from its log: the script itself times nothing.
import numpy as np
import keras

x = np.random.rand(256, 8).astype("float32")
y = np.random.rand(256, 1).astype("float32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
model.compile("adam", "mse")
model.fit(x, y, epochs=2, batch_size=64, verbose=2)
