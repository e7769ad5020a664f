"""analysis/quality.py flags measurements with typed warnings; present/notes.py writes them.
The kind, value and threshold are decided once, and the sentence is drawn from them only."""

from __future__ import annotations

from conftest import make_record

from whichdevice.analysis.quality import measurement_warnings
from whichdevice.analysis import quality
from whichdevice.core.records import CaseResult, CaseSpec, Timing
from whichdevice.present import notes


def _case(samples, *, number=4, overhead=1e-7, stop=None, status="ok", failure=None, error=None, device="CPU:0"):
    spec = CaseSpec(workload="matmul", framework="numpy", device=device, params={"n": 64, "mode": "steady"})
    if status != "ok":
        return CaseResult(spec=spec, status=status, failure=failure, error=error, wall_s=1.0)
    t = Timing(
        first_call_s=samples[0],
        warmup_s=[samples[0]],
        samples_s=list(samples),
        number_per_sample=number,
        overhead_s=overhead,
        stop_reason=stop,
    )
    return CaseResult(spec=spec, status="ok", timing=t, wall_s=1.0)


def test_a_noisy_point_is_typed_then_written_from_its_value_and_threshold():
    rec = make_record([_case([1.0, 1.5, 1.0, 2.0, 1.0, 1.6, 1.1])])
    (w,) = quality.measurement_warnings(rec)
    assert w.kind == "noisy" and w.value > w.threshold == 0.10
    text = notes.warning_text(w)
    assert text.startswith("CPU:0 n=64 mode=steady: the spread is ")
    assert f"{w.value:.0%} of the median (IQR/median > 10%)" in text
    assert notes.timing_warnings(measurement_warnings(rec)) == [text]


def test_a_timer_bound_point_says_it_is_an_upper_bound():
    rec = make_record([_case([1e-6] * 6, number=1, overhead=5e-7)])
    kinds = {w.kind: w for w in quality.measurement_warnings(rec)}
    assert "overhead" in kinds and kinds["overhead"].value == 0.5
    assert "is 50% of each call; this point only bounds the time from above" in notes.warning_text(kinds["overhead"])


def test_an_unsettled_point_names_the_rule_that_stopped_it():
    rec = make_record([_case([1.0, 1.3, 0.9], stop="time cap")])
    (w,) = [w for w in quality.measurement_warnings(rec) if w.kind == "not_converged"]
    assert w.stop_reason == "time cap" and w.n_samples == 3 and w.value == float("inf")
    assert "interval is not yet formed (target ±5 %) when its time cap stopped it after 3 samples" in (
        notes.warning_message(w)
    )


def test_failures_name_the_kind_and_the_next_step():
    rec = make_record(
        [
            _case([], status="failed", failure="out_of_memory", error="OOM when allocating", device="GPU:0"),
            _case([], status="failed", failure="timeout", error="timed out after 30 s"),
        ]
    )
    lines = notes.failures(rec)
    assert lines[0].startswith("GPU:0 n=64 mode=steady — out of memory: OOM when allocating → the GPU's memory")
    assert "nvidia-smi" in lines[0]
    assert lines[1] == "CPU:0 n=64 mode=steady — timed out after 30 s → raise --case-timeout, or lower the size"
