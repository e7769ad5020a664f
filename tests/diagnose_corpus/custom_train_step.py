"""A subclassed model with its own `train_step` (gradient clipping), keras-io style."""

import keras
import tensorflow as tf
from keras import layers

TARGETS = ["sparse"]


class Clipped(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        grads = [tf.clip_by_norm(g, 1.0) for g in grads]
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def build():
    inputs = keras.Input((10,))
    outputs = layers.Dense(6, activation="softmax")(layers.Dense(16, activation="relu")(inputs))
    model = Clipped(inputs, outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
