"""The framework plug-in contract, typed.

A framework is a folder under ``frameworks/`` with four modules (see the package docstring).
Each module is checked against a ``Protocol`` here when it is loaded, so a folder that lacks a
function fails at once with its name rather than deep inside a measurement, and mypy can
check a workload's use of the adapter. Modules satisfy protocols structurally (PEP 544):
the functions of ``discovery.py`` are the protocol's methods, without ``self``.

Optional parts: ``training.py``, ``calibration.py``, ``scale.py`` and TensorFlow's
``pipeline.py``, ``profiler.py``, ``precision.py``, ``placement_log.py`` have protocols too
(``OPTIONAL``), checked by ``frameworks.part(name, kind)`` when a workload loads one; mypy
checks each module against its protocol through ``conformance.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from whichdevice.core.records import CaseSpec, DeviceInfo, FrameworkInfo


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


class PlacementError(RuntimeError):
    """An op ran somewhere other than the device it was asked for (each ``ops.py`` checks)."""


# ------------------------------------------------------------------ optional parts
# A framework folder may have further modules, each listed for it in ``frameworks.PARTS`` and
# loaded by ``frameworks.part(name, kind)`` (inside a child: they import the framework). Each
# protocol holds the functions the workloads call, and is checked when the part is loaded.


@runtime_checkable
class Training(Protocol):
    """``training.py`` (``frameworks.having("training")``): the framework-specific pieces of the train
    workload (``workloads/train.py``, through ``common.casemodel.CaseModel``)."""

    def train_step(self, model: Any, optimizer: Any, loss_fn: Any) -> Callable[..., Any]: ...

    def dataset(self, x: Any, y: Any, batch: int, *, shuffle: int | None = None, prefetch: bool = True) -> Any: ...

    def user_dataset(self, ds: Any, batch: int, samples: int | None) -> Any: ...

    def on_device(self, x: Any, y: Any, device_scope: Any) -> Any: ...

    def read_back(self, loss: Any) -> float: ...


@runtime_checkable
class Calibration(Protocol):
    """``calibration.py``: the ``describe`` probe of ``predict`` (a train step's ops)."""

    def describe_train(self, model: Any, optimizer: Any, loss_fn: Any, training: Any, x: Any, y: Any) -> dict: ...


@runtime_checkable
class CalibrationProbes(Protocol):
    """``calibration.py``'s ``calibrate`` probes (``cli/calibrate.py``; plain JAX has these
    without the ``describe`` of a train step). Each builder returns a zero-argument callable,
    one unit of work."""

    def tiny_eager(self, device: str) -> Callable[[], Any]: ...

    def tiny_sync(self, device: str) -> Callable[[], Any]: ...

    def graph_chain(self, device: str, k: int) -> Callable[[], Any]: ...

    def elementwise(self, device: str, nbytes: int) -> Callable[[], Any]: ...

    def h2d(self, device: str, nbytes: int) -> Callable[[], Any]: ...

    def d2h(self, device: str, nbytes: int) -> Callable[[], Any]: ...


@runtime_checkable
class Scale(Protocol):
    """``scale.py``: the ``scale`` worker, started as ``python -m ... JOB OUT`` by
    ``workloads/scale.py`` (never imported by it)."""

    def run(self, job: dict, emit: Any) -> None: ...

    def main(self, argv: list[str]) -> int: ...


@runtime_checkable
class Pipeline(Protocol):
    """``pipeline.py``: the input-pipeline workload's datasets (the variants of the framework's
    ladder, ``frameworks/common/ladders.py``), the files its stages read, the model and step."""

    def synthetic_images(self, n: int, size: int, *, classes: int = ..., seed: int = 0) -> Any: ...

    def write_files(self, images: Any, labels: Any, folder: Any, shards: int = ...) -> list[str]: ...

    def build_variant(
        self,
        variant: str,
        images: Any,
        labels: Any,
        batch: int,
        *,
        files: list[str] | None = None,
        heavy: Any = None,
        repeat: bool = True,
    ) -> Any: ...

    def user_variant(self, ds: Any, variant: str, batch: int, default_steps: int = 10) -> Any: ...

    def stage_input(self, stage: str, files: list[str], size: int, batch: int, heavy: Any = None) -> Any: ...

    def floor_input(self, n: int) -> Any: ...

    def materialize(self, ds: Any) -> Any: ...

    def counter(self, ds: Any) -> Callable[[], Any]: ...

    def to_device(self, x: Any, y: Any, device_scope: Any) -> Any: ...

    def build_model(self, net: str, size: int, classes: int = ...) -> Any: ...

    def loss_for(self, model: Any, out_dim: int) -> Any: ...

    def train_step(self, model: Any, loss_fn: Any) -> Callable[..., Any]: ...


@runtime_checkable
class Profiler(Protocol):
    """``profiler.py``: traces for ``--trace`` and the placement workload's op times."""

    def trace(self, logdir: Any) -> AbstractContextManager[Any]: ...

    def xprof_available(self) -> bool: ...

    def xplane_files(self, logdir: Any) -> list[Path]: ...

    def framework_op_stats(self, xplane: Any) -> bytes | None: ...

    def steady_trace_callback(self, logdir: Any) -> Any: ...


@runtime_checkable
class Precision(Protocol):
    """``precision.py``: the mixed-precision policies and the CPU's 16-bit support."""

    @property
    def POLICIES(self) -> tuple[str, ...]: ...

    def policy(self, name: str) -> AbstractContextManager[Any]: ...

    def cpu_flags(self, cpuinfo: str | None = None) -> set[str]: ...

    def fast_16bit(self, flags: set[str]) -> dict[str, bool]: ...


@runtime_checkable
class PlacementLog(Protocol):
    """``placement_log.py``: the placement workload's step, its graph's placement and the
    placement-log probe process."""

    def train_step(self, model: Any, optimizer: Any, loss_fn: Any, *, with_string_op: bool) -> Any: ...

    def first(self, out: Any) -> Any: ...

    def graph_placement(self, concrete_fn: Any, device: str) -> tuple[list[Any], list[Any]]: ...

    def kernel_devices(self, op_type: str) -> set[str] | None: ...

    def run_probe(self, device: str, params: dict) -> dict: ...


@runtime_checkable
class OpTrace(Protocol):
    """``optrace.py`` (torch, JAX): where the ops of a training step ran, its copies between
    host and device and its syncs, traced by the framework's own tools (the placement workload,
    ``workloads/placement.py``). ``call`` runs one whole step as the seeds' loop does (the batch
    from NumPy, the step, the loss read back); ``inputs`` are the host arrays it is fed. Returns
    the placement metrics (``analysis/placement.traced_placement`` reads them) and the
    profiled steps' times."""

    def trace_step(
        self, call: Callable[[], Any], inputs: tuple, steps: int, device: str
    ) -> tuple[dict[str, float], list[float]]: ...


@runtime_checkable
class Pitfalls(Protocol):
    """``pitfalls.py``: the framework's benchmarking mistakes. Importable in the parent (it
    imports the framework only inside ``run_case``): ``MISTAKES`` in the order the page lists
    them, ``GPU_ONLY`` those that cannot distort a CPU timing (said, never measured, there),
    ``cases`` the cases that measure them on one device, and ``run_case`` for the kinds of its
    own (``pitfall`` cases, parameter ``mistake``)."""

    @property
    def MISTAKES(self) -> tuple[str, ...]: ...

    @property
    def GPU_ONLY(self) -> tuple[str, ...]: ...

    def cases(
        self, framework: str, device: str, *, quick: bool, is_cpu: bool
    ) -> tuple[list[CaseSpec], list[CaseSpec]]: ...

    def run_case(self, spec: CaseSpec, fw: Framework, policy: Any, overhead_s: float) -> tuple[Any, dict]: ...


@runtime_checkable
class Audit(Protocol):
    """``audit.py``: what ``whichdevice audit`` installs when the script imports the framework, and
    what it measures after the script (``audit/child.py``; shared machinery in ``common/audit.py``).
    Imported before the script runs, so it imports no framework at module level."""

    def finders(self, st: Any) -> list[Any]: ...  # common.audit.AfterImportFinder, one per module hooked

    def installed(self, st: Any) -> bool: ...  # the script imported the framework: its hooks are in

    def adopt(self, st: Any) -> None: ...  # the audit is this framework's: its name and devices

    def stop(self, st: Any) -> None: ...  # after the script: what watched it switched off

    def op_cost(self) -> dict: ...  # one tiny op's cost, plainly and under the per-op hook

    def gpu_cost(self) -> dict | None: ...  # this GPU's launch costs; None without a GPU

    def rerun_setup(self, st: Any, budget_s: float) -> None: ...  # re-run one-time work (TF1's first runs)

    def rerun_side(self, st: Any, m: Any) -> tuple[list[Any], str | None]: ...  # common.audit.RerunItems, or why not

    @property
    def WORDS(self) -> dict[str, str]: ...  # the findings' words in this framework's terms (present/auditwords.py)

    @property
    def SERIES_IN_ORDER(self) -> bool: ...  # with no device-asked blocks, the script's series pair in order

    @property
    def MISSING_DEVICE(self) -> str: ...  # a regex of its messages for a device that does not exist

    @property
    def HOST_SYNCS(self) -> tuple[Any, ...]: ...  # common.audit.HostSync: the calls after which the host waited


# ------------------------------------------------------------------ script capture
# ``whichdevice diagnose SCRIPT.py`` runs the user's script in a child (``measure/scriptchild.py``)
# after calling ``install(spec, sink)`` of each framework's ``capture.py``, which patches that
# framework's training entry points. The contract between the two, in short:
# the capture times ``spec.warmup_steps`` then ``spec.steps`` steps of the user's own loop under
# ``spec.variant``, calls ``sink(result)`` once with a JSON-safe dict, then raises ``CaptureDone``.


@dataclass(frozen=True)
class CaptureSpec:
    """What one script child measures: the variant (``"baseline"`` or a fix name with an optional
    ``":value"``, e.g. ``"batch:64"``, ``"workers:4"``, ``"steps_per_execution:8"``), how many
    warm-up and timed steps, on which device (``"cpu"`` or ``"gpu"``) and the child's own wall
    limit (seconds since the child started) by which it hands over what it has."""

    variant: str = "baseline"
    warmup_steps: int = 3
    steps: int = 10
    device: str = "cpu"
    deadline_s: float = 60.0
    # Further variants measured in the same child, in turns with ``variant`` (variants that differ
    # only at run time: Keras' batch, steps_per_execution, jit_compile, prefetch); a capture that
    # cannot (torch's) ignores them and the parent gives each its own child. One result each.
    also: tuple[str, ...] = ()
    # Which call of the training entry to measure, counted from 1 (a script that calls ``fit``
    # three times: 2 measures the second); the calls before it are passed over without training.
    entry_call: int = 1
    # The pre-flight's survey: after the measured call the script goes on, each further entry call
    # recorded and passed over (``capturekit.saw_entry``), so the plan knows every loop it trains.
    survey: bool = False
    # Trace what one step runs (its ops, FLOPs and bytes) for the no-GPU prediction: the pre-flight
    # asks, once; the measuring children never do (the traced step is a warm-up step, never timed).
    trace_step: bool = False
    # The typed variant of each member (``variant`` then each of ``also``), in the record's own form
    # (``{"fix": key, "value": v}``; None: the case has none): a capture that reads it applies each
    # through its framework's adapter for that catalogue key; ``variant``/``also`` stay the members'
    # names in its results and words. Empty: a spec written by hand (the members' names only).
    fixes: tuple[dict[str, Any] | None, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "variant": self.variant,
            "warmup_steps": self.warmup_steps,
            "steps": self.steps,
            "device": self.device,
            "deadline_s": self.deadline_s,
            "also": list(self.also),
            "entry_call": self.entry_call,
            "survey": self.survey,
            "trace_step": self.trace_step,
            "fixes": [dict(f) if f is not None else None for f in self.fixes],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CaptureSpec:
        return cls(
            variant=str(d.get("variant", "baseline")),
            warmup_steps=int(d.get("warmup_steps", 3)),
            steps=int(d.get("steps", 10)),
            device=str(d.get("device", "cpu")),
            deadline_s=float(d.get("deadline_s", 60.0)),
            also=tuple(str(v) for v in d.get("also") or ()),
            entry_call=int(d.get("entry_call") or 1),
            survey=bool(d.get("survey")),
            trace_step=bool(d.get("trace_step")),
            fixes=tuple(dict(f) if f is not None else None for f in d.get("fixes") or ()),
        )


class CaptureDone(BaseException):
    """Raised by a capture once it has called ``sink(result)``: it unwinds the user's script (a
    ``BaseException``, so the script's own ``except Exception`` does not swallow it) and the script
    child exits 0."""


@runtime_checkable
class Capture(Protocol):
    """``capture.py``: patch the framework's training entry points so that the user's
    own script is measured under ``spec``; results go to ``sink`` (one dict, ``frameworks/common/capturekit.result``)."""

    def install(self, spec: CaptureSpec, sink: Callable[[dict], None]) -> None: ...


@dataclass(frozen=True)
class StepCost:
    """What a variant adds to a planned case's cost, against a plain step: its first step's trace
    (``trace``: times a plain trace; XLA compiling the step), the steps each timed call runs
    (``per_call``: steps_per_execution) and a one-time cost in seconds (``extra_s``: a compile)."""

    trace: float = 1.0
    per_call: int = 1
    extra_s: float = 0.0


def _plain(_value: Any) -> StepCost:
    return StepCost()


# A script's variant cases as a framework plans them from the pre-flight's facts (and whether the
# run has a GPU): each case's value of the fix and its parameters (the case kind it is timed as,
# and any setting it needs beside the fix); [] where the fix does not apply to this script.
PlanCases = Callable[[dict[str, Any], bool], list[tuple[Any, dict[str, Any]]]]


@dataclass(frozen=True)
class ScriptFix:
    """How a framework's script capture (``capture.py``) measures one fix of the catalogue
    (``workloads/fixes.py``, ``fix`` its key): the capture's member for a case at a value
    (``member(value, params)``: ``"batch:64"``; ``"baseline"``: the script as it runs), the cases a
    plan gives it (``cases``; None: the plan sizes them itself, as the batch sweep and the thread
    counts, which are every framework's) and what its variant adds to a case's cost (``cost``)."""

    fix: str
    member: Callable[[Any, dict[str, Any]], str]
    cases: PlanCases | None = None
    cost: Callable[[Any], StepCost] = _plain
    # How the framework's capture applies the member in the script's child (the framework's own
    # applier, e.g. torch's ``scriptfixes.Apply``), looked up by the typed variant's key; None: the
    # capture applies it from the member's name (a framework not moved to typed variants yet).
    apply: Any = None


@runtime_checkable
class ScriptFixes(Protocol):
    """``scriptfixes.py``: the fixes the framework's script capture applies, one adapter each, in
    the order a plan tries them (the budget keeps the first that fit). Importable in the parent:
    it imports no framework."""

    ADAPTERS: tuple[ScriptFix, ...]

    def shares(self, member: str, params: dict[str, Any]) -> bool:
        """Whether a case whose member is ``member`` takes turns in the round's shared process of
        the script (its other members' and the baseline's), rather than a run of its own."""
        ...


@dataclass(frozen=True)
class Framework:
    """A loaded framework adapter: what ``frameworks.load(name)`` returns to a workload. Its
    optional parts are loaded on demand: ``frameworks.part(name, kind)``."""

    name: str
    discovery: Discovery
    placement: Placement
    sync: Sync
    ops: Ops


PROTOCOLS: dict[str, type] = {"discovery": Discovery, "placement": Placement, "sync": Sync, "ops": Ops}

# The optional parts: kind -> (module of the framework folder, protocol). Each is the module of its
# kind's name but ``probes``: the calibration module with the calibrate probes, which only
# TensorFlow's has.
_OPTIONAL_PROTOCOLS: dict[str, type] = {
    "training": Training,
    "calibration": Calibration,
    "probes": CalibrationProbes,
    "scale": Scale,
    "pipeline": Pipeline,
    "profiler": Profiler,
    "precision": Precision,
    "placement_log": PlacementLog,
    "optrace": OpTrace,
    "pitfalls": Pitfalls,
    "audit": Audit,
    "capture": Capture,
    "scriptfixes": ScriptFixes,
}
OPTIONAL: dict[str, tuple[str, type]] = {
    kind: ("calibration" if kind == "probes" else kind, protocol) for kind, protocol in _OPTIONAL_PROTOCOLS.items()
}


class IncompleteFramework(TypeError):
    """A framework folder whose module lacks a function of the contract."""


def _members(protocol: type) -> list[tuple[str, bool]]:
    """The protocol's members (its bases' first), each with whether it must be callable: a
    property, such as ``Precision.POLICIES``, need only be there."""
    out: dict[str, bool] = {}
    for cls in reversed(protocol.__mro__):
        if cls is object or cls is Protocol or cls.__module__ == "typing":
            continue
        for m, v in vars(cls).items():
            if not m.startswith("_"):
                out.setdefault(m, not isinstance(v, property))
    return list(out.items())


def _lacks(module: object, member: str, must_call: bool) -> bool:
    return not callable(getattr(module, member, None)) if must_call else not hasattr(module, member)


def check(name: str, part: str, module: object) -> None:
    """Raise ``IncompleteFramework`` naming what ``module`` (framework ``name``'s ``part``) lacks."""
    filename, protocol = OPTIONAL[part] if part in OPTIONAL else (part, PROTOCOLS[part])
    if isinstance(module, protocol):
        return
    missing = [m for m, must_call in _members(protocol) if _lacks(module, m, must_call)]
    raise IncompleteFramework(
        f"framework {name!r}: {filename}.py lacks {', '.join(missing) or '?'} (the contract: whichdevice.frameworks.contracts)"
    )
