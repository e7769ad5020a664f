"""Every clock a benchmark script reads, followed by the audit child (``audit/child.py``).

A read *from the script's own file* is recorded (``State.stamp``) with a snapshot of the
counters; ``end - start`` between two recorded reads is an interval (a measurement). The clocks:

- ``time.time``, ``time.perf_counter``, ``time.monotonic``, ``time.process_time``: the call
  returns a :class:`Stamp`, a ``float`` that records which two reads a subtraction used;
- ``timeit.default_timer`` (the same ``Stamp``), and ``timeit.timeit`` / ``timeit.repeat`` /
  ``Timer.timeit`` / ``Timer.repeat`` called by the script: each timed run is an interval, its
  seconds the value ``timeit`` returns;
- ``datetime.datetime.now()`` / ``utcnow()``: a ``datetime`` subclass whose difference records
  the interval (only when the script mentions ``datetime``, so libraries keep the plain class);
- ``torch.cuda.Event(enable_timing=True)``: ``record()`` snapshots, ``elapsed_time(end)`` is
  the interval (``torch_hooks.hook_cuda_events``);
- notebooks' ``%timeit`` / ``%%timeit`` / ``%time`` / ``%%time``: translated by
  ``audit/notebook.py`` into calls of :class:`Magics`, which time the code like IPython and
  record each run.

A clock read while ``tf.function`` or ``jax.jit`` is tracing is marked ``tracing``: it runs
once, in Python, when the function is traced, and the difference becomes a constant of the
graph (``rules.rule_clock_read_while_tracing``).

Nothing here imports the child, TensorFlow or JAX at import time.
"""

from __future__ import annotations

import datetime as _dt
import sys
import threading
import time
import timeit as _timeit
from typing import TYPE_CHECKING, Any

from whichdevice.frameworks.common.audit import script_frame
from whichdevice.frameworks.tensorflow.audit import autograph_origin

if TYPE_CHECKING:
    from whichdevice.frameworks.common.auditstate import State

_orig = {
    "time.time": time.time,
    "time.perf_counter": time.perf_counter,
    "time.monotonic": time.monotonic,
    "time.process_time": time.process_time,
}
_orig_default_timer = _timeit.default_timer
_orig_timer_timeit = _timeit.Timer.timeit
_orig_timer_repeat = _timeit.Timer.repeat
_orig_datetime = _dt.datetime
_perf = time.perf_counter
_local = threading.local()

# The clocks named when a script timed nothing (the audit looked for each of these).
CLOCKS_FOLLOWED = (
    "time.time",
    "time.perf_counter",
    "time.monotonic",
    "time.process_time",
    "timeit.timeit/repeat/default_timer",
    "datetime.now",
    "torch.cuda.Event.elapsed_time",
    "%timeit/%%timeit/%time/%%time (notebooks)",
)

_STATE: State | None = None


def tracing_now(st: State) -> str:
    """'tf.function <name>' / 'jax.jit' while one of them is tracing the calling code, else ''."""
    if st.tf_installed:
        try:
            from tensorflow.python.framework import ops

            if ops.inside_function():
                return f"tf.function {ops.get_default_graph().name}"
        except Exception:
            pass
    if st.jax_installed:
        try:
            from jax._src import core

            if not core.trace_state_clean():
                return "jax.jit"
        except Exception:
            pass
    return ""


class Stamp(float):
    """A clock value from the script; ``end - start`` between two stamps records the interval."""

    __slots__ = ("read_id",)
    read_id: int

    def __new__(cls, value: float, read_id: int) -> Stamp:
        obj = super().__new__(cls, value)
        obj.read_id = read_id
        return obj

    def __sub__(self, other: Any) -> float:  # type: ignore[override]
        result = float(self) - float(other)
        st = _STATE
        if isinstance(other, Stamp) and st is not None and st.active:
            f = sys._getframe(1)
            line = f.f_lineno if f.f_code.co_filename == st.script else autograph_origin(st, f)
            st.add_interval(other.read_id, self.read_id, result, line)
        return result

    def __reduce__(self):  # type: ignore[no-untyped-def]  # pickles and copies as a plain float
        return (float, (float(self),))


def _clock(orig: Any, name: str) -> Any:
    def read() -> float:
        value = orig()
        st = _STATE
        if st is None or not st.active:
            return value
        f = sys._getframe(1)
        line = f.f_lineno if f.f_code.co_filename == st.script else autograph_origin(st, f)
        if line is None:
            return value
        rid = st.stamp(name, line)
        return value if rid is None else Stamp(value, rid)

    read.__wrapped__ = orig  # type: ignore[attr-defined]
    read.__name__ = getattr(orig, "__name__", name)
    return read


def _timed_run(st: State, name: str, run: Any, levels: int) -> Any:
    """Run ``run()`` (one ``Timer.timeit``); when the script called it, record it as an interval."""
    if getattr(_local, "busy", False) or not st.active:
        return run()
    frame = script_frame(st, levels)
    if frame is None:
        return run()
    return _timed_run_at(st, name, run, frame.f_lineno)


