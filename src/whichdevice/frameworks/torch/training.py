"""Plain-PyTorch training of the seeds' models, for ``workloads/train.py`` (imported inside a
child; it imports torch). The same architectures as ``workloads/models.py`` written as
``nn.Sequential`` (the reference's gpu_probe.py for seed 001): the softmax / sigmoid of the
Keras models is folded into the loss (``CrossEntropyLoss`` on logits, ``BCEWithLogitsLoss``),
which is the same function, computed the way torch users write it.

There is no ``model.fit`` and no tf.data: the seeds' pipelines become numpy batches
(``NumpyBatches``) copied to the device inside each step, as gpu_probe.py's seed 001 loop.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from whichdevice.frameworks.common.batches import dataset, user_dataset  # noqa: F401 (this training part's)


def build_model(name: str):
    """A fresh built-in model, on the device of the enclosing ``torch.device`` scope."""
    nn = torch.nn
    torch.manual_seed(0)
    if name == "seed001":
        return nn.Sequential(nn.Linear(100, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "seed002":
        return nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 1))
    raise ValueError(f"plain torch has the built-in models seed001 and seed002 only, not {name!r}")


def clone_model(model):
    """The counterpart of ``keras.models.clone_model``: a deep copy on the same device."""
    return copy.deepcopy(model)


def optimizer_and_loss(name: str, model):
    """Adam 1e-3 (both seeds' Keras default) and the seed's loss, on logits."""
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    return opt, (torch.nn.CrossEntropyLoss() if name == "seed001" else torch.nn.BCEWithLogitsLoss())


def train_step(model, optimizer, loss_fn):
    """``zero_grad``, forward, loss, ``backward``, ``step`` — the plain loop of gpu_probe.py.
    Numpy batches are copied to the model's device inside the step (the seeds' host data).
    Returns the loss tensor (not read back)."""
    device = next(model.parameters()).device
    on_device = optimizer_step(model, optimizer, loss_fn)

    def step(x, y):
        return on_device(_tensor(x, device), _tensor(y, device))

    return step


def optimizer_step(model, optimizer, loss_fn):
    """One step on tensors already where the model is: ``zero_grad``, forward, loss, ``backward``,
    ``step``. Returns the loss tensor, not read back (the caller synchronizes)."""

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def _tensor(a, device):
    """Host numpy (or a tensor) -> a tensor on ``device``; float64 inputs (seed 001 draws them)
    become float32, as the Keras layer casts them; integer labels stay int64."""
    if isinstance(a, torch.Tensor):
        return a if a.device == device else a.to(device)
    t = torch.from_numpy(np.asarray(a))
    if t.dtype == torch.float64:
        t = t.float()
    return t.to(device)


def on_device(x, y, device_scope):
    """One batch copied to the device once (steady steps without input costs)."""
    dev = device_scope if isinstance(device_scope, torch.device) else torch.get_default_device()
    return _tensor(x, dev), _tensor(y, dev)


def read_back(loss) -> float:
    """``.item()``: the host read per step (a device sync on the GPU)."""
    return loss.item()
