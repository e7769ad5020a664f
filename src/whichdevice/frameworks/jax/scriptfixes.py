"""The fixes JAX's script capture (``capture.py``: a jitted step) measures: the batch, its step's
own inputs tiled to a larger batch in turns with the baseline's. No thread count: JAX has none a
child's environment sets."""

from __future__ import annotations

from whichdevice.frameworks.contracts import ScriptFix

ADAPTERS: tuple[ScriptFix, ...] = (ScriptFix("batch", member=lambda value, _p: f"batch:{int(value)}"),)
