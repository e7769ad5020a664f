"""The one measuring path: every measuring command, and the Python API, call :func:`measure`.

    request = Request("matmul", "torch", devices=None, cases_for=..., options={...}, command=[...])
    record = measure(request, journal=journal, resumed=resumed, progress=Progress(...))

What it does, in order: check the framework is installed; ask a child which devices it sees
(discovery: the parent never imports a framework) — or, where the parent can tell that only the
CPU exists (``experiment.needs_discovery_child``: numpy, or Linux without an NVIDIA driver), no
discovery child at all: the CPU's measuring child reports what it sees and that goes into the
record (one framework import fewer, 2-20 s on a small machine); keep the ``--device`` selection; run one
child per device, one device after the other (two at once would compete for the CPU cores and
distort each other's timings), each held to the memory limit and the per-case timeout, each
with its own time budget when one is set; append every finished case and session to the
journal as it arrives; keep what a resumed journal had finished; return one ``RunRecord``.

So every measuring command has the same ``--resume``, ``--memory-limit``, ``--case-timeout``
and progress, and the API measures exactly as the CLI does.

**Rounds** (a claim that decides a verdict must survive a second process). After
every device's round 1, in the reverse order of the devices (CPU r1, GPU r1 | GPU r2, CPU r2:
a device-vs-device ratio is paired ABBA across processes too), the cases that decide a verdict (:func:`decides_verdict`; ``run`` and
``diagnose`` by default, ``Request.rounds``) are measured again in a fresh child — a second
*round* — in the reverse order within each group, so A..B in round 1 is B..A in round 2 and
slow drift hits both sides of every A/B pair (an ABBA design across processes). The rounds
are merged into one result per case: ``Timing.samples_s`` pools them, ``Timing.rounds_s``
keeps each round's raw samples (paired by round: round i of A and of B ran in the same
child), later rounds' metrics are kept as ``round2:<name>``, so ``report`` can recompute every
interval from per-round ratios (analysis/significance.py).

Where round 2 runs: round 1 stops starting cases ``ROUND2_RESERVE_S`` (at most
``RESERVE_SHARE`` of the budget) before the device's budget ends. If round 1 ended before
``FRESH_ROUND_SHARE`` (half) of the budget — or whenever round 2's child, started with round 1's
(``runner.start_warm``), is waiting with its framework imported — round 2 runs in a fresh child (between-process),
starting cases until ``ROUNDS_SHARE`` (75 %) of the budget, at least the reserve; otherwise —
a loaded machine, where a fresh framework import alone can take 20 s — the first child measures
the verdict cases a second time itself, until the budget's end or the reserve after its round
1 (the record's notes say which). Round 2 follows :func:`repeat_order` (matmul first: cheap,
and enough to know the run's between-process spread); a case whose later round did not fit
keeps the rounds it has. A later round starts a case or group only when its round-1 wall time
still fits before the round's stop, and the first device's round 1 also leaves
``PAGE_RESERVE_S`` for the page after the last case, so the command as a whole keeps the budget.

**Further rounds** (``Request.undecided``, ``diagnose``'s): after the planned rounds, while the
rounds' window (``ROUNDS_SHARE`` of the budget) lasts, a fresh child measures again only the cases
of the fix pairs the rounds so far left undecided — an interval across the noise threshold, or a
side whose processes fell in two modes (``analysis/fixes.undecided``) — in the ABBA order
(:func:`round_order`: odd rounds as planned, even ones reversed), up to ``MAX_ROUNDS``: on a busy
machine one process lands in one mode, and only more of them tell a change from the modes
(pyperf's reason for many worker processes). Decided pairs take no more of the budget.

**A provisional answer**: with ``Request.decides_answer`` and ``Progress.on_provisional``,
once round 1 of every case the answer rests on has a result (on every device), the caller gets a
record of round 1 so far — it shows the answer as provisional, long before the later rounds end.

**Precision-targeted sampling**: the policy samples each point until its median's 95 % CI
half-width is within ``Request.precision`` (5 %) or its time cap (``Request.point_cap_s``,
default ``max(0.25 s, 5 × min_time_s)``): core/timing.py, ``Timing.stop_reason``.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from whichdevice.core.process import memory_limit_gib
from whichdevice.core.records import CaseResult, CaseSpec, DeviceInfo, RunRecord, Session, Timing
from whichdevice.core.timing import TimingPolicy
from whichdevice.measure import experiment, runner
from whichdevice.measure.experiment import Discovery
from whichdevice.measure.journal import Journal, JournalState
from whichdevice.workloads import fixes as fix_catalogue
from whichdevice.workloads.defaults import RESERVE_SHARE, page_reserve
from whichdevice.workloads.fixes import params_of

CasesFor = Callable[[Discovery, DeviceInfo], list[CaseSpec]]

# Experiments whose claims decide a verdict: measured in 2 rounds (fresh children) by default.
ROUNDED_EXPERIMENTS = {"run": 2, "diagnose": 2}
# Later rounds start only before this share of the device's budget is spent (the rest is the
# margin for the last case and the report: run's default budget stays within it).
ROUNDS_SHARE = 0.75
# diagnose's later rounds: until the budget's end, less the page's reserve (Request.rounds_share).
ALL_ROUNDS_SHARE = 1.0
# Seconds of the budget kept for round 2 whatever round 1 takes: on a loaded machine round 1
# alone fills the budget, and without a second round there is no spread to judge any claim by.
# Round 1 stops starting cases this long before the budget's end (at most RESERVE_SHARE of a
# small budget: `run --budget 20` still measures its first cases).
ROUND2_RESERVE_S = 12.0
# Round 2 runs in a fresh child when round 1 ended before this share of the budget; later, a
# fresh child's framework import (5 s idle, 20 s on a loaded 2-core machine) does not fit, and
# the first child measures the verdict cases a second time itself, until the budget's end.
FRESH_ROUND_SHARE = 0.5
# A point's sampling cap when the request sets none: max(0.25 s, this × min_time_s) — run's
# 0.05 s points stop after 0.25 s, matmul's 0.2 s points after 1 s. On a loaded 2-core machine
# no point converges and every one runs to its cap: a larger cap there only cuts the suite.
POINT_CAP_FACTOR = 5.0
POINT_CAP_MIN_S = 0.25
# A later round is only worth it when the rounds together can reach the 5 samples a claim needs.
MIN_SAMPLES_FOR_ROUNDS = 5
# Further rounds (``Request.undecided``) stop at this many in all: enough for the
# distribution-free interval (6, analysis/significance.py) with two to spare for a failed process.
MAX_ROUNDS = 8


def decides_verdict(spec: CaseSpec) -> bool:
    """The cases of the suite whose ratios decide a verdict line, a recommendation or a fix
    claim, and are cheap enough to measure twice: every matmul point (crossover, regime), the
    input pipeline's pipeline-alone, loop and model-alone parts (input-bound; the model step
    alone bounds what overlap can gain, and measured in one round it was the case `compare`
    flagged most between identical runs), seed 001 ex2's (or the user's) loop and fit
    (device vs device), and every case of a fix whose catalogue entry says round 2 repeats it
    (``workloads/fixes.FixEntry.repeat``: the batch sweep, steps_per_execution, jit_compile,
    prefetch, the sync cost, mixed precision). Not seed 002's fit (no claim rests on it), the
    creation and placement cases."""
    p = params_of(spec)
    if spec.workload == "matmul":
        return True
    if spec.workload == "pipeline":
        return p.get("part") in ("pipeline", "both", "model")
    if spec.workload == "train" and p.get("example") in ("ex2", "user") and p.get("kind") in ("loop", "fit"):
        return True
    return fix_catalogue.repeated(spec.workload, dict(p))


# Round-2 order: the groups by what they decide (cheap and verdict-deciding first), each group
# reversed against round 1 (the ABBA order).
def _group(spec: CaseSpec) -> int:
    p = params_of(spec)
    if spec.workload == "matmul":
        return 0
    if spec.workload == "pipeline":
        return 1
    if p.get("kind") == "steady":
        return 2
    if not any(k in p for k in fix_catalogue.grouped("fit")):  # not a fix's fit
        return 3
    return 4


def repeat_order(specs: list[CaseSpec]) -> list[CaseSpec]:
    """A later round's order: grouped (``_group``), each group in reverse."""
    groups: dict[int, list[CaseSpec]] = {}
    for s in specs:
        groups.setdefault(_group(s), []).append(s)
    return [s for g in sorted(groups) for s in reversed(groups[g])]


