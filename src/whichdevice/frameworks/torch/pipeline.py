"""PyTorch's input pipeline for ``whichdevice pipeline --framework torch``: seed
003's image pipeline as a ``Dataset`` + ``DataLoader``, its variants, its stages, and the CNN
and train step that consume the batches. Imported inside a child (it imports torch);
``contracts.Pipeline`` types it, ``workloads/pipeline.py`` drives it as it drives tf.data.

Seed 003's work, as a torch user writes it: uint8 images (HWC) and integer labels; per example,
to a float CHW tensor / 255, a brightness delta drawn from [-0.2, 0.2), a left-right flip half
the time (torchvision's ``ToTensor`` + ``ColorJitter(brightness)`` + ``RandomHorizontalFlip``
in spirit, written in torch ops so torchvision is not needed); ``default_collate`` stacks the
batch. The variants change only how that work is scheduled or written (the ladder:
``frameworks/common/ladders.DATA_LOADER``):

==========  ==================================================================================
serial      ``num_workers=0``: every example made on the training process, between steps
workers     ``num_workers=W`` (W = ``workers()``: 2 or more) worker processes
prefetch    ... + ``prefetch_factor=4`` (batches queued per worker; 2 by default)
persistent  ... + ``persistent_workers=True``: the workers are kept between passes instead of
            started again at every pass over the data
pinned      ... + ``pin_memory=True``, and the copy to the GPU made with ``non_blocking=True``
            (``to_device``): GPU only — on a CPU there is no copy to speed up
python      ``num_workers=0``, the same transforms in NumPy per example and a Python collate
            (``np.stack``): to compare with ``serial``, the same work in torch ops
batched     ``num_workers=0``, a batch sampler: one ``__getitem__`` call per batch makes the
            whole batch with torch ops on the batch tensor (no per-example work, no collate)
==========  ==================================================================================

Every loader drops its last short batch (``drop_last``: no short batch that would change the
step's shape) and is read as an endless stream of passes (``Passes``), as a training loop of
several epochs reads it: a new pass starts the workers again unless they are persistent.

Worker processes are started by ``forkserver`` (Python 3.14's default on Linux), the server
importing this module once: forked from the measuring child instead, workers hung on a lock one
of its threads held at fork time, and ``spawn`` would import
torch again in every worker at every pass. The images live in shared memory
(``share_memory_``), so a worker receives a handle, not a copy. A worker's batch not ready
within ``LOADER_TIMEOUT_S`` fails the case with torch's own message.
"""

from __future__ import annotations

import multiprocessing

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler, default_collate

from whichdevice.frameworks.common.ladders import DATA_LOADER
from whichdevice.frameworks.common.seedimages import *  # noqa: F403 (the part's NumPy members)
from whichdevice.frameworks.common.seedimages import MAX_DELTA, SEED_CLASSES, Elements, Read, heavy_factor, staged
from whichdevice.frameworks.common.seedimages import workers
from whichdevice.frameworks.torch.training import optimizer_step

VARIANTS = DATA_LOADER.variants
STAGES = DATA_LOADER.stages
LOADER_TIMEOUT_S = 30.0
PREFETCH_FACTOR = 4


def burn(x: torch.Tensor, factor: int) -> torch.Tensor:
    """``factor - 1`` extra passes of arithmetic over ``x``, each depending on the last, tied to
    the output without changing it: a constructed slow stage (``--heavy-stage``), as
    TensorFlow's ``burn``."""
    if factor <= 1:
        return x
    acc = torch.zeros((), dtype=torch.float32)
    xf = x.float()
    for _ in range(factor - 1):
        acc = acc + torch.sin(xf + acc).mean()
    return x + torch.clamp(acc.abs(), max=0.0).to(x.dtype)


def to_tensor(image: torch.Tensor) -> torch.Tensor:
    """uint8 HWC -> uint8 CHW (torchvision's layout)."""
    return image.permute(2, 0, 1).contiguous()


def normalize(image: torch.Tensor, heavy=None) -> torch.Tensor:
    return burn(image.float() / 255.0, heavy_factor("normalize", heavy))


