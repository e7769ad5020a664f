"""``whichdevice audit``: the record and the orchestration (parent side, no TensorFlow here).

Flow: check the script at the boundary (exists, is a file, is Python) -> run it once in
``python -m whichdevice.audit.child`` (instrumented, its output passed through) -> read the
child's state -> ``analysis.audit.analyze`` (pure: measurements, blocks, findings,
corrected comparisons) -> an ``AuditRecord`` (versioned JSON) -> presenters.

The record keeps what was observed (every block, every interval the script computed, the
raw samples of each re-measurement) next to what was concluded, so ``findings`` can be
re-derived from it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from whichdevice.core.version import __version__
from whichdevice.core import safeio
from whichdevice.core.errors import UsageError
from whichdevice.core.process import passed_through, run_module
from whichdevice.core.records import MachineInfo, Timing, now_iso
from whichdevice.frameworks.common.audit import AUDITED, terms

# Schema 2: the corrected ratios read A/B, as compare's (above 1: B faster); 1 had B/A.
AUDIT_SCHEMA_VERSION = 2
# Seconds the child gets after --timeout to write what it saw before it is killed.
STATE_GRACE_S = 20.0


# GPU array libraries the audit does not follow (it hooks TensorFlow, PyTorch and JAX), by the module a
# script imports: a script using one is told so in one line, never audited in another framework's name.
UNSUPPORTED = {"cupy": "CuPy", "cupyx": "CuPy", "numba": "Numba", "pycuda": "PyCUDA"}

# An error message saying the device asked for does not exist, in any audited framework's words (each
# part's MISSING_DEVICE): the line of a script's exception the record shows, and the failure
# ``rules.rule_missing_device_failure`` explains.
MISSING_DEVICE_RE = re.compile("|".join(f"(?:{terms(n).MISSING_DEVICE})" for n in AUDITED), re.I)


def mentions_missing_device(text: str) -> bool:
    return bool(MISSING_DEVICE_RE.search(text or ""))


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Block(_Model):
    """One ``with tf.device(...)`` block the script entered (from its own file)."""

    id: int
    requested: str | None
    api: str = Field(description="tf.device or tf.compat.v1.device")
    line: int
    text: str
    device_exists: bool | None = Field(description="None: TensorFlow never reported its devices")
    wall_s: float | None = Field(description="enter to exit, as the audit's clock saw it")
    ran_on: dict[str, int] = Field(description="eager ops (and placed graph ops) per device they ran on")
    fn_calls: int
    traces: int
    instantiations: int = Field(description="first call of a traced signature on a device (graph set-up)")
    xla_compiles: int
    sessions: int
    session_runs: int
    syncs: int = Field(description="host reads (.numpy(), Session.run, sync_devices): the host waited")
    h2d: int
    d2h: int
    cpu_ops_in_gpu_block: int
    error: str | None = None


class Measurement(_Model):
    """One interval the script computed itself (``end - start`` of two clock reads)."""

    id: int
    line: int | None
    text: str = Field(description="the script's source line that computed the interval")
    seconds: float
    clock: str
    kind: Literal["CPU", "GPU", ""] = Field(description="device kind the blocks inside asked for")
    blocks: list[int]
    ran_on: dict[str, int]
    fn_calls: int
    traces: int
    instantiations: int
    xla_compiles: int
    new_kernels: int = Field(description="op kernels used for the first time in the process")
    sessions: int
    session_runs: int
    syncs: int
    h2d: int
    d2h: int
    unsynced_gpu_end: bool = Field(description="GPU work was queued after the last host read before the end")
    setup_s: dict[str, float] = Field(
        default_factory=dict,
        description="seconds of set-up inside the interval, by kind (trace, session, init, iter...)",
    )
    host_inputs: int = Field(default=0, description="calls given NumPy / Python values (converted at every call)")
    pageable_moves: int = Field(default=0, description="of host_inputs (PyTorch): tensors not in pinned memory")
    user_syncs: int = Field(default=0, description="host reads made by the script's own code")
    vars_other_device: int = Field(default=0, description="variables made in another device kind's block, used here")
    loader_wait_s: float = Field(default=0.0, description="seconds the loop waited for DataLoader batches")
    framework: str = "tensorflow"
    tracing: str = Field(
        default="", description="'tf.function NAME' / 'jax.jit' when a clock read ran while that was tracing"
    )
    device_script: bool = Field(
        default=True, description="the script mentions a GPU (cuda, gpu): its PyTorch / JAX series are compared"
    )
    eager_ops: int = Field(default=0, description="framework ops dispatched one by one from Python in the interval")
    elems: int = Field(default=0, description="elements of those ops' outputs, summed (op size = elems / eager_ops)")
    first_session_runs: int = Field(default=0, description="Session.run calls that were a session's first")
    loops: list[dict[str, Any]] = Field(
        default_factory=list, description="graph loops (map_fn, while_loop, for over tf.range) the timed work ran"
    )
    start_seq: int = Field(default=0, description="event counter at the two clock reads (orders the events)")
    end_seq: int = 0
    series: str = Field(description="line:kind — measurements of one series share it")
    index_in_series: int
    series_len: int


class Finding(_Model):
    rule: str
    title: str
    where: str
    explanation: str
    fix: str
    measurements: list[int] = Field(default_factory=list)
    blocks: list[int] = Field(default_factory=list)


class Found(_Model):
    """What one rule found (``audit/rules.py``, ``audit/causes.py``): its id, the framework whose terms
    fit it, its evidence (the numbers and the script's own lines it rests on, and the measurements and
    blocks those come from) and the script lines it is about. ``present/auditwords.py`` says it in words:
    a ``Finding``, as the record keeps it."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    rule: str
    framework: str = "tensorflow"
    evidence: dict[str, Any] = Field(default_factory=dict)
    lines: list[int] = Field(default_factory=list)
    measurements: list[int] = Field(default_factory=list)
    blocks: list[int] = Field(default_factory=list)


