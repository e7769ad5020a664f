"""Crossover detection, on synthetic curves and on the recorded H100 reference run."""

import pytest
from conftest import h100_matmul_record

from whichdevice.analysis.crossover import find_crossover
from whichdevice.analysis.sweep import analyze_sweep
from whichdevice.present.claims import crossover_text


def test_steady_fp32_crossover_on_h100_is_between_128_and_256(h100_probe):
    record = h100_matmul_record(h100_probe, "cpu_steady_s", "gpu_steady_s", "steady")
    (table,) = analyze_sweep(record, "n", work_metric="flops_per_call")
    cross = table.crossovers["GPU:0"]
    assert cross.kind == "between"
    assert (cross.low, cross.high) == (128, 256)
    assert 128 < cross.estimate < 256


def test_seed_style_crossover_on_h100_is_between_32_and_64(h100_probe):
    record = h100_matmul_record(h100_probe, "cpu_e2e_s", "gpu_e2e_s", "seed")
    (table,) = analyze_sweep(record, "n")
    cross = table.crossovers["GPU:0"]
    assert (cross.low, cross.high) == (32, 64)
    assert 32 < cross.estimate < 64


def test_h100_rows_name_the_winner_and_ratio(h100_probe):
    record = h100_matmul_record(h100_probe, "cpu_steady_s", "gpu_steady_s", "steady")
    (table,) = analyze_sweep(record, "n", work_metric="flops_per_call")
    row = next(r for r in table.rows if r.x == 10000)
    comp = row.comparisons["GPU:0"]
    assert comp.ratio == pytest.approx(1.118156428000006 / 0.040966092000005006)
    assert comp.faster == "GPU:0"
    assert row.cells["GPU:0"].work_per_s == pytest.approx(2e12 / 0.040966092000005006)
    small = next(r for r in table.rows if r.x == 1).comparisons["GPU:0"]
    assert small.faster == "CPU:0"


def test_log_log_interpolation_is_exact_for_power_laws():
    # t_cpu = x^3 * 1e-9, t_gpu = 1e-5 constant: equal at x = 1e4^(1/3) * 10 = 215.44...
    xs = [100, 1000]
    cpu = [x**3 * 1e-11 for x in xs]
    gpu = [1e-5, 1e-5]
    cross = find_crossover(xs, cpu, gpu)
    assert cross.estimate == pytest.approx((1e-5 / 1e-11) ** (1 / 3))


def test_no_crossover_cases():
    assert find_crossover([1, 2, 4], [1, 1, 1], [2, 2, 2]).kind == "cpu_everywhere"
    assert find_crossover([1, 2, 4], [2, 2, 2], [1, 1, 1]).kind == "gpu_everywhere"
    assert find_crossover([], [], []).kind == "no_data"
    text = crossover_text(find_crossover([1, 2, 4], [2, 2, 2], [1, 1, 1]), "n")
    assert "GPU wins everywhere" in text


def test_crossover_uses_the_last_cpu_win_when_noise_flips_a_point():
    # GPU wins at 2 by noise, CPU wins again at 4, GPU from 8 on.
    cross = find_crossover([1, 2, 4, 8, 16], [1, 1, 1, 4, 8], [2, 0.9, 2, 2, 2])
    assert (cross.low, cross.high) == (4, 8)


def test_overlapping_ranges_make_the_crossover_uncertain():
    cross = find_crossover([1, 2], [1.0, 2.0], [1.5, 1.0], [(0.9, 1.6), (1.9, 2.1)], [(1.4, 1.6), (0.9, 1.1)])
    assert cross.ranges_overlap
    assert "uncertain" in crossover_text(cross)
