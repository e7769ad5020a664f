"""Verdict rules on the recorded H100 reference run (tests/data, see its README)."""

import json
from pathlib import Path

import pytest
from conftest import h100_matmul_record, make_record, reference_timing

from whichdevice.analysis.sweep import analyze_sweep
from whichdevice.analysis.verdict import loglog_slope, regime, sweep_findings
from whichdevice.analysis.warmup import break_even
from whichdevice.core.records import CaseResult, CaseSpec

DATA = Path(__file__).parent / "data"


def _mlp_table(probe):
    results = []
    for row in probe["mlp"]:
        for device, key in (("CPU:0", "cpu_step_s"), ("GPU:0", "cuda_step_s")):
            spec = CaseSpec(workload="train", framework="torch", device=device, params={"batch": row["batch"]})
            results.append(CaseResult(spec=spec, status="ok", timing=reference_timing(row[key]), wall_s=0))
    (table,) = analyze_sweep(make_record(results, "train"), "batch")
    return table


def test_mlp_gpu_sits_at_its_floor_while_the_cpu_computes(h100_probe):
    table = _mlp_table(h100_probe)
    findings = {(f.rule, f.device) for f in sweep_findings(table, "batch")}
    assert ("launch_bound", "GPU:0") in findings
    assert ("compute_bound", "CPU:0") in findings
    assert ("gpu_wins", "GPU:0") in findings
    top = table.rows[-1].comparisons["GPU:0"]
    assert top.ratio == pytest.approx(14, rel=0.05)  # GPU ~14x faster at batch 32768, yet still at its floor


def test_seed001_ex2_batch_10_gpu_slower_and_launch_bound(h100_probe):
    s = h100_probe["seed001"]
    assert s["ex2_small_cuda_s"] > s["ex2_small_cpu_s"]
    mlp = {r["batch"]: r for r in h100_probe["mlp"]}
    # Its GPU step (batch 10) is within 1.5x of the lowest GPU step of the whole sweep (0.9 ms).
    floor = min(r["cuda_step_s"] for r in h100_probe["mlp"])
    assert mlp[10]["cuda_step_s"] < 1.5 * floor
    table = _mlp_table(h100_probe)
    assert any(f.rule == "launch_bound" and f.device == "GPU:0" for f in sweep_findings(table, "batch"))


def test_matmul_10000_gpu_faster_and_compute_bound(h100_probe):
    record = h100_matmul_record(h100_probe, "cpu_steady_s", "gpu_steady_s", "steady")
    (table,) = analyze_sweep(record, "n")
    rules = {(f.rule, f.device) for f in sweep_findings(table, "n")}
    assert ("gpu_wins", "GPU:0") in rules and ("compute_bound", "GPU:0") in rules
    assert ("launch_bound", "GPU:0") not in rules


def test_keras_jax_small_fit_never_pays_back_its_warmup():
    cpu = json.loads((DATA / "keras_jax_cpu.json").read_text())["fit_1000_b10_epoch_s"]
    gpu = json.loads((DATA / "keras_jax_gpu.json").read_text())["fit_1000_b10_epoch_s"]
    steps = 100  # 1000 samples / batch 10
    be = break_even(cpu[0], cpu[1] / steps, gpu[0], gpu[1] / steps)
    assert be.kind == "never"  # GPU epochs are slower even when warm


def test_slope_and_regime():
    xs = [1, 4, 16, 64]
    assert loglog_slope(xs, [x**3 for x in xs]) == pytest.approx(3)
    assert regime(xs, [1.0, 1.0, 1.01, 1.02]) == "floor"
    assert regime(xs, [float(x) for x in xs]) == "scaling"
    assert regime([1], [1.0]) == "unknown"