class Rerun(_Model):
    """Steady re-measurement of one traced function under one device request."""

    function: str
    requested: str | None
    ran_on: str
    calls_in_block: int
    timing: Timing


class Correction(_Model):
    """A compared pair (CPU-kind measurement ``a``, GPU-kind ``b``) and what re-running showed.

    The re-run is interleaved: rounds of A and B in the same process, their order drawn at
    random per round; ``real_ratio`` is the median of the per-round ratios A/B (above 1: B, the
    GPU-asked side, is faster — the direction ``compare`` reads a change in) and
    ``real_ratio_low``/``_high`` the distribution-free 95 % interval of that median."""

    a: int
    b: int
    script_ratio: float = Field(description="a / b as the script measured it (above 1: B faster)")
    a_steady_s: float | None = None
    b_steady_s: float | None = None
    real_ratio: float | None = Field(default=None, description="a / b from the steady re-measurement")
    real_ratio_low: float | None = None
    real_ratio_high: float | None = None
    reruns: list[Rerun] = Field(default_factory=list)
    note: str = ""
    rerun_ok: bool = False
    round_ratios: list[float] = Field(default_factory=list, description="A/B of each interleaved round")
    significant: bool | None = Field(default=None, description="the whole interval beyond the noise threshold")


class SteadyTime(_Model):
    """A timing with no pair that the audit measured to be wrong (the clock stopped before the device's
    work finished, or one-time set-up is a share of it), its work re-run alone after the script on this
    machine, warmed up and device synchronized: the real time of the block, and the script's number over
    it. ``note`` says how; where it could not be re-run, ``steady_s`` is None and ``note`` says why."""

    m: int = Field(description="the measurement's id")
    script_s: float = Field(description="the time the script computed")
    steady_s: float | None = Field(default=None, description="the block's real time here: median over the rounds")
    low_s: float | None = Field(default=None, description="95 % interval of that median (distribution-free)")
    high_s: float | None = None
    ratio: float | None = Field(
        default=None, description="steady_s / script_s: the real time as a multiple of the script's number"
    )
    rounds: int = 0
    ran_on: str = ""
    note: str = ""


