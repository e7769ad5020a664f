"""What TensorFlow is and which devices it sees (runs inside a child, after env set-up)."""

from __future__ import annotations

import platform

import tensorflow as tf

from whichdevice.frameworks.common.nvidia import devices as nvidia_devices
from whichdevice.frameworks.common.nvidia import dist_version, driver_present, host_reasons, no_cuda_build, no_gpu_order
from whichdevice.core.records import DeviceInfo, FrameworkInfo


def framework_info() -> FrameworkInfo:
    build = dict(tf.sysconfig.get_build_info())
    return FrameworkInfo(
        name="tensorflow",
        version=tf.__version__,
        details={
            "keras": dist_version("keras"),
            "distribution": "tensorflow-cpu" if dist_version("tensorflow-cpu") else "tensorflow",
            "built_with_cuda": bool(build.get("is_cuda_build", False)),
            "cuda_version": build.get("cuda_version"),
            "cudnn_version": build.get("cudnn_version"),
            "eager": tf.executing_eagerly(),
        },
    )


def list_devices() -> list[DeviceInfo]:
    """The CPU, then every GPU TensorFlow can see, as ``CPU:0``, ``GPU:0``, ..."""
    gpus = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        cc = details.get("compute_capability")
        gpus.append((details.get("device_name"), None, f"{cc[0]}.{cc[1]}" if cc else None))
    return nvidia_devices(gpus)


def no_gpu_reasons() -> list[str]:
    """Concrete, checked reasons why TensorFlow sees no GPU on this machine."""
    reasons = host_reasons()  # the GPUs hidden, no driver on Linux
    if dist_version("tensorflow-cpu"):
        reasons.append(no_cuda_build("TensorFlow", f"tensorflow-cpu {tf.__version__}", "pip install tensorflow"))
    elif not tf.test.is_built_with_cuda():
        reasons.append(no_cuda_build("TensorFlow", tf.__version__, "pip install 'tensorflow[and-cuda]'"))
    system = platform.system()
    if system == "Windows":
        reasons.append("TensorFlow >= 2.11 has no native GPU support on Windows (use WSL2)")
    elif system == "Darwin":
        reasons.append("TensorFlow has no CUDA on macOS (the tensorflow-metal plugin adds Apple GPUs)")
    if not reasons and driver_present():
        reasons.append(
            "an NVIDIA driver is present but TensorFlow found no usable GPU: CUDA/cuDNN libraries "
            "missing? try pip install 'tensorflow[and-cuda]' and run with TF_CPP_MIN_LOG_LEVEL=0 to see why"
        )
    return no_gpu_order(reasons)
