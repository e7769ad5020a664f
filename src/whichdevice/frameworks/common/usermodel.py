"""The user's model and data files, loaded and checked inside a child process (imports Keras
and, for ``--data``, TensorFlow).

``python -m whichdevice.frameworks.common.usermodel JOB`` is the pre-flight child: it runs
``check`` and prints one JSON line, ``{"ok": true, ...}`` or ``{"ok": false, "argument",
"problem", "fix"}``; ``workloads/userfile.py`` starts it (through ``core.process``) and turns a
failure into a ``UsageError``. The measuring children call ``call_model_function`` /
``call_data_function`` to rebuild the user's model and data for every case.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class UserFunction:
    path: Path
    function: str
    argument: str  # "--model" or "--data"

    @property
    def text(self) -> str:
        return f"{self.path}:{self.function}"


class UserFileError(Exception):
    """A problem in the user's file, as (argument, problem, fix)."""

    def __init__(self, argument: str, problem: str, fix: str):
        super().__init__(f"{argument}: {problem}. {fix}")
        self.argument, self.problem, self.fix = argument, problem, fix


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def check_failed(e: BaseException) -> dict:
    """A check child's answer when the check raised: the user's file's problem as it said it,
    the user's code calling sys.exit() / exit(), or a bug of ours or an odd object (its
    traceback on the child's stderr): each one line."""
    if isinstance(e, UserFileError):
        return {"ok": False, "argument": e.argument, "problem": e.problem, "fix": e.fix}
    if isinstance(e, SystemExit):
        return {
            "ok": False,
            "argument": "--model",
            "problem": f"the user's code exited (sys.exit({e.code!r})) while it was being checked",
            "fix": "Remove the exit from the file's top level and from the function",
        }
    traceback.print_exc()
    return {
        "ok": False,
        "argument": "--model",
        "problem": f"checking it failed: {_exc_line(e)}",
        "fix": "Run the file on its own to see the error",
    }


def _exc_line(e: BaseException) -> str:
    """One line of an exception for a one-line error: the line that says what is wrong."""
    lines = [ln.strip() for ln in _ANSI.sub("", str(e)).strip().splitlines() if ln.strip()]
    # Keras wraps a layer's error: "Exception encountered when calling Sequential.call()." first,
    # then what is wrong ("Input 0 of layer ... is incompatible ...: expected ..."), sometimes
    # after the offending tensor's values ("Invalid input shape for input [[0.63 ...").
    if lines and lines[0].startswith("in user code") and len(lines) > 1:
        # a tf.function's error: the traced stack first, what is wrong on its last line
        lines = lines[-1:]
    telling = [ln for ln in lines if not ln.startswith("Exception encountered when calling")]
    expected = [ln for ln in telling if "expected" in ln.lower()]
    line = (expected or telling or lines or [""])[0].rstrip(".")
    line = re.sub(r"\s*for '\{\{node [^}]*\}\}.*$", "", line)  # TF's graph op text after the message
    if line.startswith(f"{type(e).__name__}: "):
        line = line[len(type(e).__name__) + 2 :]
    if line.find("Expected ") > 0:  # "<tensor values> with name ... Expected shape (None, 8), but ..."
        line = line[line.find("Expected ") :]
    return f"{type(e).__name__}: {line[:300]}" if line else type(e).__name__


