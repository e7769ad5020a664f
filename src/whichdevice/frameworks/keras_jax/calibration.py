"""Keras 3 on JAX: the training step's kernels for ``predict``, as XLA launches them.

The step is the ``jax.jit``-compiled stateless step of ``training.train_step`` (built by
``training.compiled_step``, so its compiled form can be read). XLA fuses the step's operations
into a few kernels: the kernel list is the instructions of the compiled HLO's entry computation
(``jax.jit(...).lower(...).compile().as_text()``) that launch work, read by
``frameworks/common/hlo.py``.

Compiled here for the CPU: XLA's GPU compiler fuses along the same lines but not
identically (an approximation, stated in ``predict``'s assumptions).

The ``calibrate`` probes (``contracts.CalibrationProbes``) are JAX's, the arrays Keras on JAX
computes with (``frameworks/jax/calibration.py``).
"""

from __future__ import annotations

from whichdevice.frameworks.common.hlo import kernels_from_hlo
from whichdevice.frameworks.jax.calibration import d2h, elementwise, graph_chain, h2d, matmul, tiny_eager, tiny_sync

__all__ = [
    "describe_train",
    "kernels_from_hlo",
    "tiny_eager",
    "tiny_sync",
    "graph_chain",
    "elementwise",
    "h2d",
    "d2h",
    "matmul",
]


def describe_train(model, optimizer, loss_fn, training, x, y) -> dict:
    from whichdevice.frameworks.keras_jax.training import compiled_step

    jitted, state = compiled_step(model, optimizer, loss_fn)
    text = jitted.lower(state, x, y).compile().as_text()
    import jax

    # JAX's default matmul precision runs float32 as TF32 on GPUs that have it
    # jax.config's flags are attributes made at run time, absent from jax's type information
    precision = jax.config.jax_default_matmul_precision  # type: ignore[attr-defined]
    tf32 = precision in (None, "default", "bfloat16", "tensorfloat32")
    return {"ops": kernels_from_hlo(text), "launch_mode": "xla", "tf32": tf32}
