"""Child process entry point: ``python -m whichdevice.measure.child JOB.json OUT.jsonl``, or
``python -m whichdevice.measure.child - OUT.jsonl FRAMEWORK`` for a warm child (runner.py's
``start_warm``: it imports FRAMEWORK, then reads its job's path on stdin). A job with ``gate``
waits for one line on stdin (the parent's "go") before it times anything.

The parent has already put the framework's environment (hidden GPU, memory growth,
threads) into this process's environment, so importing the framework here sees it.
Every finished case is appended to OUT as one JSON line and flushed at once: if this
process crashes or is killed, the parent still has every case finished before it.

Lines: ``{"type": "devices", ...}`` (discovery jobs), ``{"type": "hello", "session": ...}``,
``{"type": "start", "key": ...}``, ``{"type": "result", "result": ...}``, and for the second
pass ``{"type": "round", "round": 2, "result": ...}``.

**Interleaved groups**: cases that are compared with each other
(``workloads.interleave_groups``: the steady training steps of a sweep, the input-pipeline
loop's variants) are timed together, their blocks in turns, so slow drift of a shared machine
hits every member alike. A group runs at its first member's place: a ``start`` line as each
member is set up (build, tracing, warm-up) and before each member's turn, then one ordinary
``result`` line per member, in order, when the group is done (:func:`_run_group`). The parent's
per-case timeout thus bounds one member's set-up or one turn; a member that raises is recorded
and the others go on. A native crash inside a group ends the child like any crash: the parent
records the case the child started last as failed and restarts a child with the rest, which
groups them again.

**Second pass**: a job may name ``repeat`` keys. After its cases, if it is later than
``fresh_round_before`` (the parent would not have time for a fresh child), the child measures
those cases again in that order (the parent's ABBA order), starting each while
``max(repeat_deadline, end of the first pass + repeat_window_s)`` is not reached; the results
come as ``round`` lines, which the parent merges as round 2 and never journals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import contextlib
import dataclasses
import json
import os
import re
import sys
import threading
import time
import traceback

from whichdevice.core import failures
from whichdevice import frameworks, workloads
from whichdevice.core.records import CaseResult, CaseSpec, Session, failed
from whichdevice.measure.telemetry import Sampler
from whichdevice.core.timing import TimingPolicy, measure_overhead
from whichdevice.frameworks.contracts import Framework


def _error_line(e: BaseException) -> str:
    msg = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    first = msg[0] if msg else ""
    if first.startswith("in user code") and len(msg) > 1:
        first = msg[-1]  # a tf.function error: the real message comes after the traced stack
    # TensorFlow errors carry the failing op's whole graph context; the first line is enough,
    # without its "{{function_node __wrapped__Op_device_/job:localhost/...}}" prefix.
    first = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", first)
    return f"{type(e).__name__}: {first[:400]}"


def _inject_fault(spec: CaseSpec) -> None:
    """Fault-injection point for the harness's own tests (tests/test_runner.py).

    ``WHICHDEVICE_FAULT=ACTION:TEXT[;ACTION:TEXT...]`` makes every case whose key contains
    TEXT fail in the way ACTION names: ``raise`` (an exception), ``abort`` (SIGABRT, like a crashing
    native library), ``hang`` (never returns), ``oom`` (MemoryError), ``grow`` (really
    allocates and touches memory, 64 MiB every 10 ms, until the parent's memory limit
    kills the child). A case too large for its device's allocator needs no injection:
    tests/test_runner.py runs a matmul of n = 2**20 (4 TiB per operand).
    """
    fault = os.environ.get("WHICHDEVICE_FAULT")
    if not fault:
        return
    matching = [f.partition(":") for f in fault.split(";")]
    action = next((a for a, _, text in matching if text and text in spec.key), None)
    if action == "raise":
        raise RuntimeError(f"injected failure in {spec.key}")
    if action == "abort":
        os.abort()
    if action == "hang":
        while True:
            time.sleep(1)
    if action == "oom":
        raise MemoryError("injected out-of-memory")
    if action == "grow":
        held = []
        while True:
            held.append(bytearray(b"\x01" * (64 << 20)))  # written, so resident
            time.sleep(0.01)


def _stderr_position() -> int | None:
    """Bytes written to stderr so far (the parent's file): where this case's messages begin."""
    sys.stderr.flush()
    try:
        return os.lseek(2, 0, os.SEEK_CUR)
    except OSError:
        return None


def _die_with_parent() -> None:
    """End this child when the parent dies (``kill -9`` of the whole run): a measurement
    orphaned in its own process group would otherwise go on competing for the cores."""
    parent = os.getppid()
    try:  # Linux: the kernel sends SIGKILL when the parent goes.
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(3)

    def watch() -> None:  # elsewhere: poll
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="whichdevice-parent-watch", daemon=True).start()


@contextlib.contextmanager
def _environ(values: dict[str, str | None]) -> Iterator[None]:
    """``os.environ`` with ``values`` set (None: unset) inside the block, as it was after."""
    saved = {k: os.environ.get(k) for k in values}

    def put(items: dict[str, str | None]) -> None:
        for k, v in items.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    put(values)
    try:
        yield
    finally:
        put(saved)


def _devices_line(fw: Framework, import_s: float, user_env: dict[str, str | None]) -> dict[str, Any]:
    """The ``devices`` line. ``user_env``: the user's own values of the variables the parent set
    for this child (None: unset), restored while the reasons are read, so a GPU the parent hid
    for a CPU child is not reported as "hidden by CUDA_VISIBLE_DEVICES"."""
    with _environ(user_env):
        reasons = fw.discovery.no_gpu_reasons()
    return {
        "type": "devices",
        "framework": fw.discovery.framework_info().model_dump(mode="json"),
        "devices": [d.model_dump(mode="json") for d in fw.discovery.list_devices()],
        "no_gpu_reasons": reasons,
        "import_s": import_s,
    }


def main(argv: list[str]) -> int:
    _die_with_parent()
    job_path, out_path = argv[1], argv[2]
    t0 = time.perf_counter()
    if job_path == "-":
        # A warm child (runner.start_warm): the framework first, then the job's path on stdin
        # (nothing: the parent did not need this child).
        fw = frameworks.load(argv[3])
        import_s = time.perf_counter() - t0
        job_path = sys.stdin.readline().strip()
        if not job_path:
            return 0
        with open(job_path, encoding="utf-8") as f:
            job = json.load(f)
    else:
        with open(job_path, encoding="utf-8") as f:
            job = json.load(f)
        fw = frameworks.load(job["framework"])
        import_s = time.perf_counter() - t0
    out = open(out_path, "a", encoding="utf-8")

    def emit(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    if job.get("device") is None or job.get("report_devices"):
        # A discovery job; or a measuring child the parent asked to say what it sees as well
        # (on a machine the parent knows has no GPU, no separate discovery child).
        emit(_devices_line(fw, import_s, job.get("user_env") or {}))
        if job.get("device") is None:
            return 0

    device = job["device"]
    settings = fw.placement.configure(device, job.get("cpu_threads"))
    info = next(d for d in fw.discovery.list_devices() if d.name == device)
    if job.get("gate"):
        # the parent's "go" (runner.py): it is done with what it did while this child imported
        sys.stdin.readline()
    overhead_s = measure_overhead(time.perf_counter, fw.sync.sync)
    # The adapter's settings (threads, oneDNN) are checked by the record's schema.
    session = Session.model_validate(
        {
            "framework": fw.discovery.framework_info(),
            "device": info,
            "env": job.get("env", {}),
            "import_s": import_s,
            "overhead_s": overhead_s,
            **settings,
        }
    )
    emit({"type": "hello", "session": session.model_dump(mode="json")})

    policy = TimingPolicy(**job.get("policy", {}))
    if policy.telemetry_period_s:
        # NVML numbers GPUs in PCI bus order; with CUDA's default (fastest first) order and
        # several different GPUs the two can differ. One GPU, or identical GPUs: the same.
        gpu_index = int(device.split(":")[1]) if device.startswith("GPU") else None
        period = policy.telemetry_period_s
        # A caller may ask for a coarser period: the user's script runs for tens of seconds in one
        # window, and the record keeps every sample.
        policy = dataclasses.replace(
            policy, window=lambda period_s=None: Sampler(period_s or period, gpu_index=gpu_index)
        )
    deadline = job.get("deadline")  # wall-clock (time.time) after which no case starts
    specs = {spec.key: spec for spec in (CaseSpec.model_validate(raw) for raw in job["cases"])}
    ctx = _Context(fw, policy, overhead_s, emit)
    results = measure_cases(
        list(specs.values()),
        ctx,
        expired=lambda need_s=0.0: deadline is not None and time.time() + need_s > deadline,
        expected_s=job.get("expected_s") or {},
    )
    _second_pass(job, ctx, specs, results)
    return 0


def _second_pass(job: dict[str, Any], ctx: _Context, specs: dict[str, CaseSpec], results: list[CaseResult]) -> None:
    """The job's ``repeat`` cases measured again (round 2), when the first pass ended after
    ``fresh_round_before``; each group starts only if its first pass's time still fits."""
    # worth a second pass only when two passes can reach the 5 samples a claim needs
    ok = {r.spec.key for r in results if r.status == "ok" and r.timing is not None and 2 * len(r.timing.samples_s) >= 5}
    repeat = [k for k in job.get("repeat") or [] if k in ok]
    fresh_before = job.get("fresh_round_before")
    if repeat and (fresh_before is None or time.time() >= fresh_before):
        until = max(job.get("repeat_deadline") or 0.0, time.time() + float(job.get("repeat_window_s") or 0.0))
        # the second pass interleaves the same groups (in the parent's reversed order)
        measure_cases(
            [specs[k] for k in repeat],
            ctx,
            expired=lambda need_s=0.0: time.time() + need_s > until,
            round_no=2,
            expected_s={r.spec.key: r.wall_s for r in results},
        )


@dataclasses.dataclass
class _Context:
    fw: Framework
    policy: TimingPolicy
    overhead_s: float
    emit: Callable[[dict[str, Any]], None]


def measure_cases(
    cases: list[CaseSpec],
    ctx: _Context,
    *,
    expired: Callable[..., bool],
    round_no: int = 1,
    expected_s: dict[str, float] | None = None,
) -> list[CaseResult]:
    """Measure ``cases`` and emit their lines; return their results. Cases that are compared
    with each other (``workloads.interleave_groups``) are timed interleaved, one group at a
    time, at the place of its first member. ``expired(need_s)``: no case (or member) starts
    when it says the time is up, or that ``need_s`` more would pass the end — a group's
    ``expected_s`` (its members' wall in an earlier round), so one started just before the end
    does not run seconds past it. In round 1 such a case is recorded as skipped, in round 2
    it is left out. Round 2's results come as ``round`` lines."""
    expected_s = expected_s or {}
    by_key = {c.key: c for c in cases}
    out: list[CaseResult] = []

    def emit_result(result: CaseResult) -> None:
        out.append(result)
        if round_no == 1:
            ctx.emit({"type": "result", "result": result.model_dump(mode="json")})
        else:
            ctx.emit({"type": "round", "round": round_no, "result": result.model_dump(mode="json")})

    for keys in workloads.interleave_groups(cases):
        group = [by_key[k] for k in keys]
        if expired(sum(expected_s.get(k, 0.0) for k in keys)):  # no case, and no group, starts after it
            if round_no > 1:
                break
            for spec in group:
                _start(ctx, spec.key)
                emit_result(_skipped(spec))
        elif len(group) == 1:
            _start(ctx, group[0].key)
            emit_result(_run_one(group[0], ctx.fw, ctx.policy, ctx.overhead_s))
        else:
            for result in _run_group(group, ctx, expired, skip=round_no == 1):
                emit_result(result)
    return out


def _start(ctx: _Context, key: str) -> None:
    ctx.emit({"type": "start", "key": key, "stderr_at": _stderr_position()})


def _skipped(spec: CaseSpec) -> CaseResult:
    return failed(
        spec, f"{failures.SKIPPED_PREFIX} the time budget (--budget) ran out before this case", "skipped", 0.0
    )


class _MemberWall:
    """Each member's wall time in an interleaved group: its own set-up and turns. ``switch(i)``
    ends the running member's time and starts member ``i``'s (with its ``start`` line);
    ``stop()`` ends the running member's time."""

    def __init__(self, group: list[CaseSpec], ctx: _Context) -> None:
        self.group = group
        self.ctx = ctx
        self.wall = [0.0] * len(group)
        self.current: int | None = None  # whose time is running
        self.since = time.perf_counter()  # since when

    def switch(self, i: int) -> None:
        now = time.perf_counter()
        if self.current is not None:
            self.wall[self.current] += now - self.since
        self.current, self.since = i, now
        _start(self.ctx, self.group[i].key)

    def stop(self) -> None:
        end = time.perf_counter()
        if self.current is not None:
            self.wall[self.current] += end - self.since


def _run_group(group: list[CaseSpec], ctx: _Context, expired: Callable[[], bool], *, skip: bool) -> list[CaseResult]:
    """One interleaved group: each member prepared in turn (a ``start`` line each, so the
    parent's per-case timeout covers one member's set-up and tracing, and its stderr offset
    points at that member), then all timed together, with a ``start`` line before each
    member's turn (a timeout still means one stuck block; a crash is read from that turn's
    stderr). A member that raises is recorded as failed and the others go on; a member whose
    set-up would start after ``expired()`` is skipped (``skip``) or left out. The results, in
    the group's order, once the group is done. Wall time: each member's own set-up and turns."""
    mod = workloads.group_runner(group[0].workload)
    results: list[CaseResult | None] = [None] * len(group)
    clock = _MemberWall(group, ctx)
    prepared = _prepare_members(mod, ctx, clock, results, expired=expired, skip=skip)
    if prepared:
        try:
            timed = mod.time_group(
                [p for _, p in prepared],
                ctx.fw,
                ctx.policy,
                ctx.overhead_s,
                before=lambda j: clock.switch(prepared[j][0]),
            )
        except Exception as e:  # the group's own machinery failed: every prepared member says so
            traceback.print_exc(file=sys.stderr)
            timed = [e] * len(prepared)
        clock.stop()
        for (i, _), got in zip(prepared, timed):
            results[i] = _member_result(group[i], got, clock.wall[i])
    return [r for r in results if r is not None]


def _prepare_members(
    mod: workloads.GroupWorkload,
    ctx: _Context,
    clock: _MemberWall,
    results: list[CaseResult | None],
    *,
    expired: Callable[[], bool],
    skip: bool,
) -> list[tuple[int, Any]]:
    """Each member of ``clock.group`` prepared in turn, its time on ``clock``: (its index, what
    ``mod.prepare`` gave). A member that raises, or that is skipped (``expired()``, ``skip``),
    gets its result in ``results`` instead."""
    prepared: list[tuple[int, Any]] = []
    for i, spec in enumerate(clock.group):
        if expired():
            if skip:
                _start(ctx, spec.key)
                results[i] = _skipped(spec)
            continue
        clock.switch(i)
        try:
            _inject_fault(spec)
            prepared.append((i, mod.prepare(spec, ctx.fw, ctx.policy, ctx.overhead_s)))
        except Exception as e:  # this member fails; the group goes on
            traceback.print_exc(file=sys.stderr)
            results[i] = failed(spec, _error_line(e), failures.of_exception(e), time.perf_counter() - clock.since)
    return prepared


def _member_result(spec: CaseSpec, got: Any, wall_s: float) -> CaseResult:
    """One member's result from what ``time_group`` gave it: its (timing, metrics), or the
    exception it raised (recorded as failed)."""
    if isinstance(got, BaseException):
        if got.__traceback__ is not None:
            traceback.print_exception(got, file=sys.stderr)
        return failed(spec, _error_line(got), failures.of_exception(got), wall_s)
    timing, metrics = got
    return CaseResult(spec=spec, status="ok", metrics=metrics, wall_s=wall_s, timing=timing)


def _run_one(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> CaseResult:
    """One case: its result, or the failure it raised (recorded; the run goes on)."""
    t_case = time.perf_counter()
    try:
        _inject_fault(spec)
        timing, metrics = workloads.runner(spec.workload)(spec, fw, policy, overhead_s)
        return CaseResult(spec=spec, status="ok", metrics=metrics, wall_s=time.perf_counter() - t_case, timing=timing)
    except Exception as e:  # one failing case is recorded and the run goes on
        traceback.print_exc(file=sys.stderr)
        return failed(spec, _error_line(e), failures.of_exception(e), time.perf_counter() - t_case)


if __name__ == "__main__":
    code = main(sys.argv)
    # Every line is written and flushed: skip the interpreter's teardown, which the parent would
    # wait for (TensorFlow's takes ≈ 1.2 s, torch's ≈ 0.5 s on the 2-core VM). Nothing
    # of this process is left to clean up: the parent kills its process group when it ends.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
