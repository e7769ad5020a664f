"""The causes a script's capture measures beside the wait for input and the host reads
(analysis/scriptsteps.py): the batch sweep's line splits the step into the work per sample
(compute-bound) and the fixed cost per step, and the CPU threads the steps ran with against the
machine's cores name threads contending for them; each named with its measured share, even where
no fix pair cleared the significance rule. Built on a recorded real diagnose of
tests/cause_corpus/compute_bound_cnn.py (its first, smaller version: 16x16 images; load 13-17 on 2 cores), a recorded DataLoader script
with its threads read, and steps built by hand for the line's arithmetic. The line runs through
each case's fastest tenth of steps: at that load the CNN's batch-8 steps ranged 2.6 ms to 0.5 s."""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy
import pytest

from whichdevice.analysis import suite
from whichdevice.analysis.scriptsteps import ScriptStep, batch_line, script_steps
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import RunRecord, load_run
from whichdevice.present.firstscreen import cause_text, cause_title, first_screen, screen_lines
from whichdevice.workloads import fixes
from whichdevice.workloads.fixes import params_of
from whichdevice.workloads.script import metrics_of

DATA = Path(__file__).parent / "data"
CNN = DATA / "diagnose_script_compute_bound_cnn_budget60_cpu_2core_busy.json"
LOADER = DATA / "diagnose_script_ddp_single_cpu_budget60_cpu_2core.json"  # a DataLoader script, 2 cores


def _screen(record: RunRecord) -> str:
    v = suite_verdict(record, seed_batch=int(str(record.options["batch"]) or 0))
    return "\n".join(text for _, text in screen_lines(first_screen(record, v), report=None))


def _fastest_tenth(r) -> float:
    every = sorted(t for s in (r.timing.rounds_s or [r.timing.samples_s]) for t in s)
    return every[int(0.1 * (len(every) - 1))]


def test_the_line_through_two_batches_is_the_per_sample_cost_and_the_fixed_cost():
    per_sample, fixed = batch_line([(8, 0.0028), (32, 0.0076)])  # 0.2 ms a sample, 1.2 ms a step
    assert per_sample == pytest.approx(2e-4) and fixed == pytest.approx(1.2e-3)
    # a least-squares line over every batch measured, not two picked out of them
    # every batch measured: the median of the six slopes between two of them, so one busy
    # process (batch 64 here) moves it little, as a least-squares line would not
    points = [(8, 0.0030), (32, 0.0074), (64, 0.030), (128, 0.0262)]
    per_sample, fixed = batch_line(points)
    slopes = [4.4e-3 / 24, 27e-3 / 56, 23.2e-3 / 120, 22.6e-3 / 32, 18.8e-3 / 96, -3.8e-3 / 64]
    assert per_sample == pytest.approx(statistics.median(slopes))
    assert fixed == pytest.approx(statistics.median(t - per_sample * b for b, t in points))
    least_squares = numpy.polyfit([b for b, _ in points], [t for _, t in points], 1)[0]
    assert abs(least_squares - 1.9e-4) > 2 * abs(per_sample - 1.9e-4)  # the clean points' slope: 0.19 ms
    assert batch_line([(32, 0.01)]) is None  # one batch: no line
    assert batch_line([(8, 0.01), (32, 0.009)]) is None  # no longer with more samples: noise, no cost


def test_a_real_compute_bound_cnn_is_named_compute_bound_with_its_per_sample_share():
    """The CNN's batch pair had too few samples to claim anything (its batch change: "nothing
    larger measured"), and the old screen had no cause at all; the line through its batch-8 and
    batch-32 steps says most of its step grows with the batch."""
    record = load_run(CNN)
    (st,) = script_steps(record)
    base = next(r for r in record.results if r.spec.variant is None)  # the script as it runs, at its batch 32
    small = next(r for r in record.results if r.spec.variant == fixes.entry("batch").variant(8))
    t32, t8 = _fastest_tenth(base), _fastest_tenth(small)  # each case's fast end: the machine adds the rest
    per_sample = (t32 - t8) / 24
    assert st.batch == 32 and st.batches == (8, 32) and st.per_sample_s == pytest.approx(per_sample)
    assert st.fixed_s == pytest.approx(max(0.0, t8 - 8 * per_sample))  # two points: the line through both
    line = st.fixed_s + 32 * per_sample
    wait = st.data_wait_s or 0.0
    assert st.compute_share == pytest.approx(min(1.0, (32 * per_sample - wait) / line))
    v = suite_verdict(record, seed_batch=32)
    (cause,) = [c for c in v.causes if c.kind == "compute_bound"]
    assert cause.share == pytest.approx(st.compute_share) and cause.share > 0.5
    text = _screen(record)
    assert f"Compute-bound — {cause.share:.0%} of a batch-32 step is work per sample: the step scales" in text, text
    assert "per sample on a line through the fastest tenth of the steps at batches 8, 32:" in text
    assert not [c for c in v.causes if c.kind == "fixed_cost"]  # its fixed part is under half the step


