"""Capture of a user's plain-JAX, optax or Flax training script (``whichdevice diagnose SCRIPT.py``).

``install(spec, sink)`` runs in the script's child before the script (the contract:
``frameworks/contracts.py``); it imports nothing of JAX: ``capturekit.after_import`` waits for the
script's own ``import jax`` (and ``optax``, ``flax``), then patches:

- ``jax.jit``: each function it compiles is wrapped. A jitted function whose trace computed a
  gradient (``jax.grad``, ``jax.value_and_grad``, also through ``nnx.value_and_grad``) or applied an
  optax update (``optax.apply_updates``, which Flax's ``TrainState.apply_gradients`` and
  ``nnx.Optimizer.update`` call) is the loop's train step: each later call of it is one step. An
  ``nnx.jit`` step is found the same way, through the ``jax.jit`` that Flax calls underneath;
- ``optax.apply_updates`` called outside any jitted function (an eager loop): each call ends a step.

A step runs from the previous step's end to ``jax.block_until_ready`` on this step's outputs (JAX
dispatches asynchronously, on the CPU too, so the clock is read after the device has finished), so
it holds the loop's own work between steps (slicing the next batch: ``data_wait_s``). Per timed step
it also counts host-to-device copies (NumPy arrays passed into the step, ``jax.device_put``), host
reads (``float(loss)``, ``.item()``, ``np.asarray`` of a device array) and recompiles of the step
(its jit cache growing after the warm-up: a batch of another shape).

The batch is the leading dimension the step's data arguments share (an argument whose arrays all
have the same leading dimension; the parameters' do not). A batch variant (its applier in
``scriptfixes.py``, by its typed variant's key) re-batches the step itself: those arguments are tiled (or cut) to K rows before each call, since the script makes
its own batches; the step's first call is at the script's batch (it is how the step is found), so
the re-batched step compiles in the warm-up.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from whichdevice.frameworks.common import capturekit
from whichdevice.frameworks.contracts import CaptureDone, CaptureSpec
from whichdevice.frameworks.jax import steptrace
from whichdevice.frameworks.jax.scriptfixes import ENTRY_JIT, applied

ENTRY_EAGER = "optax.apply_updates"
ENTRIES = (ENTRY_JIT, ENTRY_EAGER)
FRAMEWORK = "jax"


@dataclass
class Turns:
    """The step's calls dealt to the run's variants in turn (``spec.variant``, then ``spec.also``:
    variants that differ only in what this capture applies, so they share one run of the script):
    call i after the first goes to the i-th live variant, round-robin, so slow drift hits every
    variant alike. Each variant has its own warm-up (its batch compiles at its first call), timed
    steps, waits for data, copies, reads and recompiles; the first call (where the step is found,
    at the script's own batch) is a warm-up step of the baseline only."""

    spec: CaptureSpec
    variants: list[str]
    warm: dict[str, list[float]] = field(default_factory=dict)
    steps: dict[str, list[float]] = field(default_factory=dict)
    waits: dict[str, list[float]] = field(default_factory=dict)
    h2d: dict[str, dict[str, int]] = field(default_factory=dict)
    syncs: dict[str, dict[str, float]] = field(default_factory=dict)
    recompiles: dict[str, int] = field(default_factory=dict)
    live: list[str] = field(default_factory=list)
    calls: int = 0  # step calls ended
    current: str | None = None  # the variant of the step under way (None: the first call)
    last_end: float | None = None
    first_begin: float | None = None
    began: float | None = None
    done: bool = False

    def __post_init__(self) -> None:
        for v in self.variants:
            self.warm[v], self.steps[v], self.waits[v] = [], [], []
            self.h2d[v] = {"count": 0, "bytes": 0, "pinned": 0}
            self.syncs[v] = {"count": 0, "s": 0.0}
            self.recompiles[v] = 0
        self.live = list(self.variants)

    def upcoming(self) -> str | None:
        """The variant the next step call goes to (None: the first call, or none left)."""
        if not self.calls or not self.live:
            return None
        return self.live[(self.calls - 1) % len(self.live)]

    def timing(self) -> bool:
        """The step under way (or the next one) is a timed step of its variant: copies and reads count."""
        v = self.current if self.began is not None else self.upcoming()
        return v is not None and not self.done and len(self.warm[v]) >= self.spec.warmup_steps

    def begin(self, at: float) -> str | None:
        if self.began is None:
            self.current = self.upcoming()
            self.began = at
            capturekit.step_began()
            if self.first_begin is None:
                self.first_begin = at
            elif self.current is not None and self.last_end is not None and self.timing():
                self.waits[self.current].append(at - self.last_end)
        return self.current

    def end(self, at: float) -> bool:
        """The step under way ended at ``at``: kept, as warm-up or timed; True once every live
        variant has its steps (or the deadline passed with at least 3 each)."""
        capturekit.step_ended()
        start = self.last_end if self.last_end is not None else (self.first_begin or at)
        v, self.began, self.calls, self.last_end = self.current, None, self.calls + 1, at
        if v is None:  # the first call: the baseline's first warm-up step (its compile)
            if "baseline" in self.warm:
                self.warm["baseline"].append(at - start)
            return False
        (self.warm[v] if len(self.warm[v]) < self.spec.warmup_steps else self.steps[v]).append(at - start)
        if all(capturekit.settled(self.steps[x], self.spec.steps) for x in self.live):
            return True
        late = capturekit.since_start() > self.spec.deadline_s
        return late and all(len(self.steps[x]) >= 3 for x in self.live)

    def drop(self, variant: str) -> None:
        if variant in self.live:
            self.live.remove(variant)


@dataclass
class JaxState:
    """What one script run's capture knows (one per run)."""

    spec: CaptureSpec
    sink: Callable[[dict], None]
    jax: Any = None
    turns: Turns | None = None
    entry: str | None = None
    depth: int = 0  # inside a wrapped jitted call (its trace, when Python runs at all)
    met: str | None = None  # what the trace of the outermost jitted call met (a gradient, an optax update)
    step_ids: set[int] = field(default_factory=set)  # the wrapped functions found to be the step
    step_name: str | None = None
    model: str | None = None  # the Flax module trained, where its optimizer or train state names it
    batch: int | None = None
    last_out: Any = None
    reading: bool = False  # a host read in progress (a nested one is not counted twice)
    fixes: dict[str, tuple[Any, str]] = field(default_factory=dict)  # variant -> its applier and value part

    def aside(self) -> bool:
        """Another capture measures this run (Keras on JAX jits its own train step, which computes
        gradients: Keras' fit capture times that), so plain JAX's hooks stay out of the way."""
        if capturekit.OWNER and capturekit.OWNER[0] not in ENTRIES:
            return True
        return _keras_on_jax()

    @property
    def done(self) -> bool:
        return self.turns is not None and self.turns.done

    def timing(self) -> bool:
        return self.turns is not None and self.turns.timing()

    def counted(self) -> str | None:
        """The variant whose copies and reads are being counted now (its timed steps), if any."""
        t = self.turns
        if t is None or not t.timing():
            return None
        return t.current if t.began is not None else t.upcoming()

    def start(self, entry: str, name: str | None) -> Turns:
        """The step found: its turns (the first call's start is set by the caller)."""
        self.entry, self.step_name = entry, name
        capturekit.OWNER.append(entry)
        capturekit.timing(entry=entry, framework=FRAMEWORK)
        members = [self.spec.variant, *self.spec.also]
        for v, typed in zip(members, [*self.spec.fixes, *[None] * len(members)]):
            self.fixes.setdefault(v, applied(v, typed))
        variants = list(self.fixes)
        self.turns = Turns(self.spec, variants)
        capturekit.FINISHERS.append(self.flush)
        return self.turns

    def rebatch(self, variant: str | None) -> int | None:
        """The batch ``variant``'s applier re-batches the step to (None: the script's own)."""
        fix, arg = self.fixes.get(variant or "", (None, ""))
        return fix.rows(arg) if fix is not None else None

    def rows(self, variant: str | None) -> int | None:
        """The batch a variant's step runs at."""
        k = self.rebatch(variant)
        return self.batch if k is None else k

    def result(self, variant: str) -> dict[str, Any]:
        t = self.turns
        assert t is not None
        return capturekit.result(
            self.spec,
            entry=self.entry,
            variant=variant,
            warmup_s=list(t.warm[variant]),
            step_s=list(t.steps[variant]),
            setup_s=max(0.0, (t.first_begin or capturekit.now()) - capturekit.T0),
            data_wait_s=list(t.waits[variant]),
            model=self.model or self.step_name,
            batch_size=self.batch,
            samples_per_step=self.rows(variant),
            h2d=dict(t.h2d[variant]),
            syncs={"count": int(t.syncs[variant]["count"]), "s": float(t.syncs[variant]["s"])},
            recompiles=t.recompiles[variant],
            framework=FRAMEWORK,
            data_source=None,
            rebatched="step" if self.rebatch(variant) is not None else None,
            step_trace=steptrace.result(self) if variant == "baseline" else None,  # the no-GPU prediction's
        )

    def finish(self) -> None:
        """Every live variant's result to the sink, then the script is stopped."""
        t = self.turns
        assert t is not None
        t.done = True
        for v in t.live:
            self.sink(self.result(v))
        raise CaptureDone()

    def flush(self) -> None:
        """The script ended first: the variants with a timed step hand over what they have."""
        t = self.turns
        if t is None or t.done:
            return
        t.live = [v for v in t.live if t.steps[v]]
        if t.live:
            self.finish()

    def not_applicable(self, variants: list[str], why: str) -> None:
        """Variants that do not fit the script: said, and left out of the turns; the script stops
        when none is left."""
        t = self.turns
        assert t is not None
        for v in variants:
            t.drop(v)
            self.sink(capturekit.result(self.spec, status="not_applicable", entry=self.entry, variant=v, why_not=why))
        if not t.live:
            t.done = True
            raise CaptureDone()

    def sync(self) -> None:
        if self.jax is not None and self.last_out is not None:
            self.jax.block_until_ready(self.last_out)

    def ended(self) -> None:
        """A step call returned: the device synchronized, the clock read, the result sent when due."""
        t = self.turns
        assert t is not None
        self.sync()
        if t.end(capturekit.now()):
            self.finish()


def install(spec: CaptureSpec, sink: Callable[[dict], None]) -> None:
    """Patch JAX's, optax's and Flax's entry points for ``spec`` as each is imported by the script."""
    st = JaxState(spec=spec, sink=sink)
    capturekit.after_import("jax", lambda jax: _patch_jax(jax, st))
    capturekit.after_import("optax", lambda optax: _patch_optax(optax, st))
    capturekit.after_import("flax.training.train_state", lambda m: _patch_train_state(m, st))
    capturekit.after_import("flax.nnx", lambda nnx: _patch_nnx(nnx, st))


# ------------------------------------------------------------------ jax


class _Jitted:
    """A function ``jax.jit`` compiled, wrapped: calls go through :func:`_call`; everything else
    (``lower``, ``trace``, ``eval_shape``, ``_cache_size``) is the jitted function's own."""

    def __init__(self, st: JaxState, inner: Any, fun: Any) -> None:
        self._st, self._inner = st, inner
        self.__wrapped__ = fun
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                object.__setattr__(self, attr, getattr(fun, attr))
            except (AttributeError, TypeError):
                pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # a jitted method binds as the jitted function does
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._st, self, args, kwargs)


