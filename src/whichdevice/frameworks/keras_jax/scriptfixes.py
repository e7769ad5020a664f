"""The fixes Keras on JAX's script capture measures (``common/kerasscriptfixes.py``), in the
order a plan tries them."""

from __future__ import annotations

from whichdevice.frameworks.common.kerasscriptfixes import keras_adapters
from whichdevice.frameworks.contracts import ScriptFix

ADAPTERS: tuple[ScriptFix, ...] = keras_adapters(
    "batch", "cpu_threads", "steps_per_execution", "jit_compile", "prefetch", "precision", "sync"
)
