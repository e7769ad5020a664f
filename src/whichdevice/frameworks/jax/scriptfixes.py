"""The fixes JAX's script capture (``capture.py``: a jitted step) measures: the batch, its step's
own inputs tiled to a larger batch in turns with the baseline's. No thread count: JAX has none a
child's environment sets."""

from __future__ import annotations

from typing import Any

from whichdevice.frameworks.contracts import ScriptFix

ENTRY_JIT = "jax.jit train step"  # the capture's entry for a jitted step (capture.py)


class Rebatch:
    """How JAX's capture applies a batch member (``arg``: its value part): the batch its step is tiled to."""

    name = "batch"

    def rows(self, arg: str) -> int | None:
        return int(arg)


def shares(member: str, params: dict[str, Any]) -> bool:
    """A jitted step's batch members take turns with the baseline's steps; an eager loop's do not."""
    return member == "baseline" or (params.get("entry") == ENTRY_JIT and applied(member)[0] is not None)


ADAPTERS: tuple[ScriptFix, ...] = (ScriptFix("batch", member=lambda value, _p: f"batch:{int(value)}", apply=Rebatch()),)
_BY_KEY: dict[str, Rebatch] = {a.fix: a.apply for a in ADAPTERS}


def applied(member: str, typed: dict[str, Any] | None = None) -> tuple[Rebatch | None, str]:
    """A member's applier and its value part: by the typed variant's catalogue key where the spec
    carries it, else by the member's name; (None, "") for the script as it runs and a name unknown."""
    name, _, arg = member.partition(":")
    if member == "baseline":
        return None, arg
    if typed is not None and typed.get("fix") in _BY_KEY:
        return _BY_KEY[str(typed["fix"])], arg
    return {a.name: a for a in _BY_KEY.values()}.get(name), arg
