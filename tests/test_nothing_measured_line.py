"""Seen on the public-code check (benchmarks/public_check_39.md): pytorch/examples' MNIST
Net in a torch diagnose at --budget 30 (tests/data/diagnose_torch_mnist_net_budget30_cpu_2core.json,
a real record on the 2-core VM): the plan left every fix out for the budget and the GPU-only ones
could not run, yet the first screen said "No measured change helps significantly here" — a
verdict over nothing measured. It now says no change was measured; a run that measured a change
keeps the old line. And a warm-up check whose first step was faster than the steady ones no
longer says it "overstates the steady cost"."""

from __future__ import annotations

from pathlib import Path

from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import load_run
from whichdevice.present.firstscreen import first_screen, screen_lines
from whichdevice.present.html import first_view
from whichdevice.present.markdown import _first_screen_markdown

DATA = Path(__file__).parent / "data"
NO_CHANGE_HELPS = "No measured change helps significantly here."
NOTHING_MEASURED = "No change was measured here"


def _texts(name: str, batch: int) -> tuple[str, str]:
    record = load_run(DATA / name)
    fs = first_screen(record, suite_verdict(record, seed_batch=batch))
    view = first_view(fs)
    assert view is not None
    return " ".join(t for _, t in screen_lines(fs, report=None)), " ".join(_first_screen_markdown(view))


def test_a_diagnose_that_measured_no_change_says_so():
    screen, markdown = _texts("diagnose_torch_mnist_net_budget30_cpu_2core.json", 64)
    assert NO_CHANGE_HELPS not in screen and NOTHING_MEASURED in screen
    assert NO_CHANGE_HELPS not in markdown and NOTHING_MEASURED in markdown


def test_a_diagnose_that_measured_changes_keeps_no_measured_change_helps():
    """keras-io's weather LSTM: a fix measured from too few rounds is measured; nothing helped."""
    screen, markdown = _texts("diagnose_keras_lstm_budget30_cpu_2core.json", 256)
    assert NO_CHANGE_HELPS in screen and NOTHING_MEASURED not in screen and NO_CHANGE_HELPS in markdown


def test_a_first_step_faster_than_the_steady_ones_overstates_nothing():
    """pytorch/examples' word language model at --budget 30 on the loaded VM: first step 751 ms
    vs steady 1.31 s (0.573x) read "a one-step timing overstates the steady cost this much"."""
    from whichdevice.analysis.fixes import WarmupCheck
    from whichdevice.present.fixes import check_line

    faster = check_line(WarmupCheck("CPU:0", 0.751, 1.31))
    assert "(0.57×)" in faster and "overstates" not in faster and "no warm-up cost was seen" in faster
    slower = check_line(WarmupCheck("CPU:0", 1.07, 0.0728))
    assert "overstates the steady cost this much" in slower
