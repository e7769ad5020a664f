"""Wait for JAX's asynchronous dispatch to finish the work behind a result."""

from __future__ import annotations

import jax


def sync(result=None) -> None:
    """JAX returns from a call as soon as the work is *queued* (jax-ml/jax #1797, #4474):
    without this the clock measures dispatch. JAX has no global barrier, so this waits for
    ``result`` (any pytree of arrays; host values pass through). All outputs of one jitted
    call become ready together, and later calls that consume earlier outputs wait for them,
    so blocking on the last result of a block waits for the whole block. ``None``: nothing
    was produced, nothing to wait for."""
    if result is not None:
        jax.block_until_ready(result)
