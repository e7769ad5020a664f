"""Would a GPU help? one decision (analysis/gpudecision.py): a winner only where the ratio band
excludes 1, the same words on run's screen and predict's for the same record."""

from __future__ import annotations

from pathlib import Path

import pytest

from whichdevice.analysis.costmodel import Band
from whichdevice.analysis.gpudecision import TOO_CLOSE, batch_winner, decide
from whichdevice.analysis.suite import gpu_prediction, suite_verdict
from whichdevice.core.records import RunRecord
from whichdevice.present.claims import gpu_decide_words, gpu_decision_words
from whichdevice.present.firstscreen import first_screen
from whichdevice.present.predictscreen import screen_lines

DATA = Path(__file__).parent / "data"
TRACED = ["run_cpu_2core_traced.json", "run_cpu_2core_changed.json", "run_cpu_readme.json"]


def _load(name: str) -> RunRecord:
    return RunRecord.model_validate_json((DATA / name).read_text())


def test_a_batch_has_a_winner_only_where_the_ratio_band_excludes_1():
    assert batch_winner(Band(0.5, 0.7, 0.9)) == "GPU"
    assert batch_winner(Band(1.1, 1.5, 2.0)) == "CPU"
    assert batch_winner(Band(0.8, 0.9, 1.2)) == TOO_CLOSE  # the medians say GPU; the band does not


@pytest.mark.parametrize("name", TRACED)
def test_recorded_runs_decide_from_each_rows_ratio_band(name):
    report, _ = gpu_prediction(_load(name))
    assert report is not None
    for row in report.rows:
        r = row.ratio
        assert r is not None
        want = "GPU" if r.high < 1 else "CPU" if r.low > 1 else TOO_CLOSE
        assert row.winner == want, (row.batch, r)
    assert report.decision.measured == tuple(row.batch for row in report.rows)


@pytest.mark.parametrize("name", TRACED)
def test_run_and_predict_screens_say_the_same_answer_for_the_same_record(name):
    record = _load(name)
    report, profile = gpu_prediction(record)
    assert report is not None and profile is not None and profile.gpu is not None
    head = gpu_decision_words(report.decision, profile.gpu.description)
    run = " ".join(first_screen(record, suite_verdict(record)).answer)
    predict = " ".join(text for _, text in screen_lines(report, record, profile))
    assert f"Would a GPU help? {head}" in run and f"{head}." in predict


def test_a_sweep_cut_by_the_budget_claims_nothing_past_its_last_batch():
    """`--budget 30` measured batch 8 only: say so, and predict nothing beyond it."""
    report, _ = gpu_prediction(_load("run_cpu_readme.json"))
    assert report is not None
    rows = [r for r in report.rows if r.batch == 8]
    d = decide(rows, planned=[8, 10, 32, 128, 512, 2048, 8192])
    assert d.measured == (8,) and d.unmeasured_above == (10, 32, 128, 512, 2048, 8192)
    words = gpu_decision_words(d, "NVIDIA H100 80GB HBM3")
    assert "at batch 8, the only batch measured" in words and "every batch" not in words
    assert "Measured only up to batch 8: batch 10–8192 not measured" in gpu_decide_words(d)
