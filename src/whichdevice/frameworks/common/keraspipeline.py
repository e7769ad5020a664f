"""Keras 3's input pipeline for ``whichdevice pipeline --framework keras-jax|keras-torch``
(issue #42): seed 003's image pipeline as a ``keras.utils.PyDataset``, its variants, its
stages, and the Keras CNN that consumes the batches. Written once against Keras (the backend's
``pipeline.py`` adds its train step); imported inside a child (it imports Keras).

Seed 003's work in NumPy, as a PyDataset's ``__getitem__`` does it: uint8 images (NHWC) to
float32 / 255, a brightness delta drawn from [-0.2, 0.2), a left-right flip half the time. The
variants (``frameworks/common/ladders.PY_DATASET``) change only how it is scheduled or written:

==========  ==================================================================================
serial      ``PyDataset(workers=1)``: the batch made example by example on the training thread
threads     ``workers=W`` (2 or more), ``use_multiprocessing=False``: Keras' thread pool
processes   ``workers=W``, ``use_multiprocessing=True``: Keras' process pool (a new pool per
            pass, as ``model.fit`` runs it)
batched     ``workers=1``, the same preprocessing vectorized on the whole batch
tfdata      tf.data (seed 003's ``map(num_parallel_calls=AUTOTUNE)`` + ``prefetch``, in TF ops)
            read as NumPy batches (``as_numpy_iterator``), as the Keras guides feed a JAX or torch
            model from tf.data; measured where TensorFlow is installed (its GPUs hidden from it)
==========  ==================================================================================

A PyDataset is read the way ``model.fit`` reads it: through Keras' ``PyDatasetAdapter`` (its
workers' enqueuer), one pass per epoch (``on_epoch_begin`` / ``on_epoch_end``), every batch full.
"""

from __future__ import annotations

import math
from pathlib import Path

import keras
import numpy as np

from whichdevice.core.machine import usable_cores
from whichdevice.frameworks.common.ladders import PY_DATASET

MAX_DELTA = 0.2
SEED_CLASSES = 10
VARIANTS = PY_DATASET.variants
STAGES = PY_DATASET.stages
SHARDS = 4


def workers() -> int:
    """The workers of the ``threads`` / ``processes`` variants: the usable cores, 2 to 4."""
    return max(2, min(4, usable_cores()))


