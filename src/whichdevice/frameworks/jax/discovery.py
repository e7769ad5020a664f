"""What JAX is and which devices it sees (runs inside a child, after env set-up)."""

from __future__ import annotations

import os

import jax

from whichdevice.frameworks.common import nvidia as _nvidia
from whichdevice.core.records import DeviceInfo, FrameworkInfo, Scalar


def cuda_plugin() -> str | None:
    """The installed JAX CUDA plugin (``jax-cuda12-plugin`` ...), None for a CPU-only JAX."""
    for name in ("jax-cuda13-plugin", "jax-cuda12-plugin", "jax_cuda12_plugin", "jax_cuda13_plugin"):
        if _nvidia.dist_version(name):
            return f"{name} {_nvidia.dist_version(name)}"
    return None


def settings() -> dict[str, Scalar]:
    """What decides a fair comparison, as in effect in this process: compile mode, float32
    matmul precision on the GPU (JAX's default lets the GPU use TF32 for float32 matmul;
    ``jax_default_matmul_precision='highest'`` turns that off) and the memory policy."""
    # jax.config's flags are attributes made at run time, absent from jax's type information
    precision = jax.config.jax_default_matmul_precision  # type: ignore[attr-defined]
    return {
        "jaxlib": _nvidia.dist_version("jaxlib"),
        "cuda_plugin": cuda_plugin(),
        "compile": "jax.jit (XLA) on every device",
        "default_matmul_precision": str(precision) if precision else "default (TF32 on GPUs that have it)",
        "x64": bool(jax.config.jax_enable_x64),  # type: ignore[attr-defined]  # (as above)
        "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true (JAX default: 75 % of GPU memory)"),
    }


def framework_info() -> FrameworkInfo:
    return FrameworkInfo(name="jax", version=jax.__version__, details=settings())


def gpu_devices() -> list:
    try:
        return list(jax.devices("gpu"))
    except RuntimeError:  # no GPU backend (CPU-only jaxlib, or JAX_PLATFORMS=cpu)
        return []


def list_devices() -> list[DeviceInfo]:
    """The CPU, then every GPU JAX can see, as ``CPU:0``, ``GPU:0``, ..."""
    gpus = []
    for d in gpu_devices():
        cc = getattr(d, "compute_capability", None)
        gpus.append((getattr(d, "device_kind", "GPU"), None, str(cc) if cc else None))
    return _nvidia.devices(gpus)


def no_gpu_reasons() -> list[str]:
    """Concrete, checked reasons why JAX sees no GPU here."""
    reasons = _nvidia.host_reasons()
    plats = os.environ.get("JAX_PLATFORMS", "")
    if plats and "cuda" not in plats and "gpu" not in plats:
        reasons.append(f"JAX_PLATFORMS={plats!r} leaves the GPU out (unset it)")
    if cuda_plugin() is None:
        build = f"jaxlib {_nvidia.dist_version('jaxlib') or '?'}, no CUDA plugin"
        reasons.append(_nvidia.no_cuda_build("JAX", build, "pip install -U 'jax[cuda12]'"))
    return _nvidia.no_gpu_order(reasons) or [
        "JAX found no usable GPU (run python -c 'import jax; print(jax.devices())' to see why)"
    ]
