"""A script's first screen is never silent on why it is slow: where the capture measured the
script's baseline step and no part of it reaches its cause's share (analysis/scriptsteps.py),
the heading "Why it is slow" still stands, with one line saying none stands out and the shares
that were measured. Only figures the record holds: a wait for input the capture did not see is
said to be unmeasured, and host reads from a capture that does not count them are left out.
Built on recorded real script diagnoses in tests/data that name no cause."""

from __future__ import annotations

import re
from pathlib import Path

from whichdevice.analysis.scriptsteps import QuietStep, ScriptStep, quiet_step, script_steps
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import RunRecord, load_run
from whichdevice.present.firstscreen import CAUSES_HEAD, MAX_LINES, first_screen, quiet_text, screen_lines

DATA = Path(__file__).parent / "data"
# a torch script with its own tensors (no DataLoader) that reads its loss back twice a step
READS = DATA / "diagnose_script_regression_budget60_cpu_2core.json"
# a torch CNN fed by a DataLoader, its step all computation at batch 32
CNN = DATA / "diagnose_script_torch_cnn_traced_budget60_cpu_2core.json"
# a torch script whose wait for input is named as a cause
INPUT_BOUND = DATA / "diagnose_script_input_bound_budget60_cpu_2core_busy.json"


def _lines(record: RunRecord, budget: int = MAX_LINES - 2) -> list[str]:
    v = suite_verdict(record, seed_batch=int(str(record.options.get("batch") or 0)))
    return [text for _, text in screen_lines(first_screen(record, v), report="r.html", budget=budget)]


def test_a_script_with_no_cause_says_none_stands_out_with_the_shares_it_measured():
    record = load_run(CNN)
    v = suite_verdict(record, seed_batch=32)
    assert v.causes == []
    (q,) = v.quiet
    (st,) = script_steps(record)
    assert q.step == st and [p for p, _ in q.parts] == ["input_wait", "host_reads"]
    assert dict(q.parts)["input_wait"] == st.wait_share and dict(q.parts)["host_reads"] == st.read_share
    lines = _lines(record)
    i = lines.index(CAUSES_HEAD)
    assert lines[i + 1] == (
        "  No part the capture times stands out: waiting for input 0%, host reads 0% of a 563 ms step "
        "(batch 32, 20 steps in 2 processes); the remaining 100% is the step's own work on this CPU."
    ), lines


def test_a_wait_the_capture_did_not_see_is_said_unmeasured_never_given_a_share():
    record = load_run(READS)
    (q,) = suite_verdict(record, seed_batch=0).quiet
    assert not q.wait_measured and [p for p, _ in q.parts] == ["host_reads"]
    text = "\n".join(_lines(record))
    assert "stands out: host reads 1% of a 74.7 µs step (20 steps in 2 processes)" in text, text
    assert (
        "the remaining 99% is the step's own work on this CPU (the wait for input was not measured: no DataLoader seen)"
        in (text)
    )
    assert "waiting for input 0%" not in text


def test_a_step_with_a_cause_gets_no_quiet_line():
    record = load_run(INPUT_BOUND)
    v = suite_verdict(record, seed_batch=16)
    assert v.causes and v.quiet == []
    assert "stands out" not in "\n".join(_lines(record))


def test_a_record_that_is_not_a_scripts_gets_no_quiet_line():
    record = load_run(DATA / "diagnose_torch_cnn_cpu_2core.json")
    v = suite_verdict(record, seed_batch=32)
    assert v.quiet == [] and "stands out" not in "\n".join(_lines(record))


def test_a_short_screen_folds_the_line_onto_the_heading_as_it_folds_causes():
    record = load_run(CNN)
    for budget in range(MAX_LINES, 5, -1):
        lines = _lines(record, budget)
        head = [line for line in lines if line.startswith(CAUSES_HEAD)]
        assert len(head) == 1, (budget, lines)
        if head[0] != CAUSES_HEAD:  # folded: the same figures on the heading's line
            # its loss read once a step follows, folded the same way (a sync per read on a GPU)
            assert head[0] == (
                f"{CAUSES_HEAD}: no part the capture times stands out: waiting for input 0%, host reads 0% · "
                "host reads 1 a step, 0% of the step on this CPU; on a GPU a sync per read"
            )
            break
    else:
        raise AssertionError("the screen never folded")


def _step(**kw: object) -> ScriptStep:
    base: dict = {"device": "CPU:0", "framework": "keras-jax", "step_s": 0.04, "steps": 30, "data_wait_s": None}
    return ScriptStep(**{**base, **kw})  # type: ignore[arg-type]


def test_only_parts_the_record_measured_are_listed():
    # Keras' fit counts no host reads: a zero there is no measurement, so no share is given
    assert quiet_step(_step()).parts == ()
    assert quiet_step(_step(reads_counted=True)).parts == (("host_reads", 0.0),)
    # a batch line splits the step: its two parts, each under half
    lined = quiet_step(_step(batch=32, per_sample_s=0.0005, fixed_s=0.02, batches=(16, 32, 64)))
    assert [p for p, _ in lined.parts] == ["compute_bound", "fixed_cost"]
    # threads over the cores: their contention measured; at or under the cores, nothing to say
    over = quiet_step(_step(threads=8, cores=2, fast_s=0.039))
    assert [p for p, _ in over.parts] == ["threads"] and round(dict(over.parts)["threads"], 3) == 0.025
    assert quiet_step(_step(threads=2, cores=2, fast_s=0.039)).parts == ()


def test_a_step_with_no_part_measured_says_only_the_whole_step_was_timed():
    text = quiet_text(QuietStep(_step(batch=64), ()))
    assert text == (
        "No part the capture times stands out: it timed the whole 40 ms step (batch 64, 30 steps) and none "
        "of its parts apart (the wait for input was not measured)."
    )
    assert not re.search(r"\d+%", text)  # no share it did not measure
