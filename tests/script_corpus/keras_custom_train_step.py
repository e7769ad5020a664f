"""A Keras model with its own train_step (as keras-io's VAE and GAN examples do), fit on arrays."""

import numpy as np
import keras
from keras import ops


class Autoencoder(keras.Model):
    def __init__(self):
        super().__init__()
        self.encoder = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
        self.decoder = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(32)])
        self.loss_tracker = keras.metrics.Mean(name="loss")

    @property
    def metrics(self):
        return [self.loss_tracker]

    def train_step(self, data):
        import tensorflow as tf

        with tf.GradientTape() as tape:
            recon = self.decoder(self.encoder(data))
            loss = ops.mean(ops.square(recon - data))
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}


data = np.random.rand(4096, 32).astype("float32")
ae = Autoencoder()
ae.compile(optimizer=keras.optimizers.Adam())
ae.fit(data, epochs=10, batch_size=64)
