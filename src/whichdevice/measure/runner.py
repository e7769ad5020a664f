"""Run jobs in child processes: one process per (framework, device), isolated.

Why a process each: TensorFlow reads its device environment (hidden GPUs, memory growth,
threads) once, at import. A fresh process is also the only way to survive a case that
crashes, hangs or runs out of memory: the parent kills it, records that case as failed
with the reason and the time it used, and starts a new child for the cases left.

The child streams JSON lines (see ``child.py``); the parent polls the file, so a finished
case is never lost, whatever happens to the child afterwards.

The parent also holds the child to a memory limit (``memory_limit_bytes``, default 90 % of
physical RAM, or of the container's cgroup limit when lower): it reads the resident memory of
the child and its helpers at every poll and kills the child when they go over, before the
machine swaps or the OS's OOM killer picks a victim. A case that allocates faster than the poll (50 ms) can still meet the OS first: that
death is recorded as SIGKILL, "out of memory?".

A child reads one line on its stdin before it times anything: "go", once the
parent has done what it does while the child imports its framework (``while_starting``: the
presenters' imports), so the two never share a core while something is timed. A *warm* child
(:func:`start_warm`) is started before its job exists: it imports its framework beside another
child's import, then waits on its stdin, using no CPU, until ``run_job`` hands it the job's
path (the session's second round, which so pays no import of its own).
"""

from __future__ import annotations

from typing import Any

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


from whichdevice.core import failures
from whichdevice.core.process import POLL_S, Child, JsonLines, default_memory_limit, kill_group, stderr_tail
from whichdevice import frameworks
from whichdevice.core.records import CaseResult, CaseSpec, Session, failed

DEFAULT_STARTUP_TIMEOUT_S = 180.0
# A budgeted job's case may run until the budget's end, never less than this (a case
# that hung spent the 60 s case timeout inside a 20 s budget); and never more than the case timeout.
MIN_BUDGETED_CASE_S = 15.0


@dataclass
class Job:
    """What one child does: ``device=None`` means discovery only."""

    framework: str
    device: str | None
    device_kind: str  # cpu | gpu | discover
    cases: list[CaseSpec] = field(default_factory=list)
    cpu_threads: int | None = None
    policy: dict[str, Any] = field(default_factory=dict)
    deadline: float | None = None  # time.time() after which the child starts no new case
    # The second pass in the same child (child.py): these keys again, in this order, when the
    # first pass ends after fresh_round_before, until max(repeat_deadline, its end + window).
    repeat: list[str] = field(default_factory=list)
    repeat_deadline: float | None = None
    repeat_window_s: float = 0.0
    fresh_round_before: float | None = None
    # Each case's expected wall seconds (an earlier round's): a case or group starts only when
    # that much still fits before the deadline (child.measure_cases).
    expected_s: dict[str, float] = field(default_factory=dict)
    # A measuring child that also says what devices it sees (its ``devices`` line lands in
    # Outcome.discovery): the parent skipped the discovery child (experiment.discover).
    report_devices: bool = False


@dataclass
class Outcome:
    session: Session | None = None
    results: list[CaseResult] = field(default_factory=list)
    discovery: dict[str, Any] | None = None
    error: str | None = None  # the child could not start at all
    rounds: list[CaseResult] = field(default_factory=list)  # the second pass's results (round 2)


@dataclass
class Warm:
    """A measuring child started ahead of its job (:func:`start_warm`); ``run_job`` uses it
    for a job of the same framework, device kind and threads, else closes it."""

    framework: str
    device_kind: str
    cpu_threads: int | None
    child: Child
    dir: Path  # its job, output and stderr files

    def close(self) -> None:
        """Stop it (if still waiting) and remove its files."""
        if self.child.poll() is None:
            self.child.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def _paths(tmp: Path, attempt: int) -> tuple[Path, Path, Path]:
    return tmp / f"job{attempt}.json", tmp / f"out{attempt}.jsonl", tmp / f"err{attempt}.txt"


def _spawn(args: list[str], env_extra: dict[str, str], out_path: Path, err_path: Path, limit: int) -> Child:
    # The child's temporary files (TFRecords, traced functions) go in its job folder, which
    # run_job removes whatever happens to the child: it ends with os._exit, its atexit never runs.
    env = {**os.environ, **env_extra, "PYTHONUNBUFFERED": "1", "TMPDIR": str(out_path.parent)}
    out_path.touch()
    with open(err_path, "wb") as err:
        return Child(
            "whichdevice.measure.child",
            args,
            env=env,
            stderr=err,
            stdin=subprocess.PIPE,
            memory_limit_bytes=limit,
        )


