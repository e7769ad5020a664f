"""Cost of whichdevice.keras.StepTimer per batch, sync=False and sync=True (TensorFlow backend).

Two measurements:
1. hooks: the callback's per-batch work called directly (on_train_batch_begin, which is all
   it does per batch), 20 000 calls, median of 7 repeats -> seconds per batch.
2. fit A/B: a tiny model whose model.fit step is about 1-2 ms on 2 cores, fitted with no
   callback, StepTimer(sync=False) and StepTimer(sync=True), interleaved, 7 rounds of
   one 200-batch epoch each (after a warm-up fit) -> median seconds per batch of each.

Usage: python benchmarks/train_callback_overhead.py
"""

import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from whichdevice.keras import StepTimer  # noqa: E402


def hook_cost(sync: bool, calls: int = 20_000, repeats: int = 7) -> float:
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    t = StepTimer(sync=sync)
    t.set_model(model)
    t.on_train_begin()
    t.on_epoch_begin(0)
    per = []
    for _ in range(repeats):
        t._stamps = []
        t0 = time.perf_counter()
        for i in range(calls):
            t.on_train_batch_begin(i)
        per.append((time.perf_counter() - t0) / calls)
    return statistics.median(per)


def fit_ab(rounds: int = 7, batches: int = 200, batch: int = 32):
    x = np.random.rand(batches * batch, 100).astype("float32")
    y = np.random.randint(0, 10, batches * batch)
    model = keras.Sequential(
        [keras.Input((100,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10, activation="softmax")]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=batch, epochs=2, verbose=0)  # warm-up: tracing
    variants = {
        "none": lambda: [],
        "sync=False": lambda: [StepTimer(sync=False)],
        "sync=True": lambda: [StepTimer(sync=True)],
    }
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for name, cbs in variants.items():
            t0 = time.perf_counter()
            model.fit(x, y, batch_size=batch, epochs=1, verbose=0, callbacks=cbs())
            times[name].append((time.perf_counter() - t0) / batches)
    return {k: statistics.median(v) for k, v in times.items()}, {k: v for k, v in times.items()}


if __name__ == "__main__":
    for sync in (False, True):
        c = hook_cost(sync)
        print(f"hook cost per batch, sync={sync}: {c * 1e6:.2f} us = {c / 1e-3:.2%} of a 1 ms step")
    med, raw = fit_ab()
    base = med["none"]
    for k, v in med.items():
        print(
            f"fit per batch, {k}: median {v * 1e3:.3f} ms ({(v - base) / base:+.1%} vs none); "
            f"rounds: {', '.join(f'{t * 1e3:.3f}' for t in raw[k])} ms"
        )
