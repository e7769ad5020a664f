"""JAX hooks of the audit child (``audit/child.py``): the same counters as ``tf_hooks.py``.

:func:`install` runs when the script's ``import jax`` finishes (:class:`JaxHookFinder`):

- :func:`hook_jit`: ``jax.jit`` returns a wrapper of the compiled function — each call from
  outside another jitted call is a step (``fn_calls``), the first call of a new argument
  signature is a trace + XLA compile (``traces``, ``xla_compiles``, its seconds as ``compile``
  set-up), the output's device goes to ``ops_by_device``, and the last arguments of each
  (function, device) are kept for the interleaved re-run;
- :func:`hook_host_reads`: ``block_until_ready`` (method and function), ``np.asarray(x)``,
  ``.item()``, ``float(x)``, ``.tolist()`` — the points where the host waits.

JAX dispatches asynchronously on every backend, the CPU included, so a clock read after a
jitted call with no ``block_until_ready`` times the dispatch: the classic JAX trap, visible
(and measured) on this CPU-only machine. Eager ``jnp`` calls outside ``jax.jit`` are not
counted one by one (each is a small jitted primitive; counting them would cost more than they do).
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from whichdevice.frameworks.common import audit as common
from whichdevice.frameworks.common.audit import HostSync, RerunItem, sync_runtime_names

if TYPE_CHECKING:
    from whichdevice.frameworks.common.auditstate import State

_perf = time.perf_counter  # imported before the child patches the clocks
_local = threading.local()


# Each call after which the host has waited for the device (common.HostSync): JAX dispatches
# asynchronously on every backend, so each of these ends a wait for the jitted work queued before it.
HOST_SYNCS: tuple[HostSync, ...] = (
    HostSync(
        ".block_until_ready() / jax.block_until_ready(x)",
        "function",
        ("block_until_ready",),
        "waits until the array is computed (JAX's documented way to time)",
        runtime=("block_until_ready",),
    ),
    HostSync(
        "np.asarray(x) / np.array(x)",
        "host_function",
        ("asarray", "array"),
        "a NumPy array of the values: copied to the host when computed",
        within="np|numpy|onp",
        runtime=("__array__",),
    ),
    HostSync("jax.device_get(x)", "function", ("device_get",), "copies the values to the host when computed"),
    HostSync(".item()", "method", ("item",), "a Python number of the value, read on the host", runtime=("item",)),
    HostSync(".tolist()", "method", ("tolist",), "Python values, read on the host", runtime=("tolist",)),
    *common.python_reads(
        "x",
        "a Python number of the value, read on the host",
        "formatting an array's values copies them to the host first",
    ),
)


def jax_device(dev: Any) -> str:
    """CpuDevice(id=0) -> 'CPU:0'; a CUDA device -> 'GPU:0'."""
    platform = str(getattr(dev, "platform", "cpu")).lower()
    kind = {"cpu": "CPU", "gpu": "GPU", "cuda": "GPU", "rocm": "GPU"}.get(platform, platform.upper())
    return f"{kind}:{getattr(dev, 'id', 0)}"


def _signature(args: tuple, kwargs: dict) -> tuple:
    def sig(x):
        shape = getattr(x, "shape", None)
        return (tuple(shape), str(getattr(x, "dtype", ""))) if shape is not None else (type(x).__name__,)

    return tuple(sig(a) for a in args) + tuple((k, sig(v)) for k, v in sorted(kwargs.items()))


def _out_device(out: Any) -> str:
    leaves = out if isinstance(out, (list, tuple)) else [out]
    for leaf in leaves:
        devs = getattr(leaf, "devices", None)
        if callable(devs):
            try:
                return jax_device(next(iter(devs())))
            except Exception:
                return ""
    return ""


def _count_device(st: State, dev: str) -> None:
    """A jitted call's output on ``dev`` ('' when unknown): counted there, GPU work marked."""
    if dev:
        st.ops_by_device[dev] = st.ops_by_device.get(dev, 0) + 1
        if dev.startswith("GPU"):
            st.c["last_gpu_work"] = st.seq


def _count_compile(st: State, dt: float) -> None:
    """The first call of a new argument signature: a trace and an XLA compile, its seconds set-up."""
    st.c["traces"] += 1
    st.c["xla_compiles"] += 1
    st.c["setup_compile_s"] += dt


