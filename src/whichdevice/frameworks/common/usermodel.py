"""The user's model and data files, loaded and checked inside a child process (imports Keras
and, for ``--data``, TensorFlow).

The pre-flight's model check (:func:`check_job`, run by the one pre-flight child,
``measure/scriptchild.py``) answers ``{"ok": true, ...}`` or ``{"ok": false, "argument",
"problem", "fix"}``; ``workloads/userfile.py`` starts it (``workloads/scriptplan.check_model``)
and turns a failure into a ``UsageError``. The measuring children call ``call_model_function`` /
``call_data_function`` (``userload.py``, re-exported here) to rebuild the user's model and
data for every case.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The user's files are loaded by ``userload`` (shared with ``casemodel``); its names are
# re-exported here, where the commands and the torch pre-flight have always found them.
from whichdevice.frameworks.common.userload import (  # noqa: F401
    UserFileError,
    UserFunction,
    _exc_line,
    call_data_function,
    call_model_function,
    check_failed,
    in_loss,
    is_out_of_memory,
    load_function,
    out_of_memory,
    user_frame,
)


# TensorFlow's name-scope rules: a name outside them passes building and a forward pass, then
# fails every training step ("... is not a valid root scope name"), so it is checked here.
_ROOT_SCOPE = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_SCOPE = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


def _check_names(model) -> None:
    import keras

    if keras.backend.backend() != "tensorflow":
        return
    named = [("model", model.name, _ROOT_SCOPE)]
    named += [("layer", layer.name, _SCOPE) for layer in getattr(model, "layers", [])]
    for what, name, pattern in named:
        if not pattern.match(str(name)):
            raise UserFileError(
                "--model",
                f"the {what} name {str(name)!r} is not one TensorFlow accepts in a training step",
                "Use letters, digits, '.', '_' and '-' only (no spaces), starting with a letter or digit, "
                f"e.g. name={re.sub(r'[^A-Za-z0-9_.-]', '_', str(name)).lstrip('_-') or 'model'!r}",
            )


@dataclass
class _Input:
    """The input of the pre-flight's forward pass, and how an error names it."""

    x: Any
    io_in: dict | None  # the inputs read from the model (None: the user's --data gives them)
    first_in: tuple[int, ...]  # the first input's shape, without the batch
    shape_arg: str  # the argument that set it
    shape_text: str


def _data_input(data_fn: UserFunction) -> _Input:
    """Two samples of the user's data (unbatched first when its elements are batches)."""
    ds = call_data_function(data_fn.path, data_fn.function)
    from whichdevice.frameworks.common import tfdata

    if tfdata.looks_batched(ds):
        ds = ds.unbatch()
    first = next(iter(ds.batch(2).take(1)), None)
    if first is None:  # was "--model: checking it failed: StopIteration"
        raise UserFileError(
            "--data",
            f"your --data function {data_fn.function}() returned an empty dataset",
            "Return a dataset with at least one (inputs, labels) pair",
        )
    x, _ = first
    import tensorflow as tf

    x = tf.nest.map_structure(lambda t: t.numpy(), x)
    first = tf.nest.flatten(x)[0]
    return _Input(x, None, tuple(first.shape[1:]), "--data", f"the data's inputs {tuple(first.shape[1:])}")


def _synthetic_input(model, input_shape: tuple[int, ...] | None) -> _Input:
    """Two random samples of the inputs the model takes (``iospec``; ``--input-shape`` where
    the model does not tell)."""
    from whichdevice.frameworks.common import iospec

    io_in = iospec.infer_inputs(model, input_shape)  # a UserFileError where the inputs cannot be drawn
    x = iospec.draw_inputs(io_in, 2, __import__("numpy").random.default_rng(0))
    ins = io_in["inputs"]
    shape_text = (
        f"input of shape {tuple(ins[0]['shape'])}"
        + (f" (token ids < {ins[0]['high']})" if ins[0].get("high") is not None else "")
        if len(ins) == 1
        else f"inputs {iospec.describe_inputs(io_in, 2)}"
    )
    return _Input(x, io_in, tuple(io_in["inputs"][0]["shape"]), "--input-shape", shape_text)