def merge_rounds(first: CaseResult, later: list[CaseResult]) -> CaseResult:
    """One result from a case's rounds (the first, then each later one while they are ok):
    samples pooled, each round's raw samples in ``Timing.rounds_s``, later metrics as
    ``round<i>:<name>``, wall time summed."""
    if first.timing is None or first.status != "ok":
        return first
    rounds: list[Timing] = [first.timing]
    metrics = dict(first.metrics)
    wall = first.wall_s
    for i, r in enumerate(later, start=2):
        if r.status != "ok" or r.timing is None:
            break  # rounds stay paired by position: stop at the first missing one
        rounds.append(r.timing)
        metrics.update({f"round{i}:{k}": v for k, v in r.metrics.items()})
        wall += r.wall_s
    if len(rounds) == 1:
        return first
    timing = first.timing.model_copy(
        update={
            "samples_s": [x for t in rounds for x in t.samples_s],
            "rounds_s": [list(t.samples_s) for t in rounds],
        }
    )
    return first.model_copy(update={"timing": timing, "metrics": metrics, "wall_s": wall})


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
    rounds: int | None = None  # fresh-child rounds of the verdict cases (None: ROUNDED_EXPERIMENTS or 1)
    repeat: Callable[[CaseSpec], bool] = decides_verdict  # which cases later rounds measure again
    precision: float | None = 0.05  # target relative CI half-width of each point's median
    point_cap_s: float | None = None  # a point's sampling cap (None: max(0.25 s, 5 x min_time_s))
    # The cases the answer rests on: once round 1 of every one of them has a result,
    # ``Progress.on_provisional`` gets a record of round 1 so far — before the later rounds.
    decides_answer: Callable[[CaseSpec], bool] | None = None
    # After the planned rounds, with a budget: the keys of the merged results' cases that a further
    # round could still decide (analysis/fixes.undecided: pairs whose interval straddles the noise
    # threshold or whose processes disagree). Each further round, in a fresh child, measures only
    # those, until none is left, the rounds' stop (ROUNDS_SHARE of the budget) or MAX_ROUNDS.
    undecided: Callable[[list[CaseResult]], set[str]] | None = None
    # The share of the device's budget before which later rounds start. A fix's pair measured in
    # one round (one process a side) can never be told from noise, so diagnose lets its rounds run
    # to the budget's end less the page's reserve (``ALL_ROUNDS_SHARE``): at 75 % a run whose
    # round 1 ended a second later than the previous one's got no round 2 and answered "not
    # enough samples" where the previous run of the same command claimed its fix.
    rounds_share: float = ROUNDS_SHARE


