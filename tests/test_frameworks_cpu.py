"""Real CPU runs of every added framework (keras-jax, keras-torch, torch, jax) in child
processes, at small sizes: matmul through the CLI, seed 001's training cases through the
same train workload as TensorFlow. Skipped where a framework is not installed."""

import importlib.util

import pytest
from conftest import run_cli

from whichdevice.measure import experiment
from whichdevice.core.records import DeviceInfo, load_run
from whichdevice.core.timing import TimingPolicy
from whichdevice.workloads import train as train_workload

pytestmark = pytest.mark.frameworks

NEEDS = {"jax": ("jax",), "keras-jax": ("keras", "jax"), "torch": ("torch",), "keras-torch": ("keras", "torch")}


def _require(fw):
    for module in NEEDS[fw]:
        pytest.importorskip(module)


@pytest.mark.parametrize("fw", ["jax", "keras-jax", "torch", "keras-torch"])
def test_matmul_on_the_cpu(fw, tmp_path, capsys):
    _require(fw)
    path = tmp_path / "m.json"
    code, out, err = run_cli(
        [
            "matmul",
            "--framework",
            fw,
            "--sizes",
            "10,200",
            "--min-time",
            "0.02",
            "--out",
            str(tmp_path),
            "--json",
            str(path),
            # one thread for torch: on this VM a 2-thread torch process is sometimes in a state
            # where every small op takes ≈ 16 ms (benchmarks/performance.md), n=10 and n=200 alike
            *(["--cpu-threads", "1"] if "torch" in fw else []),
        ],
        capsys,
    )
    assert code == 0, err
    record = load_run(path)
    assert [r.status for r in record.results] == ["ok"] * 4, [r.error for r in record.results]
    (session,) = record.sessions
    assert session.framework.name == fw and session.device.name == "CPU:0"
    assert session.cpu_threads_intra >= 1 and session.cpu_threads_source
    details = session.framework.details
    assert "compile" in details  # the fair-comparison facts are in the record
    assert ("tf32_matmul" in details) if "torch" in fw else ("default_matmul_precision" in details)
    # the GPU was hidden before import for the CPU child
    assert session.env.get("JAX_PLATFORMS") == "cpu" or session.env.get("CUDA_VISIBLE_DEVICES") == ""
    by = {(r.spec.params["mode"], r.spec.params["n"]): r.timing for r in record.results}
    # n=200 is 8000x the FLOPs of n=10: slower on any CPU, whatever the per-call overhead
    assert by[("steady", 200)].median_s > by[("steady", 10)].median_s
    assert f"{fw} sees no GPU" in out.replace("\n", " ")


def _train_cases(fw):
    def spec(**p):
        return train_workload.CaseSpec(workload="train", framework=fw, device="CPU:0", params=p)

    ex2 = dict(model="seed001", example="ex2", samples=1000, batch=10)
    cases = [
        spec(kind="create", model="seed001", example="ex1", op="clone"),
        spec(kind="loop", data="numpy", epochs=1, **ex2),
        spec(kind="loop", model="seed002", example="seed002", samples=2048, batch=512, data="tfdata_shuffle", epochs=2),
        spec(kind="steady", model="seed001", batch=32, sync="each"),
        spec(kind="steady", model="seed001", batch=32, sync="none"),
    ]
    if fw != "torch":
        cases.append(spec(kind="fit", data="numpy", epochs=2, **ex2))
    return cases


