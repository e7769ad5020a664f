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

Optional parts, listed per framework in ``PARTS`` and typed in ``contracts.py`` like the
four required ones: ``training.py`` (frameworks that train, ``TRAINING``: the seed's custom
train step, the input pipeline), ``calibration.py`` (``probes``: with the calibrate probes),
``scale.py``, ``pipeline.py`` (the ``pipeline`` command's loader: tf.data, DataLoader,
PyDataset), and TensorFlow's ``profiler.py``, ``precision.py``, ``placement_log.py``; ``optrace.py`` (the
placement command's trace of a step for torch and JAX: ops by device, copies, syncs),
``pitfalls.py`` (the pitfalls command's mistakes; importable in the parent) and ``audit.py`` (what
``whichdevice audit`` hooks and re-runs: TensorFlow, PyTorch, JAX). A workload loads one
with ``part(name, kind)`` (inside a child: it imports the framework), which refuses a module
that lacks a function of its protocol.
"""

from __future__ import annotations

import importlib
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
        Training,
    )

FRAMEWORKS: tuple[str, ...] = ("tensorflow", "numpy", "keras-jax", "keras-torch", "torch", "jax")
DEFAULT = FRAMEWORKS[0]  # the commands' --framework when none is given
T = TypeVar("T")
# The optional parts each framework's folder has (contracts.OPTIONAL: kind -> module, protocol).
PARTS: dict[str, tuple[str, ...]] = {
    "tensorflow": (
        "training",
        "calibration",
        "probes",
        "scale",
        "pipeline",
        "profiler",
        "precision",
        "placement_log",
        "audit",
    ),
    "numpy": (),
    "keras-jax": ("training", "calibration", "probes", "scale", "pipeline"),
    "keras-torch": ("training", "calibration", "probes", "pipeline"),
    "torch": ("training", "calibration", "probes", "scale", "pipeline", "audit"),
    "jax": ("probes", "audit"),
}
# Issue #42: the placement command's op trace (``optrace.py``) and the pitfalls command's
# mistakes (``pitfalls.py``), added apart so that each command's frameworks read from PARTS.
for _name, _kinds in {
    "tensorflow": ("pitfalls",),
    "keras-jax": ("optrace", "pitfalls"),
    "keras-torch": ("optrace", "pitfalls"),
    "torch": ("optrace", "pitfalls"),
}.items():
    PARTS[_name] = (*PARTS[_name], *_kinds)
del _name, _kinds


def having(*kinds: str) -> tuple[str, ...]:
    """The frameworks with at least one of the parts ``kinds``, in ``FRAMEWORKS`` order: what a
    command that needs one of them offers for ``--framework``."""
    return tuple(n for n in FRAMEWORKS if set(kinds) & set(PARTS[n]))


# Frameworks with a training module (the train workload and `run`'s training cases).
TRAINING: tuple[str, ...] = tuple(n for n in FRAMEWORKS if "training" in PARTS[n])


# Frameworks with the calibrate probes (``whichdevice calibrate``).
CALIBRATE: tuple[str, ...] = having("probes")
# Frameworks that train a Keras model (model.fit, the user's --model); plain torch does not.
KERAS: tuple[str, ...] = ("tensorflow", "keras-jax", "keras-torch")
# The Python modules a framework needs, and how to install them.
REQUIRES: dict[str, tuple[str, ...]] = {
    "tensorflow": ("tensorflow",),
    "numpy": ("numpy",),
    "keras-jax": ("keras", "jax"),
    "keras-torch": ("keras", "torch"),
    "torch": ("torch",),
    "jax": ("jax",),
}
INSTALL_HINT: dict[str, str] = {
    "tensorflow": "pip install 'whichdevice[tensorflow]'",
    "keras-jax": "pip install 'whichdevice[jax]'",
    "jax": "pip install 'whichdevice[jax]'",
    "keras-torch": "pip install 'whichdevice[torch]'",
    "torch": "pip install 'whichdevice[torch]'",
}

_MODULES = ("discovery", "placement", "sync", "ops")


def folder(name: str) -> str:
    """The package folder of a framework: ``keras-jax`` -> ``keras_jax``."""
    if name not in FRAMEWORKS:
        raise KeyError(name)
    return name.replace("-", "_")


def env_module(name: str) -> ModuleType:
    """The framework's ``env`` module (safe to import in the parent: no framework import)."""
    return importlib.import_module(f"whichdevice.frameworks.{folder(name)}.env")


def declared(name: str, attr: str, default: T) -> T:
    """What the framework's ``env.py`` declares as ``attr`` (e.g. a report's words for it),
    else ``default`` (also for a name that is no framework of this version)."""
    value: T = getattr(env_module(name), attr, default) if name in FRAMEWORKS else default
    return value


def training_module(name: str) -> Training:
    """The framework's ``training`` module (imports the framework: child only)."""
    if name not in TRAINING:
        raise KeyError(f"{name} has no training module (frameworks that train: {', '.join(TRAINING)})")
    return part(name, "training")


def part_module(name: str, kind: str) -> str:
    """The dotted name of framework ``name``'s optional part ``kind`` (not imported: e.g. the
    ``scale`` worker, started as ``python -m``); ``KeyError`` when the framework has none."""
    from whichdevice.frameworks import contracts

    if kind not in PARTS.get(name, ()):
        having = [n for n in FRAMEWORKS if kind in PARTS[n]]
        raise KeyError(f"{name} has no {kind} part (frameworks with one: {', '.join(having) or 'none'})")
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
def part(name: str, kind: str) -> Any:
    """Framework ``name``'s optional part ``kind`` (``PARTS``), imported (it imports the
    framework: child only) and checked against its protocol in ``contracts.OPTIONAL``."""
    from whichdevice.frameworks import contracts

    module = importlib.import_module(part_module(name, kind))
    contracts.check(name, kind, module)
    return module


# Train kinds that run's suite measures with TensorFlow's modules (placement log, no-sync, precision).
_TF_ONLY_KINDS = ("placement", "nosync", "precision")


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
    if name == "keras-torch" and ("steps_per_execution" in params or "jit_compile" in params):
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