def _patch_jax(jax: Any, st: JaxState) -> None:
    st.jax = jax
    orig_jit = jax.jit

    @functools.wraps(orig_jit)
    def jit(fun: Any = None, /, **kwargs: Any) -> Any:
        if fun is None:  # jax.jit(static_argnums=...) as a decorator factory
            return lambda f: jit(f, **kwargs)
        return _Jitted(st, orig_jit(fun, **kwargs), fun)

    jax.jit = jit
    for name in ("grad", "value_and_grad"):
        setattr(jax, name, _marking(getattr(jax, name), st, f"jax.{name}"))
    _patch_device_put(jax, st)
    _patch_reads(st)


def _marking(transform: Callable[..., Any], st: JaxState, what: str) -> Callable[..., Any]:
    """``jax.grad``-like: the function it returns marks the jitted call whose trace calls it."""

    @functools.wraps(transform)
    def make(*args: Any, **kwargs: Any) -> Any:
        g = transform(*args, **kwargs)

        @functools.wraps(g)
        def marked(*a: Any, **k: Any) -> Any:
            if st.depth and st.met is None:
                st.met = what
            elif not st.depth and st.entry == ENTRY_EAGER and st.turns is not None:
                st.turns.begin(capturekit.now())  # an eager loop's step starts at its gradient
            return g(*a, **k)

        return marked

    return make


