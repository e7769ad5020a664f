"""Keras on JAX: the step is a ``jax.jit`` program; JAX's trace (``frameworks/jax/optrace.py``)."""

from whichdevice.frameworks.jax.optrace import trace_step

__all__ = ["trace_step"]
