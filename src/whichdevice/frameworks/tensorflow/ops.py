"""Workload ops for TensorFlow. Each builder returns a zero-argument callable; the
timing core calls it repeatedly and synchronizes around it."""

from __future__ import annotations

import tensorflow as tf

from whichdevice.frameworks.contracts import PlacementError
from whichdevice.frameworks.tensorflow.placement import ran_on, scope

DTYPES = {"float32": tf.float32, "float16": tf.float16, "bfloat16": tf.bfloat16}


def _check_placement(tensor, device: str) -> None:
    got = ran_on(tensor)
    want_kind = device.split(":")[0]
    if want_kind not in got:
        raise PlacementError(f"op asked for {device} ran on {got or 'an unknown device'}")


def noop():
    """Nothing at all: used to measure the harness's own cost per call."""
    return lambda: None


def matmul_steady(n: int, dtype: str, device: str):
    """``C = A @ B`` with A, B already on ``device``: the cost of the kernel (+ dispatch)."""
    dt = DTYPES[dtype]
    with scope(device):
        a = tf.random.normal((n, n), dtype=dt)
        b = tf.random.normal((n, n), dtype=dt)
        _check_placement(tf.matmul(a, b), device)

    def call():
        with scope(device):
            return tf.matmul(a, b)

    return call


def matmul_seed(n: int, dtype: str, device: str):
    """What seed 000 timed, in TF2 form: create two random (n, n) variables on the
    device, initialize them, multiply, and read the product back to the host."""
    dt = DTYPES[dtype]

    def call():
        with scope(device):
            v1 = tf.Variable(tf.random.normal((n, n), dtype=dt))
            v2 = tf.Variable(tf.random.normal((n, n), dtype=dt))
            op = tf.matmul(v1, v2)
        _check_placement(op, device)
        return op.numpy()

    return call