def _hook_timeit(st: State) -> None:
    def timer_timeit(self: Any, number: int = 1_000_000) -> float:  # timeit's own defaults
        return _timed_run(st, "timeit", lambda: _orig_timer_timeit(self, number), levels=4)

    def timer_repeat(self: Any, repeat: int = 5, number: int = 1_000_000) -> list:
        if getattr(_local, "busy", False) or script_frame(st, 3) is None:
            return _orig_timer_repeat(self, repeat, number)
        frame = script_frame(st, 3)
        line = frame.f_lineno if frame is not None else 0
        out = []
        for _ in range(repeat):  # one interval per run, as timeit.repeat returns them
            out.append(_timed_run_at(st, "timeit.repeat", lambda: _orig_timer_timeit(self, number), line))
        return out

    _timeit.Timer.timeit = timer_timeit  # type: ignore[method-assign]
    _timeit.Timer.repeat = timer_repeat  # type: ignore[method-assign]
    _timeit.default_timer = _clock(_orig_default_timer, "timeit.default_timer")


def _timed_run_at(st: State, name: str, run: Any, line: int) -> Any:
    _local.busy = True
    try:
        start = st.stamp(name, line)
        seconds = run()
        end = st.stamp(name, line)
    finally:
        _local.busy = False
    if start is not None and end is not None:
        st.add_interval(start, end, float(seconds), line)
    return seconds


class _DateTime(_orig_datetime):
    """``datetime.datetime`` whose ``now()`` read from the script records the read."""

    @classmethod
    def _stamped(cls, value: Any, name: str) -> Any:
        st = _STATE
        if st is None or not st.active:
            return value
        f = sys._getframe(2)
        if f.f_code.co_filename != st.script:
            return value
        rid = st.stamp(name, f.f_lineno)
        obj = cls(
            value.year,
            value.month,
            value.day,
            value.hour,
            value.minute,
            value.second,
            value.microsecond,
            value.tzinfo,
            fold=value.fold,
        )
        obj._wd_read = rid  # type: ignore[attr-defined]
        return obj

    @classmethod
    def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
        return cls._stamped(_orig_datetime.now(tz), "datetime.now")

    @classmethod
    def utcnow(cls) -> Any:  # type: ignore[override]
        return cls._stamped(_orig_datetime.utcnow(), "datetime.utcnow")

    def __sub__(self, other: Any) -> Any:  # type: ignore[override]
        result = _orig_datetime.__sub__(self, other)
        st = _STATE
        a, b = getattr(other, "_wd_read", None), getattr(self, "_wd_read", None)
        if st is not None and st.active and a is not None and b is not None and isinstance(result, _dt.timedelta):
            f = sys._getframe(1)
            line = f.f_lineno if f.f_code.co_filename == st.script else None
            st.add_interval(a, b, result.total_seconds(), line)
        return result


class Magics:
    """What a notebook's ``%timeit`` / ``%%timeit`` / ``%time`` / ``%%time`` become (``notebook.py``):
    the code is timed as IPython times it, each run recorded as an interval of the script's line."""

    def __init__(self, st: State) -> None:
        self.st = st

    def timeit(self, code: str, setup: str, glb: dict, line: int, number: int = 0, repeat: int = 7) -> None:
        timer = _timeit.Timer(code, setup=setup or "pass", globals=glb)
        if number <= 0:  # IPython: the smallest power of 10 whose run takes >= 0.2 s
            number = 1
            for n in (1, 10, 100, 1000, 10000, 100000):
                number = n
                _local.busy = True
                try:
                    t = _orig_timer_timeit(timer, n)
                finally:
                    _local.busy = False
                if t >= 0.2:
                    break
        runs = [
            _timed_run_at(self.st, "%timeit", lambda: _orig_timer_timeit(timer, number), line) for _ in range(repeat)
        ]
        per = [r / number for r in runs]
        mean = sum(per) / len(per)
        sd = (sum((p - mean) ** 2 for p in per) / max(1, len(per) - 1)) ** 0.5
        print(f"{_fmt(mean)} ± {_fmt(sd)} per loop (mean ± std. dev. of {repeat} runs, {number} loops each)")

    def time(self, code: str, glb: dict, line: int) -> None:
        compiled = compile(code, self.st.script, "exec")
        start = self.st.stamp("%time", line)
        t0 = _perf()
        try:
            exec(compiled, glb)  # noqa: S102 -- the notebook cell itself, run as the notebook would
        finally:
            wall = _perf() - t0
            end = self.st.stamp("%time", line)
            if start is not None and end is not None:
                self.st.add_interval(start, end, wall, line)
            print(f"Wall time: {_fmt(wall)}")


def _fmt(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def install(st: State) -> None:
    """Follow every clock above (the script has not run yet)."""
    global _STATE
    _STATE = st
    st.tracing_probes.append(tracing_now)
    time.time = _clock(_orig["time.time"], "time.time")
    time.perf_counter = _clock(_orig["time.perf_counter"], "time.perf_counter")
    time.monotonic = _clock(_orig["time.monotonic"], "time.monotonic")
    time.process_time = _clock(_orig["time.process_time"], "time.process_time")
    _hook_timeit(st)
    try:
        with open(st.script, encoding="utf-8", errors="replace") as f:
            mentions_datetime = "datetime" in f.read()
    except OSError:
        mentions_datetime = False
    if mentions_datetime:
        _dt.datetime = _DateTime  # type: ignore[misc]


def uninstall() -> None:
    time.time = _orig["time.time"]
    time.perf_counter = _orig["time.perf_counter"]
    time.monotonic = _orig["time.monotonic"]
    time.process_time = _orig["time.process_time"]
    _timeit.Timer.timeit = _orig_timer_timeit  # type: ignore[method-assign]
    _timeit.Timer.repeat = _orig_timer_repeat  # type: ignore[method-assign]
    _timeit.default_timer = _orig_default_timer
    _dt.datetime = _orig_datetime  # type: ignore[misc]