@dataclass
class Progress:
    """Callbacks a caller (the CLI's progress bar) gets while measuring; all optional."""

    on_devices: Callable[[Discovery, list[DeviceInfo]], None] | None = None
    on_total: Callable[[int], None] | None = None
    on_start: Callable[[str], None] | None = None
    on_result: Callable[[CaseResult], None] | None = None
    # The caller's own work (its presenters' imports), done once while the first measuring
    # child imports its framework; that child takes no sample until it returns (runner.py).
    while_child_starts: Callable[[], object] | None = None
    # Round 1 of the answer's cases done (``Request.decides_answer``), later rounds to come: a
    # record of round 1's results so far, to show a provisional answer. Called once, at most.
    on_provisional: Callable[[RunRecord], None] | None = None


class _Count:
    """The caller's progress, its total kept for the whole run: the plan's cases first, then
    grown by each later round's cases as that round starts (devices' rounds run side by side,
    so no round's own count is a total). A result beyond the total (a case run twice) grows it
    too, so a count never reads more done than its total."""

    def __init__(self, progress: Progress) -> None:
        self.progress, self.total, self.done = progress, 0, 0
        self._lock = threading.Lock()

    def counting(self, total: int) -> Progress:
        """The progress to measure with: its results counted, ``total`` told."""
        self.total = total
        self._tell()
        return dataclasses.replace(self.progress, on_result=self._on_result)

    def grow(self, n: int) -> None:
        """``n`` more cases to come."""
        with self._lock:
            self.total += n
        self._tell()

    def _on_result(self, r: CaseResult) -> None:
        with self._lock:
            self.done += 1
            past = self.done > self.total
            if past:
                self.total = self.done
        if past:
            self._tell()
        if self.progress.on_result:
            self.progress.on_result(r)

    def _tell(self) -> None:
        if self.progress.on_total:
            self.progress.on_total(self.total)


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
    planned: Discovery = found or experiment.discover(fw, fold=True)
    chosen = experiment.select_devices(planned, request.devices)
    if progress.on_devices:
        progress.on_devices(planned, chosen)
    if callable(journal) and not isinstance(journal, Journal):
        journal = journal()
    count = _Count(progress)
    progress = count.counting(sum(len(request.cases_for(planned, d)) for d in chosen))
    n_rounds = request.rounds if request.rounds is not None else ROUNDED_EXPERIMENTS.get(request.experiment, 1)
    run = _Run(request, planned, _policy(request), n_rounds, progress, journal, resumed, count)
    run.chosen, run.awaiting = chosen, _answer_keys(run, chosen)
    if progress.while_child_starts:
        run.pending.append(progress.while_child_starts)
    # Each device's round-2 child starts now: it imports its framework beside round 1's child
    # (on two cores, two imports take about as long as one), then waits, idle, for its job.
    if n_rounds > 1:
        run.warms = {
            d.name: runner.start_warm(fw, d.kind, request.cpu_threads, memory_limit_bytes=request.memory_limit_bytes)
            for d in chosen
        }
    try:
        by_device = _all_rounds(run, chosen)
    finally:
        for w in run.warms.values():  # used (run_job closed it: a no-op) or not: none outlives the run
            w.close()
    results = [x for dev in chosen for x in by_device[dev.name][0]]
    notes = [x for dev in chosen for x in by_device[dev.name][1]]
    seen = _confirmed(planned, run.told, run.sessions) if planned.provisional else planned
    return experiment.make_record(
        request.experiment,
        request.command,
        _record_options(request, chosen, n_rounds),
        fw,
        seen,
        run.sessions,
        results,
        request.notes + notes,
    )