def _traced(jax: Any, args: Any) -> bool:
    """Whether a call's arguments are tracers (called inside a transform we did not wrap)."""
    tracer = jax.core.Tracer
    return any(isinstance(leaf, tracer) for leaf in jax.tree_util.tree_leaves(args))


def _call(st: JaxState, w: _Jitted, args: tuple, kwargs: dict) -> Any:
    """One call of a jitted function: passed through, unless it is (or turns out to be) the step."""
    if st.depth or st.jax is None or st.done or st.aside():
        return w._inner(*args, **kwargs)
    known = id(w) in st.step_ids
    if not known and st.turns is not None:  # the step is another function: this one is the loop's own work
        return w._inner(*args, **kwargs)
    t0 = capturekit.now()
    if known:
        assert st.turns is not None
        args = _prepare(st, st.turns.begin(t0), args)
    cache = _cache_size(w)
    st.depth, st.met = st.depth + 1, None
    try:
        out = w._inner(*args, **kwargs)
    finally:
        st.depth -= 1
    if not known:
        if st.met is None or _traced(st.jax, (args, kwargs)):
            return out
        st.step_ids.add(id(w))  # its trace computed a gradient or applied an update: the loop's step
        st.start(ENTRY_JIT, getattr(w, "__name__", None)).begin(t0)
        st.batch = _batch_of(st.jax, args)
        steptrace.remember(st, w, args, kwargs, _batch_args(st.jax, args))  # its shapes, for the pre-flight's trace
        _refuse_misfits(st)
    elif cache is not None and st.timing():
        grown = (_cache_size(w) or cache) - cache
        if grown > 0 and st.turns is not None and st.turns.current is not None:
            st.turns.recompiles[st.turns.current] += grown
    st.last_out = out
    st.ended()
    return out