def synthetic_images(n: int, size: int, *, classes: int = SEED_CLASSES, seed: int = 0):
    """Seed 003's data: uint8 images (n, size, size, 3) and int64 labels in [0, classes)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, size, size, 3), dtype=np.uint8)
    labels = rng.integers(0, max(1, classes), size=(n,), dtype=np.int64)
    return images, labels


def _factor(stage: str, heavy) -> int:
    return int(heavy[1]) if heavy and heavy[0] == stage else 1


def burn(x: np.ndarray, factor: int) -> np.ndarray:
    """``factor - 1`` extra passes of arithmetic over ``x``, tied to the output without
    changing it: a constructed slow stage (``--heavy-stage``)."""
    acc = np.float32(0.0)
    for _ in range(factor - 1):
        acc = acc + np.float32(np.mean(np.sin(x + acc)))
    return x + np.float32(min(abs(float(acc)), 0.0)) if factor > 1 else x


def normalize(image: np.ndarray, heavy=None) -> np.ndarray:
    return burn(image.astype(np.float32) / 255.0, _factor("normalize", heavy))


def augment(image: np.ndarray, rng: np.random.Generator, heavy=None) -> np.ndarray:
    """A brightness delta in [-0.2, 0.2), a left-right flip half the time (one HWC example)."""
    image = image + np.float32(rng.uniform(-MAX_DELTA, MAX_DELTA))
    if rng.random() < 0.5:
        image = image[:, ::-1, :]
    return burn(np.ascontiguousarray(image), _factor("augment", heavy))


def augment_batch(images: np.ndarray, rng: np.random.Generator, heavy=None) -> np.ndarray:
    """:func:`augment` on a whole NHWC batch: a delta and a flip per example, vectorized."""
    n = images.shape[0]
    images = images + rng.uniform(-MAX_DELTA, MAX_DELTA, size=(n, 1, 1, 1)).astype(np.float32)
    flip = rng.random(n) < 0.5
    images[flip] = images[flip][:, :, ::-1, :]
    return burn(images, _factor("augment", heavy))


class Images(keras.utils.PyDataset):
    """Seed 003's images in ``batch``-sized batches (every batch full), made example by example
    or, ``batched``, vectorized on the batch."""

    def __init__(self, images, labels, batch: int, *, batched: bool = False, heavy=None, **kwargs):
        super().__init__(**kwargs)
        self.images, self.labels, self.batch = images, labels, int(batch)
        self.batched, self.heavy = batched, heavy
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return max(1, len(self.images) // self.batch)

    def __getitem__(self, i: int):
        lo, hi = i * self.batch, (i + 1) * self.batch
        if self.batched:
            x = normalize(self.images[lo:hi], self.heavy)
            return augment_batch(x, self.rng, self.heavy), self.labels[lo:hi]
        xs = [augment(normalize(img, self.heavy), self.rng, self.heavy) for img in self.images[lo:hi]]
        return np.stack(xs), self.labels[lo:hi]


class Passes:
    """A PyDataset read as ``model.fit`` reads it, pass after pass, through Keras' adapter."""

    def __init__(self, ds: Images, settings: dict[str, float]):
        from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

        self.adapter = PyDatasetAdapter(ds, shuffle=False)
        self.steps_per_pass, self.settings = len(ds), settings
        self._open = False

    def __iter__(self):
        while True:
            if self._open:  # an earlier reader left mid-pass: end its epoch first
                self.adapter.on_epoch_end()
            self.adapter.on_epoch_begin()
            self._open = True
            yield from self.adapter.get_numpy_iterator()
            self.adapter.on_epoch_end()
            self._open = False


