"""The user's script run with the captures installed: :func:`execute`, used by the
script process (``measure/scriptchild.py``) and, for the first script run of a measuring child,
by that child itself (``workloads/script.py``: the framework is imported there already, with the
environment set before import, so the run pays only the script's own imports and data loading).

The script runs as ``__main__`` with ``sys.argv = [script, *args]`` in the caller's working
directory, the folder of its real file first on ``sys.path`` (a symlink's target's, as ``python
LINK`` does), compiled from its bytes (a coding line, a BOM) and with no standard input; a
notebook comes as its code cells already joined (``source``; ``%time``/``%timeit`` run their
statement once). It ends as ``ok`` once a capture
raised ``CaptureDone``, ``no_entry`` (with ``watched``) when it ended without reaching an entry
point, or ``script_error`` with the script's own error (``error``: type and message, ``where``:
its file and line, ``step``: the training step it came at, ``exit_code`` for ``sys.exit`` and
``os._exit``).
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
from whichdevice.workloads import scriptwatch, userfolder

MAGICS = "__whichdevice_magics__"  # audit/notebook.py's name for %time / %timeit in joined cells


class _OnceMagics:
    """A notebook's ``%time``/``%timeit`` statements, run once each (the capture times the steps)."""

    def timeit(self, stmt: str, setup: str, ns: dict[str, Any], line: int, **_: Any) -> None:
        if setup:
            exec(setup, ns)  # noqa: S102 (the user's own notebook code)
        exec(stmt, ns)  # noqa: S102

    def time(self, stmt: str, ns: dict[str, Any], line: int) -> None:
        exec(stmt, ns)  # noqa: S102


_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # whichdevice's own package


USAGE = ("argument", "problem", "fix")  # what a user-file error (userload.UserFileError) carries


def _where(e: BaseException, script: str) -> str:
    """The script's own line the error came from (else the last frame outside whichdevice: the
    user is never pointed at whichdevice's own file for an error of their script)."""
    if isinstance(e, SyntaxError) and e.filename and os.path.abspath(e.filename) == script:
        return f"{Path(script).name}:{e.lineno}"  # the script did not compile: no frame of its own
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == script]
    theirs = [f for f in frames if not os.path.abspath(f.filename).startswith(_OURS + os.sep)]
    if not (mine or theirs):
        return Path(script).name
    f = (mine or theirs)[-1]
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
        says: tuple[str, ...] = frameworks.declared(name, "CAPTURE_WATCHES", ())
        watched += [w for w in says if w not in watched]
    return watched


def _run(job: dict[str, Any]) -> None:  # noqa: D401
    script = os.path.abspath(job["script"])
    sys.argv = [job["script"], *job.get("args", [])]
    # As `python LINK` does: the folder of the file a symlink points to goes first on sys.path
    # (its sibling modules are there), while __file__ stays the path the user gave.
    sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": script, "__builtins__": __builtins__, MAGICS: _OnceMagics()})
    sys.modules["__main__"] = main
    source = job.get("source")
    # Compiled from its bytes, as Python reads a script: a PEP 263 coding line and a UTF-8 BOM honoured.
    code = compile(Path(script).read_bytes() if source is None else source, script, "exec")
    exec(code, main.__dict__)  # noqa: S102 (the user's own script)


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
    """fd 0 is the user's terminal while the script runs (where the parent named one), as in their
    shell, for the commands it runs (``stty size``); the child's own stdin is back afterwards. The
    script's ``sys.stdin`` reads empty all the same (``scriptwatch``): it runs several times."""
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