def _cache_size(w: _Jitted) -> int | None:
    """The jitted function's cache of compiled executables: an entry added in a timed step (a
    batch of another shape, a Python scalar that changed) is a recompile."""
    try:
        return int(w._inner._cache_size())
    except Exception:  # noqa: BLE001 (a jax without the cache's size: no recompiles counted)
        return None


def _refuse_misfits(st: JaxState) -> None:
    """The variants that cannot apply to this step, said at its first call."""
    assert st.turns is not None
    unknown = [v for v in st.turns.variants if v != "baseline" and st.fixes[v][0] is None]
    if unknown:
        st.not_applicable(unknown, "not a fix the JAX capture applies (it re-batches the step only)")
    batches = [v for v in st.turns.live if st.rebatch(v) is not None]
    if batches and not st.batch:
        st.not_applicable(
            batches,
            "the step's inputs have no batch dimension the capture could tile (no argument shares a leading size)",
        )


def _batch_args(jax: Any, args: tuple) -> list[int]:
    """The positions of the step's data arguments: every array of the argument (at least one) has
    the same leading dimension, and it is the most common such dimension among the arguments."""
    dims: dict[int, int] = {}
    found: list[tuple[int, int]] = []
    for i, a in enumerate(args):
        leaves = [x for x in jax.tree_util.tree_leaves(a) if getattr(x, "ndim", 0) >= 1]
        if not leaves or len(leaves) > 16:
            continue
        lead = {int(x.shape[0]) for x in leaves}
        if len(lead) == 1:
            n = lead.pop()
            found.append((i, n))
            dims[n] = dims.get(n, 0) + 1
    if not dims:
        return []
    best = max(dims, key=lambda n: (dims[n], n))
    return [i for i, n in found if n == best]


def _batch_of(jax: Any, args: tuple) -> int | None:
    where = _batch_args(jax, args)
    if not where:
        return None
    leaf = next(x for x in jax.tree_util.tree_leaves(args[where[0]]) if getattr(x, "ndim", 0) >= 1)
    return int(leaf.shape[0])


