"""Flax linen: a small MLP trained with flax.training.train_state.TrainState and optax, a jitted step over
batches of random data."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn
from flax.training import train_state


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(64)(x))
        return nn.Dense(10)(x)


rng = np.random.default_rng(0)
images = rng.random((2048, 28 * 28), dtype=np.float32)
labels = rng.integers(0, 10, 2048)
model = MLP()
variables = model.init(jax.random.PRNGKey(0), jnp.ones((1, 28 * 28)))
state = train_state.TrainState.create(apply_fn=model.apply, params=variables["params"], tx=optax.sgd(0.1, 0.9))


@jax.jit
def train_step(state, batch):
    def loss_fn(params):
        logits = state.apply_fn({"params": params}, batch["image"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


for epoch in range(5):
    perm = rng.permutation(len(images))
    for i in range(0, len(images), 32):
        idx = perm[i : i + 32]
        state, loss = train_step(state, {"image": images[idx], "label": labels[idx]})
    print(f"epoch {epoch}: loss {float(loss):.4f}")
