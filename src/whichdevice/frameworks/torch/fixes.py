"""How PyTorch applies the catalogue's fixes (``workloads/fixes.py``) to the user's train case.

One adapter function per fix, named by its key: from the case's value of the fix's parameter to
the step's settings (``steps.StepOptions``), which ``steps.train_step`` reads (the user's own
loop is varied by the script capture instead). A case that does not name a fix keeps the plain loop's setting.
Adding a torch fix is its catalogue entry and its function here (CONTRIBUTING.md, "How to add a
fix"); a fix on a setting the step does not have yet adds that field to ``StepOptions``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from whichdevice.frameworks.torch.steps import StepOptions


def set_to_none(o: StepOptions, value: Any) -> StepOptions:
    """``optimizer.zero_grad(set_to_none=...)``."""
    return dataclasses.replace(o, set_to_none=bool(value))


def autocast(o: StepOptions, value: Any) -> StepOptions:
    """``"off"``, ``"bfloat16"`` or ``"float16"``: forward and loss under ``torch.autocast``."""
    return dataclasses.replace(o, autocast=str(value))


def channels_last(o: StepOptions, value: Any) -> StepOptions:
    """The model and each 4-d batch in ``torch.channels_last``."""
    return dataclasses.replace(o, channels_last=bool(value))


def cudnn_benchmark(o: StepOptions, value: Any) -> StepOptions:
    """``torch.backends.cudnn.benchmark`` set before each step (GPU)."""
    return dataclasses.replace(o, cudnn_benchmark=value)


def num_workers(o: StepOptions, value: Any) -> StepOptions:
    """The DataLoader's worker processes (loop cases over a loader)."""
    return dataclasses.replace(o, num_workers=int(value))


def pin_memory(o: StepOptions, value: Any) -> StepOptions:
    """The DataLoader's batches pinned, and copied with ``non_blocking=True``."""
    return dataclasses.replace(o, pin_memory=bool(value), non_blocking=bool(value))


def torch_compile(o: StepOptions, value: Any) -> StepOptions:
    """``torch.compile(model)``, compiled in the warm-up within the case's ``compile_limit_s``."""
    return dataclasses.replace(o, compile=bool(value))


# The adapters, by the fix's parameter.
ADAPTERS: dict[str, Callable[[StepOptions, Any], StepOptions]] = {
    f.__name__: f
    for f in (set_to_none, autocast, channels_last, cudnn_benchmark, num_workers, pin_memory, torch_compile)
}


def step_options(params: dict[str, Any]) -> StepOptions:
    """The settings of a case: the plain loop's, with every fix it names applied."""
    o = StepOptions()
    for name, apply in ADAPTERS.items():
        if name in params:
            o = apply(o, params[name])
    return o
