"""The TensorFlow profiler around a steady-state window, and XProf's op statistics.

``tf.profiler.experimental.start(logdir)`` / ``stop()`` write
``LOGDIR/plugins/profile/<run>/<host>.xplane.pb``, which TensorBoard's profile plugin opens
(``tensorboard --logdir LOGDIR``, tab "Profile"; needs ``pip install tensorboard-plugin-profile``
or ``xprof``). The same file is converted without a server by ``xprof``
(``xprof.convert.raw_to_tool_data.xspace_to_tool_data([path], tool, {})``); when xprof is not
installed, the op times are left out and the record says so.

Step markers: XProf finds training steps by their markers — a TraceMe named "train" with a
``step_num`` and ``_r=1`` (the root flag), what ``tf.keras`` 2 put around every step of ``fit``.
Keras 3 puts none, so a profile of its ``fit`` opened in TensorBoard said "No step marker
observed", every Performance Summary figure 0.0 ms, and the input-pipeline analyzer had
nothing to analyse. Every traced step here carries one: :func:`marked` around a
custom loop's step, ``steady_trace_callback`` from each batch's begin to its end in ``fit``.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import tensorflow as tf

# The name XProf's step detection and tf.keras 2 use for a training step's marker.
STEP_NAME = "train"

T = TypeVar("T")


def step_marker(step_num: int, *, name: str = STEP_NAME, **stats) -> tf.profiler.experimental.Trace:
    """The context manager that marks one step for XProf (a no-op costing ~1 µs when no
    profiler runs: ``Trace`` creates its TraceMe only while tracing)."""
    return tf.profiler.experimental.Trace(name, step_num=step_num, _r=1, **stats)


def marked(step: Callable[[], T], *, name: str = STEP_NAME) -> Callable[[], T]:
    """``step`` with each call numbered and marked as one training step (:func:`step_marker`)."""
    counter = itertools.count()

    def call() -> T:
        with step_marker(next(counter), name=name):
            return step()

    return call


@contextlib.contextmanager
def trace(logdir: str | Path):
    """Profile everything run inside the block into ``logdir``."""
    Path(logdir).mkdir(parents=True, exist_ok=True)
    tf.profiler.experimental.start(str(logdir))
    try:
        yield
    finally:
        tf.profiler.experimental.stop()


class TraceWindow:
    """A ``TimingPolicy.window``: the profiler runs exactly while ``timing.measure`` runs its
    steady blocks (after warm-up), wrapped around the telemetry sampler when there is one."""

    def __init__(self, logdir: str | Path, inner=None):
        self.logdir, self.inner = Path(logdir), inner

    def start(self) -> None:
        if self.inner is not None:
            self.inner.start()
        self.logdir.mkdir(parents=True, exist_ok=True)
        tf.profiler.experimental.start(str(self.logdir))

    def stop(self):
        tf.profiler.experimental.stop()
        return self.inner.stop() if self.inner is not None else None


def xplane_files(logdir: str | Path) -> list[Path]:
    return sorted(Path(logdir).glob("plugins/profile/*/*.xplane.pb"))


def xprof_available() -> bool:
    """Whether ``xprof`` (which turns a profile into op times) is installed."""
    import importlib.util

    return importlib.util.find_spec("xprof") is not None


def framework_op_stats(xplane: str | Path) -> bytes | None:
    """XProf's ``framework_op_stats`` JSON for one profile, or None without xprof."""
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError:
        return None
    data, _content_type = raw_to_tool_data.xspace_to_tool_data([str(xplane)], "framework_op_stats", {})
    return data if isinstance(data, bytes) else str(data).encode()


def steady_trace_callback(logdir: str | Path):
    """A Keras callback that profiles epochs 2.. of ``model.fit`` (the first epoch, with its
    tracing and pipeline start-up, is the warm-up and is left out)."""
    import keras

    class SteadyTrace(keras.callbacks.Callback):
        """Overrides on_train_batch_end, which makes Keras 3 dispatch batch-end callbacks on
        the training thread: a traced run is not a timed one (the profiler costs more)."""

        started = False
        step = 0
        epoch = 0
        marker = None

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch
            if epoch == 1 and not self.started:
                Path(logdir).mkdir(parents=True, exist_ok=True)
                tf.profiler.experimental.start(str(logdir))
                self.started = True

        def on_train_batch_begin(self, batch, logs=None):
            if self.started:
                self.marker = step_marker(self.step, epoch_num=self.epoch)
                self.marker.__enter__()
                self.step += 1

        def on_train_batch_end(self, batch, logs=None):
            if self.marker is not None:
                self.marker.__exit__(None, None, None)
                self.marker = None

        def on_train_end(self, logs=None):
            self.on_train_batch_end(None)  # the last batch's marker closed
            if self.started:
                tf.profiler.experimental.stop()
                self.started = False

    return SteadyTrace()
