# TF2: the only timing holds a tf.function's first call, so its trace is inside the number.
import time

import tensorflow as tf


@tf.function
def run(x):
    for _ in range(40):  # a Python loop: unrolled into 40 matmuls at trace time
        x = tf.tanh(tf.matmul(x, x))
    return x


x = tf.ones((64, 64)) / 64.0
t0 = time.time()
y = run(x)
print("tf.function:", time.time() - t0)
