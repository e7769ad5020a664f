"""The user's ``model.fit`` measured on its own objects (``kerascapture`` calls it), and the state
kerascapture's patches share (``KerasState``: here, so that this module imports no patch).

:class:`FitMeasure` holds what the script's first ``fit`` call handed over (the compiled model,
its data, batch size and callbacks) and times each variant of the child's spec on it, in turns
(A B C | C B A): every turn is a real ``fit`` of a few steps with the user's callbacks plus a
timer, ``verbose=0`` and without validation (it runs once per epoch, not per step). Each member's
configuration is its adapter's (``kerasscriptfixes.Apply.fit``, by its typed variant's key): the
user's data re-batched, the model recompiled with the user's own compile arguments and one setting
(each configuration's compiled state kept, so switching back costs no new trace), and so on.

A step's time: the gap between Keras' batch-begin callbacks (an execution of ``steps_per_execution``
steps when that is above 1; ``samples_per_step`` then counts its samples). The first step of each
turn (a new data iterator) is kept with the warm-up, never with the timed steps.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from whichdevice.frameworks.common import capturekit
from whichdevice.frameworks.common.kerasscriptfixes import (
    COMPILED_ATTRS,
    ENTRY_FIT,
    applied,
    reported,
    steps_per_call,
    user_steps_per_call,
)
from whichdevice.frameworks.contracts import CaptureSpec

ENTRY_TRAIN_ON_BATCH = "keras.Model.train_on_batch"
ENTRY_TAPE = "tf.GradientTape+apply_gradients"


@dataclass
class KerasState:
    """What the patches share in one script child."""

    spec: CaptureSpec
    sink: Callable[[dict], None]
    compiled: dict[int, dict[str, Any]] = field(default_factory=dict)  # id(model) -> compile kwargs
    inside_fit: bool = False  # our own fit turns: every hook passes through
    clock: capturekit.StepClock | None = None
    entry: str | None = None
    batch_sizes: list[int] = field(default_factory=list)  # tf.data Dataset.batch calls seen
    batch_patched: bool = False  # the batch variant applied at Dataset.batch (a loop's data)
    traced_apply: bool = False  # apply_gradients met while a tf.function traced
    step_fns: set[int] = field(default_factory=set)  # tf.functions whose calls are steps
    model_name: str | None = None
    sync: Callable[[], None] = field(default=lambda: None)
    tape_began: float | None = None  # a GradientTape opened before any step ended (the first step's start)
    fit_calls: int = 0  # the script's own fit calls so far

    @property
    def first(self) -> tuple[Any, str]:
        """The first member's applier (``kerasscriptfixes.Apply``; None: the script as it runs) and value part."""
        return applied(self.spec.variant, self.spec.fixes[0] if self.spec.fixes else None)

    def loop_clock(self, entry: str) -> capturekit.StepClock | None:
        """The loop's clock, started by the first entry point reached (None: Keras' fit owns the run)."""
        if self.inside_fit or (capturekit.OWNER and capturekit.OWNER[0] != entry):
            return None
        if self.clock is None:
            capturekit.OWNER.append(entry)
            self.entry = entry
            self.clock = capturekit.StepClock(self.spec, self.sink, entry, self.sync, self.loop_info)
            if self.tape_began is not None and entry == ENTRY_TAPE:
                self.clock.begin(at=self.tape_began)
        return self.clock

    def loop_info(self) -> dict[str, Any]:
        batch = self.batch_sizes[0] if len(set(self.batch_sizes)) == 1 else None
        fix = self.first[0]
        return {
            "batch_size": batch,
            "samples_per_step": batch,
            "model": self.model_name,
            "applied": fix is None or not fix.rebatches or self.batch_patched,
        }


TURNS = 2  # turns per variant: A B C | C B A
# What compile() sets that a configuration's compiled state is made of (keras/src/trainers/trainer.py).
COMPILED_STATE = (
    "optimizer",
    "_compile_loss",
    "loss",
    "_compile_metrics",
    "_jit_compile",
    "_run_eagerly",
    "_loss_tracker",
    *COMPILED_ATTRS,
    "train_function",
    "_compiled_trainable_state",
    "compiled",
    "_compile_config",
)


