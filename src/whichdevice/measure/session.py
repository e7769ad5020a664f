"""The one measuring path: every measuring command, and the Python API, call :func:`measure`.

    request = Request("matmul", "torch", devices=None, cases_for=..., options={...}, command=[...])
    record = measure(request, journal=journal, resumed=resumed, progress=Progress(...))

What it does, in order: check the framework is installed; ask a child which devices it sees
(discovery: the parent never imports a framework); keep the ``--device`` selection; run one
child per device, one device after the other (two at once would compete for the CPU cores and
distort each other's timings), each held to the memory limit and the per-case timeout, each
with its own time budget when one is set; append every finished case and session to the
journal as it arrives; keep what a resumed journal had finished; return one ``RunRecord``.

So every measuring command has the same ``--resume``, ``--memory-limit``, ``--case-timeout``
and progress, and the API measures exactly as the CLI does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from whichdevice.core.process import memory_limit_gib
from whichdevice.core.records import CaseResult, CaseSpec, DeviceInfo, RunRecord, Session
from whichdevice.core.timing import TimingPolicy
from whichdevice.measure import experiment
from whichdevice.measure.experiment import Discovery
from whichdevice.measure.journal import Journal, JournalState

CasesFor = Callable[[Discovery, DeviceInfo], list[CaseSpec]]


@dataclass(frozen=True)
class Request:
    """What to measure: the experiment, its framework and device filter, the cases of each
    device, and the limits. ``options`` are the command's checked options, kept in the record
    (``devices``, ``framework``, ``memory_limit_gib`` and the limits are added here)."""

    experiment: str
    framework: str
    cases_for: CasesFor
    options: dict[str, Any]
    command: list[str]
    devices: list[str] | None = None  # --device (None: every device the framework sees)
    min_time_s: float = 0.2  # seconds of steady samples per point (TimingPolicy)
    cpu_threads: int | None = None
    case_timeout_s: float = 600.0
    budget_s: float | None = None  # per device: no new case starts after it (the rest: skipped)
    memory_limit_bytes: int | None = None  # None: 90 % of RAM, or of the container's limit
    notes: list[str] = field(default_factory=list)  # the command's own notes, before the run's


@dataclass
class Progress:
    """Callbacks a caller (the CLI's progress bar) gets while measuring; all optional."""

    on_devices: Callable[[Discovery, list[DeviceInfo]], None] | None = None
    on_total: Callable[[int], None] | None = None
    on_start: Callable[[str], None] | None = None
    on_result: Callable[[CaseResult], None] | None = None


def measure(
    request: Request,
    *,
    journal: Journal | Callable[[], Journal] | None = None,
    resumed: JournalState | None = None,
    progress: Progress | None = None,
    found: Discovery | None = None,
) -> RunRecord:
    """Discover, run every device's cases in its own child, and return the record.

    ``journal``: every finished case and session is appended to it as it arrives; a callable
    is called once the devices are checked, so bad input (``--device GPU`` on a machine
    without one) leaves no journal behind.
    ``resumed``: a journal read back; its finished cases are kept, not run again.
    ``found``: a discovery already made (skips asking a child again)."""
    progress = progress or Progress()
    fw = request.framework
    experiment.require_installed(fw)
    found = found or experiment.discover(fw)
    chosen = experiment.select_devices(found, request.devices)
    if progress.on_devices:
        progress.on_devices(found, chosen)
    if callable(journal) and not isinstance(journal, Journal):
        journal = journal()

    def cases_for(d: DeviceInfo) -> list[CaseSpec]:
        return request.cases_for(found, d)

    if progress.on_total:
        progress.on_total(sum(len(cases_for(d)) for d in chosen))
    policy = TimingPolicy(min_time_s=request.min_time_s)
    sessions: list[Session] = []
    results: list[CaseResult] = []
    notes: list[str] = []
    for dev in chosen:  # one device at a time, each with its own share of the budget
        deadline = time.time() + request.budget_s if request.budget_s is not None else None
        s, r, n = experiment.run_devices(
            fw,
            [dev],
            cases_for,
            policy=policy,
            cpu_threads=request.cpu_threads,
            case_timeout_s=request.case_timeout_s,
            deadline=deadline,
            on_start=progress.on_start,
            on_result=progress.on_result,
            journal=journal,
            resumed=resumed,
            memory_limit_bytes=request.memory_limit_bytes,
        )
        sessions += [x for x in s if all(y.device.name != x.device.name for y in sessions)]
        results += r
        notes += n
    options = {
        "devices": [d.name for d in chosen],
        "framework": fw,
        "min_time_s": request.min_time_s,
        "cpu_threads": request.cpu_threads,
        "case_timeout_s": request.case_timeout_s,
        "memory_limit_gib": memory_limit_gib(request.memory_limit_bytes),
        **request.options,
    }
    if request.budget_s is not None:
        options.setdefault("budget_s", request.budget_s)
    return experiment.make_record(
        request.experiment, request.command, options, fw, found, sessions, results, request.notes + notes
    )
