"""A TensorFlow loop in eager mode that updates with Keras 3's ``optimizer.apply(grads, variables)``
(as keras-io's custom-training-loop guide does), not ``apply_gradients``."""

import numpy as np
import tensorflow as tf
import keras

x = np.random.rand(1024, 8).astype("float32")
y = np.random.rand(1024, 1).astype("float32")
model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(1)])
opt = keras.optimizers.Adam(1e-3)
for epoch in range(3):
    for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(16):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.cast(model(xb), tf.float32) - yb))  # float32 under mixed precision
        opt.apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
