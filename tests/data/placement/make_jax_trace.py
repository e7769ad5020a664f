"""How ``jax_cpu_step.trace.json.gz`` was made (2-core CPU-only VM, jax 0.10.2):

    JAX_PLATFORMS=cpu python tests/data/placement/make_jax_trace.py

A jitted training step of a one-layer model (tanh, squared error, SGD) fed NumPy ``x``, ``y``
at every call (two implicit host-to-device puts a step) and its loss read back with
``float()``, 5 steps under ``jax.profiler.trace(..., create_perfetto_trace=True)``; the
Perfetto JSON it wrote, kept as is. ``frameworks/jax/optrace.read_perfetto`` reads it.
"""

import shutil
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).parent


@jax.jit
def step(w, x, y):
    def loss(w):
        return ((jnp.tanh(x @ w) - y) ** 2).mean()

    value, grad = jax.value_and_grad(loss)(w)
    return value, w - 0.1 * grad


def main() -> None:
    x, y = np.ones((10, 100), np.float32), np.ones((10, 10), np.float32)
    w = jnp.ones((100, 10))
    value, w = step(w, x, y)
    float(value)
    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            for _ in range(5):
                value, w = step(w, x, y)
                float(value)
        (trace,) = Path(tmp).rglob("*.trace.json.gz")
        shutil.copy(trace, HERE / "jax_cpu_step.trace.json.gz")


if __name__ == "__main__":
    main()