def augment(image: torch.Tensor, gen: torch.Generator, heavy=None) -> torch.Tensor:
    """A brightness delta in [-0.2, 0.2), a left-right flip half the time (one example, CHW)."""
    delta = (torch.rand((), generator=gen) * 2 - 1) * MAX_DELTA
    image = image + delta
    if torch.rand((), generator=gen) < 0.5:
        image = torch.flip(image, dims=(2,))
    return burn(image, heavy_factor("augment", heavy))


def augment_batch(images: torch.Tensor, gen: torch.Generator, heavy=None) -> torch.Tensor:
    """:func:`augment` on a whole batch (NCHW) in a few tensor ops: a delta and a flip per example."""
    n = images.shape[0]
    delta = (torch.rand((n, 1, 1, 1), generator=gen) * 2 - 1) * MAX_DELTA
    flip = torch.rand(n, generator=gen) < 0.5
    images = images + delta
    images[flip] = torch.flip(images[flip], dims=(3,))
    return burn(images, heavy_factor("augment", heavy))


def numpy_process(image: np.ndarray, rng: np.random.Generator, heavy=None) -> np.ndarray:
    """The same work in NumPy: float CHW / 255, a brightness delta, a flip half the time."""
    x = image.transpose(2, 0, 1).astype(np.float32) / 255.0
    x = x + np.float32(rng.uniform(-MAX_DELTA, MAX_DELTA))
    if rng.random() < 0.5:
        x = x[:, :, ::-1]
    for _ in range(heavy_factor("augment", heavy) * heavy_factor("normalize", heavy) - 1):
        x = x + np.float32(min(abs(float(np.mean(np.sin(x)))), 0.0))
    return np.ascontiguousarray(x)


