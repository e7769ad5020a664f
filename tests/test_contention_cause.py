"""Threads contending for busy cores, named as a cause of slowness (analysis/scriptsteps.py,
``ScriptStep.contended``): as many CPU threads as cores, other work keeping the cores busy (the
pre-flight's load per core, or other programs' cores in the baseline's telemetry), and steps that
show it (the median step 3x its fastest tenth or more, or processes in two modes). On a 2-core
machine at load 3-9 a tiny torch step at 2 threads had a median of 74-98 ms against a fastest
tenth of 0.27 ms and "Why it is slow" named nothing: only threads above the cores were a cause.

Built on two recorded diagnoses on a busy 2-core machine: the host-reads corpus script (its
one-thread pair measured, 3 rounds, not enough to tell) and the CNN whose one-thread pair the time
budget left out; and on steps built by hand for the rule's edges."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from whichdevice.analysis import suite
from whichdevice.analysis.scriptsteps import CONTENDED_SPREAD, ScriptStep, script_steps
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import RunRecord, load_run
from whichdevice.present.claims import ratio_text
from whichdevice.present.firstscreen import cause_text, cause_title, first_screen, screen_lines
from whichdevice.workloads.suite import sizing_options

DATA = Path(__file__).parent / "data"
READS = DATA / "diagnose_script_host_reads_budget60_cpu_2core_busy.json"  # one thread: 3 rounds, too wide
CNN = DATA / "diagnose_script_torch_cnn_smaller_batches_budget60_cpu_2core_busy.json"  # one thread: cut
TITLE = "Threads contending for busy cores"


def _verdict(record: RunRecord) -> suite.SuiteVerdict:
    return suite_verdict(record, seed_batch=int(str(record.options["batch"]) or 0))


def _screen(record: RunRecord) -> str:
    """The first screen with room for each cause on its own line (a full one folds them: the
    report and the Markdown say each, tests/test_one_voice.py)."""
    fs = first_screen(record, _verdict(record))
    return "\n".join(text for _, text in screen_lines(fs, report=None, budget=100))


def _contention(record: RunRecord) -> suite.Cause:
    (cause,) = [c for c in _verdict(record).causes if c.kind == "contention"]
    return cause


def test_two_threads_on_two_busy_cores_are_named_with_the_measured_one_thread_pair():
    record = load_run(READS)
    (st,) = script_steps(record)
    assert st.threads == st.cores == 2 and st.others_busy and st.load_per_core is None  # busy by its telemetry
    assert st.spread is not None and st.spread >= CONTENDED_SPREAD  # a median 41x its fastest tenth
    cause = _contention(record)
    assert cause.share == pytest.approx(1 - st.fast_s / st.step_s)  # type: ignore[operator]
    assert cause_title(cause) == TITLE
    pair = cause.one_thread
    assert pair is not None and pair.variant == 1 and cause.one_thread_missing is None
    text = cause_text(cause)
    assert text.startswith(f"{cause.share:.0%} of the median step is waiting for a core: 2 threads on 2 cores, ")
    assert f"other programs using {st.others_cores:.1f} of the cores while it ran" in text
    assert "the median step is 41.4× its fastest tenth (552 µs of 22.9 ms, 30 steps in 3 processes)" in text
    # the one-thread pair's claim, in the words every claim is written in (here: not enough samples)
    assert text.endswith(f"; 1 thread: {ratio_text(pair.claim)}") and "not enough samples" in text
    screen = _screen(record)
    assert f"{TITLE} — {text}" in screen
    # the threads-above-cores cause is not named beside it: one cause per step's threads
    assert not [c for c in _verdict(record).causes if c.kind == "threads"]


def test_the_pre_flight_s_load_is_said_where_the_record_holds_it():
    record = load_run(READS)
    busy = record.model_copy(update={"options": {**record.options, "preflight_load_per_core": 1.55}})
    text = cause_text(_contention(busy))
    assert "2 threads on 2 cores at load 3.1 (the pre-flight's 1-minute average); the median step" in text


def test_a_one_thread_pair_the_budget_cut_is_said_not_measured_with_why():
    record = load_run(CNN)
    cause = _contention(record)
    assert cause.one_thread is None and cause.one_thread_missing is not None
    assert cause_text(cause).endswith("; one thread not measured (left out: time budget)")
    assert f"{TITLE} — {cause_text(cause)}" in _screen(record)


def _step(**kw) -> ScriptStep:
    base = dict(
        device="CPU:0",
        framework="torch",
        step_s=0.080,
        steps=30,
        data_wait_s=None,
        rounds=3,
        threads=2,
        cores=2,
        fast_s=0.00027,
        load_per_core=1.55,
    )
    return ScriptStep(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kw,named",
    [
        ({}, True),  # 2 threads, 2 cores, load 3.1, median 300x its fastest tenth
        ({"threads": 1}, False),  # one thread cannot contend with itself
        ({"load_per_core": 0.4}, False),  # idle cores: a spread is the script's own
        ({"load_per_core": None, "others_busy": True}, True),  # busy by the baseline's telemetry
        ({"fast_s": 0.080 / (CONTENDED_SPREAD - 0.5)}, False),  # steps within 3x of their fastest tenth
    ],
)
def test_contention_needs_threads_at_the_cores_a_busy_machine_and_its_signature(kw, named):
    causes = suite._script_causes([_step(**kw)], [])
    assert [c.kind for c in causes] == (["contention"] if named else [])


def test_an_unmeasured_one_thread_pair_says_so():
    (cause,) = suite._script_causes([_step()], [])
    text = cause_text(cause)
    assert re.search(r"; one thread not measured \([^)]+\)$", text), text


def test_the_pre_flight_s_load_per_core_is_recorded_in_the_options():
    sizing = {"step_s": 0.1, "sweep_batches": [8, 32], "cut": [], "load_per_core": 1.23456}
    assert sizing_options(sizing)["preflight_load_per_core"] == 1.235
    assert "preflight_load_per_core" not in sizing_options({**sizing, "load_per_core": None})
