# TF1 style: pins the graph to /gpu:0 with soft placement off — on a machine without a GPU it fails.
import time

import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

with tf.device("/gpu:0"):
    a = tf.random_normal([256, 256])
    b = tf.matmul(a, a)
config = tf.ConfigProto(allow_soft_placement=False)
with tf.Session(config=config) as sess:
    t = time.time()
    sess.run(b)
    print("GPU:", time.time() - t)
