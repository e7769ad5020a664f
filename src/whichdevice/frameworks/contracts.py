"""The framework plug-in contract, typed (issue #15).

A framework is a folder under ``frameworks/`` with four modules (see the package docstring).
Each module is checked against a ``Protocol`` here when it is loaded, so a folder that lacks a
function fails at once with its name rather than deep inside a measurement, and mypy can
check a workload's use of the adapter. Modules satisfy protocols structurally (PEP 544):
the functions of ``discovery.py`` are the protocol's methods, without ``self``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from whichdevice.core.records import DeviceInfo, FrameworkInfo


@runtime_checkable
class Discovery(Protocol):
    """``discovery.py``: what the framework is and which devices it sees."""

    def framework_info(self) -> FrameworkInfo: ...

    def list_devices(self) -> list[DeviceInfo]: ...

    def no_gpu_reasons(self) -> list[str]: ...


@runtime_checkable
class Placement(Protocol):
    """``placement.py``: set up right after import, and place ops on a device."""

    def configure(self, device: str, cpu_threads: int | None) -> dict[str, object]: ...

    def scope(self, device: str) -> AbstractContextManager[Any]: ...


@runtime_checkable
class Sync(Protocol):
    """``sync.py``: block until the device has finished the queued work (the clock is read
    only after it)."""

    def sync(self, result: Any = None) -> None: ...


@runtime_checkable
class Ops(Protocol):
    """``ops.py``: the matmul workload's ops. Each builder returns a zero-argument callable
    that does one unit of work and returns what ``sync`` waits on."""

    def matmul_steady(self, n: int, dtype: str, device: str) -> Callable[[], Any]: ...

    def matmul_seed(self, n: int, dtype: str, device: str) -> Callable[[], Any]: ...


@dataclass(frozen=True)
class Framework:
    """A loaded framework adapter: what ``frameworks.load(name)`` returns to a workload."""

    name: str
    discovery: Discovery
    placement: Placement
    sync: Sync
    ops: Ops


PROTOCOLS: dict[str, type] = {"discovery": Discovery, "placement": Placement, "sync": Sync, "ops": Ops}


class IncompleteFramework(TypeError):
    """A framework folder whose module lacks a function of the contract."""


def check(name: str, part: str, module: object) -> None:
    """Raise ``IncompleteFramework`` naming what ``module`` (framework ``name``'s ``part``) lacks."""
    protocol = PROTOCOLS[part]
    if isinstance(module, protocol):
        return
    members = [m for m in vars(protocol) if not m.startswith("_")]
    missing = [m for m in members if not callable(getattr(module, m, None))]
    raise IncompleteFramework(
        f"framework {name!r}: {part}.py lacks {', '.join(missing) or '?'} (the contract: whichdevice.frameworks.contracts)"
    )
