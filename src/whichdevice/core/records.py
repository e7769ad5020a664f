"""Immutable, versioned measurement records: what was run, on what, and every raw sample.

A ``RunRecord`` is what one command (``whichdevice matmul`` ...) writes as JSON. It holds:

- ``machine``: the host (CPU model, cores, RAM);
- ``sessions``: one per child process (framework x device): framework version, device
  details, CPU threads, whether oneDNN is on, the environment variables that were set
  before the framework was imported, the import time and the harness overhead;
- ``results``: one ``CaseResult`` per measured case: its ``CaseSpec`` (workload,
  framework, device, parameters, the fix it measures), status (ok / failed and why), and the raw ``Timing``.

Statistics (median, IQR) are properties derived from the raw samples. They are written
into the JSON for readers' convenience and dropped again when a record is read back, so
they can never disagree with the samples. ``SCHEMA_VERSION`` changes whenever a field
changes meaning. A record of an older version is migrated on reading (``MIGRATIONS``: one
function per version step, applied in order; the file itself is never rewritten) and says
so in its notes; a record from a newer version is refused with a clear message.

Versions: 1 (first); 2 adds ``CaseResult.failure``, the kind of a failure (``failures.py``);
3 adds ``Timing.rounds_s`` (the raw samples of each round: the same case measured again in a
fresh child process, for claims that decide a verdict) and ``Timing.stop_reason`` (why the
sampling stopped: precision reached, time cap, sample cap); both optional, so a version-2
record reads unchanged; 4 gives a case the time budget skipped its own status, ``skipped``
(not measured; it did not fail), where version 3 wrote ``failed`` with the failure kind
``skipped``: such a result is read as ``skipped`` (the kind is kept as the reason). Version 4
records may carry ``RunRecord.provisional`` (the answer shown after round 1): optional,
absent from records written before it. Version 4 records may also carry ``RunRecord.step_trace``
(what one step of a script's training loop runs, collected once on the CPU for the no-GPU
prediction): optional, versioned on its own (``StepTrace.version``) so that a later change of
what it holds does not change the record's version; a reader skips a trace of a newer version.
5 carries a script case's fix as its spec's ``variant`` (a catalogue key and a typed value),
no longer among its parameters: a version-4 script case is split on reading (``result_v4_to_v5``),
and the catalogue lays the variant out among the parameters as version 4 held them (``params_of``), so
the case reads, pairs and renders as it did, and ``compare`` pairs it with the same case of a
version-5 record (both have the same ``identity``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    computed_field,
    model_validator,
)

from whichdevice.core.version import __version__
from whichdevice.core import failures, fixkeys, safeio, stats
from whichdevice.core.errors import UsageError
from whichdevice.core.telemetry import Telemetry

SCHEMA_VERSION = 5

Scalar = str | int | float | bool | None


def scalar_int(value: Scalar | list[Scalar]) -> int:
    """``int(value)`` for a case's parameter; None raises the TypeError ``int(None)`` would."""
    if value is None or isinstance(value, list):
        raise TypeError(f"int() argument must be a string or a real number, not '{type(value).__name__}'")
    return int(value)


def scalar_float(value: Scalar) -> float:
    """``float(value)`` for a case's parameter; None raises the TypeError ``float(None)`` would."""
    if value is None:
        raise TypeError("float() argument must be a string or a real number, not 'NoneType'")
    return float(value)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MachineInfo(_Frozen):
    hostname: str
    os: str
    python: str
    cpu_model: str
    cpu_cores_logical: int
    cpu_cores_physical: int | None
    ram_bytes: int | None


class DeviceInfo(_Frozen):
    """One device as the framework names it (``CPU:0``, ``GPU:0``)."""

    name: str
    kind: Literal["cpu", "gpu"]
    description: str = ""
    memory_bytes: int | None = None
    compute_capability: str | None = None
    driver: str | None = None


class FrameworkInfo(_Frozen):
    name: str
    version: str
    details: dict[str, Scalar] = Field(default_factory=dict)


