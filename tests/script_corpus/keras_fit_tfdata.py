"""Keras model.fit on a tf.data pipeline built by hand (shuffle, map, batch, no prefetch)."""

import numpy as np
import tensorflow as tf

images = np.random.rand(2048, 16, 16, 1).astype("float32")
labels = np.random.randint(0, 10, size=(2048,))


def augment(x, y):
    return tf.image.random_flip_left_right(x), y


ds = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(512).map(augment).batch(64)
model = tf.keras.Sequential(
    [
        tf.keras.Input(shape=(16, 16, 1)),
        tf.keras.layers.Conv2D(8, 3, activation="relu"),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10),
    ]
)
model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.fit(ds, epochs=3)