def _policy(request: Request) -> TimingPolicy:
    """Each point's sampling: ``min_time_s`` of samples, until the precision or the point's cap."""
    cap = request.point_cap_s or max(POINT_CAP_MIN_S, POINT_CAP_FACTOR * request.min_time_s)
    return TimingPolicy(
        min_time_s=request.min_time_s, max_time_s=max(cap, request.min_time_s), target_rel_halfwidth=request.precision
    )


def _record_options(request: Request, chosen: list[DeviceInfo], n_rounds: int) -> dict[str, Any]:
    """The record's options: the request's limits and devices, then the command's own."""
    options = {
        "devices": [d.name for d in chosen],
        "rounds": n_rounds,
        "precision": request.precision,
        "framework": request.framework,
        "min_time_s": request.min_time_s,
        "cpu_threads": request.cpu_threads,
        "case_timeout_s": request.case_timeout_s,
        "memory_limit_gib": memory_limit_gib(request.memory_limit_bytes),
        **request.options,
    }
    if request.budget_s is not None:
        options.setdefault("budget_s", request.budget_s)
    return options


@dataclass
class _Run:
    """What the devices' rounds of one :func:`measure` share."""

    request: Request
    planned: Discovery
    policy: TimingPolicy
    n_rounds: int
    progress: Progress
    journal: Journal | None
    resumed: JournalState | None
    count: _Count
    warms: dict[str, runner.Warm] = field(default_factory=dict)  # each device's round-2 child, started ahead
    sessions: list[Session] = field(default_factory=list)
    told: list[Discovery] = field(default_factory=list)  # what the first child saw, when no discovery child ran
    pending: list[Callable[[], object]] = field(default_factory=list)  # the caller's work while a child starts
    chosen: list[DeviceInfo] = field(default_factory=list)
    awaiting: set[str] = field(default_factory=set)  # the answer's cases round 1 has yet to finish
    round1: list[CaseResult] = field(default_factory=list)  # round 1's results as they arrive

    def cases_for(self, d: DeviceInfo) -> list[CaseSpec]:
        return self.request.cases_for(self.planned, d)

    def while_starting(self) -> None:  # once, in the first child's start
        while self.pending:
            _signals_after(self.pending.pop())

    def on_round1(self, r: CaseResult) -> None:
        """A round-1 result: told to the caller; the last of the answer's cases calls
        ``on_provisional`` with round 1 so far."""
        if self.progress.on_result:
            self.progress.on_result(r)
        if not self.awaiting:
            return
        self.round1.append(r)
        self.awaiting.discard(r.spec.key)
        if not self.awaiting and self.progress.on_provisional:
            self.progress.on_provisional(self.provisional_record())

    def provisional_record(self) -> RunRecord:
        """Round 1's results so far as a record (what the devices' children reported, else
        what the parent found)."""
        seen = self.told[0] if self.told else self.planned
        request = self.request
        return experiment.make_record(
            request.experiment,
            request.command,
            _record_options(request, self.chosen, self.n_rounds),
            request.framework,
            seen,
            self.sessions,
            list(self.round1),
            list(request.notes),
        )