def _forward(model, inp: _Input):
    """One forward pass (inference mode); a model that rejects the input names its shape."""
    try:
        return model(inp.x, training=False)
    except Exception as e:
        raise UserFileError(
            inp.shape_arg,
            f"the model rejects {inp.shape_text}: {_exc_line(e)}",
            "Pass the shape the model's first layer expects",
        ) from None


def _output_shape(io_out: dict, classes: int | None) -> tuple[int, ...]:
    """The first output's shape, checked against ``--classes`` for a one-output model."""
    out_shape = tuple(io_out["outputs"][0]["shape"])
    if classes is not None and len(io_out["outputs"]) == 1:
        last = out_shape[-1] if out_shape else 1
        if last != classes and not (classes == 2 and last == 1):
            raise UserFileError(
                "--classes",
                f"{classes} classes, but the model outputs {last} values per sample (output shape {out_shape})",
                f"Pass --classes {last} or change the last layer",
            )
    return out_shape


def check(
    model_fn: UserFunction,
    input_shape: tuple[int, ...] | None,
    classes: int | None,
    data_fn: UserFunction | None,
) -> dict:
    """Pre-flight, inside a child (imports Keras): build the model, read its inputs, outputs
    and loss (``iospec``), run one forward pass on the input it will get, compare its outputs
    with ``classes``. Returns facts for the parent: ``input_shape``, ``output_shape``,
    ``compiled``, ``name``, ``params`` and ``io`` (the inputs and targets, as JSON text)."""
    from whichdevice.frameworks.common import iospec

    model = call_model_function(model_fn.path, model_fn.function)
    compiled = bool(getattr(model, "compiled", False) and getattr(model, "optimizer", None) is not None)
    inp = _data_input(data_fn) if data_fn is not None else _synthetic_input(model, input_shape)
    y = _forward(model, inp)
    _check_names(model)
    io_out = iospec.infer_outputs(model, y, classes, compiled)
    out_shape = _output_shape(io_out, classes)
    from whichdevice.frameworks.common.casemodel import custom_train_step

    io = {**(inp.io_in or {"inputs": [], "in_struct": "single", "in_keys": []}), **io_out}
    io["custom_train_step"] = custom_train_step(model)
    io["compiled"] = compiled
    facts = {
        "ok": True,
        "name": model.name,
        "params": int(model.count_params()),
        "compiled": compiled,
        "input_shape": list(inp.first_in),
        "output_shape": list(out_shape),
        "io": iospec.dumps(io),
        "losses": [o["loss"] for o in io["outputs"]],
    }
    return facts


def case_params(model_fn: UserFunction, data_fn: UserFunction | None, facts: dict, classes: int | None) -> dict:
    """The train cases' parameters for the user's model (the parent's
    ``userfile.user_model_params`` builds the same from the facts)."""
    out_shape = facts["output_shape"]
    label_classes = classes
    if classes is not None and out_shape and out_shape[-1] == 1:
        label_classes = 1  # one sigmoid output: binary labels
    return user_case_params(model_fn, data_fn, facts, classes, label_classes, io=facts.get("io"))


def user_case_params(
    model_fn: UserFunction, data_fn: UserFunction | None, facts: dict, classes: int | None, label_classes, **more
) -> dict:
    """The case parameters naming the user's model, data and shapes (from a pre-flight's facts),
    every framework's, then ``more`` of the framework's own."""
    return {
        "model": "user",
        "model_file": str(model_fn.path),
        "model_fn": model_fn.function,
        "input_shape": ",".join(map(str, facts["input_shape"])),
        "classes": classes,
        "label_classes": label_classes,
        "output_shape": ",".join(map(str, facts["output_shape"])),
        "data_file": str(data_fn.path) if data_fn else None,
        "data_fn": data_fn.function if data_fn else None,
        **more,
    }


