"""Real TensorFlow: the constructed known-answer cases, the TFRecord round trip, user-file
errors and a small end-to-end `whichdevice pipeline` run (CPU only on the test machine)."""

import json

import numpy as np
import pytest
from conftest import make_record, run_cli

from whichdevice.analysis import pipeline as ap
from whichdevice.core.records import CaseSpec, DeviceInfo
from whichdevice.core.timing import TimingPolicy

SMALL = {"images": 128, "image_size": 64, "batch": 32}


def _spec(group, **params):
    return CaseSpec(
        workload="pipeline", framework="tensorflow", device="CPU:0", params={**SMALL, "group": group, **params}
    )


@pytest.fixture(scope="module")
def known_answers():
    """One child runs every constructed case: (group -> analysis report)."""
    from whichdevice.measure import experiment

    heavy_aug = {"heavy_stage": "augment", "heavy_factor": 30}
    heavy_parse = {"heavy_stage": "parse", "heavy_factor": 30}
    cases = [
        # heavy per-element map, serial, in front of a tiny model: must be HIGHLY input-bound
        _spec("input", part="pipeline", variant="serial", net="tiny", **heavy_aug),
        _spec("input", part="both", variant="serial", net="tiny", **heavy_aug),
        # the same data cached and prefetched in front of a heavy model: must NOT be input-bound
        _spec("compute", part="both", variant="cache", net="heavy"),
        # stages with a constructed slow stage: that stage must be named
        *[_spec("aug", part="stage", variant="tfrecord", stage=s, net="tiny", **heavy_aug) for s in ap_stages()],
        *[_spec("parse", part="stage", variant="tfrecord", stage=s, net="tiny", **heavy_parse) for s in ap_stages()],
    ]
    _, results, notes = experiment.run_devices(
        "tensorflow",
        [DeviceInfo(name="CPU:0", kind="cpu")],
        lambda d: cases,
        policy=TimingPolicy(min_time_s=0.1),
        cpu_threads=None,
        case_timeout_s=120,
    )
    assert not notes, notes
    failed = [r.error for r in results if r.status != "ok"]
    assert not failed, failed
    out = {}
    for g in ("input", "compute", "aug", "parse"):
        rec = make_record([r for r in results if r.spec.params["group"] == g], experiment="pipeline")
        (out[g],) = ap.analyze_pipeline(rec)
    return out


def ap_stages():
    from whichdevice.workloads.pipeline import STAGES

    return STAGES


@pytest.mark.tf
def test_heavy_map_in_front_of_tiny_model_is_highly_input_bound(known_answers):
    (row,) = known_answers["input"].rows
    assert row.input_bound == "HIGHLY", row.wait_percent
    assert row.wait_percent > 50


@pytest.mark.tf
def test_cached_prefetched_data_in_front_of_heavy_model_is_not_input_bound(known_answers):
    (row,) = known_answers["compute"].rows
    assert row.input_bound == "NOT", row.wait_percent


@pytest.mark.tf
@pytest.mark.parametrize("group, stage", [("aug", "augment"), ("parse", "parse")])
def test_the_stage_made_slow_is_named(known_answers, group, stage):
    rep = known_answers[group]
    assert rep.slowest.stage == stage, [(c.stage, c.seconds_per_example) for c in rep.stages]


@pytest.mark.tf
def test_tfrecord_round_trip_gives_the_same_examples(tmp_path):
    import tensorflow as tf

    from whichdevice.frameworks.tensorflow import pipeline as tfp

    def read_tfrecords(files, size, parallel=False):
        """The examples back, files read in order (interleaved when ``parallel``)."""
        auto = tf.data.AUTOTUNE if parallel else None
        return tf.data.TFRecordDataset(files, num_parallel_reads=auto).map(tfp.parse_example(size), auto)

    images, labels = tfp.synthetic_images(10, 8, seed=3)
    files = tfp.write_tfrecords(images, labels, tmp_path, shards=3)
    assert len(files) == 3
    back = list(read_tfrecords(files, 8).as_numpy_iterator())
    assert len(back) == 10
    np.testing.assert_array_equal(np.stack([b[0] for b in back]), images)
    np.testing.assert_array_equal(np.array([b[1] for b in back]), labels)
    # read in parallel: the same examples, interleaved
    par = list(read_tfrecords(files, 8, parallel=True).as_numpy_iterator())
    assert sorted(int(b[1]) * 10**6 + int(b[0].sum()) for b in par) == sorted(
        int(y) * 10**6 + int(x.sum()) for x, y in zip(images, labels)
    )


@pytest.mark.tf
def test_numpy_and_tf_preprocessing_do_the_same_work():
    """The py_function variant must do the seed's work, not less: same range and mean shift."""
    import tensorflow as tf

    from whichdevice.frameworks.tensorflow import pipeline as tfp

    images, _ = tfp.synthetic_images(4, 16, seed=1)
    img = images[0]
    x_np = tfp.numpy_process(img, np.random.default_rng(0))
    x_tf = tfp.augment(tfp.normalize(tf.constant(img))).numpy()
    base = img.astype(np.float32) / 255.0
    for x in (x_np, x_tf):
        assert x.shape == img.shape and x.dtype == np.float32
        delta = x.mean() - base.mean()
        assert abs(delta) <= tfp.MAX_DELTA + 1e-6


