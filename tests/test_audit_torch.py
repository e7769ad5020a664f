"""`whichdevice audit` on PyTorch scripts: five timing scripts of our own (tests/data/audit_torch/),
each with one classic mistake, audited for real on this CPU-only machine. Each is caught by its
finding with the CPU-side evidence (what the hooks counted), and each compared pair gets a
corrected ratio from the interleaved re-run. The GPU wording is tested on hand-made
measurements in tests/test_audit.py (no GPU was available to record a real audit)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.test_audit import rules_of, run_audit

TORCH = Path(__file__).parent / "data" / "audit_torch"

pytest.importorskip("torch")


def _series(record: dict) -> list[list[dict]]:
    out: dict[str, list[dict]] = {}
    for m in record["measurements"]:
        out.setdefault(m["series"], []).append(m)
    return list(out.values())


def _common(proc, record, finding: str) -> dict:
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert record["framework"] == "torch" and record["exit_code"] == 0
    assert record["physical_devices"]["GPU"] == 0
    # The script asked torch.cuda.is_available() (False here): its "GPU" half ran on the CPU.
    assert record["cuda_probe"]["answer"] is False
    assert "soft_placed_missing_device" in rules_of(record)
    assert all(set(m["ran_on"]) == {"CPU:0"} for m in record["measurements"])
    assert finding in rules_of(record), rules_of(record)
    f = next(f for f in record["findings"] if f["rule"] == finding)
    assert f["explanation"] and f["fix"]
    assert f["title"] in proc.stdout.replace("\n", " ") or finding in proc.stdout
    # Two series (one model each), compared pairwise; every pair has a corrected ratio measured
    # interleaved, with its interval.
    series = _series(record)
    assert len(series) == 2 and len(series[0]) == len(series[1])
    assert len(record["corrections"]) == len(series[0])
    for c in record["corrections"]:
        assert c["rerun_ok"], c["note"]
        assert len(c["round_ratios"]) >= 9 and "interleaved" in c["note"]
        assert c["real_ratio_low"] <= c["real_ratio"] <= c["real_ratio_high"]
        assert math.isfinite(c["script_ratio"])
    assert "Corrected comparison" in proc.stdout
    return f


def test_no_sync_is_caught_from_the_unsynchronized_interval_ends(tmp_path):
    proc, record = run_audit(tmp_path, TORCH / "no_sync.py")
    f = _common(proc, record, "gpu_timing_without_sync")
    gpu = _series(record)[1]
    flagged = {i for g in record["findings"] if g["rule"] == "gpu_timing_without_sync" for i in g["measurements"]}
    assert flagged >= {m["id"] for m in gpu}
    # The evidence: kernels ran in each timing and nothing read a value back before the clock.
    assert all(m["fn_calls"] == 50 and m["syncs"] == 0 and m["unsynced_gpu_end"] for m in gpu)
    assert "on a GPU this would time only the kernel launches" in f["explanation"]


def test_first_iteration_inside_the_timing_is_caught_by_first_used_kernels(tmp_path):
    proc, record = run_audit(tmp_path, TORCH / "first_iteration.py")
    f = _common(proc, record, "first_includes_setup")
    cpu = _series(record)[0]
    assert cpu[0]["new_kernels"] >= 3 and all(m["new_kernels"] == 0 for m in cpu[1:])
    assert f["measurements"] == [m["id"] for m in cpu]
    # The first step of each model is timed apart as set-up (the finding itself needs ≥ 5 % of the
    # epoch, which the first forward pass reaches or not depending on the load).
    assert cpu[0]["setup_s"]["first_step"] > 0 and all("first_step" not in m["setup_s"] for m in cpu[1:])


def test_item_per_step_is_caught_with_one_host_read_per_step(tmp_path):
    proc, record = run_audit(tmp_path, TORCH / "item_per_step.py")
    f = _common(proc, record, "host_read_per_step")
    assert all(m["user_syncs"] == m["fn_calls"] == 20 for m in record["measurements"])
    assert "on a GPU this would make the host wait" in f["explanation"]
    assert "host_inputs_per_call" not in rules_of(record)


def test_to_device_per_step_is_caught_from_the_moves_inside_the_timing(tmp_path):
    proc, record = run_audit(tmp_path, TORCH / "to_device_per_step.py")
    f = _common(proc, record, "host_inputs_per_call")
    assert all(m["host_inputs"] == m["pageable_moves"] == 2 * m["fn_calls"] == 40 for m in record["measurements"])
    assert "on a GPU each move would be a host→device copy" in f["explanation"]
    assert "host_read_per_step" not in rules_of(record)


def test_dataloader_defaults_are_caught_with_the_measured_wait(tmp_path):
    proc, record = run_audit(tmp_path, TORCH / "dataloader.py")
    f = _common(proc, record, "dataloader_settings")
    (loader,) = record["loaders"]
    assert loader["num_workers"] == 0 and loader["pin_memory"] is False and loader["batch_size"] == 32
    hit = [m for m in record["measurements"] if m["id"] in f["measurements"]]
    assert hit and all(0.05 * m["seconds"] <= m["loader_wait_s"] <= m["seconds"] for m in hit)
    assert "num_workers=0" in f["explanation"] and "pin_memory=False" in f["explanation"]
