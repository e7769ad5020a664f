"""A transformer block: Embedding (Sequential-style float input), MultiHeadAttention, pooling."""

import keras
from keras import layers

TARGETS = ["sparse"]
HEAVY = True


def build():
    inputs = keras.Input((24,))
    x = layers.Embedding(1000, 16)(inputs)
    attn = layers.MultiHeadAttention(num_heads=2, key_dim=8)(x, x)
    x = layers.LayerNormalization()(x + attn)
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(3, activation="softmax")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