def hook_jit(jax, st: State) -> None:
    orig_jit = jax.jit

    def jit(fun=None, *jargs, **jkwargs):
        if fun is None:  # @jax.jit(static_argnums=...)
            return lambda f: jit(f, *jargs, **jkwargs)
        compiled = orig_jit(fun, *jargs, **jkwargs)
        seen: set[tuple] = set()
        name = getattr(fun, "__name__", "fn")

        @functools.wraps(fun)
        def call(*args, **kwargs):
            depth = getattr(_local, "depth", 0)
            if depth or not st.active:
                return compiled(*args, **kwargs)
            _local.depth = 1
            t0 = _perf()
            try:
                out = compiled(*args, **kwargs)
            finally:
                _local.depth = 0
            dt = _perf() - t0
            dev = _out_device(out)
            key = f"{id(call)}@{dev}"
            sig = _signature(args, kwargs)
            with st.lock:
                st.seq += 1
                st.c["fn_calls"] += 1
                st.c["last_work"] = st.seq
                _count_device(st, dev)
                if sig not in seen:  # a new signature: trace + XLA compile inside this call
                    seen.add(sig)
                    _count_compile(st, dt)
                common.log_call(st, key, name, True, (compiled, args, kwargs))
            return out

        for attr in ("lower", "trace", "eval_shape", "clear_cache"):
            if hasattr(compiled, attr):
                setattr(call, attr, getattr(compiled, attr))
        return call

    setattr(jit, "__wrapped__", orig_jit)  # the original, as functools.wraps keeps it
    jax.jit = jit


def hook_host_reads(jax, st: State) -> None:
    from jax._src import array

    cls = array.ArrayImpl

    for name in sorted(sync_runtime_names(HOST_SYNCS)):
        orig = getattr(cls, name, None)
        if orig is not None:
            try:
                setattr(cls, name, common.read_hook(orig, st))
            except Exception:
                pass
    jax.block_until_ready = common.read_hook(jax.block_until_ready, st, levels=2)
    jax.device_get = common.read_hook(jax.device_get, st, levels=2)
    hook_numpy_copies(cls, st)


def hook_numpy_copies(cls: Any, st: State) -> None:
    """``np.asarray(x)`` / ``np.array(x)`` of a JAX array: on the CPU NumPy takes the values through the
    buffer protocol, never calling ``__array__``, so the host's wait is counted at NumPy's own functions
    (a jax.Array argument only; NumPy's other calls pass through unchanged)."""
    import numpy as np

    def wrap(orig: Any) -> Any:
        def copy(obj: Any, *a: Any, **k: Any) -> Any:
            out = orig(obj, *a, **k)
            if isinstance(obj, cls):
                common.mark_read(st, levels=2)
            return out

        copy.__wrapped__ = orig  # type: ignore[attr-defined]
        return copy

    for name in ("asarray", "array"):
        orig = getattr(np, name)
        if getattr(orig, "__wrapped__", None) is None:
            setattr(np, name, wrap(orig))


def install(jax, st: State) -> None:
    """The framework is decided after the script (``child.main``): TensorFlow's own import can
    import JAX, and a TensorFlow script must stay a TensorFlow audit."""
    hook_jit(jax, st)
    hook_host_reads(jax, st)
    st.jax_installed = True


def record_devices(st: State) -> None:
    """After the script (asking earlier would start the backends before the script does)."""
    jax = sys.modules.get("jax")
    if jax is None:
        return
    try:
        devs = jax.devices()
        st.physical = {
            "CPU": sum(1 for d in devs if d.platform == "cpu") or 1,
            "GPU": sum(1 for d in devs if d.platform in ("gpu", "cuda", "rocm")),
        }
    except Exception:
        st.physical = {"CPU": 1, "GPU": 0}


# ---------------------------------------------------------------- the part's contract (contracts.Audit)


finders, installed = common.watched("jax", "jax_installed", install)


def adopt(st: State) -> None:
    st.framework = "jax"
    record_devices(st)


def stop(st: State) -> None:
    """Nothing: the jit wrappers count only while the state is active."""


def op_cost() -> dict:
    """Not measured: JAX's eager jnp ops are not hooked one by one."""
    return {}


