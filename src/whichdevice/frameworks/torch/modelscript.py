"""What the script ``diagnose --framework torch --model FILE.py:FUNCTION`` writes calls: the
user's model built and checked, completed with the defaults, and the data it trains on.

The script (``workloads/modelscript.py`` writes it) then trains as a torch user does: a
DataLoader over the tensors and a loop of ``zero_grad``, forward, loss, ``backward``,
``optimizer.step()``; the script path's capture measures that loop. A problem in the user's
files is a :class:`UserFileError` naming the option to change (the pre-flight says it in one line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from whichdevice.frameworks.torch import usermodel as um


@dataclass
class Prepared:
    """The model, its loss and optimizer (the user's, else the defaults), and the data."""

    model: torch.nn.Module
    loss_fn: Any
    optimizer: torch.optim.Optimizer
    data: Any  # a TensorDataset of synthetic samples, or the user's DataLoader / iterable of batches


def prepare(
    path: str,
    function: str,
    *,
    input_shape: tuple[int, ...] | None = None,
    classes: int | None = None,
    samples: int = 10_000,
    data: tuple[str, str] | None = None,
    batch: int | None = None,
) -> Prepared:
    """Build the model, run one forward pass on the input it will get (a wrong shape is the
    error of ``--input-shape``), then draw ``samples`` synthetic (x, y) or load ``data``
    (FILE, FUNCTION returning a DataLoader, re-batched to ``batch`` when given); the loss of
    one batch computed, so that a loss or a batch that cannot train fails here in one line."""
    torch.manual_seed(0)
    user = um.call_model_function(Path(path), function)
    module = user.module
    vocab = um._embedding_vocab(module)
    data_fn = um.UserFunction(Path(data[0]), data[1], "--data") if data else None
    sample = (
        um._data_sample(data_fn, input_shape, batch) if data_fn else um._synthetic_sample(module, input_shape, vocab)
    )
    out = um._output_tensor(um._forward(module, sample, Path(path)), user.loss_fn is not None, function)
    out_shape = tuple(int(d) for d in out.shape[1:]) if isinstance(out, torch.Tensor) else ()
    label_classes = um._label_classes(user.loss_fn, classes, out_shape, sample.y)
    loss_fn = user.loss_fn or um.default_loss(label_classes)
    blame_model = user.loss_fn is not None or data_fn is not None
    optimizer = user.optimizer or torch.optim.Adam(module.parameters(), um.ADAM_LR)
    if data_fn is not None:
        assert sample.y is not None  # the data's first batch: its labels
        _check_loss(module, loss_fn, (sample.x, sample.y), blame_model, Path(path))
        loaded = um.call_data_function(data_fn.path, data_fn.function)
        if batch and um.is_loader(loaded):
            loaded = um.rebuilt_loader(loaded, batch=batch)
        return Prepared(module, loss_fn, optimizer, loaded)
    shape = tuple(int(d) for d in sample.x.shape[1:])
    x = torch.as_tensor(um.synthetic_inputs(samples, shape, vocab))
    y = torch.as_tensor(um.synthetic_labels(samples, label_classes, out_shape))
    b = batch or 32
    _check_loss(module, loss_fn, (x[:b], y[:b]), blame_model, Path(path))  # at the loop's batch: its memory too
    return Prepared(module, loss_fn, optimizer, torch.utils.data.TensorDataset(x, y))


def _check_loss(module: torch.nn.Module, loss_fn: Any, xy: tuple, blame_model: bool, model_path: Path) -> None:
    """The loss of one forward pass (no backward, no optimizer step: the training loop's first
    step is the one measured): a loss that fails on the model's output and these labels, or is
    not one number, is one line naming ``--model`` where the user chose the loss or the data,
    else ``--classes``."""
    try:
        with torch.no_grad():
            loss = loss_fn(module(xy[0]), xy[1])
    except Exception as e:
        other = um._not_the_input(e, model_path, len(xy[0]))
        if other is not None:
            raise other from None
        arg = "--model" if blame_model else "--classes"
        fix = (
            "Make the loss take (model output, labels) of these shapes"
            if blame_model
            else "Check --classes against the model's last layer"
        )
        raise um.UserFileError(arg, f"the loss failed on the model's output: {um._exc_line(e)}", fix) from None
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        what = type(loss).__name__ if not isinstance(loss, torch.Tensor) else f"a tensor of shape {tuple(loss.shape)}"
        raise um.UserFileError(
            "--model", f"the loss returned {what}, not one number", "Return a scalar loss (e.g. reduce it with .mean())"
        )
