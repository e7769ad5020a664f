"""The fixes Keras on torch's script capture measures (``common/kerasscriptfixes.py``), in the
order a plan tries them: not steps_per_execution nor jit_compile (Keras' torch trainer runs one
step per call, and its jit_compile=True is torch.compile)."""

from __future__ import annotations

from whichdevice.frameworks.common.kerasscriptfixes import keras_adapters, shares
from whichdevice.frameworks.contracts import ScriptFix

__all__ = ["ADAPTERS", "shares"]

ADAPTERS: tuple[ScriptFix, ...] = keras_adapters(without=("steps_per_execution", "jit_compile"))
