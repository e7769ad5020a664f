"""Plain-PyTorch training of the seeds' models, for ``workloads/train.py`` (imported inside a
child; it imports torch). The same architectures as ``workloads/models.py`` written as
``nn.Sequential`` (the reference's gpu_probe.py for seed 001): the softmax / sigmoid of the
Keras models is folded into the loss (``CrossEntropyLoss`` on logits, ``BCEWithLogitsLoss``),
which is the same function, computed the way torch users write it.

There is no ``model.fit`` and no tf.data: the seeds' pipelines become numpy batches
(``NumpyBatches``) copied to the device inside each step, as gpu_probe.py's seed 001 loop.
"""

from __future__ import annotations

import contextlib
import copy

import torch

from whichdevice.frameworks.common.batches import dataset, user_dataset  # noqa: F401 (this training part's)

# The step's settings and the host-to-device copy live in ``steps.py``; re-exported here, the
# training module's names.
from whichdevice.frameworks.torch.steps import STEP_OPTIONS, StepOptions, _tensor, on_device  # noqa: F401


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
    o = STEP_OPTIONS.get(model, StepOptions())
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(o.autocast)

    def step(x, y):
        if o.cudnn_benchmark is not None:  # process-wide: set on every step, A and B alternate
            torch.backends.cudnn.benchmark = o.cudnn_benchmark
        xb, yb = _tensor(x, device, o.non_blocking), _tensor(y, device, o.non_blocking)
        if o.channels_last and xb.dim() == 4:
            xb = xb.contiguous(memory_format=torch.channels_last)
        optimizer.zero_grad(set_to_none=o.set_to_none)
        with torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext():
            loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        return loss

    return step


def read_back(loss) -> float:
    """``.item()``: the host read per step (a device sync on the GPU)."""
    return loss.item()
