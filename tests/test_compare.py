from conftest import timing_of

from whichdevice.analysis.compare import compare
from whichdevice.core.records import Timing


def _t(samples):
    return Timing(
        first_call_s=samples[0], warmup_s=[samples[0]], samples_s=samples, number_per_sample=1, overhead_s=0.0
    )


def test_significant_gpu_win_is_described_with_its_range():
    c = compare("CPU:0", _t([3.0, 3.1, 2.9, 3.05, 2.95]), "GPU:0", _t([1.0, 1.02, 0.98, 1.01, 0.99]))
    assert c.significant and c.winner == "GPU:0"
    assert c.describe().startswith("GPU:0 3x faster")


def test_slower_gpu():
    c = compare("CPU:0", timing_of(1.0), "GPU:0", timing_of(1.6))
    assert c.winner == "CPU:0"
    assert c.describe().startswith("GPU:0 1.6x slower")


def test_overlapping_quartiles_are_no_significant_difference():
    c = compare("CPU:0", _t([1.0, 1.2, 0.8, 1.1, 0.9]), "GPU:0", _t([1.05, 1.25, 0.85, 1.15, 0.95]))
    assert not c.significant
    assert c.winner is None
    assert c.describe().startswith("no significant difference")