def load_function(path: str | Path, function: str, argument: str):
    """Import the user's file (as a fresh module) and return the named callable."""
    path = Path(path)
    if not path.is_file():
        if path.exists():  # a FIFO or a device: never opened (reading it could wait forever)
            raise UserFileError(argument, f"'{path}' is not a regular file", "Pass a .py file")
        raise UserFileError(argument, f"no such file '{path}'", "Check the path.")
    try:
        source = path.read_text(encoding="utf-8")
        compile(source, str(path), "exec")
    except SyntaxError as e:
        raise UserFileError(
            argument,
            f"'{path.name}' has a syntax error at line {e.lineno}: {e.msg}",
            "Fix the file so that `python " + path.name + "` runs",
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserFileError(
            argument, f"cannot read '{path}' ({type(e).__name__})", "Pass a readable UTF-8 .py file"
        ) from None
    spec = importlib.util.spec_from_file_location(f"whichdevice_user_{path.stem}", path)
    if spec is None or spec.loader is None:  # no loader for its suffix (model.txt): was an AttributeError
        raise UserFileError(argument, f"'{path.name}' is not a Python source file", "Pass a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # let the file import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise UserFileError(
            argument, f"importing '{path.name}' raised {_exc_line(e)}", "Fix the error at the top level of the file"
        ) from None
    finally:
        if sys.path and sys.path[0] == str(path.parent):
            sys.path.pop(0)
    fn = getattr(module, function, None)
    if fn is None:
        names = sorted(
            n
            for n, v in vars(module).items()
            if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
        )
        have = f" (it defines: {', '.join(names)})" if names else " (it defines no functions)"
        raise UserFileError(
            argument,
            f"'{path.name}' has no function '{function}'{have}",
            f"Name one of its functions after the colon, e.g. {argument} {path.name}:{names[0] if names else 'build'}",
        )
    if not callable(fn):
        raise UserFileError(
            argument,
            f"'{function}' in '{path.name}' is a {type(fn).__name__}, not a function",
            "Point to a function that returns the model",
        )
    return fn


def call_model_function(path, function: str):
    """Call the user's model function and check it returns a Keras model."""
    import keras

    fn = load_function(path, function, "--model")
    try:
        model = fn()
    except Exception as e:
        raise UserFileError(
            "--model",
            f"{function}() raised {_exc_line(e)}",
            f"Fix {function}() in '{Path(path).name}' (it is called with no arguments)",
        ) from None
    if not isinstance(model, keras.Model):
        if _is_torch(model):
            raise UserFileError(
                "--model",
                f"{function}() returned a PyTorch model ({_torch_what(model)}), not a Keras model",
                "Add --framework torch to diagnose it as a PyTorch model",
            )
        raise UserFileError(
            "--model",
            f"{function}() returned {type(model).__name__}, not a Keras model",
            "Return a keras.Model (e.g. keras.Sequential([...])), compiled or not",
        )
    return model


def _is_torch(obj) -> bool:
    """An nn.Module, or a (module, loss[, optimizer]) tuple, told without importing torch."""
    if isinstance(obj, (tuple, list)) and obj:
        obj = obj[0]
    return any(getattr(c, "__module__", "").startswith("torch.nn") for c in type(obj).__mro__)


def _torch_what(obj) -> str:
    if isinstance(obj, (tuple, list)):
        return f"a tuple starting with the nn.Module {type(obj[0]).__name__}"
    return f"the nn.Module {type(obj).__name__}"


def call_data_function(path, function: str):
    from whichdevice.frameworks.tensorflow import training

    fn = load_function(path, function, "--data")
    try:
        ds = fn()
    except Exception as e:
        raise UserFileError(
            "--data",
            f"{function}() raised {_exc_line(e)}",
            f"Fix {function}() in '{Path(path).name}' (it is called with no arguments)",
        ) from None
    if not training.is_dataset(ds):
        raise UserFileError(
            "--data",
            f"{function}() returned {type(ds).__name__}, not a tf.data.Dataset",
            "Return tf.data.Dataset.from_tensor_slices((x, y)) or similar",
        )
    spec = ds.element_spec
    if not (isinstance(spec, tuple) and len(spec) >= 2):
        raise UserFileError(
            "--data",
            f"{function}() yields {type(spec).__name__} elements, not (x, y) pairs",
            "Make each element an (inputs, labels) pair",
        )
    return ds


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


def check(
    model_fn: UserFunction,
    input_shape: tuple[int, ...] | None,
    classes: int | None,
    data_fn: UserFunction | None,
    *,
    batch: int | None = None,
    framework: str | None = None,
) -> dict:
    """Pre-flight, inside a child (imports Keras): build the model, read its inputs, outputs
    and loss (``iospec``), run one forward pass on the input it will get, compare its outputs
    with ``classes``. With ``framework`` (the measuring children's), then one real training
    step as the cases run it — the custom loop's step and one ``model.fit`` step, on exactly
    the data, labels and settings of the cases, at ``batch`` — and its time (:func:`step_check`).
    Returns facts for the parent: ``input_shape``, ``output_shape``, ``compiled``, ``name``,
    ``params``, ``io`` (the inputs and targets, as JSON text) and, after a step, ``step_s``."""
    from whichdevice.frameworks.common import iospec

    model = call_model_function(model_fn.path, model_fn.function)
    compiled = bool(getattr(model, "compiled", False) and getattr(model, "optimizer", None) is not None)
    if data_fn is not None:
        ds = call_data_function(data_fn.path, data_fn.function)
        from whichdevice.frameworks.tensorflow import training

        if training.looks_batched(ds):
            ds = ds.unbatch()
        x, _ = next(iter(ds.batch(2).take(1)))
        import tensorflow as tf

        x = tf.nest.map_structure(lambda t: t.numpy(), x)
        first = tf.nest.flatten(x)[0]
        io_in = None
        shape_arg, shape_text = "--data", f"the data's inputs {tuple(first.shape[1:])}"
    else:
        try:
            io_in = iospec.infer_inputs(model, input_shape)
        except iospec.IOError_ as e:
            raise UserFileError(e.argument, e.problem, e.fix) from None
        x = iospec.draw_inputs(io_in, 2, __import__("numpy").random.default_rng(0))
        shape_arg = "--input-shape"
        ins = io_in["inputs"]
        shape_text = (
            f"input of shape {tuple(ins[0]['shape'])}"
            + (f" (token ids < {ins[0]['high']})" if ins[0].get("high") is not None else "")
            if len(ins) == 1
            else f"inputs {iospec.describe_inputs(io_in, 2)}"
        )
    try:
        y = model(x, training=False)
    except Exception as e:
        raise UserFileError(
            shape_arg,
            f"the model rejects {shape_text}: {_exc_line(e)}",
            "Pass the shape the model's first layer expects",
        ) from None
    _check_names(model)
    io_out = iospec.infer_outputs(model, y, classes, compiled)
    out_shape = tuple(io_out["outputs"][0]["shape"])
    if classes is not None and len(io_out["outputs"]) == 1:
        last = out_shape[-1] if out_shape else 1
        if last != classes and not (classes == 2 and last == 1):
            raise UserFileError(
                "--classes",
                f"{classes} classes, but the model outputs {last} values per sample (output shape {out_shape})",
                f"Pass --classes {last} or change the last layer",
            )
    from whichdevice.frameworks.common.casemodel import custom_train_step

    io = {**(io_in or {"inputs": [], "in_struct": "single", "in_keys": []}), **io_out}
    io["custom_train_step"] = custom_train_step(model)
    io["compiled"] = compiled
    first_in = tuple(io_in["inputs"][0]["shape"]) if io_in else tuple(first.shape[1:])
    facts = {
        "ok": True,
        "name": model.name,
        "params": int(model.count_params()),
        "compiled": compiled,
        "input_shape": list(first_in),
        "output_shape": list(out_shape),
        "io": iospec.dumps(io),
        "losses": [o["loss"] for o in io["outputs"]],
    }
    if framework is not None:
        facts.update(step_check(model_fn, data_fn, io, classes, batch or 32, framework))
    return facts


def case_params(model_fn: UserFunction, data_fn: UserFunction | None, facts: dict, classes: int | None) -> dict:
    """The train cases' parameters for the user's model (the parent's
    ``userfile.user_model_params`` builds the same from the facts)."""
    out_shape = facts["output_shape"]
    label_classes = classes
    if classes is not None and out_shape and out_shape[-1] == 1:
        label_classes = 1  # one sigmoid output: binary labels
    return {
        "model": "user",
        "model_file": str(model_fn.path),
        "model_fn": model_fn.function,
        "input_shape": ",".join(map(str, facts["input_shape"])),
        "classes": classes,
        "label_classes": label_classes,
        "output_shape": ",".join(map(str, out_shape)),
        "data_file": str(data_fn.path) if data_fn else None,
        "data_fn": data_fn.function if data_fn else None,
        "io": facts.get("io"),
    }


# The pre-flight's step timing: steady calls until this many seconds (at least 3 calls).
STEP_TIMING_S = 1.0
STEP_TIMING_MAX_CALLS = 20


def _shapes_text(tree) -> str:
    import numpy as np

    from keras import tree as ktree

    shapes = [tuple(np.shape(a)) for a in ktree.flatten(tree)]
    return (
        ", ".join(str(s).replace(",)", ")") for s in shapes) if len(shapes) > 1 else str(shapes[0]).replace(",)", ")")
    )


def step_check(model_fn, data_fn, io: dict, classes, batch: int, framework: str) -> dict:
    """One real training step of the user's model, built as every measuring child builds it
    (``CaseModel``: the same parameters, the same data and labels at ``batch``, the same
    compile), through the custom loop's step and through ``model.fit``; a failure is a
    :class:`UserFileError` naming the loss, the labels it got and the output, and the fix.
    Returns ``step_s`` (the custom step's median steady time at ``batch``, on this child's
    CPU), ``first_step_s`` (its first call: tracing) and ``build_s`` (building the model)."""
    import time

    from whichdevice import frameworks
    from whichdevice.frameworks.common import iospec
    from whichdevice.frameworks.common.casemodel import CaseModel

    training = frameworks.training_module(framework)
    facts = {"output_shape": io["outputs"][0]["shape"], "input_shape": (io["inputs"] or [{"shape": []}])[0]["shape"]}
    params = case_params(model_fn, data_fn, {**facts, "io": iospec.dumps(io)}, classes)
    m = CaseModel(params, training)
    t0 = time.perf_counter()
    model = m.build()
    build_s = time.perf_counter() - t0

    def what(x, y) -> str:
        if data_fn is not None:
            return f"your --data batches (x {_shapes_text(x)}, y {_shapes_text(y)})"
        return f"labels {iospec.describe_targets(io, batch)}"

    def failed(where: str, x, y, e: BaseException) -> UserFileError:
        fix = (
            f"Check that {data_fn.function}() yields (inputs, labels) as your model.fit takes them"
            if data_fn is not None
            else "Pass your own batches with --data FILE.py:FUNCTION (a tf.data.Dataset of (x, y) as your "
            "model.fit takes them)" + (", or --classes N for class-id labels" if not io.get("compiled", True) else "")
        )
        return UserFileError(
            "--data" if data_fn is not None else "--model",
            f"one training step ({where}) failed with {what(x, y)} against the output "
            f"{iospec.describe_outputs(io, batch)}: {_exc_line(e)}",
            fix,
        )

    clone = getattr(training, "clone_model", None)
    if clone is None:
        import keras

        clone = keras.models.clone_model
    try:  # the clone case times clone_model: a subclassed model without get_config cannot be cloned
        clone(model)
        clone_error = None
    except Exception as e:
        clone_error = _exc_line(e)
    x = y = None
    try:
        x, y = m.one_batch(training, batch)
        step = m.train_step(training, model)
        xb, yb = x, y
        t0 = time.perf_counter()
        training.read_back(step(xb, yb))
        first_s = time.perf_counter() - t0
        times: list[float] = []
        while len(times) < 3 or (sum(times) < STEP_TIMING_S and len(times) < STEP_TIMING_MAX_CALLS):
            t0 = time.perf_counter()
            training.read_back(step(xb, yb))
            times.append(time.perf_counter() - t0)
    except Exception as e:
        raise failed("the custom loop", x, y, e) from None
    try:
        fit_model = m.build()
        m.compile_for_fit(fit_model)
        ds = m.dataset(training, 2 * batch, batch, "tfdata")
        t0 = time.perf_counter()
        if training.is_dataset(ds) or not isinstance(ds, tuple):
            fit_model.fit(ds, epochs=1, verbose=0, steps_per_epoch=2)
        else:
            fit_model.fit(ds[0], ds[1], batch_size=batch, epochs=1, verbose=0)
        fit_s = time.perf_counter() - t0
    except Exception as e:
        raise failed("model.fit", x, y, e) from None
    times.sort()
    return {
        "step_s": times[len(times) // 2],
        "first_step_s": first_s,
        "fit_first_s": fit_s,
        "build_s": build_s,
        "step_batch": batch,
        "clone_error": clone_error,
    }


def _answer_stream():
    """The pre-flight's answer goes to the original stdout; the user's code, which may print
    anything (a line that looks like JSON included), gets stderr as its stdout, at the file
    descriptor level so that C extensions' output moves too."""
    sys.stdout.flush()
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return answer


def _main(argv: list[str]) -> int:
    job = json.loads(argv[1])
    answer = _answer_stream()
    try:
        model_fn = UserFunction(Path(job["model"][0]), job["model"][1], "--model")
        data_fn = UserFunction(Path(job["data"][0]), job["data"][1], "--data") if job.get("data") else None
        shape = tuple(job["input_shape"]) if job.get("input_shape") else None
        t0 = time.perf_counter()
        import keras  # noqa: F401  (the framework's import, timed: the measuring children pay it too)

        import_s = time.perf_counter() - t0
        result = check(
            model_fn, shape, job.get("classes"), data_fn, batch=job.get("batch"), framework=job.get("framework")
        )
        result["import_s"] = import_s
    except (UserFileError, SystemExit, Exception) as e:
        result = check_failed(e)
    answer.write(json.dumps(result) + "\n")
    answer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