class Images(Dataset):
    """Seed 003's images as a map-style ``Dataset``: ``mode`` "ops" (torch ops per example),
    "python" (NumPy per example) or "batched" (a list of indices: the batch at once)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, mode: str = "ops", heavy=None, seed: int = 0):
        self.images = torch.from_numpy(np.ascontiguousarray(images)).share_memory_()
        self.labels = torch.from_numpy(labels).share_memory_()
        self.mode, self.heavy, self.seed = mode, heavy, seed
        self._gen: torch.Generator | None = None
        self._rng: np.random.Generator | None = None

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def gen(self) -> torch.Generator:
        # one generator per process (made in the worker, seeded by its id: no two workers alike)
        if self._gen is None:
            info = torch.utils.data.get_worker_info()
            self._gen = torch.Generator().manual_seed(self.seed + (info.id + 1 if info else 0))
        return self._gen

    def __getstate__(self):  # a worker makes its own generators (torch.Generator does not pickle)
        return {**self.__dict__, "_gen": None, "_rng": None}

    def __getitem__(self, i):
        if isinstance(i, list):  # the batched variant's sampler hands over a batch of indices
            # made CHW while still uint8 (the cheap copy), then converted (a conversion over a
            # permuted view runs strided)
            x = self.images[i].permute(0, 3, 1, 2).contiguous().float() / 255.0
            x = burn(x, heavy_factor("normalize", self.heavy))
            return augment_batch(x, self.gen(), self.heavy), self.labels[i]
        if self.mode == "python":
            if self._rng is None:
                info = torch.utils.data.get_worker_info()
                self._rng = np.random.default_rng(self.seed + (info.id + 1 if info else 0))
            return numpy_process(self.images[i].numpy(), self._rng, self.heavy), int(self.labels[i])
        x = augment(normalize(to_tensor(self.images[i]), self.heavy), self.gen(), self.heavy)
        return x, self.labels[i]


def python_collate(batch):
    """A collate written in Python: the examples stacked with NumPy, then made tensors."""
    xs = np.stack([x for x, _ in batch])
    ys = np.array([y for _, y in batch], dtype=np.int64)
    return torch.from_numpy(xs), torch.from_numpy(ys)


class Passes:
    """A loader read as an endless stream of passes (epochs); ``steps_per_pass`` batches each."""

    def __init__(self, loader: DataLoader, steps_per_pass: int, settings: dict[str, float]):
        self.loader, self.steps_per_pass, self.settings = loader, steps_per_pass, settings

    def __iter__(self):
        while True:
            yield from self.loader


def _context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


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
    """One rung of the ladder (module doc): a ``Passes`` over its ``DataLoader`` (one pass
    when ``repeat`` is False)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} (one of {', '.join(VARIANTS)})")
    mode = {"python": "python", "batched": "batched"}.get(variant, "ops")
    ds = Images(images, labels, mode, heavy)
    w = workers() if variant in ("workers", "prefetch", "persistent", "pinned") else 0
    kw: dict = {"num_workers": w}
    if w:
        kw.update(timeout=LOADER_TIMEOUT_S, multiprocessing_context=_context())
        kw.update(prefetch_factor=PREFETCH_FACTOR if variant == "prefetch" else 2)
        kw.update(persistent_workers=variant == "persistent", pin_memory=variant == "pinned")
    if variant == "batched":
        sampler = BatchSampler(SequentialSampler(range(len(ds))), batch, drop_last=True)
        loader = DataLoader(ds, batch_size=None, sampler=sampler, **kw)
    else:
        collate = python_collate if variant == "python" else default_collate
        loader = DataLoader(ds, batch_size=batch, drop_last=True, collate_fn=collate, **kw)
    steps = max(1, len(ds) // batch)
    settings = {"num_workers": float(w), "prefetch_factor": float(kw.get("prefetch_factor", 0))}
    settings.update(persistent_workers=float(bool(kw.get("persistent_workers"))))
    settings.update(pin_memory=float(bool(kw.get("pin_memory"))))
    return Passes(loader, steps, settings) if repeat else loader


def user_variant(ds, variant: str, batch: int, default_steps: int = 10):
    raise ValueError("--data is TensorFlow's (a tf.data.Dataset): pipeline --framework torch measures seed 003's")


# --------------------------------------------------------------------------- stages


def stage_input(stage: str, files: list[str], size: int, batch: int, heavy=None):
    """The input of ``stage`` (the output of every stage before it) and the function that
    applies ``stage`` to it; ``read`` has no input: it reads the files."""
    gen = torch.Generator().manual_seed(0)
    steps = {
        "to_tensor": lambda src: Elements(src, lambda e: (to_tensor(e[0]), e[1])),
        "normalize": lambda src: Elements(src, lambda e: (normalize(e[0], heavy), e[1])),
        "augment": lambda src: Elements(src, lambda e: (augment(e[0], gen, heavy), e[1])),
        "collate": lambda src: Elements(src, batch=batch, collate=default_collate),
    }
    return staged(stage, STAGES, steps, lambda n: Elements(Read(files, n, torch.from_numpy)))


def to_device(x, y, device_scope):
    """Copy one batch to the device (``device_scope`` is the ``torch.device``): with
    ``non_blocking=True`` from pinned memory, as a user of ``pin_memory=True`` writes it."""
    dev = torch.device(device_scope)
    return x.to(dev, non_blocking=x.is_pinned()), y.to(dev, non_blocking=y.is_pinned())


# --------------------------------------------------------------------------- models


def build_model(net: str, size: int, classes: int = SEED_CLASSES):
    """The TensorFlow page's three CNNs as ``nn.Sequential`` (NCHW), on the device of the
    enclosing ``torch.device`` scope: ``tiny`` (pool + linear), ``small`` (two strided 3x3
    convolutions) and ``heavy`` (two full-resolution 3x3 convolutions of 32 channels)."""
    nn = torch.nn
    torch.manual_seed(0)
    pool = [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    body = {
        "tiny": ([*pool], 3),
        "small": ([nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(), *pool], 32),
        "heavy": ([nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), *pool], 32),
    }
    if net not in body:
        raise ValueError(f"unknown net {net!r}")
    layers, width = body[net]
    return nn.Sequential(*layers, nn.Linear(width, classes))


def loss_for(model, out_dim: int):
    return torch.nn.CrossEntropyLoss() if out_dim > 1 else torch.nn.BCEWithLogitsLoss()


def train_step(model, loss_fn):
    """One SGD step (zero_grad, forward, loss, backward, step); returns the loss tensor, not
    read back (the caller synchronizes)."""
    return optimizer_step(model, torch.optim.SGD(model.parameters(), lr=0.01), loss_fn)
