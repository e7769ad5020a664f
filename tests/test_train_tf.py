"""Real TensorFlow CPU runs of every built-in train workload at reduced size, through the CLI,
and the CLI's bad input (one line, exit 2, nothing written)."""

import json

import pytest
from conftest import run_cli

from whichdevice.core.records import load_run

BAD_TRAIN = [
    (["--batches", "0"], "--batches: 0 is not positive"),
    (["--batches", "x"], "--batches: 'x' is not a whole number"),
    (["--parts", "nap"], "--parts: 'nap' is not one of create, loop, fit, sync, sweep"),
    (["--framework", "numpy"], "--framework: 'numpy' is not one of tensorflow"),
    (["--classes", "3"], "--classes: only applies to --model"),
    (["--model", "nofile.py:build"], "--model: no such file 'nofile.py'"),
    (["--model", "build"], "--model: 'build' is not FILE.py:FUNCTION"),
    (["--model", "m.py:1x"], "--model: '1x' is not a Python function name"),
    (["--min-time", "-2"], "--min-time: -2 is not a positive number"),
]


@pytest.mark.parametrize("args, message", BAD_TRAIN)
def test_bad_train_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, args, message):
    out_dir = tmp_path / "out"
    code, out, err = run_cli(["train", "--out", str(out_dir), *args], capsys)
    assert code == 2, err
    assert message in err
    assert err.strip().count("\n") == 0, err
    assert not out_dir.exists()


@pytest.mark.tf
def test_every_builtin_workload_runs_on_the_cpu_and_report_rerenders(tmp_path, capsys):
    out = tmp_path / "out"
    code, text, err = run_cli(
        [
            "train",
            "--quick",
            "--batches",
            "8,256",
            "--device",
            "CPU:0",
            "--out",
            str(out),
            "--json",
            str(out / "t.json"),
        ],
        capsys,
    )
    assert code == 0, err
    record = load_run(out / "t.json")
    assert record.experiment == "train" and record.options["quick"] is True
    ok = {
        (
            r.spec.params["kind"],
            r.spec.params.get("example"),
            r.spec.params.get("op"),
            r.spec.params.get("batch"),
            r.spec.params.get("sync"),
        )
        for r in record.results
        if r.status == "ok"
    }
    assert len(ok) == len(record.results), [r.error for r in record.results if r.status != "ok"]
    kinds = {k[0] for k in ok}
    assert kinds == {"create", "loop", "fit", "steady"}
    loops = {r.spec.params["example"]: r for r in record.results if r.spec.params["kind"] == "loop"}
    assert loops["ex2"].metrics["steps"] == 100  # seed 001 ex2: 100 steps of batch 10
    assert loops["ex3"].metrics["steps"] == 313  # --quick: 10 000 samples / 32
    assert loops["seed002"].metrics["steps"] == 60  # 3 epochs x ceil(10 000 / 512)
    fit = next(r for r in record.results if r.spec.params["kind"] == "fit" and r.spec.params["example"] == "seed002")
    assert fit.metrics["steps_per_epoch"] == 20 and len(fit.timing.warmup_s) == 20 and len(fit.timing.samples_s) == 40
    for r in record.results:  # warm-up apart: the first step carries the tracing
        if r.spec.params["kind"] in ("loop", "fit"):
            assert r.timing.first_call_s > r.timing.median_s
    assert "reduced sizes" in text and "Cost of syncing every step" in text and "need a GPU run" in text
    assert (out / "t.png").stat().st_size > 10_000
    (out / "t.png").unlink()
    code, text2, err = run_cli(["report", str(out / "t.json"), "--html"], capsys)
    assert code == 0, err
    assert "Training runs" in text2 and (out / "t.png").exists()


USER_MODEL = """
import keras

def build():
    return keras.Sequential([keras.Input((20,)), keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(3, activation="softmax")])

def data():
    import numpy as np, tensorflow as tf
    x = np.random.rand(300, 20).astype("float32"); y = np.random.randint(0, 3, 300)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(50)
"""


@pytest.mark.tf
def test_user_model_with_user_data_runs(tmp_path, capsys):
    f = tmp_path / "my_model.py"
    f.write_text(USER_MODEL)
    out = tmp_path / "out"
    code, text, err = run_cli(
        [
            "train",
            "--model",
            f"{f}:build",
            "--data",
            f"{f}:data",
            "--classes",
            "3",
            "--samples",
            "300",
            "--batch",
            "25",
            "--parts",
            "loop,fit,sync",
            "--quick",
            "--out",
            str(out),
            "--json",
            str(out / "u.json"),
        ],
        capsys,
    )
    assert code == 0, err
    record = load_run(out / "u.json")
    assert all(r.status == "ok" for r in record.results), [r.error for r in record.results]
    loop = next(r for r in record.results if r.spec.params["kind"] == "loop")
    assert loop.spec.params["model"] == "user" and loop.metrics["steps"] == 2 * 12  # 300 / 25, 2 epochs
    assert {r.spec.params.get("sync") for r in record.results} >= {"each", "none"}
    options = json.loads((out / "u.json").read_text())["options"]
    assert options["model"].endswith("my_model.py:build") and options["data"].endswith("my_model.py:data")
