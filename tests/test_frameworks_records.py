"""Every framework's recorded GPU run (the H100 reference: torch, Keras on JAX and on torch)
through the same analysis code, alone and side by side in one record; and the parent-side
framework plumbing (names, folders, environments, which cases apply). No framework import."""

import json

import pytest
from conftest import DATA, h100_matmul_record, make_record, timing_of

from whichdevice.measure import experiment
from whichdevice import frameworks
from whichdevice.analysis.fixes import ab_fixes
from whichdevice.analysis.sweep import analyze_sweep
from whichdevice.analysis.train import analyze_training
from whichdevice.analysis.warmup import break_even
from whichdevice.core.errors import UsageError
from whichdevice.core.records import CaseResult, CaseSpec
from whichdevice.workloads.suite import suite_cases


def _keras(name):
    return json.loads((DATA / f"keras_{name}.json").read_text())


def _jax_matmul_results(framework="keras-jax"):
    """keras_probe.py's jitted JAX matmul (steady) on the H100 machine's CPU and GPU."""
    out = []
    for tag, device in (("jax_cpu", "CPU:0"), ("jax_gpu", "GPU:0")):
        for row in _keras(tag)["jax_matmul"]:
            spec = CaseSpec(
                workload="matmul",
                framework=framework,
                device=device,
                params={"n": row["n"], "mode": "steady", "dtype": "float32"},
            )
            t = timing_of(row["steady_s"]).model_copy(update={"first_call_s": row["first_call_s"]})
            out.append(
                CaseResult(
                    spec=spec, status="ok", timing=t, wall_s=0.0, metrics={"flops_per_call": 2.0 * row["n"] ** 3}
                )
            )
    return out


