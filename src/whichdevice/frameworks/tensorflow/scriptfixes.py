"""The fixes TensorFlow's script capture measures (``capture.py``: Keras' fit through
``common/kerasscriptfixes.py``, a custom loop's batch and mixed precision), in the order a plan
tries them: not the loss read back every batch (TensorFlow's fit already reads its logs after
each batch)."""

from __future__ import annotations

from whichdevice.frameworks.common.kerasscriptfixes import keras_adapters, shares
from whichdevice.frameworks.contracts import ScriptFix

__all__ = ["ADAPTERS", "shares"]

ADAPTERS: tuple[ScriptFix, ...] = keras_adapters(without=("sync",))
