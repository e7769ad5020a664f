"""The TensorFlow profiler around a steady-state window, and XProf's op statistics.

``tf.profiler.experimental.start(logdir)`` / ``stop()`` write
``LOGDIR/plugins/profile/<run>/<host>.xplane.pb``, which TensorBoard's profile plugin opens
(``tensorboard --logdir LOGDIR``, tab "Profile"; needs ``pip install tensorboard-plugin-profile``
or ``xprof``). The same file is converted without a server by ``xprof``
(``xprof.convert.raw_to_tool_data.xspace_to_tool_data([path], tool, {})``); when xprof is not
installed, the op times are left out and the record says so.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import tensorflow as tf

XPROF_HINT = "pip install xprof"


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
        started = False

        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 1 and not self.started:
                Path(logdir).mkdir(parents=True, exist_ok=True)
                tf.profiler.experimental.start(str(logdir))
                self.started = True

        def on_train_end(self, logs=None):
            if self.started:
                tf.profiler.experimental.stop()
                self.started = False

    return SteadyTrace()
