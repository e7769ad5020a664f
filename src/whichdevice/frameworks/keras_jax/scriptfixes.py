"""The fixes Keras on JAX's script capture measures (``common/kerasscriptfixes.py``), in the
order a plan tries them."""

from __future__ import annotations

from whichdevice.frameworks.common.kerasscriptfixes import keras_adapters, shares
from whichdevice.frameworks.contracts import ScriptFix

__all__ = ["ADAPTERS", "shares"]

ADAPTERS: tuple[ScriptFix, ...] = keras_adapters()
