"""Describe the host: CPU model, cores, memory. No framework is imported here."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

import psutil

from whichdevice.core.records import MachineInfo


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else platform's guess."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def usable_cores() -> int:
    """Logical cores this process may run on (respects taskset/cgroup affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def describe_machine() -> MachineInfo:
    return MachineInfo(
        hostname=socket.gethostname(),
        os=f"{platform.system()} {platform.release()}",
        python=platform.python_version(),
        cpu_model=cpu_model(),
        cpu_cores_logical=usable_cores(),
        cpu_cores_physical=psutil.cpu_count(logical=False),
        ram_bytes=psutil.virtual_memory().total,
    )
