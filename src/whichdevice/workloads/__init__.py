"""Workloads: framework-agnostic experiment definitions.

Each workload module provides ``run_case(spec, fw, policy, overhead_s) -> (Timing,
metrics)`` (the ``Workload`` protocol below), executed inside a child process with the
framework adapter ``fw`` loaded (``frameworks.contracts.Framework``), and helpers to build
its ``CaseSpec`` list in the parent. Adding a workload: a module here with ``run_case``,
its name in ``WORKLOADS``, and the parent-side case list (README "How to add a workload").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from whichdevice.core.records import CaseSpec, Timing
    from whichdevice.core.timing import TimingPolicy
    from whichdevice.frameworks.contracts import Framework


class Workload(Protocol):
    """What the measuring child calls for one case: the timing (raw samples kept) and the
    case's metrics. ``overhead_s`` is the clock's own cost, measured once per child."""

    def __call__(
        self, spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float
    ) -> tuple[Timing, dict[str, float]]: ...


WORKLOADS: tuple[str, ...] = ("matmul", "train", "pipeline", "calibrate", "scale")


def runner(name: str) -> Workload:
    if name not in WORKLOADS:
        raise KeyError(name)
    run_case: Workload = importlib.import_module(f"whichdevice.workloads.{name}").run_case
    return run_case
