# Latent GPU-only traps, silent on a CPU-only machine: the model and its optimizer are built in a
# CPU block and trained from a GPU block; every call is given NumPy slices (converted and copied
# per call on a GPU) and the loss is read back with float() at every step.
import time

import numpy as np
import tensorflow as tf

x = np.random.rand(640, 32).astype("float32")
y = np.random.randint(0, 4, 640)

with tf.device("/CPU:0"):
    model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(4)])
    opt = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb))
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss


step(x[:32], y[:32])  # warm-up outside the timing
with tf.device("/GPU:0"):
    for repeat in range(3):
        start = time.perf_counter()
        losses = []
        for i in range(0, 640, 32):
            losses.append(float(step(x[i : i + 32], y[i : i + 32])))
        print(f"GPU epoch {time.perf_counter() - start:.3f} s, loss {losses[-1]:.3f}")
