"""NumPy runs where it is called: nothing to place; threads come from the environment."""

from __future__ import annotations

import contextlib
import os

from whichdevice.core.machine import usable_cores


def configure(device: str, cpu_threads: int | None) -> dict[str, object]:
    if device != "CPU:0":
        raise ValueError("numpy runs on CPU:0 only")
    env_threads = os.environ.get("OMP_NUM_THREADS")
    n = int(env_threads) if env_threads else usable_cores()
    return {
        "cpu_threads_intra": n,
        "cpu_threads_inter": 1,
        "cpu_threads_source": "--cpu-threads" if cpu_threads else f"default: all {usable_cores()} cores",
        "onednn": None,
    }


def scope(device: str):
    return contextlib.nullcontext()
