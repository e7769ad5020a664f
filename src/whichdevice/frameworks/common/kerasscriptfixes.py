"""How the Keras script capture (``kerascapture.py``, ``kerasfit.py``: a ``model.fit`` measured in
turns, or a TensorFlow custom loop) measures the catalogue's fixes (``workloads/fixes.py``): one
adapter per fix, shared by the Keras frameworks, each of which leaves out in its own
``scriptfixes.py`` those its backend does not honour (``keras_adapters``).

Each says the capture's member for a case's value (``kerasfit.FitMeasure.config`` applies it), the
cases a plan gives the fix from the pre-flight's facts, and what it adds to a case's cost. Imports
no framework: the plan reads it in the parent.
"""

from __future__ import annotations

from typing import Any

from whichdevice.frameworks.common.kerasfit import ENTRY_FIT
from whichdevice.frameworks.contracts import ScriptFix, StepCost

SPE = 8  # steps_per_execution tried against 1
# jit_compile=True's first step against a plain trace: XLA compiles the step (workloads/suite.XLA_TRACE_FACTOR)
XLA_TRACE_FACTOR = 8.0


def _fit(facts: dict[str, Any]) -> bool:
    return facts.get("entry") == ENTRY_FIT


def _spe(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """Where the script's compile leaves steps_per_execution at 1."""
    if not _fit(facts) or int(facts.get("steps_per_execution", 1)) != 1:
        return []
    return [(v, {"kind": "fit"}) for v in (1, SPE)]


def _jit(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    return [(v, {"kind": "fit"}) for v in (False, True)] if _fit(facts) else []


def _prefetch(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """Where fit reads a tf.data dataset."""
    if not _fit(facts) or facts.get("data") != "tfdata":
        return []
    return [(d, {"kind": "loop"}) for d in ("tfdata_noprefetch", "tfdata")]


def _precision(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """Mixed precision as Keras' global policy (a fit's or a custom loop's layers)."""
    return [(p, {"kind": "precision"}) for p in ("float32", "mixed_float16")]


def _sync(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """The loss read back after every batch (a callback), against fit's own reads."""
    return [("each", {"kind": "steady"})] if _fit(facts) else []


def _threads(value: Any, params: dict[str, Any]) -> str:
    """A fit times the default side as a member of its own; a custom loop runs as the script does."""
    if value == "default":
        return "threads:default" if params.get("entry") == ENTRY_FIT else "baseline"
    return f"threads:{int(value)}"


ADAPTERS: dict[str, ScriptFix] = {
    a.fix: a
    for a in (
        ScriptFix("batch", member=lambda value, _p: f"batch:{int(value)}"),
        ScriptFix("cpu_threads", member=_threads),
        ScriptFix(
            "steps_per_execution",
            member=lambda value, _p: f"steps_per_execution:{int(value)}",
            cases=_spe,
            cost=lambda value: StepCost(per_call=int(value)),
        ),
        ScriptFix(
            "jit_compile",
            member=lambda value, _p: f"jit_compile:{str(bool(value)).lower()}",
            cases=_jit,
            cost=lambda value: StepCost(trace=XLA_TRACE_FACTOR if value is True else 1.0),
        ),
        ScriptFix(
            "prefetch", member=lambda value, _p: "prefetch" if value == "tfdata" else "prefetch:off", cases=_prefetch
        ),
        ScriptFix("precision", member=lambda value, _p: f"precision:{value}", cases=_precision),
        ScriptFix("sync", member=lambda value, _p: "sync:each" if value == "each" else "baseline", cases=_sync),
    )
}


def shares(member: str, params: dict[str, Any]) -> bool:
    """A fit times every member in turns on the user's objects but a mixed-precision policy and a
    thread count, each set before the script builds its model (a process of its own); a custom
    loop shares its process with nothing but the baseline."""
    if member.startswith("threads:") and member != "threads:default":
        return False
    if params.get("entry") != ENTRY_FIT:
        return member == "baseline"
    return not (member.startswith("precision:") and member != "precision:float32")


def keras_adapters(without: tuple[str, ...] = ()) -> tuple[ScriptFix, ...]:
    """Every Keras adapter but those of ``without`` (fixes the backend does not honour), in the
    order a plan tries them: a new Keras fix's adapter here reaches every Keras framework."""
    return tuple(a for fix, a in ADAPTERS.items() if fix not in without)
