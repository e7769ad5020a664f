"""Workloads: framework-agnostic experiment definitions.

Each workload module provides ``run_case(spec, fw, policy, overhead_s) -> (Timing,
metrics)`` (the ``Workload`` protocol below), executed inside a child process with the
framework adapter ``fw`` loaded (``frameworks.contracts.Framework``), and helpers to build
its ``CaseSpec`` list in the parent. Adding a workload: a module here with ``run_case``,
its name in ``WORKLOADS``, and the parent-side case list (README "How to add a workload").

**Interleaved groups**: cases whose ratios are claimed against each other (the
steady training steps of a batch sweep and sync each/none; the fixes' ``model.fit`` variants,
steps_per_execution and jit_compile; the input-pipeline loop's variants)
are measured *interleaved* in one child: :func:`interleave_groups` derives the groups from the
specs' params alone (keys, specs and the job format do not change), and the workload module
provides ``prepare(spec, fw, policy, overhead_s)`` (set-up, tracing, warm-up: one member at a
time) and ``time_group(prepared, fw, policy, overhead_s, before)`` (the members timed together,
one ``(Timing, metrics)`` or exception per member), the ``GroupWorkload`` protocol below.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from whichdevice.workloads import fixes

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


class GroupWorkload(Protocol):
    """A workload module that can time a group of its cases interleaved (see module doc)."""

    def prepare(self, spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> Any: ...

    def time_group(
        self,
        prepared: list[Any],
        fw: Framework,
        policy: TimingPolicy,
        overhead_s: float,
        before: Callable[[int], None] | None = None,
    ) -> list[tuple[Timing, dict[str, float]] | BaseException]: ...


# Params that tell the members of one interleaved group apart, by workload and kind; every
# other param (and the workload, framework and device) must be equal for two cases to be
# timed together.
_VARYING = {
    # the fixes' parameters (workloads/fixes.py FixEntry.group: the batch sweep, sync each/none and
    # the torch fixes' steady pairs, each naming its ``fix``; the Keras fixes' fits; the torch
    # DataLoader pairs), and the input pipeline's variants
    ("train", "steady"): fixes.grouped("steady"),
    ("train", "fit"): fixes.grouped("fit"),
    ("train", "loop"): fixes.grouped("loop"),
    ("pipeline", "both"): ("variant",),
}


def interleave_key(spec: CaseSpec) -> tuple[Any, ...] | None:
    """The group a case is timed in, or None: a train ``steady`` case (batch sweep, sync
    each/none; the same model and settings), a train ``fit`` case that names
    ``steps_per_execution`` or ``jit_compile`` (the fixes' variants, epoch by epoch in two
    halves) or a pipeline ``both`` case (the loop's variants on the same data, net
    and batch). Not with ``trace_dir`` (a profiler window is per case)."""
    p = spec.params
    if p.get("trace_dir"):
        return None
    if p.get("script"):  # the user's script: the cases that share a process (workloads/script.py)
        from whichdevice.workloads import script

        return script.group_key(spec)
    kind = p.get("part") if spec.workload == "pipeline" else p.get("kind")
    varying = _VARYING.get((spec.workload, str(kind)))
    if varying is None or (kind in ("fit", "loop") and not any(k in p for k in varying)):
        return None  # a fit or loop is grouped only as one of the fixes' variants (it names one)
    rest = tuple(sorted((k, repr(v)) for k, v in p.items() if k not in varying))
    return (spec.workload, spec.framework, spec.device, rest)


def interleave_groups(specs: list[CaseSpec]) -> list[list[str]]:
    """The job's cases as groups of keys, in the order of each group's first member: a case
    that interleaves with no other is a group of one (measured alone, as before); members of a
    group keep their order in the job (the session's round 2 reverses it, so round 2's order
    differs and its shuffles too)."""
    groups: list[list[str]] = []
    where: dict[tuple[Any, ...], int] = {}
    for s in specs:
        k = interleave_key(s)
        if k is not None and k in where:
            groups[where[k]].append(s.key)
            continue
        if k is not None:
            where[k] = len(groups)
        groups.append([s.key])
    return groups


def group_runner(name: str) -> GroupWorkload:
    """The module that times a group of ``name``'s cases interleaved."""
    if name not in {w for w, _ in _VARYING}:
        raise KeyError(name)
    module: GroupWorkload = importlib.import_module(f"whichdevice.workloads.{name}")  # type: ignore[assignment]
    return module


def dispatch(runners: dict[Any, Callable[..., Any]], key: Any, what: str) -> Callable[..., Any]:
    """A workload's runner for one kind of its cases (``what``: its name in the error)."""
    run = runners.get(key)
    if run is None:
        raise ValueError(f"unknown {what} {key!r}")
    return run


def runner(name: str) -> Workload:
    if name not in WORKLOADS:
        raise KeyError(name)
    run_case: Workload = importlib.import_module(f"whichdevice.workloads.{name}").run_case
    return run_case