def _fit_results(backend, framework):
    """keras_probe.py's model.fit epochs (seed 001's model) as fit results, one per batch."""
    out = []
    for tag, device in ((f"{backend}_cpu", "CPU:0"), (f"{backend}_gpu", "GPU:0")):
        data = _keras(tag)
        for key, epochs in data.items():
            if not key.startswith("fit_"):
                continue
            _, n, b, _, _ = key.split("_")
            batch, samples = int(b[1:]), int(n)
            steps = -(-samples // batch)
            t = timing_of(epochs[1] / steps).model_copy(update={"first_call_s": epochs[0] / steps})
            spec = CaseSpec(
                workload="train",
                framework=framework,
                device=device,
                params={"kind": "fit", "model": "seed001", "samples": samples, "batch": batch},
            )
            out.append(
                CaseResult(
                    spec=spec,
                    status="ok",
                    timing=t,
                    wall_s=sum(epochs),
                    metrics={"epoch_1_s": epochs[0], "epoch_2_s": epochs[1], "samples_per_step": float(batch)},
                )
            )
    return out


def test_keras_jax_matmul_crossover_matches_torch_reference(h100_probe):
    (jax_table,) = analyze_sweep(make_record(_jax_matmul_results()), "n", work_metric="flops_per_call")
    c = jax_table.crossovers["GPU:0"]
    assert (c.kind, c.low, c.high) == ("between", 128, 256)
    (torch_table,) = analyze_sweep(
        h100_matmul_record(h100_probe, "cpu_steady_s", "gpu_steady_s", "steady"), "n", work_metric="flops_per_call"
    )
    t = torch_table.crossovers["GPU:0"]
    assert (t.low, t.high) == (c.low, c.high)  # the same winner on both sides of the same bracket


def test_frameworks_side_by_side_keep_their_own_tables_and_crossovers(h100_probe):
    torch_rec = h100_matmul_record(h100_probe, "cpu_steady_s", "gpu_steady_s", "steady")
    both = make_record(torch_rec.results + _jax_matmul_results())
    tables = analyze_sweep(both, "n", work_metric="flops_per_call")
    by_fw = {t.group["framework"]: t for t in tables}
    assert set(by_fw) == {"torch", "keras-jax"} and "framework=torch" in by_fw["torch"].title
    alone = {
        "torch": analyze_sweep(torch_rec, "n")[0],
        "keras-jax": analyze_sweep(make_record(_jax_matmul_results()), "n")[0],
    }
    for fw, t in by_fw.items():
        assert [r.x for r in t.rows] == [r.x for r in alone[fw].rows]
        assert t.crossovers["GPU:0"] == alone[fw].crossovers["GPU:0"]
        # the cells are that framework's own timings, never the other's
        row = next(r for r in t.rows if r.x == 128)
        assert row.cells["GPU:0"].timing == next(r for r in alone[fw].rows if r.x == 128).cells["GPU:0"].timing


def _epochs_break_even(row):
    cpu, gpu = row.cells["CPU:0"].epochs, row.cells["GPU:0"].epochs
    return break_even(cpu.first_s, cpu.steady_s, gpu.first_s, gpu.steady_s, unit="epochs")


def test_recorded_keras_fits_side_by_side_give_each_backends_break_even():
    record = make_record(_fit_results("jax", "keras-jax") + _fit_results("torch", "keras-torch"), experiment="train")
    report = analyze_training(record)
    rows = {(r.params["framework"], r.params["batch"]): r for r in report.runs}
    assert len(rows) == 8 and len(report.runs) == 8  # 2 frameworks x 4 batches, no cell overwritten
    jax_4096 = rows[("keras-jax", 4096)]
    be = _epochs_break_even(jax_4096)
    assert be.kind == "after" and be.n == 145  # as test_train_analysis computes from the raw file
    for batch in (10, 32):
        r = rows[("keras-torch", batch)]
        assert _epochs_break_even(r).kind == "never"
        assert r.comparisons["GPU:0"].ratio < 1  # the GPU is slower per step
    assert rows[("keras-jax", 10)].cells["GPU:0"].timing.median_s == pytest.approx(
        _keras("jax_gpu")["fit_1000_b10_epoch_s"][1] / 100
    )


def test_fix_pairs_never_cross_frameworks():
    def res(fw, spe, s):
        spec = CaseSpec(
            workload="train",
            framework=fw,
            device="CPU:0",
            params={"kind": "fit", "example": "ex2", "steps_per_execution": spe},
        )
        return CaseResult(spec=spec, status="ok", timing=timing_of(s), wall_s=0.0)

    record = make_record([res("tensorflow", 1, 1.0), res("tensorflow", 20, 0.5), res("keras-jax", 20, 0.1)])
    fixes = ab_fixes(record, "steps_per_execution", 1)
    assert len(fixes) == 1 and fixes[0].speedup == pytest.approx(2.0)
    f = fixes[0]
    assert (f.framework, f.device, f.fix, f.baseline_value, f.variant_value) == (
        "tensorflow",
        "CPU:0",
        "steps_per_execution",
        1,
        20,
    )


@pytest.mark.parametrize(
    "name, cpu_env, gpu_env",
    [
        (
            "keras-jax",
            {"JAX_PLATFORMS": "cpu", "KERAS_BACKEND": "jax"},
            {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "KERAS_BACKEND": "jax"},
        ),
        ("jax", {"JAX_PLATFORMS": "cpu"}, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}),
        ("keras-torch", {"CUDA_VISIBLE_DEVICES": "", "KERAS_BACKEND": "torch"}, {"KERAS_BACKEND": "torch"}),
        ("torch", {"CUDA_VISIBLE_DEVICES": ""}, {}),
    ],
)
def test_each_framework_hides_the_gpu_before_import_for_a_cpu_run(name, cpu_env, gpu_env):
    env = frameworks.env_module(name)
    cpu, gpu = env.child_env("cpu"), env.child_env("gpu")
    assert cpu.items() >= cpu_env.items() and gpu.items() >= gpu_env.items()
    assert "JAX_PLATFORMS" not in gpu and "CUDA_VISIBLE_DEVICES" not in gpu
    assert frameworks.folder(name) == name.replace("-", "_")
    with pytest.raises(ValueError):
        env.child_env("tpu")


def test_torch_threads_go_into_the_environment_before_import():
    assert frameworks.env_module("torch").child_env("cpu", 1)["OMP_NUM_THREADS"] == "1"


def test_run_suite_leaves_out_what_a_framework_cannot_do():
    def kinds(fw):
        return [
            (
                c.params.get("kind"),
                c.params.get("data"),
                c.params.get("steps_per_execution"),
                c.params.get("jit_compile"),
            )
            for c in suite_cases(fw, "CPU:0", gpu_present=False)
            if c.workload == "train"
        ]

    assert not [k for k in kinds("torch") if k[0] == "fit"]
    assert not [k for k in kinds("keras-jax") if k[1] == "tfdata_noprefetch"]
    assert [k for k in kinds("keras-jax") if k[2] == 20] and [k for k in kinds("keras-jax") if k[3] is True]
    assert not [k for k in kinds("keras-torch") if k[2] is not None or k[3] is not None]
    assert [k for k in kinds("tensorflow") if k[1] == "tfdata_noprefetch"]
    assert any("numpy batches" in n for n in frameworks.record_notes("keras-jax", "train"))
    assert frameworks.record_notes("tensorflow", "train") == []


def test_missing_framework_names_the_package_and_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m == "jax" else real(m, *a))
    with pytest.raises(UsageError) as e:
        experiment.require_installed("keras-jax")
    assert "jax (needed by keras-jax) is not installed" in str(e.value) and "whichdevice[jax]" in str(e.value)
