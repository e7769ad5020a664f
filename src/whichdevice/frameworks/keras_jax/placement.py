"""Keras on JAX: JAX's thread/affinity set-up, Keras' device scope."""

from __future__ import annotations

import keras  # noqa: F401  (the backend must be Keras' before the scope is used)

from whichdevice.frameworks.common.keras import scope
from whichdevice.frameworks.jax.placement import configure, ran_on

__all__ = ["configure", "scope", "ran_on"]
