import pytest

from whichdevice.core import stats


def test_quantiles_match_numpy_linear_method():
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert stats.median(xs) == 3.0
    assert stats.quantile(xs, 0.25) == 2.0
    assert stats.quantile(xs, 0.75) == 4.0
    assert stats.iqr(xs) == 2.0
    assert stats.rel_iqr(xs) == pytest.approx(2 / 3)
    assert stats.quantile([1.0, 2.0], 0.5) == 1.5


def test_single_sample_has_no_spread():
    assert stats.iqr([7.0]) == 0.0


def test_empty_and_bad_quantile():
    with pytest.raises(ValueError):
        stats.median([])
    with pytest.raises(ValueError):
        stats.quantile([1.0], 1.5)