class Session(_Frozen):
    """One child process: one framework on one device, set up before import."""

    framework: FrameworkInfo
    device: DeviceInfo
    cpu_threads_intra: int = Field(description="intra-op threads in effect (all cores unless told)")
    cpu_threads_inter: int = Field(description="inter-op threads in effect")
    cpu_threads_source: str = Field(description="'default (all N cores)' or '--cpu-threads'")
    onednn: bool | None = Field(description="oneDNN CPU kernels on (None: not applicable)")
    env: dict[str, str] = Field(description="variables set before the framework was imported")
    import_s: float = Field(description="seconds to import the framework in the child")
    overhead_s: float = Field(description="timer read + device sync with nothing queued (median)")


# Parameters that bound a measuring child rather than define its case: a script child's time
# limit, sized from that run's pre-flight. Two runs of the same command differ in it, so `compare`
# and the between-run noise history pair cases by ``CaseSpec.identity``, which leaves it out
# (word_language_model run twice: "0 of 0 cases changed", every case "only in" one run).
# A script's variant the plan ran in a process of its own rather than in turns (its loop too short
# to feed every turn): how it ran, not what it measured, so its pair (analysis/fixes.ab_fixes)
# and the case across runs leave it out.
OWN_PROCESS = "own_process"
CHILD_LIMIT_PARAMS = frozenset({"child_limit_s", OWN_PROCESS})


class Variant(_Frozen):
    """The one fix a case measures: a key of the fix catalogue (``workloads/fixes.py``) and the
        value its parameter takes, of the type the catalogue entry declares (``FixEntry.value_type``;
        the catalogue builds it: ``FixEntry.variant``; ``workloads/fixes.params_of`` lays it out among
    the case's parameters, as cases named their fix before it). Both sides of a pair carry one: the baseline
        side at the entry's baseline value (``autocast`` ``"off"``), the other at the fix's."""

    fix: str = Field(min_length=1)
    value: bool | int | float | str


class CaseSpec(_Frozen):
    """What one case runs: workload, framework, device, the workload's parameters and the fix it
    measures (``variant``; None: none, or a case whose parameters name it, as every case written
    before schema version 5 and every case of a built-in suite does)."""

    workload: str
    framework: str
    device: str
    params: dict[str, Scalar] = Field(default_factory=dict)
    variant: Variant | None = None

    def _text(self, skip: frozenset[str] = frozenset()) -> str:
        p = ",".join(f"{k}={self.params[k]}" for k in sorted(self.params) if k not in skip)
        v = f"|{self.variant.fix}={self.variant.value}" if self.variant is not None else ""
        return f"{self.workload}|{self.framework}|{self.device}|{p}{v}"

    @property
    def key(self) -> str:
        """Stable identity of a case, used to match results to specs (and to resume)."""
        return self._text()

    @property
    def identity(self) -> str:
        """The case across runs: its key without ``CHILD_LIMIT_PARAMS`` (what ``compare`` pairs)."""
        return self._text(CHILD_LIMIT_PARAMS)


_DERIVED_TIMING = {"median_s", "q1_s", "q3_s", "iqr_s", "rel_iqr", "n_samples"}


class Timing(_Frozen):
    """Raw timing of one case. ``warmup_s[0]`` is the first call (one-time costs in)."""

    first_call_s: float
    warmup_s: list[float]
    samples_s: list[float] = Field(min_length=1)
    number_per_sample: int = Field(ge=1, description="calls per block; one sample = block / number")
    overhead_s: float
    telemetry: Telemetry | None = Field(default=None, description="utilization during the steady blocks")
    rounds_s: list[list[float]] | None = Field(
        default=None,
        description="raw samples per round (one fresh child process each; samples_s pools them); None: one round",
    )
    stop_reason: str | None = Field(
        default=None, description="why sampling stopped: 'precision', 'time cap', 'sample cap', 'min time'"
    )

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: Any) -> Any:
        # Derived statistics are written for readers and recomputed on load.
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k not in _DERIVED_TIMING}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def median_s(self) -> float:
        return stats.median(self.samples_s)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def q1_s(self) -> float:
        return stats.quantile(self.samples_s, 0.25)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def q3_s(self) -> float:
        return stats.quantile(self.samples_s, 0.75)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def iqr_s(self) -> float:
        return stats.iqr(self.samples_s)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rel_iqr(self) -> float:
        return stats.rel_iqr(self.samples_s)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def n_samples(self) -> int:
        return len(self.samples_s)

    @property
    def rounds(self) -> list[list[float]]:
        """The samples of each round (one round: ``[samples_s]``)."""
        return [list(r) for r in self.rounds_s] if self.rounds_s else [list(self.samples_s)]