def _closing(end: dict[str, Any], got: list[dict[str, Any]], seen: scriptwatch.Seen) -> dict[str, Any]:
    """The ``end`` line, completed: a script that ended first with results is ``ok``, one that
    reached an entry but ended within the warm-up ``too_short``; an error or an exit says the
    training step it came at (``step``: 0 before the first)."""
    from whichdevice.frameworks.common import capturekit

    if got and end["status"] == "no_entry":  # the script ended first; the captures sent what they had
        end = {"type": "end", "status": "ok", "script_ended": True}
    elif end["status"] == "no_entry" and capturekit.OWNER:  # reached, but it ended within the warm-up
        end = {"type": "end", "status": "too_short", "entry": capturekit.OWNER[0]}
    if end["status"] == "script_error":
        end["step"] = capturekit.step_reached(exited=end.get("exit_code") is not None)
    end["imported_s"] = dict(capturekit.IMPORTED)
    if capturekit.ENTRIES:  # every training call the script made (the pre-flight lists them)
        end["entries"] = list(capturekit.ENTRIES)
    end.update(seen.as_dict())
    if end["status"] == "no_entry" and frameworks.plain_jax(sys.modules):
        end["plain_jax"] = True  # a jit/grad loop: no entry point diagnose captures (scriptplan.refusal says so)
    return end


def _exited(e: SystemExit, end: dict[str, Any], got: list[dict[str, Any]], script: str) -> dict[str, Any]:
    """The end of a script that called ``sys.exit()``."""
    if got:  # the captures had their steps already (the script caught CaptureDone, then exited)
        return {"type": "end", "status": "ok"}
    if e.code in (None, 0):  # the script's end: the captures hand over what they have
        _finish_early()
        return end
    return {  # an error exit mid-training is no result, however many steps it had
        "type": "end",
        "status": "script_error",
        "error": f"SystemExit: {e.code}",
        "where": _where(e, script),
        "exit_code": e.code if isinstance(e.code, int) else 1,  # a message exits 1, as Python does
    }


def execute(
    job: dict[str, Any],
    sink: Callable[[dict[str, Any]], None],
    tell: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the job's script under its spec with the captures installed; each result goes to
    ``sink``; returns how the script ended (the ``end`` line). ``tell`` (the script process's
    own line writer) gets what the watch sees as it sees it, and the ``end`` line of a script
    that leaves through ``os._exit``, which never returns here."""
    got: list[dict[str, Any]] = []

    def keep(r: dict[str, Any]) -> None:
        got.append(r)
        sink(r)

    spec = CaptureSpec.from_dict(job["spec"])
    from whichdevice.frameworks.common import capturekit

    capturekit.TELL[:] = [tell] if tell is not None else []
    watched = _install(list(job["frameworks"]), spec, keep)
    end: dict[str, Any] = {"type": "end", "status": "no_entry", "watched": watched}
    script = os.path.abspath(job["script"])

    def exiting(code: int, where: str) -> None:
        if tell is None:
            return
        last: dict[str, Any] = {"type": "end", "status": "no_entry", "watched": watched}
        if got:
            last = {"type": "end", "status": "ok"}
        elif code == 0:  # an exit as the script's end: the captures hand over what they have
            _finish_early()
        else:
            last = {**last, "status": "script_error", "error": f"os._exit({code})", "where": where, "exit_code": code}
        tell(_closing(last, got, seen))

    # what the script writes in the user's folder, recorded for its put-back (workloads/userfolder.py)
    with userfolder.recording(), _as_main(), _terminal_stdin(), scriptwatch.watching(script, tell, exiting) as seen:
        try:
            _run(job)
            _finish_early()
        except CaptureDone:
            end = {"type": "end", "status": "ok"}
        except SystemExit as e:  # the script's own sys.exit(): an entry point reached or not
            end = _exited(e, end, got, script)
        except BaseException as e:  # noqa: BLE001 (the script's own error, quoted to the user)
            traceback.print_exc(file=sys.stderr)
            end = {"type": "end", "status": "script_error", "error": _error(e), "where": _where(e, script)}
            if all(hasattr(e, k) for k in USAGE):  # a problem of the user's model file, named by its option
                end["usage"] = {k: str(getattr(e, k)) for k in USAGE}
        finally:
            _close(end)
        return _closing(end, got, seen)


def _close(end: dict[str, Any]) -> None:
    """What the captures started beside the script, ended (``capturekit.CLOSERS``)."""
    from whichdevice.frameworks.common import capturekit

    for close in list(capturekit.CLOSERS):
        try:
            close(end)
        except Exception:  # noqa: BLE001 (one capture's clean-up must not stop the others')
            traceback.print_exc(file=sys.stderr)
