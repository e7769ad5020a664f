"""Why a script's step is slow, named from what its capture measured in the script's own steps
(analysis/scriptsteps.py): the wait for the next batch and the host reads, each with its share
of the step, even where every fix pair is too noisy to tell a change; and the fix that targets
the cause named beside it, never recommended. Built on recorded real script diagnoses in
tests/data, with the measured part raised to a share a busy input-bound loop shows (TraceML
read 33 % waiting on such a loop)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli
from whichdevice.analysis.scriptsteps import INPUT_WAIT_SHARE, script_steps
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import RunRecord, load_run
from whichdevice.present.firstscreen import first_screen, screen_lines

DATA = Path(__file__).parent / "data"
# a torch script fed by a DataLoader: its DataLoader-workers pair had too few rounds to tell
LOADER = DATA / "diagnose_script_ddp_single_cpu_budget60_cpu_2core.json"
# a torch script with its own tensors that reads its loss back (.item()) twice a step
READS = DATA / "diagnose_script_regression_budget60_cpu_2core.json"


def _baseline(r) -> bool:
    p = r.spec.params
    return p.get("kind") == "steady" and p.get("sync") == "none" and "fix" not in p and p["batch"] == p["user_batch"]


def _with_metrics(record: RunRecord, **metrics: float) -> RunRecord:
    """The record with the baseline case's capture metrics changed in each of its rounds (a
    variant of a real run)."""
    every = {**metrics, **{f"round2:{k}": v for k, v in metrics.items()}}
    results = [
        r.model_copy(update={"metrics": {**r.metrics, **every}}) if r.status == "ok" and _baseline(r) else r
        for r in record.results
    ]
    return record.model_copy(update={"results": results})


def _screen(record: RunRecord) -> str:
    v = suite_verdict(record, seed_batch=int(str(record.options["batch"])))
    return "\n".join(text for _, text in screen_lines(first_screen(record, v), report=None))


def test_a_scripts_wait_for_input_is_named_with_its_measured_share_and_the_untold_fix_beside_it():
    record = _with_metrics(load_run(LOADER), data_wait_s=0.0053)  # a third of its 16 ms step
    v = suite_verdict(record, seed_batch=32)
    (wait,) = [c for c in v.causes if c.kind == "input_wait"]
    assert wait.share == pytest.approx(0.0053 / 0.016, rel=0.01) and wait.device == "CPU:0"
    assert wait.untold is not None and wait.untold.kind == "num_workers"  # its pairs: too few rounds
    text = _screen(record)
    assert (
        "Waiting for input — 33% of each step waits for the next batch from its DataLoader "
        "(median 5.3 ms of 16 ms, 20 steps in 2 processes)" in text
    ), text
    (told,) = [line for line in text.splitlines() if "not a recommendation" in line]
    assert "Waiting for input (33% of each step)" in told and "num_workers=2" in told
    assert "not yet measured precisely enough" in told
    fs = first_screen(record, v)
    assert "num_workers" not in [c.kind for c in fs.changes + fs.more]  # never recommended
    assert "Not enough samples to tell: DataLoader workers" not in text  # said once, beside its cause


def test_a_wait_below_xprofs_moderate_share_names_no_cause():
    record = load_run(LOADER)  # as recorded: 0.06 ms of a 16 ms step
    (st,) = script_steps(record)
    assert st.wait_share is not None and st.wait_share < INPUT_WAIT_SHARE
    assert not [c for c in suite_verdict(record, seed_batch=32).causes if c.kind == "input_wait"]
    assert "Waiting for input" not in _screen(record)


def test_host_reads_per_step_count_the_whole_shared_run_and_name_a_cause_when_large():
    recorded = load_run(READS)
    (st,) = script_steps(recorded)
    # 40 reads in each shared baseline process, whose 20 timed steps went to its two members
    assert st.reads == 2 and st.steps == 20 and st.rounds == 2 and st.read_share < 0.05
    assert not [c for c in suite_verdict(recorded, seed_batch=0).causes if c.kind == "host_reads"]
    record = _with_metrics(recorded, sync_s=4e-4)  # 20 µs a step of a 74 µs step
    (reads,) = [c for c in suite_verdict(record, seed_batch=0).causes if c.kind == "host_reads"]
    assert reads.share == pytest.approx(2e-5 / 7.38e-5, rel=0.02)
    assert "Host reads every step — 27% of each step is reading results back to the host (2 a step: .item()" in (
        _screen(record)
    )


def test_records_that_are_not_a_scripts_get_no_script_cause():
    record = load_run(DATA / "diagnose_torch_cnn_cpu_2core.json")
    assert script_steps(record) == []
    assert all(c.step is None and c.untold is None for c in suite_verdict(record, seed_batch=32).causes)


def test_terminal_markdown_and_html_say_the_same_causes_and_the_same_untold_fix(tmp_path, capsys):
    rec = tmp_path / "r.json"
    rec.write_text(_with_metrics(load_run(LOADER), data_wait_s=0.0053).model_dump_json(), encoding="utf-8")
    code, terminal, err = run_cli(["report", str(rec)], capsys)
    assert code == 0, err
    code, md, err = run_cli(["report", str(rec), "--markdown"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["report", str(rec), "--out", str(tmp_path / "html")], capsys)
    assert code == 0, err
    page = next((tmp_path / "html").rglob("*.html")).read_text(encoding="utf-8")
    flat = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    wanted = [
        "Fixed cost per step",
        "33% of each step waits for the next batch from its DataLoader (median 5.3 ms of 16 ms, 20 steps in 2",
        "Waiting for input (33% of each step): the change that targets it, DataLoader workers",
    ]
    for text in (" ".join(terminal.split()), " ".join(md.replace("**", "").split()), flat):
        assert all(w in text for w in wanted), text
    assert json.loads(rec.read_text())["options"]["script"]  # a script's record


def test_a_real_input_bound_loop_on_a_busy_machine_gets_its_cause_though_no_fix_pair_told():
    """A real diagnose of tests/data/input_bound_loader.py at load 7: no fix had a claim (the
    plan cut the workers' pair, autocast had too few rounds), and the capture measured the wait."""
    record = load_run(DATA / "diagnose_script_input_bound_budget60_cpu_2core_busy.json")
    v = suite_verdict(record, seed_batch=16)
    fs = first_screen(record, v)
    assert not fs.changes and not fs.more
    (wait,) = fs.causes
    assert wait.kind == "input_wait" and 0.2 < wait.share < 0.4
    assert wait.untold is not None and wait.untold.kind == "num_workers"
    text = _screen(record)
    assert "Waiting for input — 29% of each step waits for the next batch from its DataLoader" in text, text
    assert "DataLoader workers (`DataLoader(" in text and "left out: time budget" in text


def test_the_copies_and_reads_keep_the_steps_they_were_counted_over():
    """A shared baseline process deals its steps out among its members, but its copies and reads
    are the whole run's: the metrics keep that run's step count (workloads/script.time_group)."""
    from whichdevice.workloads import script

    dealt = {"step_s": [0.01] * 5, "counted_steps": 10, "syncs": {"count": 20, "s": 0.002}}
    assert script.metrics_of(dealt)["counted_steps"] == 10
    alone = {"step_s": [0.01] * 5, "syncs": {"count": 5, "s": 0.001}}
    assert script.metrics_of(alone)["counted_steps"] == 5
    assert "counted_steps" not in script.metrics_of({"step_s": [0.01] * 5})  # nothing counted
