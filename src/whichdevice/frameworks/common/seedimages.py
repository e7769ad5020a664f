"""Seed 003's image pipeline, the parts no framework changes: its data, its shards
on disk, the stage-by-stage streams and the counting consumer. Written once in NumPy for the
``pipeline.py`` parts (tf.data's, the DataLoader's and Keras' PyDataset's), which add only the
loader and the per-example work in their framework's ops. Imported inside a child."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from whichdevice.core.machine import usable_cores

MAX_DELTA = 0.2  # seed 003: tf.image.random_brightness(image, max_delta=0.2)
SEED_CLASSES = 10  # seed 003: labels = np.random.randint(0, 10, ...)
SHARDS = 4
# the members of the pipeline part (contracts.Pipeline) that no framework changes: the parts
# written on NumPy's data (torch's, Keras') take them with ``import *``
__all__ = ["counter", "floor_input", "materialize", "synthetic_images", "write_files"]


def workers() -> int:
    """The workers of a multi-worker variant: the usable cores, 2 to 4."""
    return max(2, min(4, usable_cores()))


def synthetic_images(n: int, size: int, *, classes: int = SEED_CLASSES, seed: int = 0):
    """Seed 003's data: uint8 images (n, size, size, 3) and int64 labels in [0, classes)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, size, size, 3), dtype=np.uint8)
    labels = rng.integers(0, max(1, classes), size=(n,), dtype=np.int64)
    return images, labels


def heavy_factor(stage: str, heavy) -> int:
    """The constructed slow stage's burn factor for ``stage`` (``--heavy-stage``; 1: normal)."""
    return int(heavy[1]) if heavy and heavy[0] == stage else 1


def stack(group: list):
    """A batch of (example, label) pairs stacked with NumPy."""
    return np.stack([x for x, _ in group]), np.array([y for _, y in group])


class Elements:
    """A re-iterable stream of examples (a stage's input or output): ``source`` (a list, or
    another stream) with ``fn`` applied to each, or grouped in ``batch``-sized batches
    (``collate``: NumPy's ``stack`` unless the loader has its own)."""

    def __init__(self, source, fn=None, batch: int = 0, collate: Callable[[list], object] = stack):
        self.source, self.fn, self.batch, self.collate = source, fn, batch, collate

    def __iter__(self):
        if self.batch:
            group: list = []
            for e in self.source:
                group.append(e)
                if len(group) == self.batch:
                    yield self.collate(group)
                    group = []
            return
        for e in self.source:
            yield self.fn(e) if self.fn is not None else e

    def take(self, n: int) -> Elements:
        return Elements([e for _, e in zip(range(n), self)])


def shard_slices(folder: str | Path, n: int, count: int = SHARDS) -> list[tuple[Path, int, int]]:
    """``n`` examples in ``count`` contiguous slices, in order (at most one a shard): each
    slice's file stem in ``folder`` (made) and its first and end index."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    count = max(1, min(count, n))
    return [(folder / f"images-{s:05d}-of-{count:05d}", s * n // count, (s + 1) * n // count) for s in range(count)]


def write_files(images, labels, folder: str | Path, shards: int = SHARDS) -> list[str]:
    """The images and labels as ``shards`` pairs of ``.npy`` files (raw uint8 + int64), the
    ``read`` stage's input: a loader that reads its examples from disk."""
    files = []
    for stem, lo, hi in shard_slices(folder, len(images), shards):
        np.save(f"{stem}.npy", images[lo:hi])
        np.save(stem.with_name(stem.name.replace("images-", "labels-") + ".npy"), labels[lo:hi])
        files.append(f"{stem}.npy")
    return files


class Read:
    """Up to ``n`` examples read from the files at every pass (memory-mapped, copied out one
    by one; ``image`` makes the framework's array of the copy)."""

    def __init__(self, files: list[str], n: float, image: Callable[[np.ndarray], object] = np.array):
        self.files, self.n, self.image = files, n, image

    def __iter__(self):
        k = 0
        for f in self.files:
            images = np.load(f, mmap_mode="r")
            labels = np.load(f.replace("images-", "labels-"), mmap_mode="r")
            for i in range(len(images)):
                if k >= self.n:
                    return
                k += 1
                yield self.image(np.array(images[i])), int(labels[i])


def staged(stage: str, stages: tuple[str, ...], steps: dict, read: Callable):
    """The input of ``stage`` (every stage before it applied, in order, to the files read
    whole: ``read(math.inf)``) and the function that applies ``stage``; the first stage, the
    read, has no input: its function is ``read`` (``n`` examples)."""
    if stage == stages[0]:
        return None, read
    if stage not in steps:
        raise ValueError(f"unknown stage {stage!r} (one of {', '.join(stages)})")
    upstream = read(math.inf)
    for s in stages[1 : stages.index(stage)]:
        upstream = steps[s](upstream)
    return upstream, steps[stage]


def floor_input(n: int) -> Elements:
    """``n`` in-memory integers: counting them is the consumer's own cost."""
    return Elements(list(range(n)))


def materialize(ds) -> Elements:
    """One full pass of ``ds``, kept in memory."""
    return Elements(list(ds))


def counter(ds):
    """A function that runs one pass over ``ds`` and returns the number of elements."""

    def run() -> int:
        n = 0
        for _ in ds:
            n += 1
        return n

    return run