class CaseResult(_Frozen):
    """One case's outcome: ``ok`` (measured), ``failed`` (it ran and went wrong: ``failure``
    says how) or ``skipped`` (not measured: the time budget ran out before it; ``failure`` is
    ``skipped`` and ``error`` says why). A skipped case did not fail."""

    spec: CaseSpec
    status: Literal["ok", "failed", "skipped"]
    error: str | None = None
    failure: failures.FailureKind | None = Field(
        default=None, description="why it failed, or 'skipped' for a skipped case (failures.py); None when ok"
    )
    timing: Timing | None = None
    metrics: dict[str, float] = Field(default_factory=dict, description="e.g. flops per call")
    wall_s: float = Field(description="seconds this case took, warm-up and set-up included")

    @model_validator(mode="after")
    def _consistent(self) -> CaseResult:
        if self.status == "ok" and self.timing is None:
            raise ValueError("an ok result needs a timing")
        if self.status == "failed" and (not self.error or self.failure is None):
            raise ValueError("a failed result needs an error and a failure kind")
        if self.status == "ok" and self.failure is not None:
            raise ValueError("an ok result has no failure kind")
        if (self.status == "skipped") != (self.failure == "skipped"):
            raise ValueError("a case the time budget skipped has status 'skipped' and failure kind 'skipped'")
        if self.status == "skipped" and not self.error:
            raise ValueError("a skipped result needs the reason it was skipped")
        return self

    @property
    def measured(self) -> bool:
        return self.status == "ok"


def failed(spec: CaseSpec, error: str, kind: failures.FailureKind, wall_s: float) -> CaseResult:
    """A case that did not run to the end: what went wrong, its kind, and the time it used. The
    kind ``skipped`` (the time budget ran out before it) makes a ``skipped`` case, not a failed one."""
    status: Literal["failed", "skipped"] = "skipped" if kind == "skipped" else "failed"
    return CaseResult(spec=spec, status=status, error=error, failure=kind, wall_s=wall_s)


class Provisional(_Frozen):
    """The answer a ``run`` or ``diagnose`` showed once round 1 of the cases that decide it had
    finished, before the later rounds: what it said, and its gist, which the final
    answer's gist confirms or changes."""

    after_s: float = Field(description="seconds from the start of measuring to the provisional answer")
    round: int = 1
    rounds: int = Field(description="the rounds the run measures the answer's cases in")
    cases: int = Field(description="round-1 results it rested on")
    answer: list[str] = Field(description="the lines shown")
    gist: list[str] = Field(description="what the answer decides, one item per line of it, without its figures")


STEP_TRACE_VERSION = 1


class TracedOp(_Frozen):
    """One kind of kernel of a traced step, ``count`` times in it: its kind as the cost model
    names it (matmul, conv, elementwise, free, uncovered), FLOPs and bytes at the traced batch,
    and the parts of them that grow with the batch (proportional to it; the rest is fixed)."""

    op_type: str
    kind: Literal["matmul", "conv", "elementwise", "free", "uncovered"]
    count: int = Field(default=1, ge=1)
    flops: float = Field(default=0.0, ge=0)
    bytes: float = Field(default=0.0, ge=0)
    batched_flops: float = Field(default=0.0, ge=0, description="the part of flops proportional to the batch")
    batched_bytes: float = Field(default=0.0, ge=0, description="the part of bytes proportional to the batch")


class StepTrace(_Frozen):
    """What one training step of a user's script runs, collected once on the CPU (in the
    pre-flight), from which the no-GPU answer predicts the step on a reference GPU. ``why_not``
    set: the step could not be traced, and why (``ops`` then empty)."""

    version: int = STEP_TRACE_VERSION
    framework: str
    source: str = Field(description="what measured it, in words (the framework's own tool)")
    batch: int = Field(default=0, ge=0, description="the batch the step was traced at (0: not known)")
    launch_mode: Literal["graph", "xla", "eager"] = "eager"
    tf32: bool = False
    ops: list[TracedOp] = Field(default_factory=list)
    totals: dict[str, float] = Field(
        default_factory=dict, description="the framework's own totals where it gives them (XLA: flops, bytes accessed)"
    )
    collect_s: float = Field(default=0.0, ge=0, description="wall seconds the collection took")
    overhead_s: float | None = Field(
        default=None, description="what the collection added to the pre-flight: its wall beyond an untraced step"
    )
    why_not: str | None = None


