"""The reference probe's MLP (gpu_probe.py, section 3) written in Keras, for the cost-model
validation: Linear(100, 128) -> ReLU -> Linear(128, 10) on float32 inputs, logits into
cross-entropy (torch's CrossEntropyLoss = sparse CE from logits), Adam(1e-3).

Usable as ``whichdevice predict --model benchmarks/predict_mlp_model.py:build``.
"""

import keras


def build():
    model = keras.Sequential(
        [
            keras.Input((100,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model
