"""Plain JAX with optax: a jitted train step (value_and_grad, optax.adam, apply_updates) over batches sliced from NumPy arrays."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

rng = np.random.default_rng(0)
x = rng.random((2048, 32), dtype=np.float32)
y = rng.integers(0, 10, 2048)
key = jax.random.PRNGKey(0)
k1, k2 = jax.random.split(key)
params = {
    "w1": jax.random.normal(k1, (32, 64)) * 0.1,
    "b1": jnp.zeros(64),
    "w2": jax.random.normal(k2, (64, 10)) * 0.1,
    "b2": jnp.zeros(10),
}
tx = optax.adam(1e-3)
opt_state = tx.init(params)


def loss_fn(p, xb, yb):
    h = jax.nn.relu(xb @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()


@jax.jit
def train_step(p, state, xb, yb):
    loss, grads = jax.value_and_grad(loss_fn)(p, xb, yb)
    updates, state = tx.update(grads, state, p)
    return optax.apply_updates(p, updates), state, loss


for epoch in range(5):
    for i in range(0, len(x), 64):
        params, opt_state, loss = train_step(params, opt_state, x[i : i + 64], y[i : i + 64])
    print(f"epoch {epoch}: loss {float(loss):.4f}")
