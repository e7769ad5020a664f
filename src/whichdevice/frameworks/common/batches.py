"""Numpy batches standing in for the seeds' tf.data pipelines on frameworks without tf.data.

A ``keras.utils.PyDataset`` when Keras is installed (so ``model.fit`` takes it on every
backend, re-iterated each epoch), a plain re-iterable sequence otherwise (plain torch).
No prefetching: batches are sliced on the training thread, which records must say.
"""

from __future__ import annotations

import math

import numpy as np

try:  # plain torch may run without Keras installed
    from keras.utils import PyDataset as _Base
except ImportError:  # pragma: no cover - depends on the install
    _Base = object


class NumpyBatches(_Base):
    """``batch``-sized slices of (x, y); ``shuffle``: a new permutation every epoch (as
    ``tf.data``'s ``shuffle(n)`` with a buffer of the whole data set)."""

    def __init__(self, x, y, batch: int, *, shuffle: bool = False, seed: int = 0):
        if _Base is not object:
            super().__init__()
        self.x, self.y, self.batch, self.shuffle = x, y, int(batch), shuffle
        self._rng = np.random.default_rng(seed)
        self._order = self._rng.permutation(len(x)) if shuffle else None

    def __len__(self) -> int:
        return math.ceil(len(self.x) / self.batch)

    def __getitem__(self, i: int):
        if i >= len(self):
            raise IndexError(i)
        lo, hi = i * self.batch, min((i + 1) * self.batch, len(self.x))
        if self._order is None:
            return self.x[lo:hi], self.y[lo:hi]
        idx = self._order[lo:hi]
        return self.x[idx], self.y[idx]

    def on_epoch_end(self):
        if self.shuffle:
            self._order = self._rng.permutation(len(self.x))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]
        self.on_epoch_end()  # a custom loop's next pass is the next epoch


def dataset(x, y, batch: int, *, shuffle: int | None = None, prefetch: bool = True):
    """The training part's ``dataset`` for frameworks without tf.data: :class:`NumpyBatches` in
    place of the seed's pipeline (``model.fit`` takes it on every Keras backend); no prefetch."""
    return NumpyBatches(x, y, batch, shuffle=bool(shuffle))


def user_dataset(ds, batch: int, samples: int | None):
    raise ValueError("a tf.data dataset (--data) needs --framework tensorflow")