@dataclass
class _Config:
    """One variant on the user's objects: the data to fit on, the compile settings changed, extra callbacks."""

    name: str
    x: Any
    y: Any
    batch: int
    compile: dict[str, Any] = field(default_factory=dict)
    sync_each: bool = False
    why_not: str | None = None
    steps: list[float] = field(default_factory=list)
    warmup: list[float] = field(default_factory=list)
    error: str | None = None


class FitMeasure:
    def __init__(self, keras: Any, model: Any, orig_fit: Any, args: tuple, kwargs: dict, st: KerasState) -> None:
        self.keras, self.model, self.orig_fit, self.st = keras, model, orig_fit, st
        bound = inspect.signature(orig_fit).bind(model, *args, **kwargs)
        bound.apply_defaults()
        self.call = dict(bound.arguments)
        self.call.pop("self", None)
        self.x: Any = self.call.get("x")
        self.y: Any = self.call.get("y")
        self.data_kind = data_kind(self.x)
        if self.data_kind == "generator":  # peek one batch (for its size), then hand it back first
            gen: Any = self.x
            first = next(gen)
            self.x = itertools.chain([first], gen)
            self._first = first
        self.batch = self._user_batch()
        self.n_samples = self._samples()
        self.spe_user = user_steps_per_call(model)
        self.states: dict[tuple, dict[str, Any]] = {(): self._snapshot()}

    # ------------------------------------------------------------------ what the user handed over
    def _user_batch(self) -> int:
        if self.data_kind == "arrays":
            return int(self.call.get("batch_size") or 32)
        try:
            if self.data_kind == "tfdata":
                first = next(iter(self.x.take(1)))
            elif self.data_kind == "pydataset":
                first = self.x[0]
            else:
                first = self._first
            leaf = self.keras.tree.flatten(first)[0]
            return int(leaf.shape[0])
        except Exception:  # noqa: BLE001 (an unknown batch is said as such: samples/s not claimed)
            return 0

    def _samples(self) -> int | None:
        """The samples in the user's arrays (None for other data)."""
        if self.data_kind != "arrays" or self.x is None:
            return None
        try:
            return int(len(self.keras.tree.flatten(self.x)[0]))
        except Exception:  # noqa: BLE001
            return None

    def _snapshot(self) -> dict[str, Any]:
        return {k: self.model.__dict__[k] for k in COMPILED_STATE if k in self.model.__dict__}

    def config(self, name: str, typed: dict[str, Any] | None = None) -> _Config:
        """Member ``name``'s configuration, by its applier (its typed variant's key, else its name)."""
        c = _Config(name, self.x, self.y, self.batch)
        fix, arg = applied(name, typed)
        if fix is not None:
            fix.fit(self, c, arg)
        elif name != "baseline":
            c.why_not = f"{name} is not a Keras fit variant"
        return c

    def jit_user(self) -> bool:
        return bool(self.model.__dict__.get("_jit_compile") or False)

    def per_call(self, c: _Config) -> int:
        """The steps one call of ``c``'s fit runs (Keras' ``steps_per_execution``)."""
        return steps_per_call(self, c)

    # ------------------------------------------------------------------ measuring
    def run(self) -> list[dict[str, Any]]:
        spec = self.st.spec
        members = enumerate((spec.variant, *spec.also))
        configs = [self.config(v, spec.fixes[i] if i < len(spec.fixes) else None) for i, v in members]
        live = [c for c in configs if c.why_not is None]
        per_turn = max(2, math.ceil(spec.steps / TURNS) + 1)
        setup = capturekit.since_start()
        capturekit.restart_ticks("fit")  # this fit's callback times its steps from here on
        backend = self.keras.backend.backend()
        capturekit.timing(entry=ENTRY_FIT, backend=backend, batch=self.batch, model=type(self.model).__name__)
        order = live + live[::-1]
        for i, c in enumerate(order):
            if capturekit.since_start() > spec.deadline_s and i >= len(live):
                break
            first = c not in order[:i]
            k = self.per_call(c)
            # executions of k steps: a few per turn when k > 1 (each is one sample)
            execs = per_turn if k == 1 else max(3, per_turn // k + 1)
            self._turn(c, execs + (spec.warmup_steps if first else 0), first)
        self._activate(())
        return [self._result(c, setup) for c in configs]

    def _activate(self, key: tuple) -> None:
        """The compiled state of configuration ``key`` (compile settings), compiled the first time."""
        if key in self.states:
            self.model.__dict__.update(self.states[key])
            return
        self.model.__dict__.update(self.states[()])
        kwargs = {**self.st.compiled[id(self.model)], "optimizer": self.model.optimizer, **dict(key)}
        self.st.inside_fit = True  # our own compile: the user's arguments stay as they were
        try:  # keras.Model's compile, whose arguments were recorded: a model may override compile with
            # its own signature (keras-io's GAN: compile(d_optimizer, g_optimizer, loss_fn))
            self.keras.Model.compile(self.model, **kwargs)
        finally:
            self.st.inside_fit = False

    def _turn(self, c: _Config, steps: int, first: bool) -> None:
        if c.error:
            return
        key = tuple(sorted(c.compile.items()))
        try:
            self._activate(key)
        except Exception as e:  # noqa: BLE001 (this variant's compile failed; the others go on)
            c.error = _error_line(e)
            return
        k = self.per_call(c)
        timer = _timer(self.keras, self.st.sync, c.sync_each)
        self.st.inside_fit = True
        try:
            self.orig_fit(self.model, **self._fit_args(c, steps * k, timer))
        except Exception as e:  # noqa: BLE001 (this variant failed; the others go on)
            c.error = _error_line(e)
            return
        finally:
            self.st.inside_fit = False
        self.states[key] = self._snapshot()
        gaps = [b - a for a, b in zip(timer.t, timer.t[1:])]
        w = self.st.spec.warmup_steps if first else 1
        c.warmup += gaps[:w]
        c.steps += gaps[w:]

    def _fit_args(self, c: _Config, steps: int, timer: Any) -> dict[str, Any]:
        args = dict(self.call)
        args.update(
            x=c.x,
            y=c.y,
            epochs=1,
            initial_epoch=0,
            steps_per_epoch=steps,
            verbose=0,
            validation_data=None,
            validation_split=0.0,
            callbacks=[*(self.call.get("callbacks") or []), timer],
        )
        if self.data_kind == "arrays":
            args["batch_size"] = c.batch
            if self.n_samples:  # never past the data's end (Keras would stop the epoch with a warning)
                args["steps_per_epoch"] = min(steps, max(1, -(-self.n_samples // c.batch)))
        for k in ("kwargs",):
            args.pop(k, None)
        return args

    def _result(self, c: _Config, setup: float) -> dict[str, Any]:
        spec = self.st.spec
        k = self.per_call(c)
        base: dict[str, Any] = {
            "entry": ENTRY_FIT,
            "variant": c.name,
            "model": type(self.model).__name__,
            "batch_size": c.batch or None,
            "samples_per_step": c.batch * k if c.batch else None,
            "setup_s": setup,
            "data": self.data_kind,
            **reported(self, c),  # the fixes' settings its fit ran with (steps_per_execution, jit_compile)
            "backend": self.keras.backend.backend(),
            "samples": self.n_samples,
        }
        if c.why_not is not None:
            return capturekit.result(spec, status="not_applicable", why_not=c.why_not, **base)
        if c.error is not None:
            return capturekit.result(spec, status="error", error=c.error, **base)
        return capturekit.result(spec, warmup_s=c.warmup, step_s=c.steps, **base)


def _error_line(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"


def _timer(keras: Any, sync: Any, sync_each: bool) -> Any:
    class Timer(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.t: list[float] = []

        def on_train_batch_begin(self, batch, logs=None):  # noqa: ANN001, ANN201
            sync()
            self.t.append(capturekit.now())
            capturekit.tick("fit", self.t[-1])

        def on_epoch_end(self, epoch, logs=None):  # noqa: ANN001, ANN201
            sync()
            self.t.append(capturekit.now())
            capturekit.tick("fit", self.t[-1])

    class ReadEach(Timer):
        def on_train_batch_end(self, batch, logs=None):  # noqa: ANN001, ANN201
            if logs and "loss" in logs:
                float(logs["loss"])

    return ReadEach() if sync_each else Timer()


def data_kind(x: Any) -> str:
    import sys

    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(x, tf.data.Dataset):
        return "tfdata"
    if inspect.isgenerator(x) or (hasattr(x, "__next__") and not hasattr(x, "__getitem__")):
        return "generator"
    keras = sys.modules["keras"]
    if isinstance(x, keras.utils.PyDataset):
        return "pydataset"
    return "arrays"