def _go(child: Child, line: str) -> None:
    """The child's one line on stdin (its go, or a warm child's job path); a child already
    gone is found by the polling that follows."""
    pipe = child.proc.stdin
    if pipe is None:
        return
    try:
        pipe.write(line.encode() + b"\n")
        pipe.close()
    except (BrokenPipeError, OSError):
        pass


def start_warm(
    framework: str, device_kind: str, cpu_threads: int | None, *, memory_limit_bytes: int | None = None
) -> Warm:
    """A child for ``framework`` on a device of ``device_kind`` that imports the framework now
    and measures later, when :func:`run_job` hands it a job (``warm=``)."""
    env_extra = frameworks.env_module(framework).child_env(device_kind, cpu_threads)
    tmp = Path(tempfile.mkdtemp(prefix="whichdevice-"))
    try:
        _, out_path, err_path = _paths(tmp, 1)
        limit = memory_limit_bytes or default_memory_limit()
        child = _spawn(["-", str(out_path), framework], env_extra, out_path, err_path, limit)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Warm(framework, device_kind, cpu_threads, child, tmp)


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _death_reason(
    returncode: int | None, stopped: tuple[str, failures.FailureKind] | None, stderr: Path, stderr_from: int = 0
) -> tuple[str, failures.FailureKind]:
    """Why the child ended, and the failure kind of the case it was running."""
    if stopped:
        return stopped
    if returncode is not None and returncode < 0:
        name = _signal_name(returncode)
        hint = " (out of memory? the OS kills with SIGKILL)" if name == "SIGKILL" else ""
        why = f"child process died: {name}{hint}"
    else:
        why = f"child process exited with code {returncode}"
    tail = stderr_tail(stderr, stderr_from)
    return (f"{why}; last error line: {tail}" if tail else why), "crash"


