"""`keras.applications` with `weights=None` on a small input (nothing downloaded)."""

import keras

TARGETS = ["onehot"]
HEAVY = True


def build():
    model = keras.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=10)
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    return model