BAD = [
    (["--data", "d.py:make"], "--data: needs --model"),
    (["--model", "nope.py:build"], "--model: no such file"),
    (["--model", "m.py"], "--model: 'm.py' is not FILE.py:FUNCTION"),
    (["--heavy-factor", "3"], "--heavy-factor: only applies to --heavy-stage"),
    (["--heavy-stage", "read"], "--heavy-stage: 'read' is not one of"),
    (["--variants", "turbo"], "--variants: 'turbo' is not one of"),
    (["--images", "0"], "--images: 0 is out of range"),
    (["--net", "huge"], "--net: 'huge' is not one of"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("def build():\n    return 1\n")
    (tmp_path / "d.py").write_text("def make():\n    return 1\n")
    out_dir = tmp_path / "out"
    code, out, err = run_cli(["pipeline", "--out", str(out_dir), *args], capsys)
    assert code == 2, err
    assert message in err
    assert err.strip().count("\n") == 0, err
    assert not out_dir.exists()


@pytest.mark.tf
def test_user_file_problems_found_before_measuring(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("def build():\n    return 'not a model'\n")
    (tmp_path / "d.py").write_text("import tensorflow as tf\n\ndef make():\n    return [1, 2]\n")
    code, _, err = run_cli(["pipeline", "--out", "out", "--model", "m.py:build"], capsys)
    assert code == 2 and "--model: build() returned str, not a Keras model" in err
    (tmp_path / "m2.py").write_text(
        "import keras\n\ndef build():\n    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])\n"
    )
    code, _, err = run_cli(["pipeline", "--out", "out", "--model", "m2.py:build", "--data", "d.py:make"], capsys)
    assert code == 2 and "--data: make() returned list, not a tf.data.Dataset" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.tf
def test_end_to_end_small_run_writes_record_plot_and_html(tmp_path, capsys):
    json_file = tmp_path / "p.json"
    code, out, err = run_cli(
        [
            "pipeline",
            "--images",
            "64",
            "--image-size",
            "32",
            "--variants",
            "serial,prefetch",
            "--no-stages",
            "--min-time",
            "0.05",
            "--json",
            str(json_file),
        ],
        capsys,
    )
    assert code == 0, err
    rec = json.loads(json_file.read_text())
    parts = sorted((r["spec"]["params"]["part"], r["spec"]["params"]["variant"]) for r in rec["results"])
    assert parts == [
        ("both", "prefetch"),
        ("both", "serial"),
        ("model", "serial"),
        ("pipeline", "prefetch"),
        ("pipeline", "serial"),
    ]
    assert all(r["status"] == "ok" for r in rec["results"])
    loop = next(r for r in rec["results"] if r["spec"]["params"]["part"] == "both")
    assert 0 <= loop["metrics"]["input_wait_s"] <= loop["metrics"]["loop_s"]
    assert json_file.with_suffix(".png").exists() and json_file.with_suffix(".html").exists()
    assert "input wait" in out and "CPU:0" in out


@pytest.mark.tf
def test_a_childs_temporary_files_are_gone_after_its_job(tmp_path, monkeypatch):
    """The child ends with os._exit (no atexit): the TFRecord files a tfrecord case writes live
    in the job's folder, which the runner removes. Here the parent's temporary folder is
    tmp_path, as the CLI's scratch folder would be; nothing is left in it."""
    import tempfile

    from whichdevice.measure import runner

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spec = _spec("aug", part="stage", variant="tfrecord", stage="read", net="tiny")
    out = runner.run_job(
        runner.Job("tensorflow", "CPU:0", "cpu", [spec], policy={"min_time_s": 0.01}), case_timeout_s=120
    )
    assert [r.status for r in out.results] == ["ok"], [r.error for r in out.results]
    assert not list(tmp_path.iterdir())


def test_a_new_model_is_stepped_past_its_slow_start_before_any_case_times_it(monkeypatch):
    """A fresh TF train step of the pipeline's CNN is ~25 % slower for its first 75-200 calls
    (workloads/pipeline.SETTLE_STEPS): the model is run that many steps, untimed, when built,
    and only once per child (the loops and the model-alone case share it)."""
    from whichdevice import frameworks
    from whichdevice.workloads import pipeline as wp

    fw = frameworks.load("tensorflow")
    tfp = wp._tfp(fw)
    calls = []
    real = tfp.train_step

    def counting(model, loss):
        step = real(model, loss)

        def counted(x, y):
            calls.append(1)
            return step(x, y)

        return counted

    monkeypatch.setattr(tfp, "train_step", counting)
    monkeypatch.setattr(wp, "SETTLE_STEPS", 12)
    monkeypatch.setattr(wp, "SETTLE_MAX_S", 600.0)  # a loaded machine's slow steps must not stop it early here
    monkeypatch.setattr(wp, "_MODELS", {})
    p = {**SMALL, "net": "tiny", "variant": "serial", "part": "model"}
    wp._model(tfp, fw, p, "CPU:0")
    assert len(calls) == 12
    wp._model(tfp, fw, {**p, "part": "both"}, "CPU:0")  # the same model: built and settled once
    assert len(calls) == 12
    # a step slower than the time cap stops the settling early (never less than one step)
    monkeypatch.setattr(wp, "SETTLE_MAX_S", 0.0)
    monkeypatch.setattr(wp, "_MODELS", {})
    calls.clear()
    wp._model(tfp, fw, p, "CPU:0")
    assert len(calls) == 1
