"""Workload ops for JAX: ``jax.jit``-compiled matmul (as the reference's keras_probe.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from whichdevice.frameworks.contracts import PlacementError
from whichdevice.frameworks.jax.placement import jax_device, ran_on

DTYPES = {"float32": jnp.float32, "float16": jnp.float16, "bfloat16": jnp.bfloat16}


def _check(array, device: str) -> None:
    want = device.split(":")[0]
    if ran_on(array) != want:
        raise PlacementError(f"op asked for {device} ran on {ran_on(array) or 'an unknown device'}")


def noop():
    return lambda: None


_matmul = jax.jit(jnp.matmul)


def matmul_steady(n: int, dtype: str, device: str):
    """``C = A @ B`` with A, B already on ``device``; the first call compiles (warm-up)."""
    dev = jax_device(device)
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    a = jax.device_put(jax.random.normal(k1, (n, n), DTYPES[dtype]), dev)
    b = jax.device_put(jax.random.normal(k2, (n, n), DTYPES[dtype]), dev)
    _check(_matmul(a, b), device)
    return lambda: _matmul(a, b)


def matmul_seed(n: int, dtype: str, device: str):
    """Seed 000's cycle in JAX: draw two random (n, n) arrays on the device (a new key each
    call), multiply, copy the product to the host (``np.asarray`` waits for it)."""
    dev = jax_device(device)
    key = [jax.random.PRNGKey(0)]

    def call():
        key[0], k1, k2 = jax.random.split(key[0], 3)
        with jax.default_device(dev):
            a = jax.random.normal(k1, (n, n), DTYPES[dtype])
            b = jax.random.normal(k2, (n, n), DTYPES[dtype])
            c = _matmul(a, b)
        _check(c, device)
        return np.asarray(c)

    return call