def _step(**kw) -> ScriptStep:
    base = dict(device="CPU:0", framework="torch", step_s=0.0025, steps=20, data_wait_s=1e-4, rounds=2, batch=8)
    return ScriptStep(**{**base, **kw})  # type: ignore[arg-type]


def test_a_fixed_cost_that_most_of_a_tiny_step_is_named_from_the_line_with_its_share(monkeypatch):
    # a tiny batch: 2.2 ms of a 2.5 ms step is the same at batch 8 and at 256
    st = _step(per_sample_s=3.75e-5, fixed_s=0.0022, batches=(8, 64, 256))  # the line's step: 2.5 ms
    (cause,) = suite._script_causes([st], [])
    assert cause.kind == "fixed_cost" and cause.share == pytest.approx(0.88)
    assert cause_title(cause) == "Fixed cost per step"
    assert cause_text(cause) == (
        "88% of a batch-8 step costs the same at any batch (Python, dispatch: 2.2 ms on a line through the "
        "fastest tenth of the steps at batches 8, 64, 256: 2.5 ms a step, 20 steps at batch 8)"
    )
    # where a batch change measured the fixed cost as a gain, that one is named, not the line's too
    gain = suite.Cause("fixed_cost", 0.7, "CPU:0")
    monkeypatch.setattr(suite, "_step_cost_causes", lambda _v: [gain])
    monkeypatch.setattr(suite, "_warmup_causes", lambda _t: [])
    assert suite.causes([], [], None, [st]) == [gain]  # type: ignore[arg-type]


def test_threads_above_the_cores_are_named_with_the_steps_spread_and_not_at_or_below_them():
    record = load_run(LOADER)  # 2 logical cores
    rounds = {"cpu_threads": 8.0, "round2:cpu_threads": 8.0}
    results = [
        r.model_copy(update={"metrics": {**r.metrics, **rounds}})
        if r.status == "ok" and params_of(r.spec).get("kind") == "steady" and "fix" not in params_of(r.spec)
        else r
        for r in record.results
    ]
    eight = record.model_copy(update={"results": results})
    (st,) = script_steps(eight)
    assert st.threads == 8 and st.cores == 2
    every = sorted(
        t for s in (next(r for r in results if r.metrics.get("cpu_threads")).timing.rounds_s or []) for t in s
    )
    assert st.fast_s == every[int(0.1 * (len(every) - 1))]
    (cause,) = [c for c in suite_verdict(eight, seed_batch=32).causes if c.kind == "threads"]
    assert cause.share == pytest.approx(1 - st.fast_s / st.step_s) and cause.share >= 0.05
    assert f"More CPU threads than cores — the steps ran with 8 CPU threads on 2 cores: {cause.share:.0%} of" in (
        _screen(eight)
    )
    two = {"cpu_threads": 2.0, "round2:cpu_threads": 2.0}
    at_cores = record.model_copy(
        update={"results": [r.model_copy(update={"metrics": {**r.metrics, **two}}) for r in record.results]}
    )
    assert not [c for c in suite_verdict(at_cores, seed_batch=32).causes if c.kind == "threads"]
    assert script_steps(record)[0].threads is None  # a record without the count names nothing


def test_the_capture_s_thread_count_is_kept_as_a_metric():
    assert metrics_of({"cpu_threads": 8, "step_s": [0.1]})["cpu_threads"] == 8.0
    assert "cpu_threads" not in metrics_of({"step_s": [0.1]})
