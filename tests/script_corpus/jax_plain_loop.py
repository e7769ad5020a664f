"""A plain-JAX training loop (jax.jit of a jax.grad update on a small MLP), no Keras, TensorFlow or torch."""

import jax
import jax.numpy as jnp
import numpy as np

x = jnp.asarray(np.random.rand(512, 8).astype("float32"))
y = jnp.asarray(np.random.rand(512, 1).astype("float32"))
params = [jnp.zeros((8, 16)), jnp.zeros(16), jnp.zeros((16, 1)), jnp.zeros(1)]


def loss(p, xb, yb):
    h = jnp.tanh(xb @ p[0] + p[1])
    return jnp.mean((h @ p[2] + p[3] - yb) ** 2)


@jax.jit
def update(p, xb, yb):
    return [w - 0.01 * g for w, g in zip(p, jax.grad(loss)(p, xb, yb))]


for epoch in range(3):
    for i in range(0, 512, 32):
        params = update(params, x[i : i + 32], y[i : i + 32])
