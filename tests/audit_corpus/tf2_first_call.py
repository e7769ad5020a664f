# TF2: the first call of a tf.function is timed: tracing and graph set-up inside the clock.
import time

import tensorflow as tf


@tf.function
def step(x):
    for i in range(40):
        x = x[:, :] * 1.0001
    return x


x = tf.random.uniform((8, 8))
t0 = time.time()
step(x)
print("first call:", time.time() - t0)
