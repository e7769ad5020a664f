import numpy as np
import tensorflow as tf
import time

x = np.random.rand(10000, 128).astype("float32")
y = np.random.randint(0, 2, size=(10000, 1)).astype("float32")

dataset = tf.data.Dataset.from_tensor_slices((x, y))
dataset = dataset.shuffle(10000).batch(512).prefetch(tf.data.AUTOTUNE)

for device in ["/CPU:0", "/GPU:0"]:
    with tf.device(device):
        model = tf.keras.Sequential([
            tf.keras.layers.Dense(256, activation="relu"),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(1, activation="sigmoid"),
        ])

        model.compile(optimizer="adam", loss="binary_crossentropy")
        start = time.time()
        model.fit(dataset, epochs=3)
        print(f"{device} training time: {time.time() - start:.2f} s")
