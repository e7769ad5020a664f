"""A script that insists on a GPU (as many training scripts written on a GPU machine do)."""

import tensorflow as tf

if not tf.config.list_physical_devices("GPU"):
    raise RuntimeError("No GPU device found: this script needs CUDA")
