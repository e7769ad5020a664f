# A helper module of the user's project: trains a Keras model and times its epochs.
import time


def train_timed(model, x, y, epochs=2):
    """Fit for ``epochs`` and return the seconds each took."""
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        model.fit(x, y, epochs=1, batch_size=64, verbose=0)
        times.append(time.perf_counter() - start)
    return times
