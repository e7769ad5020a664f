"""Child process entry point: ``python -m whichdevice.measure.child JOB.json OUT.jsonl``.

The parent has already put the framework's environment (hidden GPU, memory growth,
threads) into this process's environment, so importing the framework here sees it.
Every finished case is appended to OUT as one JSON line and flushed at once: if this
process crashes or is killed, the parent still has every case finished before it.

Lines: ``{"type": "devices", ...}`` (discovery jobs), ``{"type": "hello", "session": ...}``,
``{"type": "start", "key": ...}``, ``{"type": "result", "result": ...}``, and for the second
pass ``{"type": "round", "round": 2, "result": ...}``.

**Second pass** (issue 16): a job may name ``repeat`` keys. After its cases, if it is later than
``fresh_round_before`` (the parent would not have time for a fresh child), the child measures
those cases again in that order (the parent's ABBA order), starting each while
``max(repeat_deadline, end of the first pass + repeat_window_s)`` is not reached; the results
come as ``round`` lines, which the parent merges as round 2 and never journals.
"""

from __future__ import annotations

from typing import Any

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


def _devices_line(fw: Framework, import_s: float, user_env: dict[str, str | None]) -> dict[str, Any]:
    """The ``devices`` line. ``user_env``: the user's own values of the variables the parent set
    for this child (None: unset), restored while the reasons are read, so a GPU the parent hid
    for a CPU child is not reported as "hidden by CUDA_VISIBLE_DEVICES"."""
    saved = {k: os.environ.get(k) for k in user_env}
    try:
        for k, v in user_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        reasons = fw.discovery.no_gpu_reasons()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
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
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    out = open(out_path, "a", encoding="utf-8")

    def emit(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    t0 = time.perf_counter()
    fw = frameworks.load(job["framework"])
    import_s = time.perf_counter() - t0

    if job.get("device") is None or job.get("report_devices"):
        # A discovery job; or a measuring child the parent asked to say what it sees as well
        # (issue 21: on a machine the parent knows has no GPU, no separate discovery child).
        emit(_devices_line(fw, import_s, job.get("user_env") or {}))
        if job.get("device") is None:
            return 0

    device = job["device"]
    settings = fw.placement.configure(device, job.get("cpu_threads"))
    info = next(d for d in fw.discovery.list_devices() if d.name == device)
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
        policy = dataclasses.replace(policy, window=lambda: Sampler(period, gpu_index=gpu_index))
    deadline = job.get("deadline")  # wall-clock (time.time) after which no case starts
    specs: dict[str, CaseSpec] = {}
    ok: set[str] = set()
    for raw_spec in job["cases"]:
        spec = CaseSpec.model_validate(raw_spec)
        specs[spec.key] = spec
        emit({"type": "start", "key": spec.key, "stderr_at": _stderr_position()})
        if deadline is not None and time.time() > deadline:
            skipped = failed(
                spec, f"{failures.SKIPPED_PREFIX} the time budget (--budget) ran out before this case", "skipped", 0.0
            )
            emit({"type": "result", "result": skipped.model_dump(mode="json")})
            continue
        result = _run_one(spec, fw, policy, overhead_s)
        # worth a second pass only when two passes can reach the 5 samples a claim needs
        if result.status == "ok" and result.timing is not None and 2 * len(result.timing.samples_s) >= 5:
            ok.add(spec.key)
        emit({"type": "result", "result": result.model_dump(mode="json")})
    repeat = [k for k in job.get("repeat") or [] if k in ok]
    fresh_before = job.get("fresh_round_before")
    if repeat and (fresh_before is None or time.time() >= fresh_before):
        until = max(job.get("repeat_deadline") or 0.0, time.time() + float(job.get("repeat_window_s") or 0.0))
        for key in repeat:
            if time.time() > until:
                break
            emit({"type": "start", "key": key, "stderr_at": _stderr_position()})
            result = _run_one(specs[key], fw, policy, overhead_s)
            emit({"type": "round", "round": 2, "result": result.model_dump(mode="json")})
    return 0


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
    sys.exit(main(sys.argv))
