"""`whichdevice scale`: bad input answered before anything runs; real 2-replica runs
of each framework's own engine (TensorFlow MirroredStrategy, Keras-on-JAX DataParallel, torch
DDP), each reading the replica count back from the engine; no worker outlives its run; one
end-to-end CLI run (torch, the fastest to import: its 2-process DDP run is the torch engine's
real 2-replica test) with the record, the report and the HTML."""

from __future__ import annotations

import importlib.util
import json
import os
import textwrap

import psutil
import pytest
from conftest import run_cli

from whichdevice.core.machine import usable_cores
from whichdevice.workloads import scale as scale_workload


def _needs(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")


# ------------------------------------------------------------------ bad input: one line, exit 2


def _bad(tmp_path, capsys, monkeypatch, args, argument):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["scale", *args], capsys)
    assert code == 2, (out, err)
    # the last line is the one error line (a --model check prints "Checking ..." progress first)
    assert err.strip().splitlines()[-1].startswith("error: "), err
    assert sum(line.startswith("error: ") for line in err.splitlines()) == 1, err
    assert argument in err
    assert "Traceback" not in out + err
    assert list(tmp_path.iterdir()) == []  # nothing written
    return err


def test_more_replicas_than_devices_is_refused(tmp_path, capsys, monkeypatch):
    n = usable_cores() + 1
    err = _bad(tmp_path, capsys, monkeypatch, ["--framework", "torch", "--devices", f"1,{n}"], "--devices")
    assert f"{n} replicas asked" in err and f"{usable_cores()} usable CPU cores" in err


@pytest.mark.skipif(usable_cores() < 2, reason="needs 2 cores for 2 replicas")
def test_batch_not_divisible_by_replicas_is_refused(tmp_path, capsys, monkeypatch):
    err = _bad(tmp_path, capsys, monkeypatch, ["--framework", "torch", "--batches", "64,33"], "--batches")
    assert "33 is not divisible by 2 replicas" in err and "multiples of 2" in err


@pytest.mark.parametrize(
    "args, argument",
    [
        (["--framework", "mxnet"], "--framework"),
        (["--framework", "keras-torch"], "--framework"),
        (["--devices", "0"], "--devices"),
        (["--batches", "abc"], "--batches"),
        (["--model", "seed003"], "--model"),
        (["--framework", "torch", "--model", "m.py:build"], "--model"),
    ],
)
def test_other_bad_input(tmp_path, capsys, monkeypatch, args, argument):
    _bad(tmp_path, capsys, monkeypatch, args, argument)


@pytest.mark.tf
@pytest.mark.skipif(usable_cores() < 2, reason="needs 2 cores for 2 replicas")
def test_a_model_the_strategy_cannot_replicate_is_refused(tmp_path, capsys, monkeypatch):
    """A model that hard-codes its batch (a reshape to batch 2): it builds and runs on one
    device at batch 2, but MirroredStrategy gives each of 2 replicas half the global batch.
    Refused by the pre-flight (one real 2-replica step), exit 2, nothing written."""
    src = tmp_path.parent / f"{tmp_path.name}-model"
    src.mkdir()
    (src / "m.py").write_text(
        textwrap.dedent(
            """
            import keras

            class FixedBatch(keras.layers.Layer):
                def call(self, x):
                    return keras.ops.reshape(x, (2, 8))

            def build():
                return keras.Sequential([keras.Input((8,)), FixedBatch(), keras.layers.Dense(4)])
            """
        )
    )
    args = ["--framework", "tensorflow", "--model", f"{src / 'm.py'}:build", "--batches", "2", "--min-time", "0.01"]
    err = _bad(tmp_path, capsys, monkeypatch, args, "--model")
    assert "cannot replicate" in err and "2 replicas" in err


# ------------------------------------------------------------------ real 2-replica runs


def _run_workers(framework: str, variants: tuple[str, ...]):
    """Two replicas at global batch 8 through the framework's worker(s), as the measuring child
    starts them; returns the hello line, the points and the worker processes' pids."""
    points = [[2, 8, v] for v in variants]
    job = {
        "points": points,
        "model": {"model": "seed001"},
        "policy": {"min_time_s": 0.01, "warmup_calls": 1, "max_samples": 6},
        "max_replicas": 2,
    }
    workers = scale_workload.Workers(framework, job, scale_workload.worker_envs(framework, 2, 2))
    pids = [c.pid for c in workers.children]
    try:
        got = [workers.wait_for((2, 8, v)) for v in variants]
        workers._read()
        hello = workers.hello
    finally:
        workers.close()
        workers.tmp.cleanup()
    return hello, got, pids


