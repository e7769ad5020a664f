"""The user's model and data files, loaded inside a child process (``--model FILE:FUNCTION``,
``--data FILE:FUNCTION``): the file imported as a fresh module, the function called, what it
returns checked, and every problem one :class:`UserFileError` (argument, problem, fix).

The pre-flight (``usermodel.py``) and the measuring children's case model (``casemodel.py``)
both load the user's files through here. Keras (the model) and TensorFlow (``--data``) are
imported inside the functions that need them.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
    if lines and lines[0].startswith("Graph execution error"):
        # TensorFlow's runtime error (only "Graph execution error:" was shown): the
        # op's stack ("File ..." lines) first, what is wrong on the first line after it
        after = [i for i, ln in enumerate(lines) if ln.startswith("File ")]
        rest = lines[after[-1] + 1 :] if after else lines[1:]
        lines = [ln for ln in rest if not ln.startswith("[[")] or lines
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


_GRAPH_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_GRAPH_NODE = re.compile(r"Detected at node (\S+)")


def user_frame(e: BaseException, path: str | Path) -> tuple[str, int] | None:
    """The innermost place in the user's file ``path`` where ``e`` arose, as (function, line):
    from the Python traceback, or from the op's stack TensorFlow puts in a graph error's text.
    None: the error did not pass through the file."""
    target = str(Path(path))
    found: tuple[str, int] | None = None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == target:
            found = (tb.tb_frame.f_code.co_name, tb.tb_lineno)
        tb = tb.tb_next
    for file, line, function in _GRAPH_FRAME.findall(str(e)):
        if file == target:
            found = (function, int(line))
    return found


def in_loss(e: BaseException) -> bool:
    """Whether a training step's error arose in the loss: TensorFlow's failing op is in a loss's
    name scope (``compile_loss/...``, ``.../loss/...``) or the Python traceback passes through
    Keras' loss code."""
    node = _GRAPH_NODE.search(str(e))
    if node and any("loss" in part for part in node.group(1).split("/")):
        return True
    tb = e.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if "/keras/src/losses/" in name or name.endswith("/keras/src/trainers/compile_utils.py"):
            return True
        tb = tb.tb_next
    return False


_OOM_TEXT = ("out of memory", "can't allocate memory", "unable to allocate", "oom when allocating")


def is_out_of_memory(e: BaseException) -> bool:
    """An allocator's refusal, whatever the framework calls it (MemoryError, TensorFlow's
    ResourceExhaustedError, torch's OutOfMemoryError or its CPU allocator's RuntimeError)."""
    if isinstance(e, MemoryError) or type(e).__name__ in ("ResourceExhaustedError", "OutOfMemoryError"):
        return True
    text = str(e).lower()
    return any(t in text for t in _OOM_TEXT)


def out_of_memory(e: BaseException, batch: int | None) -> UserFileError:
    """The one line for a pre-flight step that ran out of memory: memory is at fault, not the
    shapes or the labels (it was reported against --classes)."""
    at = f" at batch {batch}" if batch else ""
    return UserFileError(
        "--batch",
        f"one training step{at} ran out of memory ({_exc_line(e)})",
        "Lower --batch, or raise --memory-limit (or free memory) if the machine has more",
    )


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


def call_user_function(path: str | Path, function: str, argument: str) -> Any:
    """Load ``function`` from the user's file and call it with no arguments; an exception it
    raises is one line naming ``argument`` (--model, --data) and the fix."""
    fn = load_function(path, function, argument)
    try:
        return fn()
    except Exception as e:
        raise UserFileError(
            argument,
            f"{function}() raised {_exc_line(e)}",
            f"Fix {function}() in '{Path(path).name}' (it is called with no arguments)",
        ) from None


def call_model_function(path, function: str):
    """Call the user's model function and check it returns a Keras model."""
    import keras

    model = call_user_function(path, function, "--model")
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
    from whichdevice.frameworks.common import tfdata

    ds = call_user_function(path, function, "--data")
    if not tfdata.is_dataset(ds):
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
