"""Framework adapters: one folder per framework, the same module names in each.

Every framework folder provides:

- ``env.py``        environment variables to set *before* the framework is imported
                    (hide the GPU for a CPU run, memory growth for a GPU run). Imported
                    in the parent, so it must not import the framework.
- ``discovery.py``  ``framework_info()``, ``list_devices()``, ``no_gpu_reasons()``.
- ``placement.py``  ``configure(device, cpu_threads)`` right after import (visible devices,
                    threads) and ``scope(device)``, a context that places ops.
- ``sync.py``       ``sync(result)``: block until the device has finished queued work.
- ``ops.py``        the workload ops (``matmul_steady``, ``matmul_seed``, ``noop``).

Adding a framework is filling a folder (Keras' backend layout, STYLE.md). A framework whose
user-facing name is not a Python identifier (``keras-jax``) lives in a folder named with
underscores (``keras_jax``): ``folder(name)`` maps one to the other.

The contract is typed in ``contracts.py`` (``Discovery``, ``Placement``, ``Sync``, ``Ops``
protocols; ``load()`` returns a ``Framework`` and refuses a folder that lacks a function).

Optional parts, typed in ``contracts.py`` like the four required ones (``contracts.OPTIONAL``):
``training.py`` (frameworks that train, ``having("training")``: the seed's custom train step, the input
pipeline), ``calibration.py`` (``probes``: with the calibrate probes), ``scale.py``,
``pipeline.py`` (the ``pipeline`` command's loader: tf.data, DataLoader, PyDataset), TensorFlow's
``profiler.py``, ``precision.py``, ``placement_log.py``; ``optrace.py`` (the placement command's
trace of a step for torch and JAX), ``pitfalls.py`` (the pitfalls command's mistakes; importable in
the parent), ``audit.py`` (what ``whichdevice audit`` hooks and re-runs) and ``scriptfixes.py`` (the
catalogue's fixes the script capture applies, one adapter each; importable in the parent). A workload loads one
with ``part(name, kind)`` (inside a child: it imports the framework), which refuses a module
that lacks a function of its protocol.

**The registry.** Each folder's ``env.py`` declares what the framework has (it imports no
framework); nothing outside the folder lists frameworks by hand:

- ``PARTS``     the optional parts it has (names of ``contracts.OPTIONAL``).
- ``REQUIRES``  the Python modules it needs; ``INSTALL`` how to install them (optional).
- ``KERAS``     True when it trains a Keras model (``model.fit``, the user's Keras ``--model``).
- optional: ``CPU_ONLY`` (never sees a GPU), ``FEEDS_TF_DATA`` (reads tf.data), ``SAYS`` (per
  command, the words ``--help`` puts after its name: ``{"scale": "DDP"}`` -> ``torch (DDP)``),
  ``NOTES`` (per experiment, facts its record must say), and words other modules read with
  ``declared(name, attr, default)``.

From these, ``PARTS``, ``REQUIRES``, ``INSTALL_HINT``, ``KERAS`` etc. here are derived,
and so is which frameworks each command offers: ``NEEDS`` names the parts a command needs (one of
them suffices: placement takes ``placement_log`` or ``optrace``), and ``offering(command)`` is every
framework that has one, in ``FRAMEWORKS``' order. The CLI checks ``--framework`` against it and its
``--help`` lists it (``framework_help``); the Python API checks against the same list. Adding a
part to a framework (say ``scale`` to ``jax``) is writing ``frameworks/jax/scale.py`` against its
protocol, adding ``"scale"`` to ``jax/env.py``'s ``PARTS`` and a line to ``conformance.py``:
``whichdevice scale --framework jax`` is then offered.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

import importlib
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import (
        Audit,
        Calibration,
        CalibrationProbes,
        Framework,
        OpTrace,
        Pitfalls,
        Pipeline,
        PlacementLog,
        Precision,
        Profiler,
        Scale,
        ScriptFixes,
        Training,
    )

FRAMEWORKS: tuple[str, ...] = ("tensorflow", "numpy", "keras-jax", "keras-torch", "torch", "jax")
DEFAULT = FRAMEWORKS[0]  # the commands' --framework when none is given
T = TypeVar("T")
# The parts each command needs of a framework (any one of them): it offers exactly those with one.
NEEDS: dict[str, tuple[str, ...]] = {
    "run": ("training",),
    "diagnose": ("training",),
    "train": ("training",),
    "predict": ("calibration",),
    "calibrate": ("probes",),
    "scale": ("scale",),
    "pipeline": ("pipeline",),
    "placement": ("placement_log", "optrace"),
    "pitfalls": ("pitfalls",),
}  # a command not named here (matmul, devices) offers every framework


def folder(name: str) -> str:
    """The package folder of a framework: ``keras-jax`` -> ``keras_jax``."""
    if name not in FRAMEWORKS:
        raise KeyError(name)
    return name.replace("-", "_")


def env_module(name: str) -> ModuleType:
    """The framework's ``env`` module (safe to import in the parent: no framework import)."""
    return importlib.import_module(f"whichdevice.frameworks.{folder(name)}.env")