def _assert_two_replicas(hello, got, pids):
    for point in got:
        assert "error" not in point, point
        assert point["metrics"]["replicas_seen"] == 2.0  # read back from the engine
        assert point["metrics"]["per_replica_batch"] == 4.0
        assert len(point["timing"]["samples_s"]) >= 5  # enough for a claim
        assert all(s > 0 for s in point["timing"]["samples_s"])
    assert len(hello["devices"]) >= 2
    for pid in pids:  # no worker outlives its run
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.tf
@pytest.mark.skipif(usable_cores() < 2, reason="needs 2 cores for 2 replicas")
def test_tensorflow_mirrored_strategy_runs_two_replicas():
    hello, got, pids = _run_workers("tensorflow", ("step", "allreduce"))
    _assert_two_replicas(hello, got, pids)
    assert [d.split("device:")[-1] for d in hello["devices"]] == ["CPU:0", "CPU:1"]  # logical CPU devices


@pytest.mark.frameworks
@_needs("keras", "jax")
@pytest.mark.skipif(usable_cores() < 2, reason="needs 2 cores for 2 replicas")
def test_keras_jax_data_parallel_runs_two_replicas():
    hello, got, pids = _run_workers("keras-jax", ("step",))
    _assert_two_replicas(hello, got, pids)
    assert len(hello["devices"]) == 2  # XLA_FLAGS host device count reached JAX


def test_cases_and_worker_env():
    cases = scale_workload.build_cases("torch", "CPU:0", [1, 2], [32, 256], None)
    keys = [(c.params["replicas"], c.params["global_batch"], c.params["variant"]) for c in cases]
    assert keys == [
        (1, 32, "step"),
        (1, 256, "step"),
        (2, 32, "step"),
        (2, 32, "no_sync"),
        (2, 32, "accum4"),
        (2, 256, "step"),
        (2, 256, "no_sync"),
        (2, 256, "accum4"),
    ]
    envs = scale_workload.worker_envs("torch", 2, 2)
    assert [e["RANK"] for e in envs] == ["0", "1"] and {e["WORLD_SIZE"] for e in envs} == {"2"}
    assert envs[0]["MASTER_PORT"] == envs[1]["MASTER_PORT"]
    (jax_env,) = scale_workload.worker_envs("keras-jax", None, 4)
    assert "--xla_force_host_platform_device_count=4" in jax_env["XLA_FLAGS"]


# ------------------------------------------------------------------ end to end


@pytest.mark.frameworks
@_needs("torch")
@pytest.mark.skipif(usable_cores() < 2, reason="needs 2 cores for 2 replicas")
def test_cli_torch_end_to_end_record_report_html(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        [
            "scale",
            "--framework",
            "torch",
            "--devices",
            "1,2",
            "--batches",
            "16",
            "--min-time",
            "0.02",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    (record_path,) = out.glob("scale-*.json")
    record = json.loads(record_path.read_text())
    assert record["experiment"] == "scale"
    ok = [r for r in record["results"] if r["status"] == "ok"]
    assert {(r["spec"]["params"]["replicas"], r["spec"]["params"]["variant"]) for r in ok} == {
        (1, "step"),
        (2, "step"),
        (2, "no_sync"),
        (2, "accum4"),  # the gradient-accumulation fix
    }
    # DDP really ran 2 processes: the world size read back from the process group, per point
    two = [r for r in ok if r["spec"]["params"]["replicas"] == 2]
    assert two and all(r["metrics"]["replicas_seen"] == 2.0 and r["metrics"]["per_replica_batch"] == 8.0 for r in two)
    assert all(len(r["timing"]["samples_s"]) >= 5 for r in ok)
    assert "torch: 2 replicas" in stdout  # the verdict line
    assert record_path.with_suffix(".html").exists() and record_path.with_suffix(".png").exists()
    html = record_path.with_suffix(".html").read_text()
    assert "Does the next replica pay?" in html and "data:image/png;base64," in html
    code, stdout, err = run_cli(["report", str(record_path), "--out", str(tmp_path / "again")], capsys)
    assert code == 0, err
    assert "torch: 2 replicas" in stdout
    me = psutil.Process(os.getpid())
    assert not [p for p in me.children(recursive=True) if _running_with(p, "scale")]


def _running_with(p: psutil.Process, word: str) -> bool:
    """A live process whose command line holds ``word``: a zombie (dead, its command line gone)
    left by another test of this worker runs nothing, and raised ZombieProcess here."""
    try:
        return p.status() != psutil.STATUS_ZOMBIE and word in " ".join(p.cmdline())
    except psutil.Error:  # ended between the listing and the look
        return False
