"""A TensorFlow loop in eager mode (no tf.function): GradientTape and apply_gradients each step."""

import numpy as np
import tensorflow as tf

x = np.random.rand(1024, 8).astype("float32")
y = np.random.rand(1024, 1).astype("float32")
model = tf.keras.Sequential(
    [tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(16, activation="tanh"), tf.keras.layers.Dense(1)]
)
opt = tf.keras.optimizers.SGD(0.01)
for epoch in range(3):
    for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(16):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb) - yb))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
