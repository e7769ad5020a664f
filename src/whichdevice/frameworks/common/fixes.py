"""How the Keras frameworks apply the catalogue's fixes (``workloads/fixes.py``) to a train case.

One adapter function per fix, named by its key: from the case's value of the fix's parameter to
what it changes, here ``model.compile``'s keyword arguments. The Keras case model
(``casemodel.CaseModel.compile_for_fit``) applies every fix whose parameter the case names;
absent, Keras' defaults apply (1 and "auto"). Adding a Keras fix is its catalogue entry and its
function here (CONTRIBUTING.md, "How to add a fix").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def steps_per_execution(value: Any) -> dict[str, Any]:
    """N steps per call of the compiled train function: Python and dispatch paid once per N."""
    return {"steps_per_execution": value}


def jit_compile(value: Any) -> dict[str, Any]:
    """The train step compiled with XLA (True), or not (False)."""
    return {"jit_compile": value}


# The adapters, by the fix's parameter.
COMPILE: dict[str, Callable[[Any], dict[str, Any]]] = {f.__name__: f for f in (steps_per_execution, jit_compile)}


def compile_options(params: dict[str, Any]) -> dict[str, Any]:
    """``model.compile``'s keyword arguments for the fixes a case names."""
    out: dict[str, Any] = {}
    for name, apply in COMPILE.items():
        if name in params:
            out |= apply(params[name])
    return out
