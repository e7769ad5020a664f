"""A timing the audit measured to be wrong with no pair to compare it with (a jitted call timed without
block_until_ready, a tf.function whose first call traces inside the only timing) gets its real time on
this machine, re-run alone after the script — or one line saying why not; never an empty answer."""

from __future__ import annotations

import pytest

from tests.test_audit import _m, run_audit
from tests.test_audit_corpus import CORPUS
from whichdevice.audit import rules
from whichdevice.audit.measurements import measured_wrong
from whichdevice.audit.record import Correction


def test_measured_wrong_is_an_unsynced_end_or_set_up_inside():
    assert measured_wrong(_m(0, 0.001, unsynced_gpu_end=True))
    assert measured_wrong(_m(0, 1.0, setup_s={"trace": 0.9}))
    assert not measured_wrong(_m(0, 1.0, setup_s={"trace": 0.01}))  # 1 %: below the 5 % share
    assert not measured_wrong(_m(0, 1.0))


def test_a_single_rerun_gives_the_real_time_and_how_far_off_the_script_was():
    m = _m(0, 0.0005, unsynced_gpu_end=True)
    fn = {"function": "jax.jit(f)", "ran_on": "CPU:0", "calls_in_block": 1, "number_per_sample": 1, "samples_s": []}
    state = {"singles": [{"m": 0, "rounds": [0.05 + 0.001 * i for i in range(9)], "functions": [fn]}]}
    (t,) = rules.steady_times(state, [m], [])
    assert t.steady_s == pytest.approx(0.054) and t.ratio == pytest.approx(0.054 / 0.0005)
    assert t.low_s <= t.steady_s <= t.high_s and t.rounds == 9
    assert "jax.jit(f) × 1" in t.note and "synchronized" in t.note


def test_a_timing_that_was_not_rerun_says_why_in_one_line():
    m = _m(0, 2.0, setup_s={"trace": 1.9})
    (t,) = rules.steady_times({"singles": [{"m": 0, "skipped": "the timed work calls no tf.function"}]}, [m], [])
    assert t.steady_s is None and t.note == "no real time: the timed work calls no tf.function"
    (t,) = rules.steady_times({}, [m], [])  # the child never re-ran it
    assert t.note.startswith("no real time: not re-run")


def test_a_paired_or_a_right_timing_gets_no_single_rerun():
    wrong, right = _m(0, 0.001, unsynced_gpu_end=True), _m(1, 1.0)
    pair = Correction(a=0, b=1, script_ratio=0.001)
    assert rules.steady_times({}, [wrong, right], [pair]) == []
    assert rules.steady_times({}, [right], []) == []


def test_an_identical_block_reuses_the_first_rerun():
    a, b = _m(0, 0.001, unsynced_gpu_end=True), _m(1, 0.002, unsynced_gpu_end=True)
    state = {"singles": [{"m": 0, "rounds": [0.01] * 9, "functions": []}, {"m": 1, "same_as": 0}]}
    ta, tb = rules.steady_times(state, [a, b], [])
    assert ta.steady_s == tb.steady_s == 0.01 and tb.ratio == pytest.approx(5.0)


@pytest.mark.slow  # the corpus run of the same script (jax_jit_no_block.py) checks the table in the default set
@pytest.mark.frameworks
def test_a_jit_call_timed_without_block_until_ready_gets_its_real_time_here(tmp_path):
    pytest.importorskip("jax")
    proc, record = run_audit(tmp_path, CORPUS / "jax_jit_no_block.py", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (t,) = record["steady"]
    assert t["steady_s"] > t["script_s"] and t["ratio"] > 1 and t["ran_on"] == "CPU:0"
    assert "Real time on this machine" in proc.stdout and "real / script's" in proc.stdout
