"""`whichdevice audit` on a JAX script (tests/data/audit_jax/): the classic missing
block_until_ready(). JAX dispatches asynchronously on the CPU too, so here the trap is measured,
not only described: the script's timings are the dispatch, the interleaved re-run (synchronized)
times the work."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_audit import rules_of, run_audit

pytest.importorskip("jax")

JAX = Path(__file__).parent / "data" / "audit_jax"


def test_missing_block_until_ready_is_caught_and_measured(tmp_path):
    proc, record = run_audit(tmp_path, JAX / "no_block_until_ready.py")
    assert proc.returncode == 0 and record["exit_code"] == 0, proc.stderr[-2000:]
    assert record["framework"] == "jax" and record["physical_devices"]["GPU"] == 0
    ms = record["measurements"]
    assert len(ms) == 10 and all(m["fn_calls"] == 1 and m["syncs"] == 0 and m["unsynced_gpu_end"] for m in ms)
    assert all(m["traces"] == 0 for m in ms)  # the warm-up compiled outside the timing
    assert rules_of(record) == ["gpu_timing_without_sync", "gpu_timing_without_sync"]
    f = record["findings"][0]
    assert "block_until_ready" in f["explanation"] and "measured here" in f["explanation"]
    # The corrected (synchronized, interleaved) time per call is far above what the script timed.
    c = record["corrections"][0]
    assert c["rerun_ok"] and len(c["round_ratios"]) >= 9
    script = sorted(m["seconds"] for m in ms if m["id"] < 5)[2]
    assert c["a_steady_s"] > 3 * script, (c["a_steady_s"], script)
