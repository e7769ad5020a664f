"""The plain-PyTorch step's settings and its host-to-device copy: shared by the training module
(``training.py``: the train workload's step), which reads the options per model. Imported inside a child
(it imports torch).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class StepOptions:
    """How ``train_step`` runs one step, and how the user's case builds its model and loader: the
    settings the torch fixes vary (``fixes.py`` maps a case's parameters to them). The defaults
    are the plain loop."""

    set_to_none: bool = True  # optimizer.zero_grad(set_to_none=...): torch's default since 2.0
    autocast: str = "off"  # "bfloat16" / "float16": forward and loss under torch.autocast
    channels_last: bool = False  # 4-d inputs copied to channels_last each step (the model too)
    cudnn_benchmark: bool | None = None  # set torch.backends.cudnn.benchmark before each step (GPU)
    non_blocking: bool = False  # host batches copied with .to(device, non_blocking=True)
    num_workers: int | None = None  # the DataLoader's workers (None: the user's loader's own, else 0)
    pin_memory: bool | None = None  # the DataLoader's pin_memory (None: the user's loader's own)
    compile: bool = False  # torch.compile(model), compiled in the warm-up


# The options of the models built with non-default ones, by model (train_step looks them up).
STEP_OPTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _tensor(a, device, non_blocking: bool = False):
    """Host numpy (or a tensor) -> a tensor on ``device``; float64 inputs (seed 001 draws them)
    become float32, as the Keras layer casts them; integer labels stay int64."""
    if isinstance(a, torch.Tensor):
        return a if a.device == device else a.to(device, non_blocking=non_blocking)
    t = torch.from_numpy(np.asarray(a))
    if t.dtype == torch.float64:
        t = t.float()
    return t.to(device, non_blocking=non_blocking)


def on_device(x, y, device_scope):
    """One batch copied to the device once (steady steps without input costs)."""
    dev = device_scope if isinstance(device_scope, torch.device) else torch.get_default_device()
    return _tensor(x, dev), _tensor(y, dev)
