"""The user's own training script, run as they run it, with the training entry points captured:
``python -m whichdevice.measure.scriptchild JOB.json OUT.jsonl``.

The parent (``workloads/script.py``) has put the framework's environment into this process's
environment (a CPU child: every GPU hidden), so the script's own ``import`` sees it. The job names
the script, its arguments, the frameworks whose ``capture.py`` to install and the ``CaptureSpec``;
a notebook comes as its code cells already joined (``source``; ``%time``/``%timeit`` run their
statement once). The script runs as ``__main__`` with ``sys.argv = [script, *args]`` in the
caller's working directory, the folder of its real file first on ``sys.path``, with no standard input.

Every result the capture hands over is one JSON line ``{"type": "result", "result": ...}``, flushed
at once; then ``{"type": "end", ...}``: ``"ok"`` once the capture raised ``CaptureDone``,
``"no_entry"`` (with ``watched``) when the script ended without reaching an entry point, or
``"script_error"`` with the script's own error (``error``: type and message, ``where``: its file and
line) when the script raised before one was reached. ``{"type": "seen", ...}`` lines say, as it
happens, what the script did that decides why it gave no step (``workloads/scriptwatch.py``).

A job with ``model_check`` (the pre-flight's other mode, ``workloads/userfile.py``'s: the ``--model``
of train, pipeline, placement, predict and scale) runs no script: the user's model function is built
and checked (``frameworks/common/usermodel.check_job``) and its facts, or the one-line failure, are
the one result line.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # noqa: E402 (the child's start: the script's set-up is counted from here)

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

from whichdevice.frameworks.common import capturekit  # noqa: E402
from whichdevice.workloads.scriptrun import execute  # noqa: E402


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

    def tell(obj: dict[str, Any]) -> None:  # what the script did, said as it happens; an os._exit's end
        if obj.get("type") == "end":
            obj["wall_s"] = time.perf_counter() - T0
        emit(obj)

    if "model_check" in job:
        from whichdevice.frameworks.common.usermodel import check_job

        emit({"type": "result", "result": check_job(job["model_check"])})
        return 0
    end = execute(job, lambda r: emit({"type": "result", "result": r}), tell)
    tell(end)
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown (TensorFlow's takes a second); the parent has every line
