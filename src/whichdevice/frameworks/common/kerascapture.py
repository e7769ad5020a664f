"""Keras' training entry points captured in the user's own script, on every backend.

``install(spec, sink)`` (each Keras framework's ``capture.py``) patches, once the script imports
Keras:

- ``Model.compile``: the user's own compile arguments are kept, so steps_per_execution and
  jit_compile are measured by recompiling with exactly them plus the one setting changed;
- ``Model.fit``: the call ``spec.entry_call`` names (the first by default; the calls before it are
  passed over untrained, each recorded: ``capturekit.saw_entry``) hands over the compiled model,
  the user's data (arrays, dicts, tf.data, a PyDataset, a generator), batch size and callbacks.
  ``kerasfit.FitMeasure`` then times ``spec.variant`` and ``spec.also`` on those objects, in
  turns, and the script ends there (``CaptureDone``): no script runs to the end of its epochs.
  In the pre-flight's survey (``spec.survey``) the script goes on instead, every later fit call
  recorded and passed over, so the plan knows each model the script trains;
- ``Model.train_on_batch`` and ``Optimizer.apply`` (a custom loop: a GradientTape with
  ``optimizer.apply_gradients`` or ``optimizer.apply``): each call ends a step of the user's loop
  (``capturekit.StepClock``). TensorFlow's own hooks (the tape, a compiled ``tf.function`` step,
  ``Dataset.batch``) are in ``frameworks/tensorflow/capture.py``.

The first member's applier (``kerasscriptfixes.Apply.at_import``) sets what it needs right after
the import, before the script builds its model (a mixed-precision policy: a child of its own).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from whichdevice.frameworks.common import capturekit
from whichdevice.frameworks.common.kerasscriptfixes import BATCH
from whichdevice.frameworks.common.kerasfit import (
    ENTRY_FIT,
    ENTRY_TAPE,
    ENTRY_TRAIN_ON_BATCH,
    FitMeasure,
    KerasState,
    data_kind,
)
from whichdevice.frameworks.contracts import CaptureDone, CaptureSpec


def install(spec: CaptureSpec, sink: Callable[[dict], None]) -> KerasState:
    """Patch Keras once the script imports it. Returns the shared state (TensorFlow's capture
    adds its own hooks to it)."""
    st = KerasState(spec, sink)
    capturekit.after_import("keras", lambda keras: _patch(keras, st))
    return st


def _patch(keras: Any, st: KerasState) -> None:
    fix, arg = st.first
    if fix is not None:
        fix.at_import(keras, arg)
    if st.spec.device == "gpu" or keras.backend.backend() == "jax":  # JAX dispatches asynchronously on a CPU too
        from whichdevice.frameworks.common.steptimer import _backend_sync_fn

        st.sync = _backend_sync_fn()
    model_cls = keras.Model
    orig_compile, orig_fit, orig_tob = model_cls.compile, model_cls.fit, model_cls.train_on_batch

    @functools.wraps(orig_compile)
    def compile(self, *args, **kwargs):  # noqa: ANN001, ANN202
        if not st.inside_fit:
            st.compiled[id(self)] = _compile_kwargs(orig_compile, self, args, kwargs)
        return orig_compile(self, *args, **kwargs)

    @functools.wraps(orig_fit)
    def fit(self, *args, **kwargs):  # noqa: ANN001, ANN202
        if st.inside_fit or (capturekit.OWNER and capturekit.OWNER[0] != ENTRY_FIT):
            return orig_fit(self, *args, **kwargs)
        return _captured_fit(keras, st, self, orig_fit, args, kwargs)

    @functools.wraps(orig_tob)
    def train_on_batch(self, *args, **kwargs):  # noqa: ANN001, ANN202
        clock = st.loop_clock(ENTRY_TRAIN_ON_BATCH)
        if clock is None:
            return orig_tob(self, *args, **kwargs)
        st.model_name = type(self).__name__
        _note_batch(st, args[0] if args else kwargs.get("x"))
        clock.begin()
        out = orig_tob(self, *args, **kwargs)
        clock.end()
        return out

    model_cls.compile, model_cls.fit, model_cls.train_on_batch = compile, fit, train_on_batch
    if st.spec.survey:
        _bound_survey(model_cls, st)
    _patch_optimizer(keras, st)


def _bound_survey(model_cls: Any, st: KerasState) -> None:
    """In the pre-flight's survey, the script's evaluate and predict after the measured fit end the
    survey once it is past its deadline: what the script does besides training (a full test set's
    evaluation, plots) must not hold the pre-flight to its process's time limit."""
    for name in ("evaluate", "predict"):
        orig = getattr(model_cls, name)

        def bounded(self, *args, __orig=orig, **kwargs):  # noqa: ANN001, ANN202
            if ENTRY_FIT in capturekit.OWNER and not st.inside_fit and capturekit.since_start() > st.spec.deadline_s:
                capturekit.survey_stopped()
            return __orig(self, *args, **kwargs)

        setattr(model_cls, name, functools.wraps(orig)(bounded))


