"""Traces TensorBoard can analyse: every traced training step carries XProf's step
marker (a "train" TraceMe with step_num and _r=1), so the profile plugin's overview page shows a
step time; converted with xprof's own tools where xprof is installed (the `profile` extra)."""

import importlib.util
import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

XPROF = importlib.util.find_spec("xprof") is not None


def _markers(logdir: Path) -> list[dict]:
    """The step markers in the profile: one dict of stats (+ duration_ms) per 'train' event."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    (path,) = Path(logdir).glob("plugins/profile/*/*.xplane.pb")
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    out = []
    for plane in space.planes:
        names = {k: v.name for k, v in plane.event_metadata.items()}
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            for ev in line.events:
                if names.get(ev.metadata_id) == "train":
                    stats = {stat_names.get(s.metadata_id): s.int64_value or s.uint64_value for s in ev.stats}
                    out.append({**stats, "duration_ms": ev.duration_ps / 1e9})
    return out


def _traced_fit(logdir: Path, epochs=2, n=160, batch=16):
    import keras
    import numpy as np

    from whichdevice.frameworks.tensorflow.profiler import steady_trace_callback

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x, y = np.random.rand(n, 8).astype("float32"), np.random.rand(n, 1).astype("float32")
    model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, callbacks=[steady_trace_callback(logdir)])


def test_fit_steps_carry_step_markers(tmp_path):
    _traced_fit(tmp_path)
    marks = _markers(tmp_path)
    assert len(marks) == 10  # epoch 2's 10 batches (epoch 1, the warm-up, is not traced)
    assert [m["step_num"] for m in marks] == list(range(10))
    assert all(m["_r"] == 1 and m["epoch_num"] == 1 and m["duration_ms"] > 0 for m in marks)


def test_a_custom_loop_step_is_marked_and_numbered(tmp_path):
    import tensorflow as tf

    from whichdevice.frameworks.tensorflow.profiler import marked

    step = marked(lambda: float(tf.reduce_sum(tf.ones((64, 64)) @ tf.ones((64, 64)))))
    assert step() == 64 * 64 * 64  # not traced: the value passes through
    tf.profiler.experimental.start(str(tmp_path))
    for _ in range(3):
        step()
    tf.profiler.experimental.stop()
    assert [m["step_num"] for m in _markers(tmp_path)] == [1, 2, 3]


@pytest.mark.skipif(not XPROF, reason="xprof is not installed (pip install '.[profile]'): the trace is not converted")
def test_xprof_overview_page_has_a_step_time(tmp_path):
    from xprof.convert import raw_to_tool_data

    _traced_fit(tmp_path)
    (path,) = tmp_path.glob("plugins/profile/*/*.xplane.pb")
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "overview_page", {})
    text = data.decode() if isinstance(data, bytes) else str(data)
    json.loads(text)  # the page's JSON, as TensorBoard's profile plugin gets it
    average = re.search(r'"steptime_ms_average":\s*"?([0-9.]+)', text)
    assert average is not None and float(average.group(1)) > 0, text[:500]
    assert "No step marker observed" not in text


def test_step_timer_marks_steps_in_a_users_own_profile(tmp_path):
    """A user's own profile of a Keras 3 fit (as `keras.callbacks.TensorBoard(profile_batch=(3, 8))`
    takes it: the profiler started at a batch's begin, stopped at a later batch's end) has no step
    marker (tensorflow/tensorboard#6954); with StepTimer in the callbacks it has one per profiled
    batch, numbered as fit's batches. (TensorBoard itself is not installed here: the window is
    opened the way its callback opens it.)"""
    import keras
    import numpy as np
    import tensorflow as tf

    from whichdevice.keras import StepTimer

    class ProfileBatches(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 2:
                tf.profiler.experimental.start(str(tmp_path))

        def on_train_batch_end(self, batch, logs=None):
            if batch == 7:
                tf.profiler.experimental.stop()

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x, y = np.random.rand(320, 8).astype("float32"), np.random.rand(320, 1).astype("float32")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[ProfileBatches(), StepTimer(verbose=0)])
    marks = _markers(tmp_path)
    assert [m["step_num"] for m in marks] == [2, 3, 4, 5, 6]  # batch 7's marker closes after the stop
    assert all(m["_r"] == 1 and m["duration_ms"] > 0 for m in marks)


def test_step_timer_marks_nothing_without_a_profiler(tmp_path):
    from whichdevice.keras import StepTimer

    timer = StepTimer(verbose=0)
    _fit_plain(timer)
    assert timer._marker is None and timer._step_num == 10


def _fit_plain(timer):
    import keras
    import numpy as np

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.random.rand(160, 8).astype("float32"), np.random.rand(160, 1).astype("float32")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[timer])
