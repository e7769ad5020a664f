"""Issue 39, seen on the public-code check (benchmarks/public_check_39.md): a Keras diagnose whose
plan left fixes out for the budget said why wrongly. keras-io's weather LSTM at --budget 30
(tests/data/diagnose_keras_lstm_budget30_cpu_2core.json, a real record on the 2-core VM): its
plan cut the batch sweep to the user's batch 256 and the fixes' fits and the prefetch A/B (its
notes say so), yet the first screen said "a larger batch (one side did not run)" and the fix
table "steps_per_execution: not measured: not part of your model's suite (diagnose)". Both
were cut by the time budget: the plan now records which fixes it left out (``fixes_cut``) and
the fix table and the first screen say "left out: time budget"."""

from __future__ import annotations

from pathlib import Path

from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import load_run
from whichdevice.present.firstscreen import first_screen, tail_lines
from whichdevice.present.suitepage import fix_grid
from whichdevice.workloads.suite import size_user_cases, sizing_options

LSTM = Path(__file__).parent / "data" / "diagnose_keras_lstm_budget30_cpu_2core.json"
CUT = ["steps_per_execution", "jit_compile", "prefetch", "batch"]


def test_the_keras_plan_records_the_fixes_it_left_out():
    # the pre-flight of keras-io's weather LSTM in that record: a step 45.4 ms at batch 256, its
    # first call 1.74 s, fit's first epoch 2.78 s (the pre-flight took 17.5 s on the loaded VM)
    facts = dict(step_s=0.0454, first_step_s=1.74, fit_first_s=2.78, build_s=0.3, import_s=20.0)
    sizing = size_user_cases(facts, batch=256, samples=10_000, budget_s=30, samples_given=False)
    assert sizing["sweep_batches"] == [256] and not sizing["fixes"] and not sizing["prefetch"]
    assert sorted(sizing_options(sizing)["fixes_cut"]) == sorted(CUT)
    roomy = size_user_cases(facts, batch=256, samples=10_000, budget_s=600, samples_given=False)
    assert sizing_options(roomy)["fixes_cut"] == []
    # a sweep that kept a batch above the user's did not cut the larger batch
    some = size_user_cases({**facts, "import_s": 10.0}, batch=256, samples=10_000, budget_s=30, samples_given=False)
    assert max(some["sweep_batches"]) > 256 and "batch" not in some["fixes_cut"]


def test_fixes_the_budget_cut_read_left_out_never_not_in_the_suite():
    record = load_run(LSTM)
    cut = record.model_copy(update={"options": {**record.options, "fixes_cut": CUT}})  # as the plan records it now
    v = suite_verdict(cut, seed_batch=256)
    for key in CUT:
        assert v.fix(key).not_measured is not None and v.fix(key).not_measured.reason == "cut", key
    rows = {row[0].text.split(". ", 1)[1]: row[2].text for row in fix_grid(v, record=cut).rows}
    for title in ("Increase the batch size", "steps_per_execution", "jit_compile (XLA)", "Use tf.data with prefetch"):
        assert rows[title].startswith("not measured: the plan left it out to keep within the time budget"), rows[title]
    tail = " ".join(tail_lines(first_screen(cut, v)))
    assert "Not measured: a larger batch, prefetch, steps_per_execution, jit_compile (left out: time budget)." in tail
    assert "one side did not run" not in tail


def test_a_record_without_fixes_cut_reads_as_before():
    """Records made before the plan said what it cut render as they did (no reason invented)."""
    record = load_run(LSTM)
    v = suite_verdict(record, seed_batch=256)
    assert v.fix("batch").not_measured.reason == "no_pair"
    assert v.fix("steps_per_execution").not_measured.reason == "not_in_suite"
