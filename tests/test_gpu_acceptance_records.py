"""The H200 acceptance runs (tests/data/gpu_acceptance/, benchmarks/gpu_acceptance.sh), re-rendered.

What the first acceptance run showed wrong, each checked on its real record: a change line of a two-framework run
that did not name its framework, "tf.data with prefetch" and Keras-only fixes in a torch diagnose, and the checker
itself (benchmarks/gpu_acceptance_check.py), which must fail the first H200 run and pass the fixed torch diagnose.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"
RUN1 = DATA / "gpu_acceptance" / "h200-run1"
RUN2 = DATA / "gpu_acceptance" / "h200-run2"
CHECK = Path(__file__).parent.parent / "benchmarks" / "gpu_acceptance_check.py"


def _report(path: Path, tmp_path: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "whichdevice", "report", str(path), "--verbose"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_a_two_framework_run_names_the_framework_of_each_change(tmp_path):
    """Only keras-jax's batch pair was measured (66 cases skipped at --budget 20): its line still says so."""
    out = _report(RUN1 / "run.json", tmp_path)
    change = next(line for line in out.splitlines() if line.strip().startswith("1. Batch 10 →"))
    assert "(keras-jax)" in change
    answers = [line for line in out.splitlines() if "Training (small MLP" in line]
    assert len(answers) == 2 and "torch)" in answers[0] and "keras-jax)" in answers[1]


def test_a_torch_diagnose_speaks_torch(tmp_path):
    """No tf.data, steps_per_execution, jit_compile or Keras precision policies in a torch record's page."""
    out = _report(RUN2 / "diag_torch_cnn.json", tmp_path)
    for word in ("tf.data", "steps_per_execution", "jit_compile", "mixed_float16", "model.fit", "tf.function"):
        assert word not in out, word
    assert "NumPy batches" in out and "pin_memory" in out


def test_the_fixed_torch_diagnose_measured_the_pin_memory_pair_on_the_gpu():
    rec = json.loads((RUN2 / "diag_torch_cnn.json").read_text())
    pin = [r for r in rec["results"] if r["spec"]["params"].get("data") == "loader_pin"]
    assert {r["spec"]["device"] for r in pin} == {"GPU:0"} and all(r["status"] == "ok" for r in pin)
    assert not [r for r in rec["results"] if r["status"] == "failed"]


def test_the_acceptance_checker_fails_the_first_h200_run_and_passes_the_fixed_one(tmp_path):
    first = tmp_path / "first"
    first.mkdir()
    (first / "diag_torch_cnn.json").write_text((DATA / "h200" / "diag_cnn.json").read_text())
    bad = subprocess.run([sys.executable, str(CHECK), str(first)], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "FAIL         no case failed" in bad.stdout
    assert "Expected a 'cuda' device type for generator" in bad.stdout
    good = subprocess.run([sys.executable, str(CHECK), str(RUN2)], capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout
    assert "PASS         torch DataLoader cases measured on the GPU" in good.stdout
