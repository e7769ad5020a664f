"""What ``nvidia-smi`` says about the GPUs (name, memory, driver), for frameworks that do not
report the driver themselves, and the other host facts the discovery parts share (installed
distributions). No framework import: safe anywhere."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from whichdevice.core.machine import cpu_model
from whichdevice.core.records import DeviceInfo


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


def dist_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (``jaxlib``, ``tensorflow-cpu``), None if absent."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


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


def devices(gpus: Sequence[tuple[str | None, int | None, str | None]]) -> list[DeviceInfo]:
    """The CPU, then each GPU a framework sees, as ``CPU:0``, ``GPU:0``, ...: ``gpus`` holds each one's
    (description, memory in bytes, compute capability) as the framework reports them; nvidia-smi's
    row of the same index gives the driver, and the name and memory the framework does not report."""
    out = [DeviceInfo(name="CPU:0", kind="cpu", description=cpu_model())]
    smi = smi_query() if gpus else []
    for i, (description, memory_bytes, cc) in enumerate(gpus):
        row = smi[i] if i < len(smi) else {}
        mem = row.get("memory_mib")
        out.append(
            DeviceInfo(
                name=f"GPU:{i}",
                kind="gpu",
                description=description or row.get("name", "GPU"),
                memory_bytes=memory_bytes if memory_bytes is not None else int(float(mem)) * 2**20 if mem else None,
                compute_capability=cc,
                driver=row.get("driver"),
            )
        )
    return out