class RunRecord(_Frozen):
    """Everything one command measured. Written once, never modified."""

    schema_version: int = SCHEMA_VERSION
    tool_version: str = __version__
    experiment: str
    command: list[str]
    created_at: str
    options: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)
    machine: MachineInfo
    sessions: list[Session] = Field(default_factory=list)
    devices_seen: dict[str, list[DeviceInfo]] = Field(
        default_factory=dict, description="per framework, every device it reported"
    )
    results: list[CaseResult] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="facts the reader must know")
    no_gpu_reasons: dict[str, list[str]] = Field(
        default_factory=dict,
        description="per framework that saw no GPU, the likely reasons its discovery found (the note says them "
        "in a sentence); empty in records written before this field",
    )
    provisional: Provisional | None = Field(
        default=None, description="the answer shown after round 1 (None: none was shown, or an older record)"
    )
    step_trace: StepTrace | None = Field(
        default=None, description="a script's step as traced in its pre-flight (None: not a script, or an older record)"
    )

    @model_validator(mode="before")
    @classmethod
    def _newer_trace(cls, data: Any) -> Any:
        """A step trace of a newer version than this whichdevice reads is left out (the record
        reads; the no-GPU prediction says it has no trace), never misread."""
        if isinstance(data, dict):
            t = data.get("step_trace")
            if isinstance(t, dict) and isinstance(t.get("version"), int) and t["version"] > STEP_TRACE_VERSION:
                return {**data, "step_trace": None}
        return data


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def dump_json(record: BaseModel) -> str:
    return json.dumps(record.model_dump(mode="json"), indent=1)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader sees the old file or the whole new one.

    ``safeio.atomic_writer``: a new ``.NAME.<random>.wdtmp`` in the same folder (``O_EXCL |
    O_NOFOLLOW``), flushed and fsynced, renamed over ``path``; ``path`` itself must be absent
    or a regular file (a FIFO, a device or a symbolic link there is refused, not replaced).
    """
    safeio.write_atomic(path, text, remember=False)


def save_run(record: RunRecord, path: Path) -> None:
    safeio.write_atomic(path, dump_json(record), remember=False)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a whichdevice record holds")


def read_json(path: Path | str, argument: str, what: str = "result file") -> Any:
    """JSON of a regular file of bounded size (``safeio.read_capped``); NaN and Infinity,
    which Python's JSON reader accepts and ours never writes, are refused."""
    p = Path(path)
    raw = safeio.read_capped(p, argument, what=what)
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise UsageError(
            argument, f"'{p}' is not readable JSON ({type(e).__name__})", f"Pass an intact whichdevice {what}."
        ) from None


def impossible(result: CaseResult) -> str | None:
    """What no measurement can give (a negative, zero or non-finite time), or None."""
    numbers: list[tuple[str, float, bool]] = [("wall_s", result.wall_s, True)]
    t = result.timing
    if t is not None:
        numbers += [("first_call_s", t.first_call_s, True), ("overhead_s", t.overhead_s, True)]
        numbers += [("warmup_s", v, True) for v in t.warmup_s]
        numbers += [("samples_s", v, False) for v in t.samples_s]
    numbers += [(f"metrics.{k}", v, True) for k, v in result.metrics.items()]
    for name, v, zero_ok in numbers:
        if not math.isfinite(v) or v < 0 or (v == 0 and not zero_ok):
            return f"{name} = {v!r}"
    return None


def load_run(path: Path | str, argument: str = "RESULT") -> RunRecord:
    """Read a RunRecord, turning every way it can be wrong into a ``UsageError``."""
    p = Path(path)
    _refuse_folder(p, argument)
    try:
        data = read_json(p, argument)
    except UsageError as e:
        if e.problem.startswith("no such file"):
            raise UsageError(argument, e.problem, "Pass the JSON file a whichdevice command wrote.") from None
        raise
    _check_schema_version(data, p, argument)
    record = _validated(data, p, argument)
    _refuse_impossible(record, p, argument)
    return record