_ENV = {name: env_module(name) for name in FRAMEWORKS}
# The optional parts each framework's folder has (contracts.OPTIONAL: kind -> module, protocol).
PARTS: dict[str, tuple[str, ...]] = {n: tuple(e.PARTS) for n, e in _ENV.items()}
# The Python modules a framework needs, and how to install them.
REQUIRES: dict[str, tuple[str, ...]] = {n: tuple(e.REQUIRES) for n, e in _ENV.items()}
INSTALL_HINT: dict[str, str] = {n: e.INSTALL for n, e in _ENV.items() if hasattr(e, "INSTALL")}
# Frameworks that train a Keras model (model.fit, the user's --model); plain torch does not.
KERAS: tuple[str, ...] = tuple(n for n, e in _ENV.items() if e.KERAS)
# Frameworks that never see a GPU (no discovery child is needed to know it).
CPU_ONLY: tuple[str, ...] = tuple(n for n, e in _ENV.items() if getattr(e, "CPU_ONLY", False))
# Frameworks that read the user's tf.data dataset (--data FILE.py:FUNCTION returning one).
TFDATA: tuple[str, ...] = tuple(n for n, e in _ENV.items() if getattr(e, "FEEDS_TF_DATA", False))


def having(*kinds: str) -> tuple[str, ...]:
    """The frameworks with at least one of the parts ``kinds``, in ``FRAMEWORKS`` order: what a
    command that needs one of them offers for ``--framework``."""
    return tuple(n for n in FRAMEWORKS if set(kinds) & set(PARTS[n]))


def offering(command: str) -> tuple[str, ...]:
    """The frameworks ``command`` offers: those with one of the parts it ``NEEDS`` (every
    framework for a command that needs none)."""
    return having(*NEEDS[command]) if command in NEEDS else FRAMEWORKS


def says(name: str, key: str, default: str = "") -> str:
    """The words framework ``name``'s ``env.py`` ``SAYS`` for ``key`` (a command, or another
    place where a sentence names what the framework does); ``default`` where it says none."""
    return str(getattr(_ENV[name], "SAYS", {}).get(key, default))


def offered(command: str) -> str:
    """The frameworks ``command`` offers, each with the words its ``env.py`` ``SAYS`` for the
    command, e.g. ``tensorflow (MirroredStrategy), keras-jax (DataParallel), torch (DDP)``: the
    ``--help`` list and the README's command table (docs/commands_table.py)."""
    return ", ".join(n + (f" ({says(n, command)})" if says(n, command) else "") for n in offering(command))


def framework_help(command: str, lead: str = "Framework to measure") -> str:
    """``--framework``'s help: ``lead`` and :func:`offered`."""
    return f"{lead}: {offered(command)}."


_MODULES = ("discovery", "placement", "sync", "ops")


def declared(name: str, attr: str, default: T) -> T:
    """What the framework's ``env.py`` declares as ``attr`` (e.g. a report's words for it),
    else ``default`` (also for a name that is no framework of this version)."""
    value: T = getattr(env_module(name), attr, default) if name in FRAMEWORKS else default
    return value


def keras_on(backend: str) -> str:
    """The framework that is Keras on ``backend`` (its env.py's ``KERAS_BACKEND``), else TensorFlow's Keras."""
    return next((n for n in KERAS if declared(n, "KERAS_BACKEND", "") == backend), DEFAULT)


def part_module(name: str, kind: str) -> str:
    """The dotted name of framework ``name``'s optional part ``kind`` (not imported: e.g. the
    ``scale`` worker, started as ``python -m``); ``KeyError`` when the framework has none."""
    from whichdevice.frameworks import contracts

    if kind not in PARTS.get(name, ()):
        raise KeyError(f"{name} has no {kind} part (frameworks with one: {', '.join(having(kind)) or 'none'})")
    return f"whichdevice.frameworks.{folder(name)}.{contracts.OPTIONAL[kind][0]}"


