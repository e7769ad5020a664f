"""Environment for a Keras-on-torch child, decided before ``import keras``: the backend
(``KERAS_BACKEND=torch``) and torch's device environment (``frameworks/torch/env.py``).
Keras' torch backend picks its default device at import (``cuda`` when torch sees a GPU),
which is why the CPU run must hide the GPU before import."""

from __future__ import annotations

from whichdevice.core import fixkeys

from whichdevice.frameworks.common.ladders import PY_DATASET
from whichdevice.frameworks.common.writers import H5PY
from whichdevice.frameworks.torch import env as _torch_env

# Whose words a report uses for this framework (frameworks.declared; default: TensorFlow's).
WORDS_FAMILY = "keras-torch"
# ``pitfalls``' words (frameworks.declared): torch's, with Keras' fit and loss read-back, and --quick's line.
PITFALLS_METHODS: dict[str, tuple[str, str]] = {
    **_torch_env.PITFALLS_METHODS,
    "first_epoch": ("model.fit's first epoch, per step", "median step of the later epochs"),
    "sync_each": ("the loss read back (keras.ops.convert_to_numpy) after every step", "one sync per block of steps"),
}
PITFALLS_QUICK = (
    "[yellow]--quick:[/yellow] 0.05 s of steady samples per point, 2 epochs for the first-epoch "
    "pitfall (the full run: whichdevice pitfalls --framework keras-torch)"
)

# What a script's capture watches (frameworks.declared), for the line that says none was reached.
CAPTURE_WATCHES: tuple[str, ...] = ("keras Model.fit", "Model.train_on_batch")
# The registry's entry for this framework (frameworks/__init__.py: what each name means).
PARTS: tuple[str, ...] = ("training", "calibration", "probes", "pipeline", "optrace", "pitfalls", "scriptfixes")
REQUIRES: tuple[str, ...] = ("keras", "torch")
# The files Keras writes from native code, which Python's audit events do not show
# (workloads/scriptwrites.py; frameworks.declared; common/writers.py): .h5 and .weights.h5 through
# h5py. Keras' TensorBoard callback writes through TensorFlow's summary writer on every backend:
# TensorFlow declares it (every framework's declarations are wrapped in a script's process).
NATIVE_WRITERS: tuple[tuple[str, str, str, str, str], ...] = (H5PY,)
INSTALL = "pip install 'whichdevice[torch]'"
KERAS = True
KERAS_BACKEND = "torch"  # the backend a script's Keras names (frameworks.keras_on)
# Torch's own CPU thread count without a setting: one per physical core (frameworks.declared;
# default: every logical core, as TensorFlow's). A script's thread variants leave out the count
# its default already is.
DEFAULT_CPU_THREADS = "physical"
# Declarations read by the parent (frameworks.declared): pitfalls time every step.
PITFALLS_TIMING = "eager"
# Why the pre-flight has no traced step of a script here (frameworks.declared; default: none).
STEP_UNTRACED = "this version does not trace Keras' fit step (its train function runs inside fit)"
# A fix's line where Keras on torch differs from the catalogue's ``code`` (frameworks.declared, by fix).
FIX_CODE: dict[str, str] = {fixkeys.CPU_THREADS: "torch.set_num_threads({v})"}
# A fix's "how" where this framework's differs from the catalogue's (frameworks.declared, by fix).
FIX_HOW: dict[str, str] = {fixkeys.CPU_THREADS: "torch.set_num_threads(n) (or OMP_NUM_THREADS=n) before training"}
SAYS: dict[str, str] = {
    "predict": "eager ops + measured Python per step",
    "diagnose": "your Keras model on torch",
    "pipeline": "PyDataset; tf.data where installed",
}

_NUMPY_INPUT = (
    "keras-torch: the seeds' tf.data pipelines are TensorFlow-only; here they are numpy batches "
    "(keras.utils.PyDataset: same batches, shuffled per epoch where the seed shuffles, no prefetch). "
    "The custom loop's step is eager torch (backward, optimizer.apply: Keras' torch training-loop "
    "recipe); model.fit's jit_compile='auto' is eager on this backend, so the jit_compile=True fix "
    "(torch.compile) and steps_per_execution are not measured by `run`."
)
NOTES: dict[str, list[str]] = {"train": [_NUMPY_INPUT], "run": [_NUMPY_INPUT]}

# ``calibrate``: the probes that do not apply (workloads/calibrate.skipped_probes). PyTorch runs
# op by op: there is no compiled step whose per-op cost differs from the eager one.
CALIBRATE_SKIPS: tuple[str, ...] = ("graph",)
NOTES["calibrate"] = [
    "keras-torch: no compiled-chain probe — PyTorch runs op by op, so the profile has the eager per-op "
    "dispatch only (its compiled per-op and step-call figures are not measured)."
]

NOTES["placement"] = [
    "keras-torch: the small MLP (Keras) trained by an eager torch step (Keras' torch loop recipe) fed the NumPy "
    "batch, the loss read back each step; traced with torch.profiler and a TorchDispatchMode over one step."
]
NOTES["pitfalls"] = [
    "keras-torch: the small MLP (Keras) on torch; torch.compile and the DataLoader's num_workers are plain "
    "torch's mistakes (whichdevice pitfalls --framework torch) and were not run."
]

# ``pipeline``: the variant ladder of this framework's input-pipeline API (parent-safe).
PIPELINE = PY_DATASET


def child_env(device_kind: str, cpu_threads: int | None = None) -> dict[str, str]:
    return {**_torch_env.child_env(device_kind, cpu_threads), "KERAS_BACKEND": "torch"}
