"""Framework adapters: one folder per framework, the same module names in each.

Every framework folder provides:

- ``env.py``        environment variables to set *before* the framework is imported
                    (hide the GPU for a CPU run, memory growth for a GPU run). Imported
                    in the parent, so it must not import the framework.
- ``discovery.py``  ``framework_info()``, ``list_devices()``, ``no_gpu_reasons()``.
- ``placement.py``  ``configure(device, cpu_threads)`` right after import (visible devices,
                    threads) and ``scope(device)``, a context that places ops.
- ``sync.py``       ``sync(result)``: block until the device has finished queued work.
- ``ops.py``        the workload ops (``matmul_steady``, ``matmul_seed``, ``noop``).

Adding a framework is filling a folder (Keras' backend layout, STYLE.md).
"""

from __future__ import annotations

import importlib
from types import ModuleType, SimpleNamespace

FRAMEWORKS: tuple[str, ...] = ("tensorflow", "numpy")

_MODULES = ("discovery", "placement", "sync", "ops")


def env_module(name: str) -> ModuleType:
    """The framework's ``env`` module (safe to import in the parent: no framework import)."""
    if name not in FRAMEWORKS:
        raise KeyError(name)
    return importlib.import_module(f"whichdevice.frameworks.{name}.env")


def load(name: str) -> SimpleNamespace:
    """Import a framework's adapter modules (imports the framework itself: child only)."""
    if name not in FRAMEWORKS:
        raise KeyError(name)
    mods = {m: importlib.import_module(f"whichdevice.frameworks.{name}.{m}") for m in _MODULES}
    return SimpleNamespace(name=name, **mods)
