# JAX: asks for a GPU device; the CPU-only jaxlib has none.
import time

import jax
import jax.numpy as jnp

x = jnp.ones((256, 256))
t = time.perf_counter()
(x @ x).block_until_ready()
print("cpu", time.perf_counter() - t)
xg = jax.device_put(x, jax.devices("gpu")[0])
t = time.perf_counter()
(xg @ xg).block_until_ready()
print("gpu", time.perf_counter() - t)
