"""whichdevice.keras.StepTimer inside a real model.fit: per-batch times, warm-up apart, a record
that `whichdevice report` renders."""

import pytest

pytestmark = pytest.mark.tf


def _fit(timer, epochs=3, n=640, batch=32):
    import keras
    import numpy as np

    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = np.random.rand(n, 16).astype("float32")
    y = np.random.rand(n, 1).astype("float32")
    model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, callbacks=[timer])
    return model


@pytest.mark.parametrize("sync", [False, True])
def test_step_timer_in_real_fit_writes_a_reportable_record(tmp_path, capsys, sync):
    from whichdevice.cli.app import main
    from whichdevice.keras import StepTimer
    from whichdevice.core.records import load_run

    path = tmp_path / "run.json"
    timer = StepTimer(path, warmup_batches=3, sync=sync, batch_size=32)
    _fit(timer)
    assert len(timer.batch_times_s) == 3 * 20 and len(timer.epoch_s) == 3
    assert sum(timer.batch_times_s) <= sum(timer.epoch_s) + 1e-6
    assert timer.batch_times_s[0] == max(timer.batch_times_s)  # the first batch traces the train step
    record = load_run(path)
    (result,) = record.results
    assert result.spec.params["kind"] == "callback" and result.spec.params["sync"] == ("each" if sync else "none")
    assert len(result.timing.warmup_s) == 3 and len(result.timing.samples_s) == 57
    assert result.metrics["steps_per_epoch"] == 20 and result.metrics["samples_per_step"] == 32
    with pytest.raises(SystemExit) as e:
        main(["report", str(path), "--html"])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    assert e.value.code in (0, None), err
    assert "callback" in out and (tmp_path / "run.png").exists()


def test_step_timer_does_not_override_batch_end():
    """Overriding on_train_batch_end would stop Keras dispatching batch-end callbacks on its
    thread pool (JAX/torch backends) and change the run being measured."""
    from keras.src import utils

    from whichdevice.keras import StepTimer

    assert utils.is_default(StepTimer().on_train_batch_end)


def test_bad_arguments_say_how_to_fix():
    from whichdevice.keras import StepTimer

    with pytest.raises(ValueError, match="warmup_batches must be an integer >= 1"):
        StepTimer(warmup_batches=0)


def test_summary_at_the_end_of_fit_logs_repr_and_result(tmp_path, capsys):
    """The summary is printed (verbose=1), steps/s reach History, repr shows the
    steady step, and result() is the API's own result type for the same record."""
    import keras
    import numpy as np

    from whichdevice.api import RecordResult
    from whichdevice.keras import StepTimer

    timer = StepTimer(warmup_batches=2, batch_size=32)
    assert "no batch timed yet" in repr(timer)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.random.rand(320, 8).astype("float32"), np.random.rand(320, 1).astype("float32")
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[timer])
    out = capsys.readouterr().out
    assert out.startswith("StepTimer: steady step ") and "samples/s" in out
    assert "first step" in out and "2 warm-up steps apart" in out and "18 steps over 2 epochs" in out
    per_epoch = history.history["steps_per_second"]
    assert len(per_epoch) == 2 and all(v > 0 for v in per_epoch)
    assert history.history["samples_per_second"][0] == pytest.approx(32 * per_epoch[0])
    s = timer.summary()
    steps, wall = timer.steady_rate()  # epoch 2 (all steady): its steps over its wall time
    assert steps == 10 and wall == pytest.approx(timer.epoch_train_s[1])
    assert s.samples_per_s == pytest.approx(32 * steps / wall)
    assert history.history["samples_per_second"][1] == pytest.approx(32 * 10 / timer.epoch_train_s[1])
    assert repr(timer).startswith("<StepTimer: steady step ") and "samples/s" in repr(timer)
    frag = timer._repr_html_()
    assert frag.startswith('<div class="whichdevice-report">') and "<body" not in frag
    result = timer.result()
    assert isinstance(result, RecordResult)
    (case,) = result.record.results
    assert case.timing.median_s == s.steady_median_s
    path = timer.write(tmp_path / "again.json")
    import whichdevice

    assert whichdevice.load(path).record == result.record  # the same record, from the file


