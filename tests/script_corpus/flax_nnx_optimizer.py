"""Flax nnx: a small MLP trained with nnx.Optimizer (optax.adamw) in an nnx.jit step over batches of random data."""

import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(16, 64, rngs=rngs)
        self.out = nnx.Linear(64, 1, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


rng = np.random.default_rng(0)
x = rng.random((2048, 16), dtype=np.float32)
y = rng.random((2048, 1), dtype=np.float32)
for epoch in range(5):
    for i in range(0, len(x), 32):
        loss = train_step(model, optimizer, jnp.asarray(x[i : i + 32]), jnp.asarray(y[i : i + 32]))
    print(f"epoch {epoch}: loss {float(loss):.4f}")
