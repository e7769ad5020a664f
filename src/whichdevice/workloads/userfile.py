"""The user's own model (``--model FILE.py:FUNCTION``) and data (``--data FILE.py:FUNCTION``).

The parent never imports TensorFlow, so it only checks what it can without it (the
``FILE:FUNCTION`` form, the file exists and is a file). Everything else — the file's syntax,
the function, what it returns, whether the model accepts ``--input-shape`` and gives
``--classes`` outputs, what the data function returns — is checked *before any
measurement* by the pre-flight child in its model-check mode (``scriptplan.check_model``,
``measure/scriptchild.py``), which answers ``{"ok": true, ...}`` or ``{"ok": false, "argument",
"problem", "fix"}``. The parent turns a failure into a ``UsageError``: one line, exit code 2.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from whichdevice.core.errors import UsageError
from whichdevice.frameworks.common.usermodel import (  # noqa: F401  (re-exported for the commands)
    UserFunction,
    case_params,
)
from whichdevice.workloads import scriptplan

PREFLIGHT_TIMEOUT_S = 180.0

# The run's own limits, when its command was given them (with --memory-limit 2 the
# pre-flight held 5.9 GB for 180 s, then the error blamed the time): (memory bytes or None,
# seconds or None, the argument each came from). Set by :func:`limits` around a command's checks.
_limits: tuple[int | None, str, float | None, str] = (None, "", None, "")


@contextlib.contextmanager
def limits(
    memory_limit_bytes: int | None, timeout_s: float | None, *, timeout_from: str = "--case-timeout"
) -> Iterator[None]:
    """The pre-flight inside the block is held to the run's ``--memory-limit`` and case timeout
    (``timeout_from`` names where the timeout came from), not only to its own defaults."""
    global _limits
    saved = _limits
    _limits = (memory_limit_bytes, "--memory-limit", timeout_s, timeout_from)
    try:
        yield
    finally:
        _limits = saved


def _stopped(done, model_fn: UserFunction, memory_limit_bytes: int | None, timeout_s: float) -> UsageError:
    """The one line for a pre-flight its parent stopped: which limit stopped it, and how to move it."""
    _, memory_from, given_timeout, timeout_from = _limits
    if done.stopped == "timeout":
        limit = f"{timeout_s:g} s, the run's {timeout_from}" if given_timeout else f"{timeout_s:g} s"
        more = f", or raise {timeout_from}" if given_timeout else ""
        return UsageError(
            "--model",
            f"checking '{model_fn.text}' was stopped by the time limit ({limit})",
            "Make the function return quickly: build the model, do not train it, and end any thread it starts" + more,
        )
    used = done.rss_bytes / 2**30
    if memory_limit_bytes is not None:
        return UsageError(
            "--model",
            f"checking '{model_fn.text}' was stopped by the memory limit ({used:.2f} GiB used, over "
            f"{memory_from} {memory_limit_bytes / 2**30:g} GiB)",
            f"Build a smaller model, or raise {memory_from}",
        )
    return UsageError(
        "--model",
        f"checking '{model_fn.text}' was stopped by the memory limit ({used:.2f} GiB used, over 90 % of this "
        "machine's memory)",
        "Build a smaller model, or free memory",
    )


def parse_spec(text: str, argument: str) -> UserFunction:
    """``FILE.py:FUNCTION`` -> UserFunction; the file must exist (checked here, no import)."""
    path_text, sep, fn = text.rpartition(":")
    if not sep or not path_text or not fn:
        raise UsageError(
            argument,
            f"'{text}' is not FILE.py:FUNCTION",
            f"Pass the file and the function that builds it, e.g. {argument} my_model.py:build.",
        )
    if not fn.isidentifier():
        raise UsageError(argument, f"'{fn}' is not a Python function name", f"e.g. {argument} my_model.py:build.")
    path = Path(path_text).expanduser()
    if not path.exists():
        raise UsageError(argument, f"no such file '{path}'", "Check the path (relative to the current folder).")
    if path.is_dir():
        raise UsageError(argument, f"'{path}' is a folder", f"Pass a .py file, e.g. {argument} my_model.py:build.")
    return UserFunction(path.resolve(), fn, argument)


def preflight(
    model_fn: UserFunction,
    input_shape,
    classes,
    data_fn,
    framework_env: dict[str, str],
) -> dict:
    """The pre-flight's model check (``scriptplan.check_model``: the one pre-flight child, the
    parent stays TensorFlow-free): its facts, or a UsageError."""
    check = {
        "model": [str(model_fn.path), model_fn.function],
        "data": [str(data_fn.path), data_fn.function] if data_fn else None,
        "input_shape": list(input_shape) if input_shape else None,
        "classes": classes,
    }
    memory_limit_bytes, _, timeout_s, _ = _limits
    timeout_s = timeout_s or PREFLIGHT_TIMEOUT_S
    run = scriptplan.check_model(check, {**framework_env, "PYTHONUNBUFFERED": "1"}, timeout_s, memory_limit_bytes)
    done = run.finished
    if done is not None and done.stopped is not None:
        raise _stopped(done, model_fn, memory_limit_bytes, timeout_s)
    if not run.results:
        tail = [ln for ln in run.stderr_tail.splitlines() if ln.strip()][-1:] or ["no output"]
        raise UsageError(
            "--model",
            f"checking '{model_fn.text}' crashed (exit {done.returncode if done else None}: {tail[0][:200]})",
            "Run the file on its own to see the error",
        )
    msg = run.results[-1]
    if not msg.get("ok"):
        raise UsageError(msg["argument"], msg["problem"], msg["fix"] + ".")
    return msg


def user_model_params(model_fn: UserFunction, input_shape, classes, data_fn, framework_env: dict[str, str]) -> dict:
    """Pre-flight the user's model (and data) in a child, then the case parameters that
    the train workload uses to rebuild them inside every measuring child."""
    facts = preflight(model_fn, input_shape, classes, data_fn, framework_env)
    return case_params(model_fn, data_fn, facts, classes)
