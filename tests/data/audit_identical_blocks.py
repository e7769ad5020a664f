# Two identical blocks: the same traced step, same inputs, one asked for the CPU and one for the
# GPU. On a machine without a GPU both run on CPU:0 (soft placement), so the true ratio is 1.0:
# benchmarks/audit_interleave.py checks that the audit's corrected ratio interval contains it.
import time

import numpy as np
import tensorflow as tf

x = tf.constant(np.random.rand(128, 128).astype("float32"))


@tf.function
def step(a):
    return tf.reduce_sum(tf.matmul(tf.matmul(a, a), a))


for device in ["/CPU:0", "/GPU:0"]:
    with tf.device(device):
        step(x).numpy()  # warm-up
        start = time.perf_counter()
        for _ in range(50):
            y = step(x)
        y.numpy()
        print(device, time.perf_counter() - start)
