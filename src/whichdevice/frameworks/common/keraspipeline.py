"""Keras 3's input pipeline for ``whichdevice pipeline --framework keras-jax|keras-torch``:
seed 003's image pipeline as a ``keras.utils.PyDataset``, its variants, its
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

import keras
import numpy as np

from whichdevice.frameworks.common.ladders import PY_DATASET
from whichdevice.frameworks.common.models import cnn as build_model
from whichdevice.frameworks.common.models import logits_loss as loss_for
from whichdevice.frameworks.common.seedimages import counter, floor_input, materialize, synthetic_images, write_files
from whichdevice.frameworks.common.seedimages import MAX_DELTA, Elements, Read, heavy_factor, staged, workers

VARIANTS = PY_DATASET.variants
STAGES = PY_DATASET.stages
# the pipeline part (contracts.Pipeline) less its train step: the backend's pipeline.py
# imports these and adds ``train_step = sgd_step(training)``
__all__ = [
    "build_model",
    "build_variant",
    "counter",
    "floor_input",
    "loss_for",
    "materialize",
    "stage_input",
    "synthetic_images",
    "to_device",
    "user_variant",
    "write_files",
]


def burn(x: np.ndarray, factor: int) -> np.ndarray:
    """``factor - 1`` extra passes of arithmetic over ``x``, tied to the output without
    changing it: a constructed slow stage (``--heavy-stage``)."""
    acc = np.float32(0.0)
    for _ in range(factor - 1):
        acc = acc + np.float32(np.mean(np.sin(x + acc)))
    return x + np.float32(min(abs(float(acc)), 0.0)) if factor > 1 else x


def normalize(image: np.ndarray, heavy=None) -> np.ndarray:
    return burn(image.astype(np.float32) / 255.0, heavy_factor("normalize", heavy))


def augment(image: np.ndarray, rng: np.random.Generator, heavy=None) -> np.ndarray:
    """A brightness delta in [-0.2, 0.2), a left-right flip half the time (one HWC example)."""
    image = image + np.float32(rng.uniform(-MAX_DELTA, MAX_DELTA))
    if rng.random() < 0.5:
        image = image[:, ::-1, :]
    return burn(np.ascontiguousarray(image), heavy_factor("augment", heavy))


def augment_batch(images: np.ndarray, rng: np.random.Generator, heavy=None) -> np.ndarray:
    """:func:`augment` on a whole NHWC batch: a delta and a flip per example, vectorized."""
    n = images.shape[0]
    images = images + rng.uniform(-MAX_DELTA, MAX_DELTA, size=(n, 1, 1, 1)).astype(np.float32)
    flip = rng.random(n) < 0.5
    images[flip] = images[flip][:, :, ::-1, :]
    return burn(images, heavy_factor("augment", heavy))


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


def stage_input(stage: str, files: list[str], size: int, batch: int, heavy=None):
    """The input of ``stage`` (every stage before it) and the function that applies it."""
    rng = np.random.default_rng(0)
    steps = {
        "normalize": lambda src: Elements(src, lambda e: (normalize(e[0], heavy), e[1])),
        "augment": lambda src: Elements(src, lambda e: (augment(e[0], rng, heavy), e[1])),
        "batch": lambda src: Elements(src, batch=batch),
    }
    return staged(stage, STAGES, steps, lambda n: Elements(Read(files, n)))


def to_device(x, y, device_scope):
    """Copy one batch to the device: Keras tensors made under ``keras.device``."""
    with device_scope:
        return keras.ops.convert_to_tensor(x), keras.ops.convert_to_tensor(y)


# --------------------------------------------------------------------------- models


def sgd():
    return keras.optimizers.SGD(learning_rate=0.01)


def sgd_step(training):
    """The pipeline part's ``train_step``: the backend's step (``training.train_step``) with SGD."""

    def train_step(model, loss_fn):
        return training.train_step(model, sgd(), loss_fn)

    return train_step
