"""What the script ``diagnose --model FILE.py:FUNCTION`` writes calls for a Keras model: the
user's model built and checked, the loss an uncompiled model is compiled with, and the data.

The script (``workloads/modelscript.py`` writes it) then trains as a Keras user does:
``model.compile(...)`` where the function left the model uncompiled, then ``model.fit``; the
script path's capture measures that fit. A problem in the user's files is a
:class:`UserFileError` naming the option to change (the pre-flight says it in one line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whichdevice.frameworks.common import iospec, usermodel
from whichdevice.frameworks.common.casemodel import is_compiled


@dataclass
class Prepared:
    """The model, the loss it is compiled with when it is not compiled yet, and the data."""

    model: Any
    loss: Any  # for an uncompiled model: the loss its outputs imply
    x: Any  # the inputs, or the user's tf.data dataset of (x, y) batches
    y: Any  # the labels (None with a dataset)


def prepare(
    path: str,
    function: str,
    *,
    input_shape: tuple[int, ...] | None = None,
    classes: int | None = None,
    samples: int = 10_000,
    data: tuple[str, str] | None = None,
    batch: int = 32,
) -> Prepared:
    """Build the model, run one forward pass on the input it will get (a wrong shape is the
    error of ``--input-shape``, a wrong output of ``--classes``), then draw ``samples``
    synthetic (x, y) as the model and its loss take them, or load ``data`` (FILE, FUNCTION
    returning a tf.data dataset) re-batched to ``batch``."""
    model = usermodel.call_model_function(Path(path), function)
    data_fn = usermodel.UserFunction(Path(data[0]), data[1], "--data") if data else None
    inp = usermodel._data_input(data_fn) if data_fn else usermodel._synthetic_input(model, input_shape)
    y_pred = usermodel._forward(model, inp)
    usermodel._check_names(model)
    io_out = iospec.infer_outputs(model, y_pred, classes, is_compiled(model))
    usermodel._output_shape(io_out, classes)
    io = {**(inp.io_in or {"inputs": [], "in_struct": "single", "in_keys": []}), **io_out}
    loss = None if is_compiled(model) else iospec.compile_losses(io)
    if data_fn is not None:
        from whichdevice.frameworks.common import tfdata

        ds = usermodel.call_data_function(data_fn.path, data_fn.function)
        if tfdata.looks_batched(ds):
            ds = ds.unbatch()
        if loss is None:  # the user's own loss, on two of their samples
            _check_loss(model, io, next(iter(ds.batch(2).take(1))), Path(path), function, data_fn)
        return Prepared(model, loss, ds.batch(batch), None)
    x, y = iospec.make_xy(io, samples)
    if loss is None:  # the user's own loss: one computation on two samples, a failure one line
        _check_loss(model, io, iospec.make_xy(io, 2, seed=1), Path(path), function, None)
    return Prepared(model, loss, x, y)


def _check_loss(
    model: Any, io: dict, xy: tuple, path: Path, function: str, data_fn: usermodel.UserFunction | None
) -> None:
    """The compiled loss on the model's output for two samples (no gradient, no optimizer step:
    the first step of ``fit`` is the one measured); where it raises, the user's loss and the
    labels it got are named (``usermodel._StepBlame``)."""
    blame = usermodel._StepBlame(data_fn, io, 2, usermodel.UserFunction(path, function, "--model"))
    try:
        model.compute_loss(x=xy[0], y=xy[1], y_pred=model(xy[0], training=False))
    except Exception as e:
        raise blame.error("the compiled loss", xy, e) from None