def run_job(  # noqa: PLR0913 (public, keyword-only; tests call it directly)
    job: Job,
    *,
    case_timeout_s: float,
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
    on_result: Callable[[CaseResult], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    on_session: Callable[[Session], None] | None = None,
    memory_limit_bytes: int | None = None,
    while_starting: Callable[[], None] | None = None,
    warm: Warm | None = None,
) -> Outcome:
    """Run ``job`` to the end, restarting the child after a crash, a timeout or going over
    ``memory_limit_bytes`` (None: ``default_memory_limit()``).

    ``while_starting``: the parent's own work to do while its first child imports the framework
    (the presenters' imports); the child takes no sample before it has returned (the
    "go" on its stdin), so the two never share a core while something is timed. ``warm``: a
    child started ahead (:func:`start_warm`) that runs the first attempt; closed either way."""
    limit = memory_limit_bytes or default_memory_limit()
    env_extra = frameworks.env_module(job.framework).child_env(job.device_kind, job.cpu_threads)
    if warm is not None and (warm.framework, warm.device_kind, warm.cpu_threads) != (
        job.framework,
        job.device_kind,
        job.cpu_threads,
    ):
        warm.close()  # started for another job: its environment would be wrong
        warm = None
    watch = _Watch(
        case_timeout_s,
        startup_timeout_s,
        limit,
        job.device is None,
        on_result,
        on_start,
        on_session,
        budget_end=job.repeat_deadline or job.deadline,
    )
    outcome = Outcome()
    remaining = list(job.cases)
    tmp = warm.dir if warm is not None else Path(tempfile.mkdtemp(prefix="whichdevice-"))
    try:
        attempt = 0
        while True:
            attempt += 1
            job_path, out_path, err_path = _paths(tmp, attempt)
            ready = warm is not None and attempt == 1  # a warm child: it has imported, its job next
            job_path.write_text(_job_text(job, env_extra, remaining, attempt, ready))
            if ready:
                assert warm is not None
                child = warm.child
                _go(child, str(job_path))
            else:
                child = _spawn([str(job_path), str(out_path)], env_extra, out_path, err_path, limit)
                hook = while_starting if attempt == 1 else None
                try:
                    if hook is not None:
                        hook()
                finally:
                    _go(child, "go")
            end = _run_child(child, out_path, outcome, watch)
            remaining = _cases_left(outcome, remaining, end, err_path, watch)
            if not remaining:
                return outcome
    finally:
        if warm is not None:
            warm.close()
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _job_text(job: Job, env_extra: dict[str, str], cases: list[CaseSpec], attempt: int, ready: bool) -> str:
    """The job file of one attempt: ``cases`` (those left), the second pass only in the first."""
    return json.dumps(
        {
            "framework": job.framework,
            "device": job.device,
            "cpu_threads": job.cpu_threads,
            "policy": job.policy,
            "env": env_extra,
            "deadline": job.deadline,
            "cases": [c.model_dump(mode="json") for c in cases],
            "repeat": job.repeat if attempt == 1 else [],  # after a crash: no second pass
            "repeat_deadline": job.repeat_deadline,
            "repeat_window_s": job.repeat_window_s,
            "fresh_round_before": job.fresh_round_before,
            "expected_s": job.expected_s,
            "report_devices": job.report_devices,
            "gate": not ready,  # wait for "go" on stdin before timing anything
            # the user's own values of what child_env overrides (None: unset)
            "user_env": {k: os.environ.get(k) for k in env_extra},
        }
    )


def _cases_left(
    outcome: Outcome, remaining: list[CaseSpec], end: _ChildEnd, err_path: Path, watch: _Watch
) -> list[CaseSpec]:
    """After a child ended: the cases a new child is to run (none: the job is over). The case
    it was running is recorded as failed with the reason; a child that could not even start
    fails every case left (no point retrying case by case); discovery is never retried."""
    if watch.is_discovery:
        if outcome.discovery is None:
            outcome.error = _death_reason(end.returncode, end.stopped, err_path)[0]
        return []
    unfinished = [c for c in remaining if c.key not in end.done]
    if not unfinished:
        return []
    reason, kind = _death_reason(end.returncode, end.stopped, err_path, end.err_from)
    if not end.said_hello:
        # The framework could not even start: no point retrying case by case.
        outcome.error = reason
        for spec in unfinished:
            _fail(outcome, failed(spec, f"{failures.NOT_STARTED_PREFIX} {reason}", "not_started", 0.0), watch)
        return []
    # The case that was running: the last one started (a group of interleaved cases starts
    # each member in turn, so it need not be the first unfinished one).
    first = next((c for c in unfinished if c.key == end.last_started), unfinished[0])
    _fail(outcome, failed(first, reason, kind, end.current_s), watch)
    return [c for c in unfinished if c is not first]


def _fail(outcome: Outcome, result: CaseResult, watch: _Watch) -> None:
    outcome.results.append(result)
    if watch.on_result:
        watch.on_result(result)


@dataclass(frozen=True)
class _Watch:
    """What the parent holds a child to while it runs, and whom it tells what the child streams."""

    case_timeout_s: float
    startup_timeout_s: float
    memory_limit_bytes: int | None
    is_discovery: bool
    on_result: Callable[[CaseResult], None] | None = None
    on_start: Callable[[str], None] | None = None
    on_session: Callable[[Session], None] | None = None
    budget_end: float | None = None  # time.time() at which a budgeted job's budget ends (None: no budget)

    def case_limit(self, case_age_s: float) -> tuple[float, bool]:
        """A running case's timeout, and whether the budget set it: the case timeout, or less when
        the budget ends sooner (at least ``MIN_BUDGETED_CASE_S``)."""
        if self.budget_end is None:
            return self.case_timeout_s, False
        left = self.budget_end - (time.time() - case_age_s)  # what the budget left when the case began
        bound = max(left, MIN_BUDGETED_CASE_S)
        return (bound, True) if bound < self.case_timeout_s else (self.case_timeout_s, False)


@dataclass(frozen=True)
class _ChildEnd:
    """How one child process ended."""

    said_hello: bool
    done: dict[str, float]  # the finished keys with their wall time
    stopped: tuple[str, failures.FailureKind] | None  # why the parent stopped it
    returncode: int | None
    current_s: float  # how long its unfinished case had run
    err_from: int  # the stderr offset where that case started
    last_started: str | None  # the key of the last case it started


@dataclass
class _Stream:
    """What the parent has read so far of one child's JSON lines, and what they said."""

    outcome: Outcome
    watch: _Watch
    lines: JsonLines
    said_hello: bool = False
    done: dict[str, float] = field(default_factory=dict)
    case_started: float | None = None  # time.monotonic() when the running case started
    err_from: int = 0  # stderr's size when the current case started
    last_started: str | None = None

    def read(self) -> None:
        """The lines the child has completed since the last read, each handled."""
        for msg in self.lines.read():
            self.handle(msg)

    def handle(self, msg: dict[str, Any]) -> None:
        outcome, watch = self.outcome, self.watch
        kind = msg["type"]
        if kind == "devices":
            outcome.discovery = msg
        elif kind == "hello":
            self.said_hello = True
            if outcome.session is None:
                outcome.session = Session.model_validate(msg["session"])
                if watch.on_session:
                    watch.on_session(outcome.session)
        elif kind == "start":
            self.case_started = time.monotonic()
            self.last_started = msg["key"]
            self.err_from = msg.get("stderr_at") or 0
            if watch.on_start:
                watch.on_start(msg["key"])
        elif kind == "result":
            result = CaseResult.model_validate(msg["result"])
            outcome.results.append(result)
            self.done[result.spec.key] = result.wall_s
            self.case_started = None
            if watch.on_result:
                watch.on_result(result)
        elif kind == "round":  # the second pass: merged by the session, never journaled
            outcome.rounds.append(CaseResult.model_validate(msg["result"]))
            self.case_started = None


def _why_stop(
    child: Child, stream: _Stream, watch: _Watch, started: float, now: float
) -> tuple[str, failures.FailureKind] | None:
    """Why the parent stops the child now (None: it goes on): over the memory limit, the
    framework not started in time, discovery too long, or its case over the case timeout."""
    limit = watch.memory_limit_bytes
    rss = child.memory.rss() if limit else 0
    if limit and rss > limit:
        return (
            f"{failures.MEMORY_LIMIT_PREFIX} {rss / 2**30:.3f} GiB, over the memory limit of "
            f"{limit / 2**30:.3f} GiB (--memory-limit); killed",
            "out_of_memory",
        )
    if not stream.said_hello and not watch.is_discovery and now - started > watch.startup_timeout_s:
        return (
            f"{failures.TIMEOUT_PREFIX}: the framework did not start within {watch.startup_timeout_s:.0f} s",
            "not_started",
        )
    if watch.is_discovery and now - started > watch.startup_timeout_s:
        return (
            f"{failures.TIMEOUT_PREFIX}: device discovery took over {watch.startup_timeout_s:.0f} s",
            "timeout",
        )
    if stream.case_started is not None:
        age = now - stream.case_started
        limit_s, by_budget = watch.case_limit(age)
        if age > limit_s and not by_budget:
            return (f"{failures.TIMEOUT_PREFIX} after {limit_s:g} s (--case-timeout)", "timeout")
        if age > limit_s:
            return (
                f"{failures.TIMEOUT_PREFIX} after {limit_s:.0f} s {failures.BUDGET_LIMIT_WORDS}: "
                "the case hung, or is far slower than planned",
                "timeout",
            )
    return None


def _run_child(child: Child, out_path: Path, outcome: Outcome, watch: _Watch) -> _ChildEnd:
    """One child process, read as it streams, until it exits or the parent stops it (and
    kills its group) for a limit of ``watch``."""
    proc = child.proc
    stream = _Stream(outcome, watch, JsonLines(out_path))
    started = time.monotonic()
    stopped: tuple[str, failures.FailureKind] | None = None  # why the parent ended the child
    current_s: float | None = None  # how long the unfinished case had run when the child ended
    try:
        while True:
            exited = proc.poll() is not None
            stream.read()
            if exited:
                break
            now = time.monotonic()
            stopped = _why_stop(child, stream, watch, started, now)
            if stopped:
                if stream.case_started is not None:
                    current_s = now - stream.case_started
                kill_group(proc)
                break
            time.sleep(POLL_S)
    except BaseException:  # Ctrl-C, SIGTERM, a bug: the child's group does not outlive us
        child.kill()
        raise
    if stream.case_started is not None and current_s is None:
        current_s = time.monotonic() - stream.case_started
    return _ChildEnd(
        stream.said_hello, stream.done, stopped, proc.returncode, current_s or 0.0, stream.err_from, stream.last_started
    )