# The pre-flight's step timing: steady calls until this many seconds (at least 3 calls).
def _shapes_text(tree) -> str:
    import numpy as np

    from keras import tree as ktree

    shapes = [tuple(np.shape(a)) for a in ktree.flatten(tree)]
    return (
        ", ".join(str(s).replace(",)", ")") for s in shapes) if len(shapes) > 1 else str(shapes[0]).replace(",)", ")")
    )


@dataclass(frozen=True)
class _StepBlame:
    """The one-line error of a failed pre-flight training step: what it got (the user's
    batches or the labels made for the model) against which output, and the fix."""

    data_fn: UserFunction | None
    io: dict
    batch: int
    model_fn: UserFunction | None = None

    def what(self, x, y) -> str:
        from whichdevice.frameworks.common import iospec

        if self.data_fn is not None:
            return f"your --data batches (x {_shapes_text(x)}, y {_shapes_text(y)})"
        return f"labels {iospec.describe_targets(self.io, self.batch)}"

    def error(self, where: str, xy: tuple, e: BaseException) -> UserFileError:
        from whichdevice.frameworks.common import iospec

        if is_out_of_memory(e):
            return out_of_memory(e, self.batch)
        own = self.model_fn is not None and in_loss(e) and user_frame(e, self.model_fn.path)
        if own and self.model_fn is not None and self.data_fn is None:
            # the user's own loss raised on labels made for the model: their shape may be what it
            # refuses (a loss that reshapes its labels), so both the labels and the loss are named
            function, line = own
            name = self.model_fn.path.name
            return UserFileError(
                "--model",
                f"one training step ({where}) failed in your loss {function}() ('{name}' line {line}) with "
                f"{self.what(*xy)} against the output {iospec.describe_outputs(self.io, self.batch)}: {_exc_line(e)}",
                "Pass your own batches with --data FILE.py:FUNCTION if your loss needs other labels; "
                f"else fix the loss your model's compile() is given in '{name}'",
            )
        if own and self.model_fn is not None:  # the user's own loss raised (blamed --data)
            function, line = own
            name = self.model_fn.path.name
            return UserFileError(
                "--model",
                f"one training step ({where}) failed in your loss {function}() ('{name}' line {line}): {_exc_line(e)}",
                f"Fix the loss your model's compile() is given in '{name}'",
            )
        data_fn = self.data_fn
        fix = (
            f"Check that {data_fn.function}() yields (inputs, labels) as your model.fit takes them"
            if data_fn is not None
            else "Pass your own batches with --data FILE.py:FUNCTION (a tf.data.Dataset of (x, y) as your "
            "model.fit takes them)"
            + (", or --classes N for class-id labels" if not self.io.get("compiled", True) else "")
        )
        return UserFileError(
            "--data" if data_fn is not None else "--model",
            f"one training step ({where}) failed with {self.what(*xy)} against the output "
            f"{iospec.describe_outputs(self.io, self.batch)}: {_exc_line(e)}",
            fix,
        )


def check_job(job: dict) -> dict:
    """The pre-flight's model check (``measure/scriptchild.py`` runs it for ``workloads/userfile.py``):
    :func:`check` on the job's model (and data), with the framework's import timed (the measuring
    children pay it too); the one-line failure (``check_failed``) when anything in it fails."""
    try:
        model_fn = UserFunction(Path(job["model"][0]), job["model"][1], "--model")
        data_fn = UserFunction(Path(job["data"][0]), job["data"][1], "--data") if job.get("data") else None
        shape = tuple(job["input_shape"]) if job.get("input_shape") else None
        t0 = time.perf_counter()
        import keras  # noqa: F401

        import_s = time.perf_counter() - t0
        result = check(model_fn, shape, job.get("classes"), data_fn)
    except (UserFileError, SystemExit, Exception) as e:
        return check_failed(e)
    result["import_s"] = import_s
    return result