class AuditRecord(_Model):
    schema_version: int = AUDIT_SCHEMA_VERSION
    tool_version: str = __version__
    experiment: Literal["audit"] = "audit"
    command: list[str]
    created_at: str
    machine: MachineInfo
    script: str
    args: list[str]
    exit_code: int | None = Field(description="the script's exit code; None when it was killed")
    timed_out: bool
    timeout_s: float
    hang_line: dict[str, Any] | None = None
    exception: dict[str, Any] | None = None
    wall_s: float = Field(description="the whole child: interpreter start, script, re-measurement")
    script_s: float | None = Field(description="the script alone, inside the child")
    tensorflow_seen: bool
    framework: str = Field(default="tensorflow", description="tensorflow or torch: the hooks that watched the script")
    loaders: list[dict[str, Any]] = Field(default_factory=list, description="DataLoaders the script built")
    cuda_probe: dict[str, Any] | None = Field(default=None, description="the script's torch.cuda.is_available()")
    physical_devices: dict[str, int]
    soft_placement: bool | None
    placement_log: bool
    blocks: list[Block]
    measurements: list[Measurement]
    findings: list[Finding]
    corrections: list[Correction]
    rerun_skipped: list[dict[str, Any]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    clocks_read: list[str] = Field(default_factory=list, description="the clocks the script read from its own code")
    op_cost: dict[str, Any] = Field(
        default_factory=dict,
        description="per-op cost measured in the child after the script: plain and under the audit's hooks (seconds)",
    )
    gpu_costs: dict[str, Any] | None = Field(
        default=None,
        description="this machine's GPU launch costs measured after the script (device, framework, launch_s, "
        "item_roundtrip_s); None where no GPU was present: the findings then quote the H100's recorded ones",
    )
    overhead: float | None = Field(
        default=None, description="estimated script time under audit / without the audit's per-op hooks"
    )
    notebook: dict[str, Any] | None = Field(default=None, description="for an .ipynb: cells run and magics translated")
    unsupported: list[str] = Field(
        default_factory=list, description="GPU libraries the script uses that the audit does not follow (CuPy, Numba)"
    )
    next_step: str = Field(default="", description="where no timing was seen: the command that can measure the script")
    steady: list[SteadyTime] = Field(
        default_factory=list, description="unpaired timings measured wrong, re-run correctly here (or why not)"
    )
    sessions: list[Any] = Field(default_factory=list, description="empty: kept so the HTML presenter reads it")
    results: list[Any] = Field(default_factory=list, description="empty: kept so the HTML presenter reads it")


# ---------------------------------------------------------------- boundary checks


SCRIPT_CAP = 16 * 2**20  # bytes: larger than any benchmark script


def check_script(text: str) -> Path:
    """The script must exist, be a file and be Python source (compiled here, not run)."""
    path = Path(text).expanduser()
    if not path.exists():
        raise UsageError("SCRIPT", f"no such file '{path}'", "Check the path (relative to the current folder).")
    if path.is_dir():
        raise UsageError(
            "SCRIPT", f"'{path}' is a folder", "Pass the .py file to audit, e.g. whichdevice audit bench.py."
        )
    # A regular file of a script's size only: a FIFO or device would block the read, an
    # endless file would never end (core/safeio.py).
    source = safeio.read_capped(path, "SCRIPT", cap=SCRIPT_CAP, what="Python script")
    if path.suffix.lower() == ".ipynb":
        from whichdevice.audit import notebook

        notebook.translate(path)  # refused here (one line, exit 2) when its cells cannot be audited
        return path.resolve()
    if b"\x00" in source[:8192]:
        raise UsageError(
            "SCRIPT", f"'{path}' is not a Python file (it is binary)", "Pass the .py script that runs your benchmark."
        )
    try:
        compile(source, str(path), "exec")
    except SyntaxError as e:
        what = "is not a Python file" if path.suffix not in (".py", ".pyw") else "is not valid Python"
        raise UsageError(
            "SCRIPT",
            f"'{path}' {what} (line {e.lineno}: {e.msg})",
            "Pass a Python script that runs with `python SCRIPT.py`.",
        ) from None
    except ValueError as e:
        raise UsageError("SCRIPT", f"'{path}' is not a Python file ({e})", "Pass a .py script.") from None
    return path.resolve()


# ---------------------------------------------------------------- running the child


def run_child(
    script: Path,
    args: list[str],
    timeout_s: float,
    *,
    rerun: bool = True,
    source: str | None = None,
    cells: list[int] | None = None,
) -> tuple[dict | None, int | None, float, bool]:
    """Run the script in the audit child; its stdout/stderr are ours (passed through). With ``source``
    (a notebook's translated cells, ``notebook.translate``) that text runs in the script's place, its
    folder first on ``sys.path`` and ``sys.argv[0]`` the notebook; with ``cells`` (where each of its
    cells starts) the cells run one by one, and those after a cell that stopped on a missing device
    still run (``child._run_cells``).

    Returns (state or None, child's return code or None when killed, wall seconds, killed); the state
    keeps the text that ran (``script_source``) for the rules that read it.
    """
    with tempfile.TemporaryDirectory(prefix="whichdevice-audit-") as tmp:
        state_path = Path(tmp) / "state.json"
        job = Path(tmp) / "job.json"
        ran = script
        if source is not None:
            ran = Path(tmp) / (script.name + ".py")
            ran.write_text(source, encoding="utf-8")
        job.write_text(
            json.dumps(
                {
                    "script": str(ran),
                    "args": list(args),
                    "state": str(state_path),
                    "timeout_s": timeout_s,
                    "no_rerun": not rerun,
                    "shown_as": str(script),
                    "path0": str(script.parent),
                    "notebook": source is not None,
                    "cells": cells,
                }
            )
        )
        sys.stdout.flush()
        sys.stderr.flush()
        # The script's output is the user's: stdout and stderr are passed through, as text with
        # no escape sequence (core/process.passed_through).
        with passed_through() as (out, err):
            done = run_module(
                "whichdevice.audit.child",
                [str(job)],
                timeout_s=timeout_s + STATE_GRACE_S,
                stdout=out,
                stderr=err,
                cwd=os.getcwd(),
            )
        killed = done.stopped is not None
        rc, wall = done.returncode, done.wall_s
        state = None
        if state_path.exists():
            try:
                state = json.loads(state_path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                state = None
        if state is not None:
            try:
                state["script_source"] = ran.read_text(encoding="utf-8", errors="replace")
            except OSError:
                pass
        return state, rc, wall, killed


def save(record: AuditRecord, path: Path) -> None:
    """Write the record (atomically); a path that cannot be written is one line naming --json."""
    from whichdevice.core.records import write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(record.model_dump(mode="json"), indent=1))
    except OSError as e:
        raise UsageError("--json", f"cannot write '{path}' ({e.strerror})", "Pass a writable path.") from None


def load(path: Path) -> AuditRecord:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("schema_version", 0) > AUDIT_SCHEMA_VERSION:
        raise UsageError(
            "RESULT",
            f"'{path}' has audit schema {data.get('schema_version')}, newer than this whichdevice",
            "Upgrade whichdevice.",
        )
    if data.get("schema_version", 1) < 2:
        data = _migrate_v1(data)
    return AuditRecord.model_validate(data)


def _migrate_v1(data: dict) -> dict:
    """Schema 1 kept the corrected ratios as B/A: inverted to A/B (the interval's ends swap). The file
    itself is never rewritten; the record's notes say it was migrated."""

    def inv(x: Any) -> Any:
        return 1.0 / x if isinstance(x, (int, float)) and x else x

    for c in data.get("corrections", []):
        c["script_ratio"] = inv(c.get("script_ratio"))
        c["real_ratio"] = inv(c.get("real_ratio"))
        c["real_ratio_low"], c["real_ratio_high"] = inv(c.get("real_ratio_high")), inv(c.get("real_ratio_low"))
        c["round_ratios"] = [inv(r) for r in c.get("round_ratios", [])]
    data["notes"] = [*data.get("notes", []), "read from audit schema 1: its ratios were B/A, shown here as A/B"]
    data["schema_version"] = AUDIT_SCHEMA_VERSION
    return data


def now() -> str:
    return now_iso()
