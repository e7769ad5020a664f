"""Put work on one device: visible devices and CPU threads after import, op placement."""

from __future__ import annotations

import os
import platform

import tensorflow as tf

from whichdevice.core.machine import usable_cores
from whichdevice.frameworks.tensorflow.logparse import short_device


def _tf_device(device: str) -> str:
    """``CPU:0`` / ``GPU:1`` -> TensorFlow's ``/device:CPU:0`` form."""
    return f"/device:{device}"


def configure(device: str, cpu_threads: int | None) -> dict[str, object]:
    """Set up TensorFlow for a run on ``device``, before any op executes.

    A GPU run keeps only that GPU visible (others are not initialized) with memory
    growth on; threads are set when asked, otherwise TensorFlow's default (all cores)
    stays. Returns what is in effect, for the record.
    """
    if device.startswith("GPU"):
        gpus = tf.config.list_physical_devices("GPU")
        index = int(device.split(":")[1])
        tf.config.set_visible_devices([gpus[index]], "GPU")
        tf.config.experimental.set_memory_growth(gpus[index], True)
    if cpu_threads is not None:
        tf.config.threading.set_intra_op_parallelism_threads(cpu_threads)
        tf.config.threading.set_inter_op_parallelism_threads(cpu_threads)
    intra = tf.config.threading.get_intra_op_parallelism_threads()
    inter = tf.config.threading.get_inter_op_parallelism_threads()
    cores = usable_cores()
    return {
        # 0 means "TensorFlow decides", which is one thread per usable logical core.
        "cpu_threads_intra": intra or cores,
        "cpu_threads_inter": inter or cores,
        "cpu_threads_source": "--cpu-threads" if cpu_threads else f"default: all {cores} cores",
        "onednn": onednn_enabled(),
    }


def onednn_enabled() -> bool:
    """oneDNN CPU kernels: on by default on x86-64 Linux since TF 2.9 unless
    TF_ENABLE_ONEDNN_OPTS=0 (TensorFlow prints the same at import)."""
    flag = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    if flag is not None:
        return flag.strip().lower() not in ("0", "false")
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")


def scope(device: str):
    """Context manager placing ops created inside it on ``device`` (renamed local GPU)."""
    if device.startswith("GPU"):
        # configure() left exactly one GPU visible; inside this process it is GPU:0.
        device = "GPU:0"
    return tf.device(_tf_device(device))


def ran_on(tensor) -> str:
    """The device a tensor was produced on, as ``CPU:0`` / ``GPU:0``."""
    return short_device(getattr(tensor, "device", "") or "")
