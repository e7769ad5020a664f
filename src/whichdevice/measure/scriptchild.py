"""The user's own training script, run as they run it, with the training entry points captured
(issue #41): ``python -m whichdevice.measure.scriptchild JOB.json OUT.jsonl``.

The parent (``workloads/script.py``) has put the framework's environment into this process's
environment (a CPU child: every GPU hidden), so the script's own ``import`` sees it. The job names
the script, its arguments, the frameworks whose ``capture.py`` to install and the ``CaptureSpec``;
a notebook comes as its code cells already joined (``source``; ``%time``/``%timeit`` run their
statement once). The script runs as ``__main__`` with ``sys.argv = [script, *args]`` in the
caller's working directory, its folder first on ``sys.path``.

Every result the capture hands over is one JSON line ``{"type": "result", "result": ...}``, flushed
at once; then ``{"type": "end", ...}``: ``"ok"`` once the capture raised ``CaptureDone``,
``"no_entry"`` (with ``watched``) when the script ended without reaching an entry point, or
``"script_error"`` with the script's own error (``error``: type and message, ``where``: its file and
line) when the script raised before one was reached.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # noqa: E402 (the child's start: the script's set-up is counted from here)

import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from whichdevice import frameworks  # noqa: E402
from whichdevice.frameworks.common import capturekit  # noqa: E402
from whichdevice.frameworks.contracts import CaptureDone, CaptureSpec  # noqa: E402

MAGICS = "__whichdevice_magics__"  # audit/notebook.py's name for %time / %timeit in joined cells
# What each framework's capture watches, for the line that says none was reached.
WATCHED = {
    "tensorflow": ["keras Model.fit", "Model.train_on_batch", "tf.GradientTape + optimizer.apply_gradients"],
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


def _run(job: dict[str, Any]) -> None:
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


def main(argv: list[str]) -> int:
    from whichdevice.measure.child import _die_with_parent

    _die_with_parent()
    capturekit.T0 = T0
    with open(argv[1], encoding="utf-8") as f:
        job = json.load(f)
    out = open(argv[2], "a", encoding="utf-8")

    def emit(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, default=str) + "\n")
        out.flush()

    got: list[dict[str, Any]] = []

    def sink(r: dict[str, Any]) -> None:
        got.append(r)
        emit({"type": "result", "result": r})

    spec = CaptureSpec.from_dict(job["spec"])
    watched = _install(list(job["frameworks"]), spec, sink)
    end: dict[str, Any] = {"type": "end", "status": "no_entry", "watched": watched}
    script = os.path.abspath(job["script"])
    try:
        _run(job)
    except CaptureDone:
        end = {"type": "end", "status": "ok"}
    except SystemExit as e:  # the script's own sys.exit(): an entry point reached or not
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
    end["wall_s"] = time.perf_counter() - T0
    emit(end)
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown (TensorFlow's takes a second); the parent has every line
