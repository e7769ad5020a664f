"""A plain JAX + optax loop in a script that imports TensorFlow too (for tf.data or a TensorBoard
writer, as Flax's examples do). TensorFlow imports Keras, on its TensorFlow backend."""

import numpy as np
import tensorflow as tf  # noqa: F401 (imported as the examples do, before JAX)

import jax
import jax.numpy as jnp
import optax

params = {"w": jnp.zeros((16, 1)), "b": jnp.zeros((1,))}
opt = optax.adam(1e-2)
state = opt.init(params)


@jax.jit
def train_step(params, state, x, y):
    def loss_fn(p):
        return ((x @ p["w"] + p["b"] - y) ** 2).mean()

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, state = opt.update(grads, state)
    return optax.apply_updates(params, updates), state, loss


rng = np.random.default_rng(0)
X = rng.random((4096, 16), dtype=np.float32)
Y = rng.random((4096, 1), dtype=np.float32)
for epoch in range(20):
    for i in range(0, len(X), 32):
        params, state, loss = train_step(params, state, X[i : i + 32], Y[i : i + 32])
