"""core/units.py, the one formatter of figures with units, at its boundaries (item 7:
`predict --quick` printed '1e+03 µs' for a step just under 1 ms)."""

from __future__ import annotations

import pytest

from whichdevice.core.units import figure, nbytes, rate, seconds


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "—"),
        (0.0, "0 ns"),
        (5e-10, "0.5 ns"),
        (999.4e-9, "999 ns"),
        (999.6e-9, "1 µs"),
        (1e-6, "1 µs"),
        (0.0009996, "1 ms"),
        (1e-3, "1 ms"),
        (0.0123, "12.3 ms"),
        (0.5, "500 ms"),
        (0.9996, "1 s"),
        (1.0, "1 s"),
        (123.4, "123 s"),
        (4000.0, "4000 s"),
        (-0.002, "-2 ms"),
    ],
)
def test_seconds_reads_in_the_unit_its_rounded_figure_belongs_to(value, text):
    assert seconds(value) == text


def test_no_figure_shows_an_exponent_from_a_nanosecond_up():
    for k in range(0, 70):
        v = 1.7**k * 1e-9
        for text in (seconds(v), rate(v * 1e12), nbytes(int(v * 1e12))):
            assert "e+" not in text and "e-" not in text, (v, text)


def test_smallest_unit_is_kept_below_it():
    assert seconds(5e-7, smallest="µs") == "0.5 µs"
    assert seconds(2e-4, smallest="ms") == "0.2 ms"
    assert seconds(0.9996, smallest="ms") == "1 s"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (999.0, "999 FLOP/s"),
        (999.6, "1 kFLOP/s"),
        (999.6e9, "1 TFLOP/s"),
        (2.5e12, "2.5 TFLOP/s"),
        (5e15, "5000 TFLOP/s"),
    ],
)
def test_rate_boundaries(value, text):
    assert rate(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1000, "1000 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (999 * 1024, "999 KiB"),
        (1000 * 1024, "0.977 MiB"),
        (2**20 - 1, "1 MiB"),
        (3 * 2**30, "3 GiB"),
    ],
)
def test_nbytes_boundaries(value, text):
    assert nbytes(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.5, "0.5"), (64.3, "64.3"), (125.0, "125"), (999.6, "1000"), (1634.2, "1630"), (523000.0, "523000")],
)
def test_a_figure_never_shows_an_exponent(value, text):
    assert figure(value) == text


def test_a_crossover_past_1000_reads_as_a_number():
    """The H200 run's batch crossover of keras-jax (≈ 1630) read 'about 1.63e+03' in the
    answer lines and on the plot."""
    from whichdevice.analysis.crossover import Crossover
    from whichdevice.present.claims import crossover_text

    cross = Crossover(kind="between", estimate=1634.2, low=512.0, high=2048.0)
    assert crossover_text(cross, "") == "the GPU starts to win at about 1630 (between 512 and 2048)"
