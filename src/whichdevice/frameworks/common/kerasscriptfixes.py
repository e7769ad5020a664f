"""How the Keras script capture (``kerascapture.py``, ``kerasfit.py``: a ``model.fit`` measured in
turns, or a TensorFlow custom loop) measures the catalogue's fixes (``workloads/fixes.py``): one
adapter per fix, shared by the Keras frameworks, each of which leaves out in its own
``scriptfixes.py`` those its backend does not honour (``keras_adapters``).

Each says the capture's member for a case's value, how the capture applies it (:class:`Apply`,
looked up by the typed variant's key), the cases a plan gives the fix from the pre-flight's facts,
and what it adds to a case's cost. Imports no framework: the plan reads it in the parent.
"""

from __future__ import annotations

from typing import Any

from whichdevice.frameworks.contracts import ScriptFix, StepCost

ENTRY_FIT = "keras.Model.fit"  # the capture's entry (kerasfit) a plan reads in the pre-flight's facts

SPE = 8  # steps_per_execution tried against 1
# jit_compile=True's first step against a plain trace: XLA compiles the step (workloads/suite.XLA_TRACE_FACTOR)
XLA_TRACE_FACTOR = 8.0


def _fit(facts: dict[str, Any]) -> bool:
    return facts.get("entry") == ENTRY_FIT


