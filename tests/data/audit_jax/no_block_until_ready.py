# Classic JAX mistake: the clock is read right after a jitted call, without block_until_ready().
# JAX dispatches asynchronously (on the CPU too), so the number is the dispatch, not the work.
import time

import jax
import jax.numpy as jnp

gpus = [d for d in jax.devices() if d.platform == "gpu"]
cpu = jax.devices("cpu")[0]
gpu = gpus[0] if gpus else cpu


@jax.jit
def step(x):
    return jnp.tanh(x @ x) @ x


for name, device in [("CPU", cpu)]:
    x = jax.device_put(jnp.ones((384, 384)), device)
    step(x).block_until_ready()  # warm-up (compile)
    cpu_times = []
    for _ in range(5):
        start = time.perf_counter()
        y = step(x)
        cpu_times.append(time.perf_counter() - start)

x = jax.device_put(jnp.ones((384, 384)), gpu)
step2 = jax.jit(lambda x: jnp.tanh(x @ x) @ x)
step2(x).block_until_ready()
gpu_times = []
for _ in range(5):
    start = time.perf_counter()
    y = step2(x)
    gpu_times.append(time.perf_counter() - start)
y.block_until_ready()
print(f"CPU {min(cpu_times) * 1e3:.2f} ms, GPU {min(gpu_times) * 1e3:.2f} ms")
