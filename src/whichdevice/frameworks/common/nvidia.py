"""What ``nvidia-smi`` says about the GPUs (name, memory, driver), for frameworks that do not
report the driver themselves, and the other host facts the discovery parts share (installed
distributions). No framework import: safe anywhere."""

from __future__ import annotations

import os
import platform
import re
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


# Why a framework sees no GPU: one wording per fact, which every framework's discovery says
# (``no_gpu_reasons``: the clause before ':' is the fact, what follows it the fix; a parenthesis
# the evidence) and records keep. The first screen names the one that decides (:func:`no_gpu_order`)
# in its short form (:func:`no_gpu_gist`); the record's note lists them all in that order.
NO_DRIVER = "no NVIDIA driver found (no nvidia-smi, no /proc/driver/nvidia)"


def no_cuda_build(framework: str, build: str, fix: str) -> str:
    """The framework's build has no CUDA support: 'this torch build (2.13.0+cpu) has no CUDA
    support: install a CUDA build of torch'. ``build``: the evidence (its version, its package)."""
    return f"this {framework} build ({build}) has no CUDA support: {fix}"


# The facts in the order they decide (a machine without the driver has no GPU for any build; a
# GPU hidden by the user's environment, or an OS without the framework's GPU support, is so for
# any build too; then the framework's build; then what the framework alone reports), each known by
# the words its reason starts or goes on with. A reason of none of them comes last.
_DECIDES: tuple[tuple[str, ...], ...] = (
    ("no NVIDIA driver found",),
    ("hides every GPU", "leaves the GPU out"),
    ("no native GPU support on Windows", "no CUDA on macOS"),
    ("has no CUDA support", "has no GPU support", "has no CUDA plugin"),  # the last two: records before the one wording
)


def _decides(reason: str) -> int:
    return next((i for i, words in enumerate(_DECIDES) if any(w in reason for w in words)), len(_DECIDES))


def no_gpu_order(reasons: Sequence[str]) -> list[str]:
    """The reasons, each once, the one that decides first (``_DECIDES``), else as found."""
    return sorted(dict.fromkeys(reasons), key=_decides)


def no_gpu_gist(reason: str) -> str:
    """The fact alone, for a line with no room for its evidence and fix: 'this torch build has
    no CUDA support', 'no NVIDIA driver found'."""
    fact = reason.split(": ", 1)[0]
    return " ".join(re.sub(r"\s*\([^()]*\)", "", fact).split())


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