def _spe(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """Where the script's compile leaves steps_per_execution at 1."""
    if not _fit(facts) or int(facts.get("steps_per_execution", 1)) != 1:
        return []
    return [(v, {"kind": "fit"}) for v in (1, SPE)]


def _jit(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    return [(v, {"kind": "fit"}) for v in (False, True)] if _fit(facts) else []


def _prefetch(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """Where fit reads a tf.data dataset."""
    if not _fit(facts) or facts.get("data") != "tfdata":
        return []
    return [(d, {"kind": "loop"}) for d in ("tfdata_noprefetch", "tfdata")]


def _precision(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """Mixed precision as Keras' global policy (a fit's or a custom loop's layers)."""
    return [(p, {"kind": "precision"}) for p in ("float32", "mixed_float16")]


def _sync(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """The loss read back after every batch (a callback), against fit's own reads."""
    return [("each", {"kind": "steady"})] if _fit(facts) else []


def _threads(value: Any, params: dict[str, Any]) -> str:
    """A fit times the default side as a member of its own; a custom loop runs as the script does."""
    if value == "default":
        return "threads:default" if params.get("entry") == ENTRY_FIT else "baseline"
    return f"threads:{int(value)}"


# ------------------------------------------------------------------ how the capture applies each


class Apply:
    """How the Keras capture applies one member; ``arg``: its value part (``"64"`` of ``"batch:64"``)."""

    name = ""  # the member's name ("batch" of "batch:64")
    own_process = ""  # what it sets before the script builds its model (then a process of its own)
    rebatches = False  # a custom loop's data batched at the member's size (TensorFlow's Dataset.batch)
    plain = ""  # its value that runs the script's own configuration

    def at_import(self, keras: Any, arg: str) -> None:
        """Set as the script imports Keras, before it builds its model."""

    def fit(self, fm: Any, c: Any, arg: str) -> None:
        """Member ``c``'s configuration of the user's fit (``kerasfit._Config`` of ``FitMeasure`` ``fm``)."""
        if arg != self.plain and self.own_process and c.name != fm.st.spec.variant:
            c.why_not = f"{self.own_process} needs a process of its own (set before the model is built)"

    def reports(self, fm: Any, c: Any) -> dict[str, Any]:
        """What member ``c``'s result says of this fix's setting as its fit ran (every member's,
        whichever fix it measures): what the plan and the claims read of it."""
        return {}


class _Batch(Apply):
    name = "batch"  # also the survey's name of a fit call's batch size (kerascapture.fit_call)
    rebatches = True

    def fit(self, fm: Any, c: Any, arg: str) -> None:
        c.batch = k = int(arg)
        if fm.data_kind == "arrays":
            return
        if fm.data_kind == "tfdata" and not fm.st.batch_patched:
            try:
                c.x = fm.x.rebatch(k)
            except Exception as e:  # noqa: BLE001
                c.why_not = f"your tf.data dataset could not be re-batched ({type(e).__name__}: {str(e)[:120]})"
            return
        c.why_not = f"your {fm.data_kind} makes its own batches (of {fm.batch}): set the batch size where you build it"


def _recompiled(fm: Any, c: Any, setting: dict[str, Any], why: str | None = None) -> None:
    """The model recompiled with the user's own compile arguments and ``setting``."""
    if id(fm.model) not in fm.st.compiled:
        c.why_not = "the model was compiled before whichdevice could see its compile arguments"
    elif fm.keras.backend.backend() == "torch":
        c.why_not = "steps_per_execution and jit_compile are not measured on Keras' torch backend"
    else:
        c.why_not, c.compile = why, ({} if why else setting)


class _StepsPerExecution(Apply):
    name = "steps_per_execution"
    plain = "1"

    def fit(self, fm: Any, c: Any, arg: str) -> None:
        if arg != self.plain:
            already = f"your compile already sets {self.name}={fm.spe_user}" if fm.spe_user != 1 else None
            _recompiled(fm, c, {self.name: int(arg)}, already)

    def reports(self, fm: Any, c: Any) -> dict[str, Any]:
        return {self.name: steps_per_call(fm, c)}


def steps_per_call(fm: Any, c: Any) -> int:
    """The steps one call of member ``c``'s fit runs (Keras' ``steps_per_execution``: the member's
    compile's, else the user's)."""
    return int(c.compile.get(_StepsPerExecution.name) or fm.spe_user)


def user_steps_per_call(model: Any) -> int:
    """The steps per call the user's own compile set on ``model`` (1: Keras' default)."""
    return int(getattr(model, _StepsPerExecution.name, 1) or 1)


# The model's attributes that the fixes' compile arguments set as such (a configuration's compiled
# state keeps them: kerasfit.COMPILED_STATE); jit_compile is kept as Keras' own ``_jit_compile``.
COMPILED_ATTRS = (_StepsPerExecution.name,)


class _JitCompile(Apply):
    name = "jit_compile"

    def fit(self, fm: Any, c: Any, arg: str) -> None:
        if _bool(arg) != fm.jit_user():
            _recompiled(fm, c, {self.name: _bool(arg)})

    def reports(self, fm: Any, c: Any) -> dict[str, Any]:
        """What its fit compiled with: the member's setting, else the user's (jit_compile='auto'
        resolved: XLA on Keras/JAX and on a TensorFlow GPU), so that jit_compile=True reads as no
        change there."""
        return {self.name: bool(c.compile[self.name]) if self.name in c.compile else fm.jit_user()}


class _Prefetch(Apply):
    name = "prefetch"
    plain = "off"

    def fit(self, fm: Any, c: Any, arg: str) -> None:
        if arg == self.plain:
            return
        if fm.data_kind != "tfdata":
            c.why_not = "prefetch is a tf.data setting; your data is not a tf.data dataset"
        elif _prefetches(fm.x):
            c.why_not = "your tf.data pipeline already prefetches"
        else:
            import tensorflow as tf

            c.x = fm.x.prefetch(tf.data.AUTOTUNE)


class _Precision(Apply):
    name = "precision"
    own_process = "a mixed-precision policy"
    plain = "float32"

    def at_import(self, keras: Any, arg: str) -> None:
        if arg and arg != self.plain:
            keras.mixed_precision.set_global_policy(arg)


class _Threads(Apply):  # set in the child's environment before the import (env.child_env)
    name = "threads"
    own_process = "a CPU thread count"
    plain = "default"


class _Sync(Apply):  # the loss read back after every step (a callback), as a loop printing it would
    name = "sync"

    def fit(self, fm: Any, c: Any, arg: str) -> None:
        c.sync_each = True
        if fm.keras.backend.backend() == "tensorflow":
            c.why_not = "Keras on TensorFlow already reads the logs back after every batch"


def _prefetches(ds: Any) -> bool:
    seen = 0
    while ds is not None and seen < 64:
        if "Prefetch" in type(ds).__name__:
            return True
        ds = getattr(ds, "_input_dataset", None)
        seen += 1
    return False


def _bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


ADAPTERS: dict[str, ScriptFix] = {
    a.fix: a
    for a in (
        ScriptFix("batch", member=lambda value, _p: f"batch:{int(value)}", apply=_Batch()),
        ScriptFix("cpu_threads", member=_threads, apply=_Threads()),
        ScriptFix(
            "steps_per_execution",
            member=lambda value, _p: f"steps_per_execution:{int(value)}",
            cases=_spe,
            cost=lambda value: StepCost(per_call=int(value)),
            apply=_StepsPerExecution(),
        ),
        ScriptFix(
            "jit_compile",
            member=lambda value, _p: f"jit_compile:{str(bool(value)).lower()}",
            cases=_jit,
            cost=lambda value: StepCost(trace=XLA_TRACE_FACTOR if value is True else 1.0),
            apply=_JitCompile(),
        ),
        ScriptFix(
            "prefetch",
            member=lambda value, _p: "prefetch" if value == "tfdata" else "prefetch:off",
            cases=_prefetch,
            apply=_Prefetch(),
        ),
        ScriptFix("precision", member=lambda value, _p: f"precision:{value}", cases=_precision, apply=_Precision()),
        ScriptFix(
            "sync",
            member=lambda value, _p: "sync:each" if value == "each" else "baseline",
            cases=_sync,
            apply=_Sync(),
        ),
    )
}
_BY_NAME: dict[str, Apply] = {a.apply.name: a.apply for a in ADAPTERS.values()}
BATCH = _Batch.name


def reported(fm: Any, c: Any) -> dict[str, Any]:
    """What member ``c``'s result says of each fix's setting as its fit ran (:meth:`Apply.reports`)."""
    out: dict[str, Any] = {}
    for a in ADAPTERS.values():
        out |= a.apply.reports(fm, c)
    return out


def applied(member: str, typed: dict[str, Any] | None = None) -> tuple[Apply | None, str]:
    """A member's applier and its value part: by the typed variant's catalogue key where the spec
    carries it (``{"fix": key, "value": v}``), else by the member's name; (None, "") for the script
    as it runs and for a name no adapter has."""
    arg = member.partition(":")[2]
    if member == "baseline":
        return None, arg
    if typed is not None and typed.get("fix") in ADAPTERS:
        return ADAPTERS[str(typed["fix"])].apply, arg
    return _BY_NAME.get(member.partition(":")[0]), arg


def shares(member: str, params: dict[str, Any]) -> bool:
    """A fit times every member in turns on the user's objects but a mixed-precision policy and a
    thread count, each set before the script builds its model (a process of its own); a custom
    loop shares its process with nothing but the baseline."""
    if params.get("entry") != ENTRY_FIT:
        return member == "baseline"
    fix, arg = applied(member)
    return not (fix is not None and fix.own_process and arg != fix.plain)


def keras_adapters(without: tuple[str, ...] = ()) -> tuple[ScriptFix, ...]:
    """Every Keras adapter but those of ``without`` (fixes the backend does not honour), in the
    order a plan tries them: a new Keras fix's adapter here reaches every Keras framework."""
    return tuple(a for fix, a in ADAPTERS.items() if fix not in without)