class TfData:
    """Seed 003's tf.data pipeline (TensorFlow's ``prefetch`` variant) as NumPy batches."""

    def __init__(self, images, labels, batch: int, heavy=None):
        import tensorflow as tf

        tf.config.set_visible_devices([], "GPU")  # the model's framework owns the GPU
        from whichdevice import frameworks

        tfp = frameworks.part("tensorflow", "pipeline")  # through the registry: common imports no framework folder
        self.ds = tfp.build_variant("prefetch", images, labels, batch, heavy=heavy)
        self.steps_per_pass = max(1, len(images) // batch)
        self.settings = {"num_parallel_calls_autotune": 1.0, "prefetch_autotune": 1.0}

    def __iter__(self):
        return self.ds.as_numpy_iterator()


def build_variant(variant: str, images, labels, batch: int, *, files=None, heavy=None, repeat: bool = True):
    """One rung of the ladder (module doc), read pass after pass."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} (one of {', '.join(VARIANTS)})")
    if variant == "tfdata":
        return TfData(images, labels, batch, heavy)
    w = workers() if variant in ("threads", "processes") else 1
    multi = variant == "processes"
    ds = Images(images, labels, batch, batched=variant == "batched", heavy=heavy, workers=w, use_multiprocessing=multi)
    return Passes(ds, {"workers": float(w), "use_multiprocessing": float(multi)})


def user_variant(ds, variant: str, batch: int, default_steps: int = 10):
    raise ValueError("--data is TensorFlow's (a tf.data.Dataset): Keras' pipeline measures seed 003's")


# --------------------------------------------------------------------------- stages


class Elements:
    """A re-iterable stream of examples: ``source`` with ``fn`` applied to each, or grouped
    in ``batch``-sized batches (stacked)."""

    def __init__(self, source, fn=None, batch: int = 0):
        self.source, self.fn, self.batch = source, fn, batch

    def __iter__(self):
        if self.batch:
            group: list = []
            for e in self.source:
                group.append(e)
                if len(group) == self.batch:
                    yield np.stack([x for x, _ in group]), np.array([y for _, y in group])
                    group = []
            return
        for e in self.source:
            yield self.fn(e) if self.fn is not None else e

    def take(self, n: int) -> Elements:
        return Elements([e for _, e in zip(range(n), self)])


def write_files(images, labels, folder: str | Path, shards: int = SHARDS) -> list[str]:
    """The images and labels as ``shards`` pairs of ``.npy`` files: the ``read`` stage's input."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    n = len(images)
    shards = max(1, min(shards, n))
    files = []
    for s in range(shards):
        lo, hi = s * n // shards, (s + 1) * n // shards
        path = folder / f"images-{s:05d}-of-{shards:05d}.npy"
        np.save(path, images[lo:hi])
        np.save(folder / f"labels-{s:05d}-of-{shards:05d}.npy", labels[lo:hi])
        files.append(str(path))
    return files


class _Read:
    """Up to ``n`` examples read from the files at every pass (memory-mapped, copied out)."""

    def __init__(self, files: list[str], n: float):
        self.files, self.n = files, n

    def __iter__(self):
        k = 0
        for f in self.files:
            images = np.load(f, mmap_mode="r")
            labels = np.load(f.replace("images-", "labels-"), mmap_mode="r")
            for i in range(len(images)):
                if k >= self.n:
                    return
                k += 1
                yield np.array(images[i]), int(labels[i])


def stage_input(stage: str, files: list[str], size: int, batch: int, heavy=None):
    """The input of ``stage`` (every stage before it) and the function that applies it."""
    rng = np.random.default_rng(0)
    steps = {
        "normalize": lambda src: Elements(src, lambda e: (normalize(e[0], heavy), e[1])),
        "augment": lambda src: Elements(src, lambda e: (augment(e[0], rng, heavy), e[1])),
        "batch": lambda src: Elements(src, batch=batch),
    }
    if stage == "read":
        return None, lambda n: Elements(_Read(files, n))
    if stage not in steps:
        raise ValueError(f"unknown stage {stage!r} (one of {', '.join(STAGES)})")
    upstream = Elements(_Read(files, math.inf))
    for s in STAGES[1 : STAGES.index(stage)]:
        upstream = steps[s](upstream)
    return upstream, steps[stage]


def floor_input(n: int) -> Elements:
    return Elements(list(range(n)))


def materialize(ds) -> Elements:
    return Elements(list(ds))


def counter(ds):
    def run() -> int:
        n = 0
        for _ in ds:
            n += 1
        return n

    return run


def to_device(x, y, device_scope):
    """Copy one batch to the device: Keras tensors made under ``keras.device``."""
    with device_scope:
        return keras.ops.convert_to_tensor(x), keras.ops.convert_to_tensor(y)


# --------------------------------------------------------------------------- models


def build_model(net: str, size: int, classes: int = SEED_CLASSES):
    """The TensorFlow page's three Keras CNNs (``tiny``, ``small``, ``heavy``)."""
    from keras import layers

    body = {
        "tiny": [layers.GlobalAveragePooling2D()],
        "small": [
            layers.Conv2D(16, 3, strides=2, activation="relu"),
            layers.Conv2D(32, 3, strides=2, activation="relu"),
            layers.GlobalAveragePooling2D(),
        ],
        "heavy": [
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.GlobalAveragePooling2D(),
        ],
    }
    if net not in body:
        raise ValueError(f"unknown net {net!r}")
    return keras.Sequential([keras.Input((size, size, 3)), *body[net], layers.Dense(classes)], name=f"{net}_cnn")


def loss_for(model, out_dim: int):
    if out_dim > 1:
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return keras.losses.BinaryCrossentropy(from_logits=True)


def sgd():
    return keras.optimizers.SGD(learning_rate=0.01)
