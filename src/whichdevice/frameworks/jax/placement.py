"""Put JAX work on one device: CPU affinity for --cpu-threads, ``jax.default_device``."""

from __future__ import annotations

import os

import jax

from whichdevice.core.machine import usable_cores


def jax_device(device: str):
    """``CPU:0`` / ``GPU:1`` -> the ``jax.Device``."""
    kind, _, idx = device.partition(":")
    return jax.devices(kind.lower())[int(idx or 0)]


def limit_cpu(cpu_threads: int | None) -> dict[str, object]:
    """Threads in effect. JAX (XLA's CPU client) sizes its pool to the cores it may use and
    has no setting for it (jax-ml/jax #1539), so ``cpu_threads`` restricts the process's CPU
    affinity to that many cores, before the backend starts its threads."""
    cores = usable_cores()
    if cpu_threads is not None and cpu_threads < cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cpu_threads])
        return {
            "cpu_threads_intra": cpu_threads,
            "cpu_threads_inter": cpu_threads,
            "cpu_threads_source": f"--cpu-threads: CPU affinity limited to {cpu_threads} cores "
            "(JAX has no thread-count setting)",
            "onednn": None,
        }
    return {
        "cpu_threads_intra": cores,
        "cpu_threads_inter": cores,
        "cpu_threads_source": f"default: all {cores} cores (XLA's CPU thread pool)",
        "onednn": None,
    }


def configure(device: str, cpu_threads: int | None) -> dict[str, object]:
    """Set up JAX for a run on ``device`` before any computation; returns what is in effect."""
    settings = limit_cpu(cpu_threads)
    jax_device(device)  # starts the backend; fails here, clearly, if the device is not there
    return settings


def scope(device: str):
    """Context manager making ``device`` the default for arrays created inside it."""
    return jax.default_device(jax_device(device))


def ran_on(array) -> str:
    """The device kind an array lives on: ``CPU`` / ``GPU``."""
    devs = array.devices() if hasattr(array, "devices") else set()
    kinds = {("GPU" if d.platform in ("gpu", "cuda", "rocm") else d.platform.upper()) for d in devs}
    return ",".join(sorted(kinds))