def _answer_keys(run: _Run, chosen: list[DeviceInfo]) -> set[str]:
    """The keys of the cases a provisional answer waits for: none (no provisional answer)
    unless later rounds follow and the caller asked for one."""
    decides = run.request.decides_answer
    if run.n_rounds <= 1 or decides is None or run.progress.on_provisional is None:
        return set()
    return {c.key for d in chosen for c in run.cases_for(d) if decides(c)}


def _all_rounds(run: _Run, chosen: list[DeviceInfo]) -> dict[str, tuple[list[CaseResult], list[str], float]]:
    """Round 1 of every device, then the later rounds of every device in the reverse order:
    CPU r1, GPU r1 | GPU r2, CPU r2 — so the device-vs-device ratios are paired ABBA across
    processes, as the A/B pairs inside a device are. Each device's results, notes
    and when its round 1 started."""
    later: list[tuple[DeviceInfo, float]] = []  # devices whose later rounds are due, and when their round 1 ended
    by_device: dict[str, tuple[list[CaseResult], list[str], float]] = {}
    for dev in chosen:  # one device at a time, each with its own share of the budget
        started = time.time()
        s, r, n, in_child = _round1(run, dev, started)
        if not in_child and run.n_rounds > 1:
            later.append((dev, time.time()))
        run.sessions += [x for x in s if all(y.device.name != x.device.name for y in run.sessions)]
        by_device[dev.name] = (r, n, started)
    for dev, ended in reversed(later):
        r, n, started = by_device[dev.name]
        # its later rounds get the window they would have had right after its round 1
        shifted = started + (time.time() - ended)
        r, n_more = _later_rounds(run, dev, r, shifted, run.warms.get(dev.name))
        by_device[dev.name] = (r, n + n_more, started)
    return by_device


