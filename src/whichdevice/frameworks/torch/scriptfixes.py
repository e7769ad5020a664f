"""How torch's script capture (``capture.py``, ``capture_hooks.py``) measures the catalogue's fixes
(``workloads/fixes.py``) on a user's script: one adapter per fix, in the order a plan tries them.

Each says the capture's member for a case's value (its variant: ``Variant(fix, value)``), the cases
a plan gives the fix from the pre-flight's facts, and what it adds to a case's cost. Adding a torch
fix to ``diagnose SCRIPT`` is its catalogue entry and its adapter here, and, for a change the
capture cannot make yet, the capture's member (``capture_hooks.py``: applied at the model's call,
or built and switched in at its turns). Imports no torch: the plan reads it in the parent.
"""

from __future__ import annotations

import sys
from typing import Any

from whichdevice.frameworks.contracts import ScriptFix, StepCost
from whichdevice.frameworks.torch import capture_hooks

# The members the capture switches in for a member's steps and back out (capture_hooks.TURNS): they
# take turns with the baseline in the round's one process.
TURNS: tuple[str, ...] = capture_hooks.TURNS

LOADER_WORKERS = 2  # the DataLoader's worker processes tried (2 cores here; more rarely pay on a small machine)
# torch.compile of a small model's step: 21-52 s on the loaded 2-core machine (benchmarks/diagnose_torch.md)
TORCH_COMPILE_S = 45.0
_STEADY = {"kind": "steady", "sync": "none"}


def _switch(member: str) -> Any:
    """A fix the capture switches on for the member's steps: ``member`` at any value but the
    baseline's (False, "off", 0), else the script as it runs."""
    return lambda value, _params: member if value not in (False, "off", 0, None) else "baseline"


def _pair(baseline: object, value: object, when: Any) -> Any:
    """A steady pair at the user's batch (``baseline`` -> ``value``) where ``when(facts, gpu)``."""
    return lambda facts, gpu: [(v, dict(_STEADY)) for v in (baseline, value)] if when(facts, gpu) else []


def _module(facts: dict[str, Any], _gpu: bool) -> bool:
    """The step trains an nn.Module (not an optimizer over bare tensors)."""
    return bool(facts.get("model"))


def _keeps_grads(facts: dict[str, Any], gpu: bool) -> bool:
    """The pre-flight saw the script zero its module's gradients in place (set_to_none=False)."""
    return _module(facts, gpu) and bool((facts.get("plan_facts") or {}).get("keeps_grads"))


def _own_loader(facts: dict[str, Any]) -> dict[str, Any] | None:
    """The script's DataLoader settings where it feeds the loop and has no workers of its own."""
    loader = facts.get("loader") or {}
    if facts.get("data_source") == "DataLoader" and not int(loader.get("num_workers") or 0):
        return loader
    return None


def _workers(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    return [(w, {"kind": "loop"}) for w in (0, LOADER_WORKERS)] if _own_loader(facts) is not None else []


def _pinned(facts: dict[str, Any], gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    loader = _own_loader(facts)
    if not gpu or loader is None or loader.get("pin_memory"):
        return []
    return [(v, {"kind": "loop", "num_workers": 0}) for v in (False, True)]


def _threads(value: Any, _params: dict[str, Any]) -> str:
    """The default side runs as the script does; a count is set before torch is imported."""
    return "baseline" if value == "default" else f"threads:{int(value)}"


def shares(member: str, params: dict[str, Any]) -> bool:
    """A member in :data:`TURNS` takes turns, but a loader member under a trainer (its loop fetches
    batches ahead of its steps: a batch would not be its turn's) and DataLoader workers off Linux
    (paused between turns only there); the thread count, read at import, runs alone."""
    name = member.partition(":")[0]
    if name in capture_hooks.LOADER_VARIANTS and (
        params.get("trainer") or (name == "workers" and not sys.platform.startswith("linux"))
    ):
        return False
    return name in TURNS


ADAPTERS: tuple[ScriptFix, ...] = (
    ScriptFix("batch", member=lambda value, _p: f"batch:{int(value)}"),
    ScriptFix("cpu_threads", member=_threads),
    ScriptFix("autocast", member=_switch("autocast"), cases=_pair("off", "bfloat16", _module)),
    ScriptFix("set_to_none", member=_switch("set_to_none"), cases=_pair(False, True, _keeps_grads)),
    ScriptFix(
        "channels_last", member=_switch("channels_last"), cases=_pair(False, True, lambda f, _g: f.get("conv2d"))
    ),
    ScriptFix("cudnn_benchmark", member=_switch("cudnn_benchmark"), cases=_pair(False, True, lambda _f, gpu: gpu)),
    ScriptFix("num_workers", member=lambda value, _p: f"workers:{int(value)}" if value else "baseline", cases=_workers),
    ScriptFix("pin_memory", member=_switch("pin_memory"), cases=_pinned),
    ScriptFix(
        "torch_compile",
        member=_switch("compile"),
        cases=_pair(False, True, _module),  # last: it is slow to compile
        cost=lambda value: StepCost(extra_s=TORCH_COMPILE_S if value is True else 0.0),
    ),
)
