# TF1 style (tf.compat.v1): one Session.run timed, the session's first run of that fetch.
import time

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

x = tf.constant(np.random.rand(64, 128).astype(np.float32))
w = tf.Variable(tf.random_normal([128, 32]))
y = tf.nn.relu(tf.matmul(x, w))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    start = time.time()
    out = sess.run(y)
    print("one run:", time.time() - start)
