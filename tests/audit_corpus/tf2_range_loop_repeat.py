# TF2: `for i in tf.range(n)` in a tf.function becomes a while_loop of scalar steps; timed with timeit.repeat.
import timeit

import tensorflow as tf


@tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.float32)])
def scale(x):
    for i in tf.range(200):
        x = x * tf.constant(1.001)
    return x


v = tf.range(1000, dtype=tf.float32)
scale(v)
print(min(timeit.repeat(lambda: scale(v).numpy(), number=5, repeat=5)))
