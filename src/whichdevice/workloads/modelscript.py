"""``diagnose --model FILE.py:FUNCTION``: the script that trains the user's model as a user would,
which the script path then measures like any training script (one pre-flight, one sizer, one
planner: ``workloads/scriptplan.py``).

The script imports the user's file, builds the model with the function, draws the synthetic
inputs and labels of ``--input-shape`` / ``--classes`` (or loads ``--data``) and trains: Keras
compiles an uncompiled model (Adam and the loss its outputs imply) and calls ``model.fit``;
torch loops over a DataLoader with the optimizer's ``step``. It is written beside the record
(never in the user's folder), so the user can read what was measured and run it with python.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from whichdevice import frameworks
from whichdevice.core.errors import UsageError

# Enough steps for the pre-flight and every case's warm-up and timed steps: the capture ends the
# script once it has them, so a longer loop costs nothing.
MIN_STEPS = 400


@dataclass(frozen=True)
class ModelJob:
    """What the script trains: the user's function, its data and the options as checked."""

    model: tuple[str, str]  # (absolute path of FILE.py, FUNCTION)
    framework: str
    input_shape: tuple[int, ...] | None
    classes: int | None
    samples: int
    batch: int | None  # None: 32, or (torch) the DataLoader's own
    data: tuple[str, str] | None = None

    @property
    def text(self) -> str:
        return f"{self.model[0]}:{self.model[1]}"


def path_for(record: str) -> Path:
    """Where the script is written: beside the record, named after it."""
    p = Path(record)
    return p.with_name(p.stem + ".model.py")


def _args(job: ModelJob) -> str:
    """The arguments of the script's ``prepare`` call: the user's function, its data or the synthetic data's."""
    words = [f"{job.model[0]!r}", f"{job.model[1]!r}"]
    if job.data is not None:
        words.append(f"data=({job.data[0]!r}, {job.data[1]!r})")
    else:
        shape = tuple(job.input_shape) if job.input_shape else None
        words += [f"input_shape={shape!r}", f"classes={job.classes!r}", f"samples={job.samples}"]
    return ", ".join(words)


def _keras(job: ModelJob) -> str:
    batch = job.batch or 32
    backend = frameworks.declared(job.framework, "KERAS_BACKEND", "tensorflow")
    epochs = max(2, math.ceil(MIN_STEPS * batch / max(job.samples, 1)))
    head = [
        "import os",
        "",
        f'os.environ["KERAS_BACKEND"] = {backend!r}  # --framework {job.framework}',
        "",
        "import keras",
        "",
        "from whichdevice.frameworks.common import modelscript",
        "",
        "# Your function builds the model; the data is drawn as diagnose draws it (or your --data is loaded).",
        f"prepared = modelscript.prepare({_args(job)}, batch={batch})",
        "model = prepared.model",
        "if prepared.loss is not None:  # uncompiled: Adam and the loss its outputs imply",
        "    model.compile(optimizer=keras.optimizers.Adam(0.001), loss=prepared.loss)",
    ]
    if job.data is not None:
        fit = f"model.fit(prepared.x, epochs={epochs})"
    else:
        fit = f"model.fit(prepared.x, prepared.y, batch_size={batch}, epochs={epochs})"
    return "\n".join([*head, fit, ""])


def text(job: ModelJob) -> str:
    """The script's source: Keras' compile and fit, or the loop its framework declares (``model_script``)."""
    own: Callable[[str, int | None, bool], str] | None = frameworks.declared(job.framework, "model_script", None)
    who = frameworks.declared(job.framework, "MODEL_SCRIPT_USER", "Keras")
    doc = (
        f'"""What `whichdevice diagnose --model {Path(job.model[0]).name}:{job.model[1]}` measured: your model '
        f'trained as a {who} user trains it. Run it with python."""\n\n'
    )
    return doc + (own(_args(job), job.batch, job.data is not None) if own else _keras(job))


def write(job: ModelJob, record: str) -> Path:
    """Write the script beside ``record`` (whichdevice's output folder, not the user's)."""
    path = path_for(record)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text(job), encoding="utf-8")
    return path


def remove(path: Path, *, folder_too: bool) -> None:
    """Take back a script whose plan was refused (and its folder, where writing it made it)."""
    path.unlink(missing_ok=True)
    if folder_too:
        with contextlib.suppress(OSError):  # another file is there now: the folder stays
            path.parent.rmdir()


# A refusal of the script path speaks of a script the user wrote and its arguments; here the script is
# whichdevice's and the options are the user's.
_SCRIPT_WORDS = (
    ("give the script arguments (after --) that load less data", "pass a smaller --batch or --samples"),
    ("Give the script arguments (after --) that load less data", "Pass a smaller --batch or --samples"),
)


def as_model_error(e: UsageError) -> UsageError:
    """The script path's refusal of the script ``--model`` wrote, as the error of ``--model``."""
    fix = e.fix
    for theirs, ours in _SCRIPT_WORDS:
        fix = fix.replace(theirs, ours)
    return UsageError("--model", e.problem, fix)
