"""Run jobs in child processes: one process per (framework, device), isolated.

Why a process each: TensorFlow reads its device environment (hidden GPUs, memory growth,
threads) once, at import. A fresh process is also the only way to survive a case that
crashes, hangs or runs out of memory: the parent kills it, records that case as failed
with the reason and the time it used, and starts a new child for the cases left.

The child streams JSON lines (see ``child.py``); the parent polls the file, so a finished
case is never lost, whatever happens to the child afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from whichdevice import frameworks
from whichdevice.records import CaseResult, CaseSpec, Session

_POLL_S = 0.05
DEFAULT_STARTUP_TIMEOUT_S = 180.0


@dataclass
class Job:
    """What one child does: ``device=None`` means discovery only."""

    framework: str
    device: str | None
    device_kind: str  # cpu | gpu | discover
    cases: list[CaseSpec] = field(default_factory=list)
    cpu_threads: int | None = None
    policy: dict = field(default_factory=dict)
    deadline: float | None = None  # time.time() after which the child starts no new case


@dataclass
class Outcome:
    session: Session | None = None
    results: list[CaseResult] = field(default_factory=list)
    discovery: dict | None = None
    error: str | None = None  # the child could not start at all


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a child started with ``start_new_session=True`` and everything it spawned; reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _stderr_tail(path: Path, limit: int = 300) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:limit] if lines else ""


def _death_reason(returncode: int | None, timed_out: str | None, stderr: Path) -> str:
    if timed_out:
        return timed_out
    if returncode is not None and returncode < 0:
        name = _signal_name(returncode)
        hint = " (out of memory? the OS kills with SIGKILL)" if name == "SIGKILL" else ""
        why = f"child process died: {name}{hint}"
    else:
        why = f"child process exited with code {returncode}"
    tail = _stderr_tail(stderr)
    return f"{why}; last error line: {tail}" if tail else why


def run_job(
    job: Job,
    *,
    case_timeout_s: float,
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
    on_result: Callable[[CaseResult], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    on_session: Callable[[Session], None] | None = None,
) -> Outcome:
    """Run ``job`` to the end, restarting the child after a crash or timeout."""
    env_extra = frameworks.env_module(job.framework).child_env(job.device_kind, job.cpu_threads)
    outcome = Outcome()
    remaining = list(job.cases)
    with tempfile.TemporaryDirectory(prefix="whichdevice-") as tmp:
        attempt = 0
        while True:
            attempt += 1
            job_path = Path(tmp) / f"job{attempt}.json"
            out_path = Path(tmp) / f"out{attempt}.jsonl"
            err_path = Path(tmp) / f"err{attempt}.txt"
            job_path.write_text(json.dumps({
                "framework": job.framework, "device": job.device, "cpu_threads": job.cpu_threads,
                "policy": job.policy, "env": env_extra, "deadline": job.deadline,
                "cases": [c.model_dump(mode="json") for c in remaining],
            }))
            said_hello, done, timed_out, returncode, current_s = _run_child(
                job_path, out_path, err_path, env_extra, outcome,
                case_timeout_s, startup_timeout_s, on_result, on_start, is_discovery=job.device is None,
                on_session=on_session,
            )
            if job.device is None:
                if outcome.discovery is None:
                    outcome.error = _death_reason(returncode, timed_out, err_path)
                return outcome
            unfinished = [c for c in remaining if c.key not in done]
            if not unfinished:
                return outcome
            reason = _death_reason(returncode, timed_out, err_path)
            if not said_hello:
                # The framework could not even start: no point retrying case by case.
                outcome.error = reason
                for spec in unfinished:
                    _fail(outcome, spec, f"not run: {reason}", 0.0, on_result)
                return outcome
            first = unfinished[0]
            _fail(outcome, first, reason, current_s, on_result)
            remaining = unfinished[1:]
            if not remaining:
                return outcome


def _fail(outcome: Outcome, spec: CaseSpec, reason: str, wall_s: float, on_result) -> None:
    result = CaseResult(spec=spec, status="failed", error=reason, wall_s=wall_s)
    outcome.results.append(result)
    if on_result:
        on_result(result)


def _run_child(job_path, out_path, err_path, env_extra, outcome, case_timeout_s, startup_timeout_s,
               on_result, on_start, is_discovery, on_session=None):
    env = {**os.environ, **env_extra, "PYTHONUNBUFFERED": "1"}
    out_path.touch()
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "whichdevice.child", str(job_path), str(out_path)],
            env=env, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, so a kill takes its helpers too
        )
    said_hello = False
    done: dict[str, float] = {}
    started = time.monotonic()
    case_started: float | None = None
    timed_out: str | None = None
    current_s: float | None = None  # how long the unfinished case had run when the child ended
    pos = 0
    buffer = ""
    while True:
        exited = proc.poll() is not None
        with open(out_path, encoding="utf-8") as f:
            f.seek(pos)
            chunk = f.read()
            pos = f.tell()
        buffer += chunk
        *lines, buffer = buffer.split("\n")
        for line in lines:
            if not line.strip():
                continue
            msg = json.loads(line)
            kind = msg["type"]
            if kind == "devices":
                outcome.discovery = msg
            elif kind == "hello":
                said_hello = True
                if outcome.session is None:
                    outcome.session = Session.model_validate(msg["session"])
                    if on_session:
                        on_session(outcome.session)
            elif kind == "start":
                case_started = time.monotonic()
                if on_start:
                    on_start(msg["key"])
            elif kind == "result":
                result = CaseResult.model_validate(msg["result"])
                outcome.results.append(result)
                done[result.spec.key] = result.wall_s
                case_started = None
                if on_result:
                    on_result(result)
        if exited:
            break
        now = time.monotonic()
        if not said_hello and not is_discovery and now - started > startup_timeout_s:
            timed_out = f"timed out: the framework did not start within {startup_timeout_s:.0f} s"
        elif is_discovery and now - started > startup_timeout_s:
            timed_out = f"timed out: device discovery took over {startup_timeout_s:.0f} s"
        elif case_started is not None and now - case_started > case_timeout_s:
            timed_out = f"timed out after {case_timeout_s:g} s (--case-timeout)"
            current_s = now - case_started
        if timed_out:
            kill_group(proc)
            break
        time.sleep(_POLL_S)
    if case_started is not None and current_s is None:
        current_s = time.monotonic() - case_started
    return said_hello, done, timed_out, proc.returncode, current_s or 0.0