def _patch_optimizer(keras: Any, st: KerasState) -> None:
    """``optimizer.apply`` outside fit ends a step of the user's loop; met while a ``tf.function``
    traces, it marks that function as the step (TensorFlow's capture times it). Keras 3's
    ``apply_gradients(zip(grads, vars))`` calls ``apply(grads, vars)``, and keras-io's own custom-loop
    guide calls ``optimizer.apply`` directly: patching ``apply`` sees both, once each."""
    cls = keras.optimizers.Optimizer
    orig = cls.apply

    @functools.wraps(orig)
    def apply(self, *args, **kwargs):  # noqa: ANN001, ANN202
        if st.inside_fit or (capturekit.OWNER and capturekit.OWNER[0] not in (ENTRY_TAPE,)):
            return orig(self, *args, **kwargs)
        if _tracing():
            st.traced_apply = True
            return orig(self, *args, **kwargs)
        clock = st.loop_clock(ENTRY_TAPE)
        out = orig(self, *args, **kwargs)
        if clock is not None:
            clock.end()
        return out

    cls.apply = apply


def _tracing() -> bool:
    import sys

    tf = sys.modules.get("tensorflow")
    return bool(tf is not None and tf.inside_function())


def _note_batch(st: KerasState, x: Any) -> None:
    if st.batch_sizes:
        return
    import keras

    leaves = keras.tree.flatten(x) if x is not None else []
    shape = getattr(leaves[0], "shape", None) if leaves else None
    if shape:
        st.batch_sizes.append(int(shape[0]))


def _captured_fit(keras: Any, st: KerasState, model: Any, orig_fit: Any, args: tuple, kwargs: dict) -> Any:
    """One fit call of the script: measured if it is the spec's call (then the script ends there,
    but in the pre-flight's survey, which goes on), else recorded and passed over."""
    st.fit_calls += 1
    call = st.fit_calls
    info = {**_fit_call(orig_fit, model, args, kwargs), "entry": ENTRY_FIT, "call": call}
    if call != st.spec.entry_call:
        # Not the call to measure: passed over without training (a teacher the script trains
        # first costs its time, not the distiller's step). The survey stops past its deadline.
        late = st.spec.survey and call > st.spec.entry_call and capturekit.since_start() > st.spec.deadline_s
        capturekit.saw_entry({**info, "measured": False})
        if late:
            capturekit.survey_stopped()
        return _passed_over(keras, model, info.get("epochs"))
    capturekit.saw_entry({**info, "measured": True})
    capturekit.OWNER.append(ENTRY_FIT)

    measure = FitMeasure(keras, model, orig_fit, args, kwargs, st)
    for r in measure.run():
        st.sink(r)
    if st.spec.survey:  # the pre-flight goes on to see the script's other training calls
        return _passed_over(keras, model, info.get("epochs"))
    raise CaptureDone()


class _NoLogs(dict):
    """A passed-over fit's logs: every metric the script reads is NaN for each epoch it asked for
    (a script that prints ``history.history["loss"][-1]`` or plots it goes on)."""

    def __init__(self, epochs: int) -> None:
        super().__init__()
        self.epochs = epochs

    def __missing__(self, key: str) -> list[float]:
        return [float("nan")] * self.epochs


def _passed_over(keras: Any, model: Any, epochs: int | None = None) -> Any:
    """What a fit that was not run returns: a History of the epochs asked for, with no values."""
    history = keras.callbacks.History()
    n = max(int(epochs or 1), 1)
    history.history, history.epoch = _NoLogs(n), list(range(n))
    history.set_model(model)
    return history


def _fit_call(orig_fit: Any, model: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """One fit call in words and numbers, read from its arguments without touching its data:
    the model, the batch (arrays: ``batch_size``, else unknown), the epochs and the steps it
    asks for (None where the data does not say its length: a generator)."""
    import inspect

    out: dict[str, Any] = {"model": type(model).__name__, "name": str(getattr(model, "name", "") or "")}
    out |= {BATCH: None, "epochs": None, "steps": None}
    try:
        bound = inspect.signature(orig_fit).bind(model, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        x: Any = a.get("x")
        kind = data_kind(x)
        epochs = max(int(a.get("epochs") or 1) - int(a.get("initial_epoch") or 0), 1)
        per_epoch = int(a["steps_per_epoch"]) if a.get("steps_per_epoch") else None
        if kind == "arrays" and x is not None:
            import keras

            batch = int(a.get("batch_size") or 32)
            n = int(len(keras.tree.flatten(x)[0]) * (1.0 - float(a.get("validation_split") or 0.0)))
            out[BATCH] = batch
            per_epoch = per_epoch or -(-n // batch)
        elif kind == "tfdata" and per_epoch is None:
            card = int(x.cardinality())
            per_epoch = card if card > 0 else None
        elif kind == "pydataset" and per_epoch is None:
            per_epoch = int(len(x))
        out["epochs"] = epochs
        out["steps"] = epochs * per_epoch if per_epoch else None
    except Exception:  # noqa: BLE001 (an unusual call: its steps are unknown, the call is still listed)
        pass
    return out


def _compile_kwargs(orig_compile: Any, model: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    import inspect

    bound = inspect.signature(orig_compile).bind(model, *args, **kwargs)
    return {k: v for k, v in bound.arguments.items() if k not in ("self", "kwargs")} | dict(
        bound.arguments.get("kwargs") or {}
    )
