"""Keras on JAX: JAX's ``block_until_ready`` (see ``frameworks/jax/sync.py``)."""

from whichdevice.frameworks.jax.sync import sync

__all__ = ["sync"]
