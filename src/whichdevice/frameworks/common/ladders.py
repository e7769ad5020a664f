"""The ``pipeline`` command's variant ladders, one per input-pipeline API: TensorFlow's
``tf.data``, PyTorch's ``DataLoader`` and Keras' ``PyDataset``.

Parent-safe (no framework import): the CLI checks ``--variants`` against a ladder, the workload
plans its cases from it, and the analysis and the page take their words from it, so that a
record speaks of the loader it measured. Each framework's ``env.py`` names its ladder
(``PIPELINE``); the loader itself is the framework's ``pipeline.py`` (a child-side part).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ladder:
    """One input-pipeline API's variants (baseline first) and the words its record uses.

    ``gpu_only``: variants measured on a GPU device only, with why (on a CPU device the row
    says "not measured here"); ``needs``: variants that need another module installed (the
    module's import name); ``python_pair``: (the same preprocessing in Python, in the
    framework's ops) — compared with each other, pipeline alone; ``file_variants``: the
    variants that read the images back from files the child writes."""

    loader: str
    variants: tuple[str, ...]
    stages: tuple[str, ...]
    heavy_stages: tuple[str, ...]
    stage_title: str
    model_batch_from: str
    python_pair: tuple[str, str] | None
    python_names: tuple[str, str]  # how the comparison names the pair (python, ops)
    python_vs_ops: str  # the verdict's sentence, up to the colon
    host_work: str  # where the input work runs beside a GPU (the work-place line)
    gpu_only: dict[str, str] = field(default_factory=dict)
    needs: dict[str, str] = field(default_factory=dict)
    file_variants: tuple[str, ...] = ()
    describe: dict[str, str] = field(default_factory=dict)  # each variant, for --help and the docs


TF_DATA = Ladder(
    loader="tf.data",
    variants=("serial", "parallel", "prefetch", "cache", "tfrecord", "pyfunc"),
    stages=("read", "parse", "normalize", "augment", "batch"),
    heavy_stages=("parse", "normalize", "augment"),
    stage_title="stages of the TFRecord pipeline in isolation (one thread)",
    model_batch_from="prefetch",
    python_pair=("pyfunc", "prefetch"),
    python_names=("tf.py_function", "tf ops"),
    python_vs_ops="the same preprocessing in Python (tf.py_function) vs in TF ops",
    host_work=(
        "the tf.data work (read, map, augment) runs on the host CPU — tf.data's kernels are CPU kernels — "
        "and only the train step runs on the GPU."
    ),
    file_variants=("tfrecord",),
)

DATA_LOADER = Ladder(
    loader="DataLoader",
    variants=("serial", "workers", "prefetch", "persistent", "pinned", "python", "batched"),
    stages=("read", "to_tensor", "normalize", "augment", "collate"),
    heavy_stages=("normalize", "augment"),
    stage_title="stages of the Dataset + DataLoader pipeline in isolation (one thread)",
    model_batch_from="serial",
    python_pair=("python", "serial"),
    python_names=("NumPy per example", "torch ops"),
    python_vs_ops="the same transforms and collate in Python (NumPy per example) vs in torch ops",
    host_work=(
        "the Dataset and DataLoader work (indexing, transforms, collate) runs on the host CPU, in the "
        "DataLoader's worker processes when it has any, and only the train step runs on the GPU."
    ),
    gpu_only={"pinned": "pinned host memory only speeds host-to-GPU copies"},
    describe={
        "serial": "num_workers=0: transforms in torch ops per example, default collate, on the training process",
        "workers": "num_workers=2 or more (worker processes)",
        "prefetch": "workers + prefetch_factor=4 (2 by default)",
        "persistent": "workers + persistent_workers=True (kept between passes)",
        "pinned": "workers + pin_memory=True, copies with non_blocking=True (GPU only)",
        "python": "num_workers=0: the same transforms in NumPy per example, collated in Python",
        "batched": "num_workers=0: a batch sampler, the transforms in torch ops on the whole batch",
    },
)

PY_DATASET = Ladder(
    loader="PyDataset",
    variants=("serial", "threads", "processes", "batched", "tfdata"),
    stages=("read", "normalize", "augment", "batch"),
    heavy_stages=("normalize", "augment"),
    stage_title="stages of the PyDataset pipeline in isolation (one thread)",
    model_batch_from="batched",
    python_pair=("serial", "batched"),
    python_names=("per example", "on the batch"),
    python_vs_ops="the same NumPy preprocessing per example in Python vs vectorized on the batch",
    host_work=(
        "the PyDataset work (__getitem__: indexing, transforms, batching) runs on the host CPU, in its "
        "workers when it has any, and only the train step runs on the GPU."
    ),
    needs={"tfdata": "tensorflow"},
    describe={
        "serial": "PyDataset(workers=1): NumPy preprocessing per example in __getitem__, on the training thread",
        "threads": "workers=2 or more, use_multiprocessing=False (a thread pool)",
        "processes": "workers=2 or more, use_multiprocessing=True (a process pool)",
        "batched": "workers=1: the same preprocessing vectorized on the whole batch",
        "tfdata": "tf.data (parallel map in TF ops, prefetch) read as NumPy batches, as the Keras guides do",
    },
)