def _round1(run: _Run, dev: DeviceInfo, started: float) -> tuple[list[Session], list[CaseResult], list[str], bool]:
    """Round 1 of ``dev`` in its child, journaled; when the round ends too late in the budget
    for a fresh child (and no round-2 child waits), that child measures the verdict cases a
    second time itself, merged here. Its sessions, results, notes, and whether it did."""
    request = run.request
    in_child: dict[str, CaseResult] = {}
    deadline, second = _second_pass(run, dev, started, in_child)
    s, r, n = experiment.run_devices(
        request.framework,
        [dev],
        run.cases_for,
        policy=run.policy,
        cpu_threads=request.cpu_threads,
        case_timeout_s=request.case_timeout_s,
        deadline=deadline,
        on_start=run.progress.on_start,
        on_result=run.on_round1,
        journal=run.journal,
        resumed=run.resumed,
        memory_limit_bytes=request.memory_limit_bytes,
        on_discovery=run.told.append if run.planned.provisional and not run.told else None,
        while_starting=run.while_starting if run.pending else None,
        **second,
    )
    if in_child:  # round 2 ran in the first child: the machine was too slow for a fresh one
        r = [merge_rounds(x, [in_child[x.spec.key]] if x.spec.key in in_child else []) for x in r]
        done = sum(x.status == "ok" for x in in_child.values())
        n = n + [
            f"{dev.name}: {done} verdict cases measured a second time in the same child process (round 2, "
            "reverse order): round 1 ended too late in the budget for a fresh process"
        ]
    return s, r, n, bool(in_child)


def _second_pass(
    run: _Run, dev: DeviceInfo, started: float, in_child: dict[str, CaseResult]
) -> tuple[float | None, dict[str, Any]]:
    """Round 1's deadline, and (with later rounds) what its child needs for a second pass of
    its own (``runner.Job.repeat``): round 1 stops the reserve before the budget's end; the
    second pass runs only if it ends after ``FRESH_ROUND_SHARE`` of the budget and no round-2
    child waits; its results land in ``in_child``."""
    request = run.request
    budget = request.budget_s
    deadline = started + budget if budget is not None else None
    if run.n_rounds <= 1:
        return deadline, {}
    page = page_reserve(budget) if budget is not None and run.chosen[:1] == [dev] else 0.0
    if budget is not None:
        deadline = started + budget - round2_reserve(budget) - page
    return deadline, dict(
        repeat_for=lambda todo: [c.key for c in repeat_order([c for c in todo if request.repeat(c)])],
        repeat_deadline=started + budget - page if budget is not None else None,
        repeat_window_s=ROUND2_RESERVE_S,
        # a waiting warm child costs no import: round 2 in it, however late round 1 ends
        fresh_round_before=started
        + (FRESH_ROUND_SHARE * budget if budget is not None and not _alive(run.warms, dev) else 1e9),
        on_round=lambda x: in_child.setdefault(x.spec.key, x),
    )


def _rounds_stop(request: Request, started: float) -> float:
    """When later rounds stop starting cases: ``Request.rounds_share`` of the device's budget after
    ``started``, and never past the budget less the page's reserve."""
    assert request.budget_s is not None  # the caller's check
    budget = request.budget_s
    return started + min(request.rounds_share * budget, budget - page_reserve(budget))


def round2_reserve(budget_s: float) -> float:
    """The seconds of a device's budget kept for its later rounds: round 1 stops starting cases
    this long before the budget's end, and a later round may start cases this long after round 1
    ended, at least. One figure for both: with a fixed ROUND2_RESERVE_S after round 1, a small
    budget's round 2 ran past its end by the difference (`run --budget 30`: 12 s instead of the
    4.5 s round 1 had left, wall 1.4 x the budget)."""
    return min(ROUND2_RESERVE_S, RESERVE_SHARE * budget_s)


def _alive(warms: dict[str, runner.Warm], dev: DeviceInfo) -> bool:
    """Whether ``dev``'s round-2 child is still there (not ended at its import)."""
    w = warms.get(dev.name)
    return w is not None and w.child.poll() is None


