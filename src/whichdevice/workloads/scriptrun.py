"""The user's script run with the captures installed (issue #41): :func:`execute`, used by the
script process (``measure/scriptchild.py``) and, for the first script run of a measuring child,
by that child itself (``workloads/script.py``: the framework is imported there already, with the
environment set before import, so the run pays only the script's own imports and data loading).

The script runs as ``__main__`` with ``sys.argv = [script, *args]`` in the caller's working
directory, its folder first on ``sys.path``; a notebook comes as its code cells already joined
(``source``; ``%time``/``%timeit`` run their statement once). It ends as ``ok`` once a capture
raised ``CaptureDone``, ``no_entry`` (with ``watched``) when it ended without reaching an entry
point, or ``script_error`` with the script's own error (``error``: type and message, ``where``:
its file and line).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from whichdevice import frameworks
from whichdevice.frameworks.contracts import CaptureDone, CaptureSpec

MAGICS = "__whichdevice_magics__"  # audit/notebook.py's name for %time / %timeit in joined cells
# What each framework's capture watches, for the line that says none was reached.
WATCHED = {
    "tensorflow": ["keras Model.fit", "Model.train_on_batch", "tf.GradientTape + optimizer.apply_gradients or apply"],
    "keras-jax": ["keras Model.fit", "Model.train_on_batch"],
    "keras-torch": ["keras Model.fit", "Model.train_on_batch"],
    "torch": ["torch optimizer.step()", "loss.backward()"],
}


class _OnceMagics:
    """A notebook's ``%time``/``%timeit`` statements, run once each (the capture times the steps)."""

    def timeit(self, stmt: str, setup: str, ns: dict[str, Any], line: int, **_: Any) -> None:
        if setup:
            exec(setup, ns)  # noqa: S102 (the user's own notebook code)
        exec(stmt, ns)  # noqa: S102

    def time(self, stmt: str, ns: dict[str, Any], line: int) -> None:
        exec(stmt, ns)  # noqa: S102


def _where(e: BaseException, script: str) -> str:
    """The script's own line the error came from (else the last frame's)."""
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == script]
    if not (mine or frames):
        return script
    f = (mine or frames)[-1]
    return f"{Path(f.filename).name}:{f.lineno}"


def _error(e: BaseException) -> str:
    """The error in one line: its type and first line (a traced tf.function's: its last)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    if first.startswith("in user code") and len(lines) > 1:
        first = lines[-1]
    return f"{type(e).__name__}: {first}"[:500]


def _install(names: list[str], spec: CaptureSpec, sink: Any) -> list[str]:
    """Each framework's capture installed (a framework not installed here is left out)."""
    watched: list[str] = []
    for name in names:
        try:
            module = importlib.import_module(f"whichdevice.frameworks.{frameworks.folder(name)}.capture")
        except ImportError:
            continue
        module.install(spec, sink)
        watched += [w for w in WATCHED.get(name, []) if w not in watched]
    return watched


def _run(job: dict[str, Any]) -> None:  # noqa: D401
    script = os.path.abspath(job["script"])
    sys.argv = [job["script"], *job.get("args", [])]
    sys.path.insert(0, os.path.dirname(script))
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": script, "__builtins__": __builtins__, MAGICS: _OnceMagics()})
    sys.modules["__main__"] = main
    source = job.get("source")
    if source is None:
        source = Path(script).read_text(encoding="utf-8")
    exec(compile(source, script, "exec"), main.__dict__)  # noqa: S102 (the user's own script)


def _finish_early() -> None:
    """The script ended before a capture had all its steps: each capture hands over what it has."""
    from whichdevice.frameworks.common import capturekit

    for finish in list(capturekit.FINISHERS):
        try:
            finish()
        except CaptureDone:
            pass


@contextlib.contextmanager
def _as_main() -> Iterator[None]:
    """``sys.argv``, ``sys.path`` and ``__main__`` as they were, after the script (in-process run)."""
    argv, path, main = list(sys.argv), list(sys.path), sys.modules.get("__main__")
    try:
        yield
    finally:
        sys.argv[:] = argv
        sys.path[:] = path
        if main is not None:
            sys.modules["__main__"] = main


# The user's terminal, named by the parent (``remember_terminal``) for the script, which runs in
# children whose stdin is closed or a pipe.
TTY_VAR = "WHICHDEVICE_SCRIPT_TTY"


def remember_terminal() -> None:
    """In the parent: name the terminal whichdevice runs in, if any. Scripts ask it for its size
    at import (kuangliu/pytorch-cifar's utils.py runs ``stty size``), which fails on a closed
    stdin although the script runs in the user's shell."""
    try:
        if sys.stdin is not None and sys.stdin.isatty():
            os.environ[TTY_VAR] = os.ttyname(sys.stdin.fileno())
    except (AttributeError, ValueError, OSError):  # a replaced or closed stdin (notebooks, pipes)
        pass


@contextlib.contextmanager
def _terminal_stdin() -> Iterator[None]:
    """The script's standard input is the user's terminal while it runs (where the parent named
    one), as in their shell; the child's own stdin is back afterwards."""
    tty = os.environ.get(TTY_VAR)
    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY) if tty and not os.isatty(0) else -1
    except OSError:
        fd = -1
    if fd < 0:
        yield
        return
    saved = os.dup(0)
    os.dup2(fd, 0)
    os.close(fd)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)


def execute(job: dict[str, Any], sink: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run the job's script under its spec with the captures installed; each result goes to
    ``sink``; returns how the script ended (the ``end`` line)."""
    got: list[dict[str, Any]] = []

    def keep(r: dict[str, Any]) -> None:
        got.append(r)
        sink(r)

    spec = CaptureSpec.from_dict(job["spec"])
    watched = _install(list(job["frameworks"]), spec, keep)
    end: dict[str, Any] = {"type": "end", "status": "no_entry", "watched": watched}
    script = os.path.abspath(job["script"])
    with _as_main(), _terminal_stdin():
        try:
            _run(job)
            _finish_early()
        except CaptureDone:
            end = {"type": "end", "status": "ok"}
        except SystemExit as e:  # the script's own sys.exit(): an entry point reached or not
            _finish_early()
            if got:
                end = {"type": "end", "status": "ok"}
            elif e.code not in (None, 0):
                end = {
                    "type": "end",
                    "status": "script_error",
                    "error": f"SystemExit: {e.code}",
                    "where": _where(e, script),
                }
        except BaseException as e:  # noqa: BLE001 (the script's own error, quoted to the user)
            traceback.print_exc(file=sys.stderr)
            end = {"type": "end", "status": "script_error", "error": _error(e), "where": _where(e, script)}
    from whichdevice.frameworks.common import capturekit

    if got and end["status"] == "no_entry":  # the script ended first; the captures sent what they had
        end = {"type": "end", "status": "ok", "script_ended": True}
    elif end["status"] == "no_entry" and capturekit.OWNER:  # reached, but it ended within the warm-up
        end = {"type": "end", "status": "too_short", "entry": capturekit.OWNER[0]}
    end["imported_s"] = dict(capturekit.IMPORTED)
    if end["status"] == "no_entry" and frameworks.plain_jax(sys.modules):
        end["plain_jax"] = True  # a jit/grad loop: no entry point diagnose captures (scriptplan.refusal says so)
    return end
