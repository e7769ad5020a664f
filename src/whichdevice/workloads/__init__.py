"""Workloads: framework-agnostic experiment definitions.

Each workload module provides ``run_case(spec, fw, policy, overhead_s) -> (Timing,
metrics)``, executed inside a child process with the framework adapter ``fw`` loaded, and
helpers to build its ``CaseSpec`` list in the parent.
"""

from __future__ import annotations

import importlib

WORKLOADS: tuple[str, ...] = ("matmul", "train", "pipeline", "calibrate")


def runner(name: str):
    if name not in WORKLOADS:
        raise KeyError(name)
    return importlib.import_module(f"whichdevice.workloads.{name}").run_case
