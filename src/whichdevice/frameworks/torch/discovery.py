"""What PyTorch is and which devices it sees (runs inside a child, after env set-up)."""

from __future__ import annotations


import torch

from whichdevice.frameworks.common import nvidia as _nvidia
from whichdevice.core.records import DeviceInfo, FrameworkInfo, Scalar


def settings() -> dict[str, Scalar]:
    """What decides a fair comparison, as in effect in this process: threads, compile mode,
    and whether float32 matmul/convolutions may use TF32 on the GPU (torch's defaults:
    matmul off, cuDNN on)."""
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "cuda_version": torch.version.cuda,
        "cudnn_version": cudnn,
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "compile": "eager (no torch.compile)",
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def framework_info() -> FrameworkInfo:
    return FrameworkInfo(name="torch", version=torch.__version__, details=settings())


def list_devices() -> list[DeviceInfo]:
    """The CPU, then every GPU torch can see, as ``CPU:0``, ``GPU:0``, ..."""
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    props = [torch.cuda.get_device_properties(i) for i in range(n)]
    return _nvidia.devices([(p.name, int(p.total_memory), f"{p.major}.{p.minor}") for p in props])


def no_gpu_reasons() -> list[str]:
    """Concrete, checked reasons why torch sees no GPU here."""
    reasons = _nvidia.host_reasons()
    if torch.version.cuda is None:
        reasons.append(_nvidia.no_cuda_build("torch", torch.__version__, "install a CUDA build of torch"))
    return _nvidia.no_gpu_order(reasons) or [
        "torch found no usable GPU (python -c 'import torch; torch.cuda.init()' says why)"
    ]
