"""A custom TensorFlow training loop: GradientTape, optimizer.apply_gradients, a compiled step,
the loss printed every 50 steps."""

import numpy as np
import tensorflow as tf

x = np.random.rand(4096, 32).astype("float32")
y = np.random.randint(0, 10, size=(4096,))
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(32)

model = tf.keras.Sequential(
    [tf.keras.Input(shape=(32,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)]
)
optimizer = tf.keras.optimizers.Adam(1e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(5):
    for step, (xb, yb) in enumerate(ds):
        loss = train_step(xb, yb)
        if step % 50 == 0:
            print(f"epoch {epoch} step {step} loss {float(loss):.4f}")