def _refuse_folder(p: Path, argument: str) -> None:
    """A folder is named as such (one we may not look at is left to the read to refuse)."""
    if safeio.is_dir_quietly(p):
        raise UsageError(argument, f"'{p}' is a folder", "Pass the result JSON file inside it.")


def _check_schema_version(data: Any, p: Path, argument: str) -> None:
    """A JSON object with a schema version from 1 to ``SCHEMA_VERSION``, or a ``UsageError``."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise UsageError(
            argument, f"'{p}' is not a whichdevice result", "Pass a JSON file a whichdevice command wrote."
        )
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(
            argument, f"'{p}' has no valid schema version ({version!r})", "Pass an intact whichdevice result file."
        )
    if version > SCHEMA_VERSION:
        raise UsageError(
            argument,
            f"'{p}' has schema version {version}, newer than this whichdevice reads ({SCHEMA_VERSION})",
            "Upgrade whichdevice: pip install -U whichdevice.",
        )


def _validated(data: dict[str, Any], p: Path, argument: str) -> RunRecord:
    """The record, migrated to ``SCHEMA_VERSION``; its first schema error as a ``UsageError``."""
    try:
        return RunRecord.model_validate(migrate(data))
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise UsageError(
            argument,
            f"'{p}' does not match the result schema (at {where}: {first.get('msg')})",
            "Pass an intact whichdevice result file.",
        ) from None


def _refuse_impossible(record: RunRecord, p: Path, argument: str) -> None:
    """The first result holding what no measurement can give, as a ``UsageError``."""
    for i, r in enumerate(record.results):
        bad = impossible(r)
        if bad is not None:
            raise UsageError(
                argument,
                f"'{p}' holds an impossible measurement (results[{i}].{bad})",
                "Pass an intact whichdevice result file.",
            )


def result_v1_to_v2(raw: Any) -> Any:
    """One result's JSON: version 2 added ``failure`` to a failed result; derive it from the
    error text, the only thing version 1 wrote about a failure (also used for journals)."""
    if isinstance(raw, dict) and raw.get("status") == "failed" and "failure" not in raw:
        return {**raw, "failure": failures.of_text(raw.get("error"))}
    return raw


def result_v3_to_v4(raw: Any) -> Any:
    """One result's JSON: version 4 gives a case the time budget skipped the status
    ``skipped``; version 3 wrote it as ``failed`` with the failure kind ``skipped``."""
    if isinstance(raw, dict) and raw.get("status") == "failed" and raw.get("failure") == "skipped":
        return {**raw, "status": "skipped"}
    return raw


# Version 4 wrote a script case's fix among its parameters; the parameter that names it, in the
# order ``workloads/script.py`` read them then (a DataLoader pinning case also sets num_workers 0,
# so pin_memory is read first). Each is (fix, its parameter, the case kind it needs or None). A
# record's format, fixed when version 5 was written: later catalogue entries never appear here.
_V4_SCRIPT_FIXES: tuple[tuple[str, str, str | None], ...] = (
    (fixkeys.STEPS_PER_EXECUTION, fixkeys.STEPS_PER_EXECUTION, None),
    (fixkeys.JIT_COMPILE, fixkeys.JIT_COMPILE, None),
    (fixkeys.PRECISION, fixkeys.PRECISION, fixkeys.PRECISION_KIND),
    (fixkeys.PREFETCH, "data", "loop"),
    (fixkeys.PIN_MEMORY, fixkeys.PIN_MEMORY, None),
    (fixkeys.NUM_WORKERS, fixkeys.NUM_WORKERS, None),
)


def v4_script_split(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A version-4 script case's parameters split into version 5's: the parameters without its fix,
    and the fix as a variant (``{"fix": ..., "value": ...}``); None for a case with no fix (the
    script's baseline). Every script case carries the user's batch: a batch variant keeps it."""
    p = dict(params)
    if isinstance(p.get("fix"), str) and p["fix"] in p:  # a torch pair, the CPU thread count
        fix = p.pop("fix")
        return p, {"fix": fix, "value": p.pop(fix)}
    for fix, param, kind in _V4_SCRIPT_FIXES:
        if param in p and (kind is None or p.get("kind") == kind):
            if fix == fixkeys.PREFETCH and p[param] not in ("tfdata", "tfdata_noprefetch"):
                continue
            return p, {"fix": fix, "value": p.pop(param)}
    sync, batch = fixkeys.SYNC, fixkeys.BATCH  # each fix's key is its parameter's name too
    if p.get("kind") == "steady" and p.get(sync) == "each":
        return p, {"fix": sync, "value": p.pop(sync)}
    user = p.get("user_batch")
    if p.get("kind") == "steady" and user is not None and p.get(batch) not in (None, user):
        value, p[batch] = p[batch], user
        return p, {"fix": batch, "value": value}
    return None


