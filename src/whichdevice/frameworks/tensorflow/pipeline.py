"""TensorFlow-only input-pipeline pieces: seed 003's image pipeline and its variants, TFRecord
writing and parsing, the Python-side (``tf.py_function``) version of the same work, the
stage-by-stage datasets, and the models and train step that consume the batches.

Imported by ``workloads/pipeline.py`` as ``whichdevice.frameworks.<name>.pipeline`` inside a
child process (it imports TensorFlow and Keras); not one of the adapter modules every
framework must provide.

Seed 003's pipeline, exactly: synthetic ``uint8`` images of ``size x size x 3`` and integer
labels in ``[0, 10)`` (``np.random.randint``), ``from_tensor_slices``, a ``map`` that casts to
``float32`` and divides by 255, ``tf.image.random_brightness(max_delta=0.2)``,
``tf.image.random_flip_left_right``, then ``batch(32)``. The variants change only *how* that
work is scheduled or stored, never the work itself:

==========  ==================================================================================
serial      ``map(process)`` then ``batch`` — the seed's first example
parallel    ``map(process, num_parallel_calls=AUTOTUNE)``
prefetch    ... + ``prefetch(AUTOTUNE)`` — the seed's second example
cache       ``map(normalize, AUTOTUNE).cache().map(augment, AUTOTUNE)`` + prefetch: the
            deterministic cast/normalize is cached after the first pass; the random
            augmentation must stay after the cache or every epoch would see the same images
tfrecord    the uint8 images written to sharded TFRecord files (seed 003's third example),
            read with ``num_parallel_reads=AUTOTUNE``, parsed + processed in a parallel map,
            prefetched
pyfunc      the same cast/normalize/brightness/flip done in NumPy inside ``tf.py_function``
            (the anti-pattern seed 002 names: Python-side preprocessing), parallel map +
            prefetch — to compare with ``prefetch``, the same work in TF ops
==========  ==================================================================================

Every variant repeats its data before ``batch`` (the loop needs more batches than one pass
has), so every batch is full: no short last batch that would retrace the train step.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import tensorflow as tf

from whichdevice.frameworks.common.seedimages import MAX_DELTA, heavy_factor, shard_slices, staged
from whichdevice.frameworks.common.tfdata import looks_batched

# the pipeline part's (contracts.Pipeline) data and model are shared; its loader, files and stages are tf.data's
from whichdevice.frameworks.common.models import cnn as build_model  # noqa: F401
from whichdevice.frameworks.common.models import logits_loss as loss_for  # noqa: F401
from whichdevice.frameworks.common.seedimages import synthetic_images  # noqa: F401
from whichdevice.frameworks.tensorflow import training

AUTOTUNE = tf.data.AUTOTUNE
STAGES = ("read", "parse", "normalize", "augment", "batch")
VARIANTS = ("serial", "parallel", "prefetch", "cache", "tfrecord", "pyfunc")
TFRECORD_SHARDS = 4

_FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


# --------------------------------------------------------------------------- data


def burn(x, factor: int):
    """``factor - 1`` extra passes of real arithmetic over ``x``, each depending on the
    last, tied to the output so that neither Grappler nor tf.data can prune or fold them.

    Used only to *construct* a known slow stage (``--heavy-stage``), so the analyzer can be
    checked against an answer known in advance. ``tf.minimum(|acc|, 0)`` is 0 at run time
    but not at graph-build time, which keeps the chain alive without changing ``x``.
    """
    if factor <= 1:
        return x
    xf = tf.cast(x, tf.float32)
    acc = tf.constant(0.0)
    for _ in range(factor - 1):
        acc = acc + tf.reduce_mean(tf.sin(xf + acc))
    return x + tf.cast(tf.minimum(tf.abs(acc), 0.0), x.dtype)


def normalize(image, heavy=None):
    """Seed 003: ``tf.cast(image, tf.float32) / 255.0``."""
    return burn(tf.cast(image, tf.float32) / 255.0, heavy_factor("normalize", heavy))


def augment(image, heavy=None):
    """Seed 003's ``augment_image``: random brightness (max_delta 0.2), random left-right flip."""
    image = tf.image.random_brightness(image, max_delta=MAX_DELTA)
    image = tf.image.random_flip_left_right(image)
    return burn(image, heavy_factor("augment", heavy))