@overload
def part(name: str, kind: Literal["training"]) -> Training: ...
@overload
def part(name: str, kind: Literal["calibration"]) -> Calibration: ...
@overload
def part(name: str, kind: Literal["probes"]) -> CalibrationProbes: ...
@overload
def part(name: str, kind: Literal["scale"]) -> Scale: ...
@overload
def part(name: str, kind: Literal["pipeline"]) -> Pipeline: ...
@overload
def part(name: str, kind: Literal["profiler"]) -> Profiler: ...
@overload
def part(name: str, kind: Literal["precision"]) -> Precision: ...
@overload
def part(name: str, kind: Literal["placement_log"]) -> PlacementLog: ...
@overload
def part(name: str, kind: Literal["optrace"]) -> OpTrace: ...
@overload
def part(name: str, kind: Literal["pitfalls"]) -> Pitfalls: ...
@overload
def part(name: str, kind: Literal["audit"]) -> Audit: ...
@overload
def part(name: str, kind: Literal["scriptfixes"]) -> ScriptFixes: ...
def part(name: str, kind: str) -> Any:
    """Framework ``name``'s optional part ``kind`` (``PARTS``), imported (it imports the
    framework: child only) and checked against its protocol in ``contracts.OPTIONAL``."""
    from whichdevice.frameworks import contracts

    module = importlib.import_module(part_module(name, kind))
    contracts.check(name, kind, module)
    return module


# Train kinds that run's suite measures with TensorFlow's modules (placement log, no-sync, precision).
_TF_ONLY_KINDS = ("placement", "nosync", fixkeys.PRECISION_KIND)


def plain_jax(modules: Iterable[str]) -> bool:
    """Whether a script imported JAX and none of Keras, TensorFlow and torch: a jax.jit/jax.grad
    loop, whose steps no framework's script capture watches (workloads/scriptrun)."""
    names = set(modules)
    return "jax" in names and not {"keras", "torch", "tensorflow"} & names


def unsupported(name: str, params: dict) -> str | None:
    """Why a train case with ``params`` does not apply to framework ``name`` (None: it does).
    Used to leave such cases out of ``run``'s suite instead of recording them as failures."""
    kind, data = params.get("kind"), params.get("data")
    if name != "tensorflow" and kind in _TF_ONLY_KINDS:
        # run's suite measures these with TensorFlow's modules; torch and JAX have their own
        # commands for placement and the no-sync pitfall (whichdevice placement / pitfalls)
        return f"run's {kind} case is TensorFlow's (other frameworks: whichdevice placement / pitfalls)"
    if name not in KERAS and kind == "fit":
        return "model.fit is Keras-only"
    if name != "tensorflow" and data == "tfdata_noprefetch":
        return "prefetch is a tf.data setting; other frameworks read numpy batches"
    if name == "keras-torch" and (fixkeys.STEPS_PER_EXECUTION in params or fixkeys.JIT_COMPILE in params):
        # Keras' torch trainer runs one step per call and jit_compile=True means torch.compile.
        return "steps_per_execution and jit_compile are not measured on Keras' torch backend"
    return None


def fix_applies(fix_framework: str, ran: set[str]) -> bool:
    """Whether a catalogue fix for ``fix_framework`` ("any", "keras": Keras' own API, or one
    framework's name) belongs to a record where the frameworks ``ran`` ran: Keras' and
    TensorFlow's to records where a Keras framework ran (or nothing did), another framework's
    to records where it ran."""
    if fix_framework == "any":
        return True
    if fix_framework in ("keras", "tensorflow"):
        return not ran or bool(ran & set(KERAS))
    return fix_framework in ran


def record_notes(name: str, experiment: str) -> list[str]:
    """Facts a reader of ``experiment``'s record must know about ``name`` (e.g. that the
    tf.data pipelines were replaced by numpy batches): ``NOTES`` in the framework's env.py."""
    notes = getattr(env_module(name), "NOTES", {})
    return list(notes.get(experiment, ()))


def load(name: str) -> Framework:
    """Import a framework's adapter modules (imports the framework itself: child only), each
    checked against its protocol in ``contracts.py``."""
    from whichdevice.frameworks import contracts

    mods = {m: importlib.import_module(f"whichdevice.frameworks.{folder(name)}.{m}") for m in _MODULES}
    for part, module in mods.items():
        contracts.check(name, part, module)
    return contracts.Framework(name=name, **mods)  # type: ignore[arg-type]  # modules, checked above
