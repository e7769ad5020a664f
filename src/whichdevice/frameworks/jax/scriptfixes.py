"""The fixes JAX's script capture (``capture.py``: a jitted step) measures: the batch, its step's
own inputs tiled to a larger batch in turns with the baseline's. No thread count: JAX has none a
child's environment sets."""

from __future__ import annotations

from typing import Any

from whichdevice.frameworks.contracts import ScriptFix
from whichdevice.frameworks.jax.capture import ENTRY_JIT


def shares(member: str, params: dict[str, Any]) -> bool:
    """A jitted step's batch members take turns with the baseline's steps; an eager loop's do not."""
    return member == "baseline" or (params.get("entry") == ENTRY_JIT and member.startswith("batch:"))


ADAPTERS: tuple[ScriptFix, ...] = (ScriptFix("batch", member=lambda value, _p: f"batch:{int(value)}"),)