def process_example(heavy=None):
    """Seed 003's ``process_example`` (normalize + augment), as a map function."""

    def fn(image, label):
        return augment(normalize(image, heavy), heavy), label

    return fn


def numpy_process(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The same work as :func:`process_example` in NumPy: cast, /255, add a brightness delta
    drawn from [-0.2, 0.2) (what ``random_brightness`` does), flip left-right half the time."""
    x = image.astype(np.float32) / 255.0
    x = x + np.float32(rng.uniform(-MAX_DELTA, MAX_DELTA))
    if rng.random() < 0.5:
        x = x[:, ::-1, :]
    return np.ascontiguousarray(x)


def pyfunc_process(size: int, heavy=None, seed: int = 0):
    """:func:`numpy_process` wrapped in ``tf.py_function``: it runs in the Python interpreter
    (the GIL held) on whichever tf.data thread calls it, so parallel calls barely help."""
    rng = np.random.default_rng(seed)
    factor = heavy_factor("augment", heavy) * heavy_factor("normalize", heavy)

    def work(image):
        x = numpy_process(image.numpy(), rng)
        for _ in range(factor - 1):  # the constructed heavy stage, in Python as well
            x = x + np.float32(min(abs(float(np.mean(np.sin(x)))), 0.0))
        return x

    def fn(image, label):
        out = tf.py_function(work, [image], tf.float32)
        out.set_shape((size, size, 3))
        return out, label

    return fn


# --------------------------------------------------------------------------- TFRecord


def _example(image: np.ndarray, label: int) -> bytes:
    feature = {
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_tfrecords(
    images: np.ndarray, labels: np.ndarray, folder: str | Path, shards: int = TFRECORD_SHARDS
) -> list[str]:
    """Write the examples to ``shards`` TFRecord files (contiguous slices, in order) as seed
    003's third example does (raw uint8 bytes + int64 label). Returns the file names."""
    files = []
    for stem, lo, hi in shard_slices(folder, len(images), shards):
        with tf.io.TFRecordWriter(f"{stem}.tfrecord") as writer:
            for i in range(lo, hi):
                writer.write(_example(images[i], labels[i]))
        files.append(f"{stem}.tfrecord")
    return files


write_files = write_tfrecords  # the name workloads/pipeline.py calls (contracts.Pipeline)


def parse_example(size: int, heavy=None):
    """Seed 003's ``_parse_function`` up to the uint8 image: parse, ``decode_raw``, reshape."""

    def fn(record):
        ex = tf.io.parse_single_example(record, _FEATURES)
        image = tf.reshape(tf.io.decode_raw(ex["image"], tf.uint8), (size, size, 3))
        return burn(image, heavy_factor("parse", heavy)), ex["label"]

    return fn


# --------------------------------------------------------------------------- variants


def build_variant(
    variant: str,
    images: np.ndarray,
    labels: np.ndarray,
    batch: int,
    *,
    files: list[str] | None = None,
    heavy=None,
    repeat: bool = True,
):
    """One rung of the ladder (module doc), repeated before ``batch`` when ``repeat``."""
    size = int(images.shape[1])

    def finish(ds, prefetch: bool):
        if repeat:
            ds = ds.repeat()
        ds = ds.batch(batch)
        return ds.prefetch(AUTOTUNE) if prefetch else ds

    src = tf.data.Dataset.from_tensor_slices((images, labels))
    if variant == "serial":
        return finish(src.map(process_example(heavy)), prefetch=False)
    if variant == "parallel":
        return finish(src.map(process_example(heavy), num_parallel_calls=AUTOTUNE), prefetch=False)
    if variant == "prefetch":
        return finish(src.map(process_example(heavy), num_parallel_calls=AUTOTUNE), prefetch=True)
    if variant == "cache":
        ds = src.map(lambda x, y: (normalize(x, heavy), y), num_parallel_calls=AUTOTUNE).cache()
        ds = ds.map(lambda x, y: (augment(x, heavy), y), num_parallel_calls=AUTOTUNE)
        return finish(ds, prefetch=True)
    if variant == "tfrecord":
        if not files:
            raise ValueError("the tfrecord variant needs the written files")
        ds = tf.data.TFRecordDataset(files, num_parallel_reads=AUTOTUNE)
        parse, proc = parse_example(size, heavy), process_example(heavy)
        ds = ds.map(lambda r: proc(*parse(r)), num_parallel_calls=AUTOTUNE)
        return finish(ds, prefetch=True)
    if variant == "pyfunc":
        return finish(src.map(pyfunc_process(size, heavy), num_parallel_calls=AUTOTUNE), prefetch=True)
    raise ValueError(f"unknown variant {variant!r} (one of {', '.join(VARIANTS)})")


def stage_input(stage: str, files: list[str], size: int, batch: int, heavy=None):
    """The input of ``stage`` (the output of every stage before it, run serially) and the
    function that applies ``stage`` to a dataset. ``read`` has no input: it reads the files."""
    parse = parse_example(size, heavy)
    steps = {
        "parse": lambda ds: ds.map(parse),
        "normalize": lambda ds: ds.map(lambda x, y: (normalize(x, heavy), y)),
        "augment": lambda ds: ds.map(lambda x, y: (augment(x, heavy), y)),
        "batch": lambda ds: ds.batch(batch),
    }

    def read(n):
        ds = tf.data.TFRecordDataset(files)
        return ds if n == math.inf else ds.take(n)

    return staged(stage, STAGES, steps, read)


def floor_input(n: int):
    """``n`` in-memory scalars: counting them is the consumer's own cost, the floor that
    is subtracted from the read stage (which has no upstream input to count)."""
    return tf.data.Dataset.range(n)


def materialize(ds):
    """``ds.cache()`` after one full pass: later passes read it from memory."""
    cached = ds.cache()
    counter(cached)()
    return cached


def counter(ds):
    """A function that runs one pass over ``ds`` inside TensorFlow (``Dataset.reduce`` in a
    ``tf.function``, traced once: no Python per element, no re-tracing per pass) and returns
    the number of elements. Each element's size is read, so no upstream work is skipped."""

    def add(acc, element):
        first = tf.nest.flatten(element)[0]
        return acc + 1 + 0 * tf.cast(tf.size(first), tf.int64)

    @tf.function
    def run():
        return ds.reduce(tf.constant(0, tf.int64), add)

    return run


def to_device(x, y, device_scope):
    """Copy one batch to the device (``tf.identity`` under its scope): host-to-device."""
    with device_scope:
        return tf.identity(x), tf.identity(y)


# --------------------------------------------------------------------------- user data


def user_variant(ds, variant: str, batch: int, default_steps: int = 10):
    """The user's dataset as given (batched with ``batch`` if it is not), repeated;
    ``user+prefetch`` appends ``prefetch(AUTOTUNE)``. Returns (dataset, steps in one pass:
    its cardinality when TensorFlow knows it, else ``default_steps``)."""
    if not looks_batched(ds):
        ds = ds.batch(batch, drop_remainder=True)
    n = int(ds.cardinality().numpy())
    ds = ds.repeat()
    ds = ds.prefetch(AUTOTUNE) if variant == "user+prefetch" else ds
    return ds, (n if n > 0 else default_steps)


# --------------------------------------------------------------------------- models


def train_step(model, loss_fn):
    """One SGD step (seed 001's ``tf.function`` + ``GradientTape``: ``training.train_step``);
    returns the loss tensor, not read back (the caller synchronizes)."""
    import keras

    return training.train_step(model, keras.optimizers.SGD(learning_rate=0.01), loss_fn)