def result_v4_to_v5(raw: Any) -> Any:
    """One result's JSON: version 5 carries a script case's fix as its spec's ``variant``, no
    longer among its parameters (a built-in suite's cases are unchanged)."""
    spec = raw.get("spec") if isinstance(raw, dict) else None
    if not isinstance(spec, dict) or spec.get("variant") is not None or spec.get("workload") != "train":
        return raw
    params = spec.get("params")
    if not isinstance(params, dict) or "script" not in params:
        return raw
    split = v4_script_split(params)
    if split is None:
        return raw
    rest, variant = split
    return {**raw, "spec": {**spec, "params": rest, "variant": variant}}


def result_upgraded(raw: Any) -> Any:
    """One result's JSON of any version brought to the current one (journals hold results
    alone, with no version of their own: every step applies, each a no-op where done)."""
    return result_v4_to_v5(result_v3_to_v4(result_v1_to_v2(raw)))


def _results_through(data: dict[str, Any], step: Callable[[Any], Any]) -> dict[str, Any]:
    results = data.get("results")
    if not isinstance(results, list):
        return data  # validation says what is wrong
    return {**data, "results": [step(r) for r in results]}


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    return _results_through(data, result_v1_to_v2)


# version -> the function that turns a record of that version into the next version.
def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 only adds optional fields (``Timing.rounds_s``, ``Timing.stop_reason``)."""
    return data


def _v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """Version 4: a case the time budget skipped is ``skipped``, no longer ``failed``."""
    return _results_through(data, result_v3_to_v4)


def _v4_to_v5(data: dict[str, Any]) -> dict[str, Any]:
    """Version 5: a script case's fix is its spec's ``variant``, no longer among its parameters."""
    return _results_through(data, result_v4_to_v5)


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
}
# Versions whose record reads the same under the next version unless the step changed it: such
# a record is noted as migrated only when it was (a version-3 record with no skipped case reads
# unchanged, and its report stays word for word what it was). A version-4 record reads the same
# either way: its cases' parameters, variant included (``workloads/fixes.params_of``), are what they were,
# so its report stays word for word what it was and says nothing of the migration.
_NOTED_ONLY_WHEN_CHANGED = frozenset({3})
_NEVER_NOTED = frozenset({4})


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a record's JSON up to ``SCHEMA_VERSION`` one step at a time; note that it was."""
    start = version = data["schema_version"]
    changed = False
    while version < SCHEMA_VERSION:
        stepped = MIGRATIONS[version](data)
        if version not in _NEVER_NOTED:
            changed = changed or version not in _NOTED_ONLY_WHEN_CHANGED or stepped != data
        data = {**stepped, "schema_version": version + 1}
        version += 1
    # the version the note names: the last one whose step a reader can see (the steps after it
    # change no word of the record), so an old record's note reads as it did before them
    said = SCHEMA_VERSION
    while said - 1 in _NEVER_NOTED:
        said -= 1
    if start != SCHEMA_VERSION and changed:
        note = (
            f"This record was written with result schema version {start} (whichdevice "
            f"{data.get('tool_version', '?')}) and read through migration to version {said}."
        )
        notes = data.get("notes", [])
        data = {**data, "notes": [*notes, note] if isinstance(notes, list) else notes}
    return data


T = TypeVar("T")


def known(value: T | None, what: str = "value") -> T:
    """``value``, which the caller has already seen is there (a filtered list's timing): a None
    here is a bug, said as one rather than as an AttributeError further on."""
    if value is None:
        raise ValueError(f"no {what}")
    return value
