"""A Keras model that overrides compile() with its own signature (two optimizers and a loss, as
keras-io's GAN examples do) and trains both halves in its own train_step, fit on arrays."""

import numpy as np
import keras
import tensorflow as tf


class TwoHalves(keras.Model):
    def __init__(self):
        super().__init__()
        self.critic = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
        self.maker = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(8)])
        self.tracker = keras.metrics.Mean(name="c_loss")

    @property
    def metrics(self):
        return [self.tracker]

    def compile(self, c_optimizer, m_optimizer, loss_fn):
        super().compile()
        self.c_optimizer, self.m_optimizer, self.loss_fn = c_optimizer, m_optimizer, loss_fn

    def train_step(self, real):
        n = tf.shape(real)[0]
        fake = tf.cast(self.maker(tf.random.normal((n, 8))), real.dtype)  # float16 under mixed precision
        with tf.GradientTape() as tape:
            scores = self.critic(tf.concat([fake, real], axis=0))
            c_loss = self.loss_fn(tf.concat([tf.ones((n, 1)), tf.zeros((n, 1))], axis=0), scores)
        grads = tape.gradient(c_loss, self.critic.trainable_weights)
        self.c_optimizer.apply(grads, self.critic.trainable_weights)
        with tf.GradientTape() as tape:
            m_loss = self.loss_fn(tf.zeros((n, 1)), self.critic(self.maker(tf.random.normal((n, 8)))))
        grads = tape.gradient(m_loss, self.maker.trainable_weights)
        self.m_optimizer.apply(grads, self.maker.trainable_weights)
        self.tracker.update_state(c_loss)
        return {"c_loss": self.tracker.result()}


data = np.random.rand(2048, 8).astype("float32")
model = TwoHalves()
model.compile(
    c_optimizer=keras.optimizers.Adam(3e-4),
    m_optimizer=keras.optimizers.Adam(3e-4),
    loss_fn=keras.losses.BinaryCrossentropy(from_logits=True),
)
model.fit(data, epochs=5, batch_size=64)