def test_samples_per_second_is_samples_over_the_steady_epochs_wall_time(capsys):
    """StepTimer(batch_size=32) said 30,272 samples/s where the same fit's epochs 2-3
    ran 14,156 samples/s (samples over their wall time): batch_size / the median step missed the
    time outside the batches (the epoch's iterator) and the slow steps. Now it is samples over
    the steady epochs' wall time (within the partial last batch: 2,000 = 62 x 32 + 16)."""
    from whichdevice.keras import StepTimer

    n = 2000
    timer = StepTimer(batch_size=32, verbose=0)
    _fit(timer, epochs=3, n=n, batch=32)
    wall_rate = 2 * n / (timer.epoch_s[1] + timer.epoch_s[2])  # epochs 2-3, as the issue measured
    said = timer.summary().samples_per_s
    assert said == pytest.approx(wall_rate, rel=0.05), (said, wall_rate)
    assert f"{said:,.0f}".replace(",", " ") in timer.summary().lines()[0]


def test_a_one_epoch_fit_leaves_its_warm_up_batches_out_of_the_wall_time():
    from whichdevice.keras import StepTimer

    timer = StepTimer(warmup_batches=3, batch_size=32, verbose=0)
    _fit(timer, epochs=1, n=640, batch=32)
    steps, wall = timer.steady_rate()
    assert steps == 17
    assert wall == pytest.approx(timer.epoch_train_s[0] - sum(timer.batch_times_s[:3]))


def test_verbose_0_prints_nothing(capsys):
    from whichdevice.keras import StepTimer

    _fit(StepTimer(verbose=0), epochs=1, n=64)
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="verbose must be 0"):
        StepTimer(verbose=3)


def _ticking(step_s):
    """A fake clock (STYLE principle 9): each reading is ``step_s`` after the previous one."""
    t = [0.0]

    def clock():
        t[0] += step_s
        return t[0]

    return clock


def test_a_step_timer_record_gates_against_a_baseline(tmp_path, capsys):
    """`compare baseline.json run.json --fail-on-regression` reads StepTimer records the same way."""
    import keras
    import numpy as np

    from conftest import run_cli
    from whichdevice.keras import StepTimer

    def fit(path, step_s):
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)], name="net")
        model.compile(optimizer="sgd", loss="mse")
        x, y = np.zeros((64, 4), "float32"), np.zeros((64, 1), "float32")
        timer = StepTimer(path, batch_size=8, clock=_ticking(step_s), verbose=0)
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[timer])
        return str(path)

    base, same, slow = (
        fit(tmp_path / "base.json", 1e-3),
        fit(tmp_path / "same.json", 1e-3),
        fit(tmp_path / "slow.json", 2e-3),
    )
    assert run_cli(["compare", base, same, "--fail-on-regression"], capsys)[0] == 0
    code, out, _ = run_cli(["compare", base, slow, "--fail-on-regression"], capsys)
    assert code == 1 and "2× slower" in out


def test_timer_compare_in_python_applies_the_same_rule(tmp_path):
    import keras
    import numpy as np

    from whichdevice.keras import StepTimer

    def fit(step_s, path=None):
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)], name="net")
        model.compile(optimizer="sgd", loss="mse")
        timer = StepTimer(path, batch_size=8, clock=_ticking(step_s), verbose=0)
        x, y = np.zeros((64, 4), "float32"), np.zeros((64, 1), "float32")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[timer])
        return timer

    base = tmp_path / "base.json"
    fit(1e-3, base)
    same, slow = fit(1e-3).compare(base), fit(2e-3).compare(base)
    assert same["regression"] is False and same["points"][0]["status"] == "no_change"
    assert slow["regression"] is True and slow["points"][0]["text"].startswith("2× slower")
    assert fit(2e-3).compare(base, threshold=1.5)["regression"] is False  # within a 150 % margin
    with pytest.raises(ValueError, match="threshold must be"):
        fit(1e-3).compare(base, threshold=0)
    other = tmp_path / "other.json"
    fit(1e-3, other)
    import json

    raw = json.loads(other.read_text())
    raw["results"][0]["spec"]["params"]["batch"] = 16  # another training
    other.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="has no case of this run"):
        fit(1e-3).compare(other)
