"""analysis/scale.py and present/scale.py on recorded real `whichdevice scale --devices 1,2` runs
(tests/data/scale_*_cpu2.json, tests/data/README.md): efficiency, all-reduce share and the
crossover recomputed here from the raw samples, the verdict's words, the plot and the HTML; plus
a constructed record where the crossover must be found between two batches."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import make_record

from whichdevice.analysis import significance
from whichdevice.analysis.scale import analyze_scale
from whichdevice.core import records, stats
from whichdevice.core.records import CaseResult, CaseSpec, Timing
from whichdevice.present.claims import times
from whichdevice.present import scale as present_scale

DATA = Path(__file__).parent / "data"
RECORDS = sorted(DATA.glob("scale_*_cpu2.json"))


def _raw(path: Path) -> dict:
    """(framework, N, B, variant) -> raw samples, read from the JSON without the package."""
    out = {}
    for r in json.loads(path.read_text())["results"]:
        if r["status"] == "ok":
            p = r["spec"]["params"]
            out[(p["replicas"], p["global_batch"], p["variant"])] = r["timing"]["samples_s"]
    return out


def test_three_frameworks_recorded():
    assert {p.stem for p in RECORDS} >= {"scale_torch_cpu2", "scale_keras_jax_cpu2", "scale_tensorflow_cpu2"}


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_efficiency_share_and_crossover_from_the_raw_samples(path):
    raw = _raw(path)
    (fs,) = analyze_scale(records.load_run(path)).frameworks
    assert fs.replicas == [1, 2] and fs.replicas_ok()
    crossed_at = None
    for b in fs.batches:
        one, two = raw[(1, b, "step")], raw[(2, b, "step")]
        p = fs.point(2, b)
        assert p.samples_per_s == pytest.approx(b / stats.median(two), rel=1e-12)
        # throughput_2 / (2 x throughput_1) = (b / t2) / (2 b / t1) = t1 / (2 t2)
        assert p.efficiency == pytest.approx(stats.median(one) / (2 * stats.median(two)), rel=1e-12)
        lo, hi = p.efficiency_ci
        assert lo <= p.efficiency <= hi
        claim = significance.from_samples(one, two)
        assert p.vs_one.status == claim.status
        # the all-reduce share, by the method of the framework
        if fs.framework == "torch":
            a, base = two, raw[(2, b, "no_sync")]
            expected = (stats.median(two) - stats.median(base)) / stats.median(two)
        else:
            a, base = raw[(2, b, "allreduce")], raw[(2, b, "allreduce_base")]
            expected = (stats.median(a) - stats.median(base)) / stats.median(two)
        if significance.from_samples(a, base).status != "faster":
            assert p.allreduce_share == 0.0 and p.share_in_noise
        elif expected > 1:  # timed alone it took longer than the whole step: no share
            assert p.allreduce_share is None and p.share_exceeds_step
        else:
            assert p.allreduce_share == pytest.approx(max(0.0, expected), rel=1e-12)
            assert not p.share_in_noise and 0.0 <= p.allreduce_share <= 1.0
    # crossover: the smallest batch from which 2 replicas win at every larger one
    statuses = [significance.from_samples(raw[(1, b, "step")], raw[(2, b, "step")]).status for b in fs.batches]
    for i, b in enumerate(fs.batches):
        if all(s == "faster" for s in statuses[i:]):
            crossed_at = b
            break
    assert fs.crossovers[2].batch == crossed_at


def test_keras_jax_recorded_verdict_words():
    """Snapshot of the verdict on the recorded Keras/JAX run (2 host devices on 2 loaded cores)."""
    report = analyze_scale(records.load_run(DATA / "scale_keras_jax_cpu2.json"))
    (line,) = present_scale.lines(report)
    (fs,) = report.frameworks
    p32 = fs.point(2, 32)
    assert p32.vs_one.status == "slower"
    assert line.startswith(f"keras-jax: 2 replicas are {times(1 / p32.vs_one.ratio)}× slower than 1 at global batch 32")
    assert f"all-reduce takes {100 * p32.allreduce_share:.0f} % of the step" in line
    assert "two replicas never win in the measured range" in line


# ------------------------------------------------------------------ a constructed crossover


def _timing(seconds: float, n: int = 8, spread: float = 0.01) -> Timing:
    samples = [seconds * (1 + spread * ((i % 3) - 1)) for i in range(n)]
    return Timing(first_call_s=seconds, warmup_s=[seconds], samples_s=samples, number_per_sample=1, overhead_s=0.0)


def _result(n: int, b: int, variant: str, seconds: float, seen: int | None = None) -> CaseResult:
    spec = CaseSpec(
        workload="scale",
        framework="torch",
        device="CPU:0",
        params={"replicas": n, "global_batch": b, "variant": variant, "model": "seed001"},
    )
    metrics = {"replicas_seen": float(seen if seen is not None else n)}
    return CaseResult(spec=spec, status="ok", timing=_timing(seconds), metrics=metrics, wall_s=1.0)


def _constructed(seen2: int | None = None):
    # 1 replica: step grows with the batch; 2 replicas: a fixed 4 ms all-reduce + half the work
    results = []
    for b, t1 in ((64, 0.002), (512, 0.010), (4096, 0.060)):
        t2 = 0.004 + t1 / 2
        results += [
            _result(1, b, "step", t1),
            _result(2, b, "step", t2, seen2),
            _result(2, b, "no_sync", t2 - 0.004, seen2),
        ]
    return make_record(results, experiment="scale")


def test_constructed_crossover_share_and_words():
    report = analyze_scale(_constructed())
    (fs,) = report.frameworks
    p = fs.point(2, 64)
    assert p.efficiency == pytest.approx(0.002 / (2 * 0.005))  # 20 %
    assert p.allreduce_share == pytest.approx(0.004 / 0.005)  # 80 %
    x = fs.crossovers[2]
    assert x.batch == 512  # 2 replicas: 9 ms vs 10 ms at 512, 34 vs 60 ms at 4096
    # log-log interpolation between 64 (2.5x slower) and 512 (1.11x faster)
    r0, r1 = math.log(0.005 / 0.002), math.log(0.009 / 0.010)
    expected = math.exp(math.log(64) + (0 - r0) * (math.log(512) - math.log(64)) / (r1 - r0))
    assert x.estimate == pytest.approx(expected)
    (line,) = present_scale.lines(report)
    assert line == (
        f"torch: 2 replicas are 2.5× slower than 1 at global batch 64: all-reduce takes 80 % of the step; "
        f"from global batch ≈ {expected:,.0f} two replicas win (1.1× at 512)."
    )


def test_gradient_accumulation_fix_from_the_recorded_torch_run():
    """The recorded DDP run's accum4 points: per-sample gain vs syncing every step and vs 1
    replica, recomputed from the raw samples (per call: 4 micro-batches)."""
    path = DATA / "scale_torch_cpu2.json"
    raw = _raw(path)
    report = analyze_scale(records.load_run(path))
    (fs,) = report.frameworks
    for b in fs.batches:
        p = fs.point(2, b)
        per_sample = [s / 4 for s in raw[(2, b, "accum4")]]
        expected = significance.from_samples(raw[(2, b, "step")], per_sample)
        assert p.accum_gain.ratio == pytest.approx(expected.ratio) and p.accum_gain.status == expected.status
        vs1 = significance.from_samples(raw[(1, b, "step")], per_sample)
        assert p.accum_vs_one.ratio == pytest.approx(vs1.ratio) and p.accum_vs_one.status == vs1.status
    (fix,) = present_scale.fix_lines(fs)
    assert fix.startswith("torch fix measured — gradient accumulation over 4 micro-batches")
    assert f"vs 1 replica: {present_scale.claim_text(fs.point(2, 32).accum_vs_one)}" in fix


def test_a_wrong_replica_count_is_flagged():
    (fs,) = analyze_scale(_constructed(seen2=1)).frameworks
    assert not fs.replicas_ok()
    assert any("replica count other than" in f for f in present_scale.grid(fs).footer)


def test_plot_and_html_sections(tmp_path):
    report = analyze_scale(records.load_run(DATA / "scale_keras_jax_cpu2.json"))
    png = present_scale.plot(report, tmp_path / "s.png", title="t")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sections = present_scale.sections(report, png)
    assert sections[0].pngs == [png] and sections[0].lines == present_scale.lines(report)
    assert sections[1].grids[0].rows  # the table of the framework


def test_an_isolated_all_reduce_longer_than_the_step_gives_no_share():
    """TensorFlow's isolated method on a loaded machine: all-reduce alone 7.7 ms, the same call
    without it 1.7 ms, the whole step 2.5 ms (benchmarks/scale.md) -> no share, said so."""

    def tf_result(n, b, variant, seconds):
        r = _result(n, b, variant, seconds)
        return r.model_copy(update={"spec": r.spec.model_copy(update={"framework": "tensorflow"})})

    record = make_record(
        [
            tf_result(1, 32, "step", 0.005),
            tf_result(2, 32, "step", 0.0025),
            tf_result(2, 32, "allreduce", 0.0077),
            tf_result(2, 32, "allreduce_base", 0.0017),
        ],
        experiment="scale",
    )
    (fs,) = analyze_scale(record).frameworks
    p = fs.point(2, 32)
    assert p.share_exceeds_step and p.allreduce_share is None
    (line,) = present_scale.lines(analyze_scale(record))
    assert "timed alone, took longer than the whole step, so its share is unknown" in line
    assert line.startswith("tensorflow: 2 replicas are 2× faster than 1 already at global batch 32")
