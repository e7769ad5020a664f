"""What ``nvidia-smi`` says about the GPUs (name, memory, driver), for frameworks that do not
report the driver themselves. No framework import: safe anywhere."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path


def smi_query() -> list[dict[str, str]]:
    """name, memory.total (MiB), driver_version per GPU from nvidia-smi, if it is there."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            rows.append({"name": parts[0], "memory_mib": parts[1], "driver": parts[2]})
    return rows


NO_DRIVER = "no NVIDIA driver found (no nvidia-smi, no /proc/driver/nvidia)"


def driver_present() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


def hidden_by_env(environ) -> str | None:
    """The reason CUDA_VISIBLE_DEVICES hides every GPU, or None."""
    cvd = environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU (unset it)"
    return None


def host_reasons() -> list[str]:
    """The checked reasons outside the framework why it sees no GPU: the GPUs hidden by the
    environment, no NVIDIA driver on Linux."""
    hidden = hidden_by_env(os.environ)
    reasons = [hidden] if hidden else []
    if platform.system() == "Linux" and not driver_present():
        reasons.append(NO_DRIVER)
    return reasons
