"""Environment for a JAX child process, decided before ``import jax``.

JAX picks its platforms and its GPU memory policy when the backend starts (the first
``jax.devices()`` or computation); setting these later has no effect.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

# Whose words a report uses for this framework (frameworks.declared; default: TensorFlow's).
WORDS_FAMILY = "jax"
# More work per step, in this framework's words (frameworks.declared; default: Keras' steps_per_execution).
MORE_WORK = "jax.jit over more of the step (lax.scan over several steps) to fuse ops"

# The capture counts host reads (a jax.Array read back to NumPy or Python), so a step with none
# recorded had none (frameworks.declared; default: not counted, a missing count is no measurement).
COUNTS_HOST_READS = True
# A host read in this framework's words (frameworks.declared; default: TensorFlow's .numpy()), as a
# report names the reads the capture counted: float(), int(), .item(), np.asarray of a jax.Array.
READ_BACK = "float(x)"

# What a script's capture watches (frameworks.declared), for the line that says none was reached.
CAPTURE_WATCHES: tuple[str, ...] = (
    "a jax.jit step that takes a gradient or applies optax updates",
    "optax.apply_updates",
)
# The registry's entry for this framework (frameworks/__init__.py: what each name means).
PARTS: tuple[str, ...] = ("probes", "audit", "scriptfixes")
REQUIRES: tuple[str, ...] = ("jax",)
INSTALL = "pip install 'whichdevice[jax]'"
KERAS = False
# Declarations read by the parent (frameworks.declared): the jitted loop's first step compiles.
PITFALLS_TIMING = "jit"
# A fix's line where JAX's differs from the catalogue's ``code`` (frameworks.declared, by fix).
FIX_CODE: dict[str, str] = {fixkeys.BATCH: "for xb, yb in batches(x, y, size={v}): state = train_step(state, xb, yb)"}
# What the pre-flight's traced step is read from, in the no-GPU answer's line (frameworks.declared;
# default: "its ops").
STEP_TRACE_WORDS = "XLA's cost analysis of its compiled step"
# A script's capture (capture.py: a jitted step that takes a gradient or applies optax updates,
# Flax's TrainState and nnx.Optimizer included): the script makes its own batches, so its batch
# variant tiles the step's data arguments to the batch; what the record says of that.
STEP_REBATCHED = (
    "The batch sweep re-batched the captured step, not the script: the script makes its own batches, so "
    "the step's data arguments were tiled (their rows repeated) to each batch before the call."
)

NOTES: dict[str, list[str]] = {}


def child_env(device_kind: str, cpu_threads: int | None = None) -> dict[str, str]:
    """``cpu``: ``JAX_PLATFORMS=cpu``, so the GPU backend is never initialized; ``gpu`` and
    ``discover``: ``XLA_PYTHON_CLIENT_PREALLOCATE=false``, so JAX does not reserve 75 % of the
    card's memory at start-up (it would starve anything else on the GPU, and discovery
    would pay for the reservation). Threads: JAX has no thread-count setting (jax-ml/jax
    #1539); ``--cpu-threads`` is applied as CPU affinity in ``placement.configure``."""
    env = {"TF_CPP_MIN_LOG_LEVEL": "2"}  # XLA's C++ logging, as for TensorFlow
    if device_kind == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    elif device_kind in ("gpu", "discover"):
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    else:
        raise ValueError(f"device_kind must be cpu, gpu or discover, not {device_kind!r}")
    return env
