# JAX: time.perf_counter inside jax.jit — read once, at trace time.
import time

import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    t = time.perf_counter()
    y = x @ x
    print("inside jit:", time.perf_counter() - t)
    return y


x = jnp.ones((64, 64))
f(x).block_until_ready()
f(x).block_until_ready()
