# TF2: the clock read inside @tf.function — it runs once, while tracing, and returns a constant.
import time

import tensorflow as tf


@tf.function
def timed_matmuls(x):
    start = time.perf_counter()
    for _ in range(3):
        x = tf.matmul(x, x)
    return time.perf_counter() - start


x = tf.random.normal((64, 64))
with tf.device("/cpu:0"):
    print("CPU", float(timed_matmuls(x)))
with tf.device("/cpu:0"):
    print("again", float(timed_matmuls(x)))