# Keras on torch runs the same cases through the same Keras code as keras-jax, and torch's eager
# ops take the longest here (≈ 50 s of the suite's 12 minutes): it runs with the slow tests.
@pytest.mark.parametrize("fw", ["keras-jax", pytest.param("keras-torch", marks=pytest.mark.slow), "torch"])
def test_seed001_training_cases_on_the_cpu(fw):
    _require(fw)
    cpu = DeviceInfo(name="CPU:0", kind="cpu")
    sessions, results, notes = experiment.run_devices(
        fw,
        [cpu],
        lambda d: _train_cases(fw),
        policy=TimingPolicy(min_time_s=0.02, telemetry_period_s=None),
        cpu_threads=None,
        case_timeout_s=300,
    )
    assert not notes
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    by = {(r.spec.params["kind"], r.spec.params.get("example"), r.spec.params.get("sync")): r for r in results}
    loop = by[("loop", "ex2", None)]
    assert loop.metrics["steps"] == 100  # seed 001 ex2: 100 steps of batch 10
    # The first step carries the start-up: tracing / compilation where the step is traced (above
    # the median), only the first use of each op where it is eager (torch, Keras/torch: at least
    # the fastest steady step). On this VM a 2-thread torch process is sometimes in a state where
    # every small op takes ≈ 16 ms (benchmarks/performance.md): the eager start-up then vanishes
    # in it (CI saw a first step of 118 ms against a median of 120 ms).
    if fw in ("torch", "keras-torch"):
        assert loop.timing.first_call_s >= min(loop.timing.samples_s)
    else:
        assert loop.timing.first_call_s > loop.timing.median_s
    assert by[("loop", "seed002", None)].metrics["steps"] == 8  # 2 epochs of 4 numpy batches
    if fw != "torch":
        fit = by[("fit", "ex2", None)]
        assert fit.metrics["steps_per_epoch"] == 100 and len(fit.timing.samples_s) == 100
        # what jit_compile="auto" resolved to: XLA on JAX, eager on torch (Keras 3)
        assert fit.metrics["jit_compile"] == (1.0 if fw == "keras-jax" else 0.0)
    each, none = by[("steady", None, "each")], by[("steady", None, "none")]
    assert each.timing.n_samples >= 3 and none.timing.n_samples >= 3


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_train_cli_rejects_what_plain_torch_cannot_do(tmp_path, capsys):
    code, _, err = run_cli(
        ["train", "--framework", "torch", "--model", "m.py:build", "--out", str(tmp_path / "o")], capsys
    )
    assert code == 2 and "--model: a Keras model cannot be trained by --framework torch" in err
    code, _, err = run_cli(
        [
            "train",
            "--framework",
            "keras-jax",
            "--model",
            "m.py:build",
            "--data",
            "d.py:ds",
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
    )
    assert code == 2 and "--data: a tf.data dataset needs --framework tensorflow" in err


@pytest.mark.parametrize(
    "fw, kind, says",
    [
        ("tensorflow", "out_of_memory", "OOM when allocating"),  # ResourceExhaustedError, as on a full GPU
        ("torch", "out_of_memory", "can't allocate memory"),
        # JAX 0.10's CPU random kernel does not raise: a CHECK fails (buffer_.IsConcrete()) and
        # the process aborts. The runner records the crash and goes on in a new child.
        ("jax", "crash", "SIGABRT"),
    ],
)
def test_a_case_too_large_for_the_device_allocator_fails_alone(fw, kind, says):
    # A real allocation failure, no injection: seed 000's matmul at n = 2**20 asks the
    # framework's allocator on CPU:0 for two 4 TiB operands. On a GPU the same exception
    # types carry "GPU" (no GPU here: that path ran only on the CPU device).
    pytest.importorskip(fw)
    from whichdevice.measure import runner
    from whichdevice.workloads.matmul import build_cases

    job = runner.Job(
        fw,
        "CPU:0",
        "cpu",
        build_cases(fw, "CPU:0", (1 << 20, 8), ["seed"], "float32"),
        policy={
            "min_time_s": 0.01,
            "warmup_calls": 0,
            "min_samples": 2,
            "max_samples": 5,
            "target_blocks": 2,
            "max_time_s": 1.0,
        },
    )
    by_n = {r.spec.params["n"]: r for r in runner.run_job(job, case_timeout_s=120).results}
    huge, small = by_n[1 << 20], by_n[8]
    assert huge.status == "failed" and huge.failure == kind and says in huge.error, huge.error
    assert small.status == "ok"