def gpu_cost() -> dict | None:
    """A jitted 1-element add on the first GPU, waited for with ``block_until_ready``; the read is ``float()``."""
    import jax

    gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda", "rocm")]
    if not gpus:
        return None
    add = jax.jit(lambda a: a + 1)
    box = [jax.device_put(jax.numpy.zeros(1), gpus[0])]

    def step() -> None:
        box[0] = add(box[0])

    name = str(getattr(gpus[0], "device_kind", "") or "GPU")
    return common.launch_cost(step, lambda: float(add(box[0])[0]), lambda: box[0].block_until_ready(), name, "jax")


def rerun_setup(st: State, budget_s: float) -> None:
    """Nothing: JAX has no first Session.run to re-run."""


def rerun_side(st: State, m: Any) -> tuple[list[RerunItem], str | None]:
    """The jitted calls inside measurement ``m``, with the arguments of their last call."""
    counts = common.calls_in(st, m)
    if not counts:
        return [], (
            "the timed work calls no jax.jit function (only jitted calls are re-run; JAX's eager jnp ops are not "
            "recorded one by one)"
        )
    items = []
    for key, n in counts.items():
        fn, args, kwargs = st.torch_last[key]
        items.append(
            RerunItem(
                key=key,
                fn=functools.partial(fn, *args, **kwargs),
                calls=n,
                function=f"jax.jit({getattr(fn, '__name__', 'fn')})",
                ran_on=key.split("@", 1)[1],
            )
        )
    return items, None


# ---------------------------------------------------------------- the audit's words for JAX

# What the shared counters and the findings are called in JAX's terms (``present/auditwords.py``).
WORDS: dict[str, str] = {
    "sees": "JAX sees {gpu} GPU device(s)",
    "name": "JAX",
    "eager": "JAX",
    "step": "jax.jit call",
    "trace": "jax.jit trace",
    "setup.trace": "jax.jit tracing (first calls)",
    "setup.compile": "jax.jit compilation: trace and XLA compile (first calls)",
    "fix.soft_placed": "Check jax.devices() before timing and label results by the array's device (x.devices()).",
    "sync.reads": "no block_until_ready(), no np.asarray(), no .item()",
    "sync.here": (
        " JAX dispatches asynchronously on the CPU too, so this is measured here: the clock stopped while "
        "the last jitted call was still running."
    ),
    "fix.sync": "Call result.block_until_ready() (or jax.block_until_ready(result)) before the second clock read.",
    "label": "the line that reports this time says GPU, but nothing in this timing ran on a GPU: the work ran on {ran}.",
    "fix.label": (
        "Label results by where the arrays are (x.devices()), and put the work there first "
        "(jax.device_put(x, jax.devices('gpu')[0]))."
    ),
    "fix.setup": (
        "Do the set-up before the first clock read: call the jitted function once with the same shapes "
        "(it compiles) and block_until_ready() — then start the clock and time the steady calls only."
    ),
    "fix.host_inputs": "Put the data on the device once before the clock starts (jax.device_put(x)).",
    "fix.dispatch": "Batch the work into few large ops (jax.vmap), and jax.jit the loop so it is one compiled call.",
    "missing.did": (
        "this JAX has no GPU backend (the CPU-only jaxlib, or no CUDA plugin), so asking for a GPU device "
        "stopped the script"
    ),
    "fix.missing": (
        "Install the CUDA build (pip install -U 'jax[cuda12]') on a machine with a GPU, or pick devices with "
        "jax.devices() and label results by the array's device (x.devices())."
    ),
    "latent.waits": "no block_until_ready(), np.asarray(), .item()",
    "latent.async": "GPU work runs",
    "fix.latent": (
        "Call result.block_until_ready() before each clock read; call the jitted function once to compile "
        "before timing; and give the GPU work in few large ops (jax.vmap over the small arrays) before "
        "comparing it with the CPU."
    ),
    "rerun": "its jax.jit calls",
}
# A script with no GPU here has no device-asked blocks: its series are compared in the order it wrote them.
SERIES_IN_ORDER = True
# What JAX says when it has no GPU backend (rules.rule_missing_device_failure).
MISSING_DEVICE = (
    r"Unknown backend|no platforms that are instances of gpu|Backend '?(?:gpu|cuda)'? failed to initialize|"
    r"Unable to initialize backend '?(?:cuda|gpu)"
)