def _confirmed(found: Discovery, told: list[Discovery], sessions: list[Session]) -> Discovery:
    """The discovery the record keeps when the parent made a provisional one: what the
    measuring child reported; else (every case resumed from a journal) the provisional one
    with the framework as the journal's sessions name it."""
    if told:
        return told[0]
    if sessions:
        return dataclasses.replace(found, framework=sessions[0].framework)
    return found


def _later_rounds(
    run: _Run, dev: DeviceInfo, first: list[CaseResult], started: float, warm: runner.Warm | None = None
) -> tuple[list[CaseResult], list[str]]:
    """Rounds 2..n of the verdict cases of one device, each in a fresh child (round 2 in
    ``warm``, started with round 1), merged into the first round's results. Not journaled: a
    resumed run measures its later rounds again."""
    request, n_rounds = run.request, run.n_rounds
    todo = [
        r.spec
        for r in first
        if r.status == "ok"
        and r.timing is not None
        and request.repeat(r.spec)
        and len(r.timing.samples_s) * n_rounds >= MIN_SAMPLES_FOR_ROUNDS  # e.g. not a 1-sample fit
    ]
    if not todo:
        if warm is not None:
            warm.close()
        return first, []
    keys = {c.key for c in todo}
    stop = None
    if request.budget_s is not None:  # at least the reserve round 1 left, even when it ran late
        stop = max(_rounds_stop(request, started), time.time() + round2_reserve(request.budget_s))
    later: dict[str, list[CaseResult]] = {}
    notes: list[str] = []
    for k in range(2, n_rounds + 1):
        if k > 2 and stop is not None and time.time() >= stop:
            notes.append(f"{dev.name}: round {k} of the verdict cases did not start (time budget)")
            break
        specs = repeat_order(todo)
        run.count.grow(len(todo))  # this round's cases join the whole run's total
        rk, nk = _run_round(
            run,
            dev,
            specs,
            stop,
            # a group starts only if its round-1 time still fits before the stop: one started
            # just before it ran 3.5 s past at `--budget 30`
            expected_s={r.spec.key: r.wall_s for r in first if r.spec.key in keys},
            warm=warm if k == 2 else None,
        )
        notes += nk
        for r in rk:
            later.setdefault(r.spec.key, []).append(r)
        done = sum(r.status == "ok" for r in rk)
        if done < len(todo):
            notes.append(
                f"{dev.name}: round {k} measured {done} of {len(todo)} verdict cases again (time budget or failures)"
            )
    if request.undecided is not None and stop is not None:
        notes += _further_rounds(run, dev, first, later, stop, n_rounds + 1)
    return [merge_rounds(r, later.get(r.spec.key, [])) for r in first], notes


def _run_round(
    run: _Run,
    dev: DeviceInfo,
    specs: list[CaseSpec],
    stop: float | None,
    *,
    expected_s: dict[str, float],
    warm: runner.Warm | None = None,
) -> tuple[list[CaseResult], list[str]]:
    """One later round of ``specs`` on ``dev``, in the order given, with the run's policy, limits and
    progress, stopping at ``stop``: the results and the notes (every round after the first runs so)."""
    request = run.request
    _, results, notes = experiment.run_devices(
        request.framework,
        [dev],
        _fixed(specs),
        policy=run.policy,
        cpu_threads=request.cpu_threads,
        case_timeout_s=request.case_timeout_s,
        deadline=stop,
        on_start=run.progress.on_start,
        on_result=run.progress.on_result,
        memory_limit_bytes=request.memory_limit_bytes,
        warm=warm,
        expected_s=expected_s,
    )
    return results, notes