def _tile(jax: Any, x: Any, k: int) -> Any:
    """``x`` with ``k`` rows: its rows repeated (or cut), where it lives (NumPy stays NumPy, so the
    step's copy to the device is as the script's)."""
    import numpy as np

    if getattr(x, "ndim", 0) < 1:
        return x
    n = int(x.shape[0])
    reps = -(-k // n)
    if isinstance(x, np.ndarray):
        return np.concatenate([x] * reps)[:k] if reps > 1 else x[:k]
    jnp = jax.numpy
    return jnp.concatenate([x] * reps)[:k] if reps > 1 else x[:k]


def _prepare(st: JaxState, variant: str | None, args: tuple) -> tuple:
    """A step's arguments: re-batched for a batch variant, and its host arrays counted as copies
    to the device in the variant's timed steps."""
    jax = st.jax
    k = st.rebatch(variant)
    if k is not None:
        where = set(_batch_args(jax, args))
        args = tuple(
            jax.tree_util.tree_map(lambda x: _tile(jax, x, k), a) if i in where else a for i, a in enumerate(args)
        )
    _count_copies(st, args)
    return args


def _count_copies(st: JaxState, tree: Any) -> None:
    """NumPy arrays going to the device (into the step, or through ``jax.device_put``) in a timed step."""
    v = st.counted()
    if v is None or st.turns is None:
        return
    import numpy as np

    for leaf in st.jax.tree_util.tree_leaves(tree):
        if isinstance(leaf, np.ndarray) and leaf.size:
            st.turns.h2d[v]["count"] += 1
            st.turns.h2d[v]["bytes"] += int(leaf.nbytes)


def _patch_device_put(jax: Any, st: JaxState) -> None:
    orig = jax.device_put

    @functools.wraps(orig)
    def device_put(x: Any, *args: Any, **kwargs: Any) -> Any:
        if not st.depth:
            _count_copies(st, x)
        return orig(x, *args, **kwargs)

    jax.device_put = device_put


def _patch_reads(st: JaxState) -> None:
    """A device array read on the host (``float``, ``int``, ``bool``, ``.item()``, ``.tolist()``,
    ``np.asarray``) waits for the device: counted with its time in the timed steps."""
    from jax._src.array import ArrayImpl

    for name in ("__float__", "__int__", "__bool__", "__index__", "item", "tolist", "__array__"):
        orig = getattr(ArrayImpl, name, None)
        if orig is None:
            continue
        setattr(ArrayImpl, name, _reading(orig, st))


def _reading(orig: Callable[..., Any], st: JaxState) -> Callable[..., Any]:
    @functools.wraps(orig)
    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        v = None if st.reading or st.depth else st.counted()
        if v is None or st.turns is None:
            return orig(self, *args, **kwargs)
        syncs = st.turns.syncs[v]
        st.reading = True
        t = capturekit.now()
        try:
            return orig(self, *args, **kwargs)
        finally:
            syncs["count"] += 1
            syncs["s"] += capturekit.now() - t
            st.reading = False

    return read


# ------------------------------------------------------------------ optax, Flax


def _patch_optax(optax: Any, st: JaxState) -> None:
    """``optax.apply_updates``: inside a jitted trace it marks the step; called eagerly (no jit),
    each call ends a step."""
    orig = optax.apply_updates

    @functools.wraps(orig)
    def apply_updates(params: Any, updates: Any) -> Any:
        if st.depth:
            st.met = ENTRY_EAGER
            return orig(params, updates)
        out = orig(params, updates)
        if st.step_ids or st.jax is None or st.aside() or _traced(st.jax, params):
            return out  # a jitted step is the entry, or this runs inside a transform
        turns = st.turns
        if turns is None:
            turns = st.start(ENTRY_EAGER, None)
            turns.begin(capturekit.now())
            misfits = [v for v in turns.variants if v != "baseline"]
            if misfits:
                st.not_applicable(
                    misfits, "an eager loop (no jitted step) has no step inputs the capture could re-batch"
                )
        elif st.done:
            return out
        turns.begin(capturekit.now())
        st.last_out = out
        st.ended()
        return out

    optax.apply_updates = apply_updates
    if getattr(optax, "_src", None) is not None and hasattr(optax._src, "update"):
        optax._src.update.apply_updates = apply_updates  # Flax calls it as optax.apply_updates; others import it


def _patch_train_state(module: Any, st: JaxState) -> None:
    """Flax linen's ``TrainState.apply_gradients``: the module it trains (its ``apply_fn``'s owner)."""
    cls = module.TrainState
    orig = cls.apply_gradients

    @functools.wraps(orig)
    def apply_gradients(self: Any, *args: Any, **kwargs: Any) -> Any:
        owner = getattr(getattr(self, "apply_fn", None), "__self__", None)
        if owner is not None and st.model is None:
            st.model = type(owner).__name__
        return orig(self, *args, **kwargs)

    cls.apply_gradients = apply_gradients


def _patch_nnx(nnx: Any, st: JaxState) -> None:
    """Flax nnx's ``Optimizer.update(model, grads)``: the module it trains."""
    cls = nnx.Optimizer
    orig = cls.update

    @functools.wraps(orig)
    def update(self: Any, *args: Any, **kwargs: Any) -> Any:
        model = args[0] if args and isinstance(args[0], nnx.Module) else getattr(self, "model", None)
        if model is not None and st.model is None:
            st.model = type(model).__name__
        return orig(self, *args, **kwargs)

    cls.update = update


def _keras_on_jax() -> bool:
    """Whether Keras is imported with the JAX backend, whose fit jits its own train step. Keras on
    TensorFlow jits nothing of JAX, and TensorFlow imports it (Flax's TensorBoard writer imports
    TensorFlow): a Flax loop beside it was left uncaptured."""
    keras = sys.modules.get("keras")
    if keras is None:
        return False
    try:
        return str(keras.config.backend()) == "jax"
    except Exception:  # noqa: BLE001 (a Keras half imported or too old to say: stay aside, as before)
        return True
