from conftest import timing_of

from whichdevice.analysis.compare import compare
from whichdevice.core.records import Timing
from whichdevice.present.claims import comparison_text


def _t(samples, rounds=None):
    return Timing(
        first_call_s=samples[0],
        warmup_s=[samples[0]],
        samples_s=samples,
        number_per_sample=1,
        overhead_s=0.0,
        rounds_s=rounds,
    )


def test_significant_gpu_win_is_described_with_its_interval_and_count():
    c = compare("CPU:0", _t([3.0, 3.1, 2.9, 3.05, 2.95]), "GPU:0", _t([1.0, 1.02, 0.98, 1.01, 0.99]))
    assert c.significant and c.winner == "GPU:0"
    assert comparison_text(c).startswith("GPU:0 3× faster (95 % CI 2.9–3.1×, 5 samples)")


def test_slower_gpu():
    c = compare("CPU:0", _t([1.0, 1.01, 0.99, 1.0, 1.0]), "GPU:0", _t([1.6, 1.61, 1.59, 1.6, 1.6]))
    assert c.winner == "CPU:0"
    assert comparison_text(c).startswith("GPU:0 1.6× slower")


def test_one_sample_is_not_enough_for_a_winner():
    c = compare("CPU:0", timing_of(1.0), "GPU:0", timing_of(1.6))
    assert c.winner is None and not c.enough
    assert comparison_text(c).startswith("not enough samples")


def test_overlapping_samples_are_no_clear_change():
    c = compare("CPU:0", _t([1.0, 1.2, 0.8, 1.1, 0.9]), "GPU:0", _t([1.05, 1.25, 0.85, 1.15, 0.95]))
    assert not c.significant
    assert c.winner is None
    assert comparison_text(c).startswith("no clear change")


def test_rounds_decide_when_processes_disagree():
    # Each process is tight, but the two processes give 1.5x and 0.8x: no change is claimed.
    a = [[1.5, 1.51, 1.49, 1.5, 1.5], [0.8, 0.81, 0.79, 0.8, 0.8]]
    b = [[1.0, 1.01, 0.99, 1.0, 1.0]] * 2
    pooled = compare("A", _t(a[0] + a[1]), "B", _t(b[0] + b[1]))
    rounds = compare("A", _t(a[0] + a[1], a), "B", _t(b[0] + b[1], b))
    assert rounds.claim.unit == "rounds" and rounds.n == 2
    assert not rounds.significant
    assert pooled.claim.unit == "samples"