def _further_rounds(
    run: _Run, dev: DeviceInfo, first: list[CaseResult], later: dict[str, list[CaseResult]], stop: float, k: int
) -> list[str]:
    """Rounds ``k``.. of the cases a further round could still decide (``Request.undecided`` of the
    rounds so far), each in a fresh child, in the ABBA order (:func:`round_order`), appended to
    ``later``: until no pair is undecided, the rounds' stop, or ``MAX_ROUNDS``. A case whose earlier
    round is missing (failed, cut) is not measured again: rounds stay paired by position."""
    request, notes = run.request, []
    assert request.undecided is not None  # the caller's check
    expected = {r.spec.key: r.wall_s for r in first}
    start_s = max([x.import_s for x in run.sessions if x.device.name == dev.name] or [0.0])
    last_s = 0.0  # the last further round's wall time, start to end
    while k <= MAX_ROUNDS and time.time() < stop:
        merged = [merge_rounds(r, later.get(r.spec.key, [])) for r in first]
        whole = {r.spec.key for r in merged if r.timing is not None and len(r.timing.rounds) == k - 1}
        keys = request.undecided(merged) & whole
        if not keys:
            break
        # a pair needs both sides: a round whose child's start (its framework's import, as round 1's
        # took) and two quickest cases end past the stop measures none (a fresh child's start spent
        # for nothing, the note said "0 of 2" at --budget 60, load 17). Nor one that the round before
        # it took longer than is left for: a script's cases take turns in one process whose time the
        # first case's wall carries (the others read 0 s), so the two quickest walls priced its round
        # at the child's import alone, and at load 8 on 2 cores three runs ended on "0 of 7".
        if time.time() + max(start_s + sum(sorted(expected[key] for key in keys)[:2]), last_s) > stop:
            notes.append(f"{dev.name}: round {k} of the undecided pairs did not start (time budget)")
            break
        specs = round_order([r.spec for r in first if r.spec.key in keys], k)
        run.count.grow(len(specs))
        began = time.time()
        rk, nk = _run_round(run, dev, specs, stop, expected_s={key: expected[key] for key in keys})
        last_s = time.time() - began
        for r in rk:
            later.setdefault(r.spec.key, []).append(r)
        done = sum(r.status == "ok" for r in rk)
        notes += nk
        notes.append(
            f"{dev.name}: round {k} measured {done} of {len(specs)} cases again, those whose pairs the rounds "
            "before had not decided (an interval across the noise threshold, processes that disagree, or threads "
            "contending for busy cores, with too few rounds for an interval that holds across their modes)"
        )
        k += 1
    return notes


def round_order(specs: list[CaseSpec], k: int) -> list[CaseSpec]:
    """Round ``k``'s order: grouped as :func:`repeat_order`, each group reversed in the even rounds
    and as planned in the odd ones, so A..B, B..A, A..B, ... (ABBA) across the rounds."""
    if k % 2 == 0:
        return repeat_order(specs)
    groups: dict[int, list[CaseSpec]] = {}
    for s in specs:
        groups.setdefault(_group(s), []).append(s)
    return [s for g in sorted(groups) for s in groups[g]]


def _fixed(specs: list[CaseSpec]) -> Callable[[DeviceInfo], list[CaseSpec]]:
    """``cases_for`` of a later round: the same specs whatever the device."""

    def cases_for(_device: DeviceInfo) -> list[CaseSpec]:
        return specs

    return cases_for


def _signals_after(work: Callable[[], object]) -> None:
    """``work()`` (a pre-import while a child starts) with Ctrl-C and SIGTERM held until it is
    done, then handled as they came: raised inside a C extension's initialisation (matplotlib's
    ft2font), the interrupt surfaced as "ImportError: initialization failed" and a traceback
    instead of the resume line."""
    if threading.current_thread() is not threading.main_thread():
        work()
        return
    held = (signal.SIGINT, signal.SIGTERM)
    before: dict[int, Any] = {int(s): signal.getsignal(s) for s in held}
    came: list[int] = []
    for s in held:
        signal.signal(s, lambda signum, _frame: came.append(signum))
    try:
        work()
    finally:
        for num, old in before.items():
            signal.signal(num, old)
    if came:
        handler = before[came[0]]
        if callable(handler):
            handler(came[0], None)
        elif handler != signal.SIG_IGN:
            os.kill(os.getpid(), came[0])  # the default action, now that the work is done
