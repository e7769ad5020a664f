"""JAX's ``calibrate`` probes (``contracts.CalibrationProbes``), also Keras-on-JAX's
(``frameworks/keras_jax/calibration.py``): a 1-element add dispatched eagerly (JAX returns once
it is queued), the same read back to the host, ``a + b`` across sizes, the copies
(``jax.device_put`` of a numpy array, ``np.asarray`` back), a ``jax.jit``-compiled square
matmul, and the compiled chain: XLA fuses a chain of elementwise ops into one kernel (256
``sin`` cost 3 µs more than none on this project's 2-core CPU: 12 ns each), so the chain
alternates a 4x4 ``dot`` with a ``sin``, which XLA keeps as separate kernels (2 per pair, read
from the compiled HLO): the per-kernel cost of a compiled step, which is what ``predict``
multiplies by a step's kernels.
"""

from __future__ import annotations

import numpy as np

from whichdevice.frameworks.common.hlo import kernels_from_hlo
from whichdevice.frameworks.jax.placement import jax_device

__all__ = ["tiny_eager", "tiny_sync", "graph_chain", "elementwise", "h2d", "d2h", "matmul"]


def _put(array, device: str):
    import jax

    return jax.device_put(array, jax_device(device))


def tiny_eager(device: str):
    """One add on a 1-element array on ``device``, dispatched eagerly, no wait per call."""
    import jax.numpy as jnp

    a = _put(np.ones(1, np.float32), device)
    return lambda: jnp.add(a, a)


def tiny_sync(device: str):
    """The same add, read back to the host each call (``np.asarray``: waits for it)."""
    import jax.numpy as jnp

    a = _put(np.ones(1, np.float32), device)
    return lambda: np.asarray(jnp.add(a, a))


def graph_chain(device: str, k: int):
    """A ``jax.jit`` function launching ``k`` kernels: ``k // 2`` pairs of a 4x4 ``dot`` and a
    ``sin`` (kept apart by XLA, module doc); k = 0 returns its input. Compiled here, outside the
    timing; the compiled kernel count is checked against ``k``."""
    import jax
    import jax.numpy as jnp

    pairs = int(k) // 2

    def chain(v):
        for _ in range(pairs):
            v = jnp.sin(v @ v)
        return v

    fn = jax.jit(chain)
    x = _put(np.full((4, 4), 0.1, np.float32), device)
    if pairs:
        kernels = len(kernels_from_hlo(fn.lower(x).compile().as_text() or ""))
        if kernels < 2 * pairs:
            raise RuntimeError(f"XLA fused the chain: {kernels} kernels for {2 * pairs} ops")
    jax.block_until_ready(fn(x))
    return lambda: fn(x)


def elementwise(device: str, nbytes: int):
    """``a + b`` on float32 arrays on ``device``; ``nbytes`` = bytes moved (two inputs + one output)."""
    import jax.numpy as jnp

    n = max(1, int(nbytes) // 12)
    rng = np.random.default_rng(0)
    a = _put(rng.random(n, dtype=np.float32), device)
    b = _put(rng.random(n, dtype=np.float32), device)
    return lambda: jnp.add(a, b)


def h2d(device: str, nbytes: int):
    """A host numpy array of ``nbytes`` put on ``device`` (``jax.device_put``)."""
    host = np.ones(max(1, int(nbytes) // 4), np.float32)
    return lambda: _put(host, device)


def d2h(device: str, nbytes: int):
    """An array of ``nbytes`` on ``device`` read back to the host (``np.asarray``)."""
    t = _put(np.ones(max(1, int(nbytes) // 4), np.float32), device)
    return lambda: np.asarray(t)


def matmul(device: str, n: int):
    """A ``jax.jit``-compiled square float32 matmul, operands on ``device``: the compiled
    step's matmul (Keras' eager ``keras.ops.matmul`` would add a dispatch per call)."""
    from whichdevice.frameworks.jax.ops import matmul_steady

    return matmul_steady(n, "float32", device)
