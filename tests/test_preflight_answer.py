"""An answer from the pre-flight's own steps where the budget holds not even the baseline.

``diagnose tests/script_corpus/hf_trainer_tiny.py --budget 20`` said "error: --budget: 20 s is too short
for this script: in the pre-flight a training step took 1.57 s on this CPU and the set-up 16.6 s ...
Pass --budget 100 or more" (exit 2), though the pre-flight had just timed its steps. The plan now
answers from them: no variant planned, the CPU baseline recorded from the pre-flight's result with no
script run again, the screens saying so and which --budget measures the baseline in its own processes
and every fix. A refusal is left for a pre-flight with no step to answer from.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from whichdevice.core import failures
from whichdevice.core.errors import UsageError
from whichdevice.core.records import CaseSpec, RunRecord
from whichdevice.workloads import script, scriptplan

CORPUS = Path(__file__).parent / "script_corpus"

# A Hugging Face Trainer's pre-flight as recorded at --budget 20 on 2 busy cores: 1.57 s a step, 16.6 s set-up.
RESULT = {
    "status": "ok",
    "step_s": [1.61, 1.52, 1.57, 1.66, 1.49],
    "warmup_s": [2.9, 1.7],
    "setup_s": 16.6,
    "samples_per_step": 16,
    "cpu_threads": 2,
    "data_wait_s": [0.0004, 0.0003, 0.0005, 0.0004, 0.0004],
    "syncs": {"count": 5, "s": 0.0002},
}
FACTS = {
    "framework": "torch",
    "entry": "torch.optim.Optimizer.step",
    "batch": 16,
    "step_s": 1.57,
    "first_step_s": 2.9,
    "setup_s": 16.6,
    "import_s": 6.0,
    "data_s": 10.6,
    "model": "BertForSequenceClassification",
    "trainer": "hf",
    "data_source": "DataLoader",
    "preflight_s": 24.0,
    "load_per_core": 1.0,
    "preflight_result": RESULT,
}


def test_a_budget_too_short_for_the_baseline_answers_from_the_preflight():
    s = scriptplan.size(FACTS, 20.0)
    assert s["planned"] == [] and s["rounds"] == 1 and not s["baseline_only"]
    need = scriptplan.budget_for_all(FACTS)
    assert s["budget_for_all"] == need and s["preflight_result"] == RESULT
    said = s["preflight_only"]
    assert said.startswith("20 s is too short to run the script again (in the pre-flight a training step took 1.57 s")
    assert "the step times are the pre-flight's alone, one process" in said
    assert said.endswith(f"--budget {need} or more measures the baseline in its own processes and every fix")
    assert s["cut"][0] == f"the baseline was timed in the pre-flight alone: {said}"
    assert "the" not in s["fixes_cut"] and {"batch", "num_workers"} <= set(s["fixes_cut"])
    assert not scriptplan.size(FACTS, float(need))["preflight_only"]  # the figure named measures every fix


def test_the_refusal_is_kept_where_no_step_after_the_first_was_timed():
    """A pre-flight stopped at its limit with its first step alone ended has nothing to answer from."""
    with pytest.raises(UsageError, match="--budget: 20 s is too short for this script") as e:
        scriptplan.size({**FACTS, "preflight_result": None}, 20.0)
    assert e.value.fix.startswith(f"Pass --budget {scriptplan.budget_that_holds(FACTS)} or more")


def test_the_cpu_baseline_is_the_preflights_steps_and_a_gpu_baseline_is_not_measured(monkeypatch):
    s = json.loads(json.dumps(scriptplan.size(FACTS, 20.0)))  # as --resume reads it from the journal
    user = scriptplan.user_params({"script": "train.py"}, FACTS)
    cpu = scriptplan.cases("torch", "CPU:0", user, s)
    gpu = scriptplan.cases("torch", "GPU:0", user, s)
    assert len(cpu) == len(gpu) == 1
    assert cpu == scriptplan.cases("torch", "CPU:0", user, scriptplan.size(FACTS, 20.0))  # the same keys on resume
    monkeypatch.setattr(script, "_run", lambda *a: pytest.fail("the script was run again"))
    timing, metrics = script.run_case(cpu[0], None, None, 0.0)
    assert timing.samples_s == RESULT["step_s"] and timing.warmup_s == RESULT["warmup_s"]
    assert metrics["setup_s"] == 16.6 and metrics["samples_per_step"] == 16 and metrics["syncs"] == 5
    assert metrics["data_wait_s"] == pytest.approx(0.0004)
    with pytest.raises(script.NotApplicable, match="time budget") as e:
        script.run_case(gpu[0], None, None, 0.0)
    assert failures.of_exception(e.value) == "skipped"  # not measured (time budget), not failed
    # the record keeps the case's parameters without the pre-flight's result
    clean = script.without_preflight(cpu[0])
    assert script.PREFLIGHT not in clean.params and clean.params == {
        k: v for k, v in cpu[0].params.items() if k != script.PREFLIGHT
    }
    plain = CaseSpec(workload="train", framework="torch", device="CPU:0", params={"batch": 16})
    assert script.without_preflight(plain) is plain


def test_the_notes_say_the_steps_are_the_preflights():
    s = scriptplan.size(FACTS, 20.0)
    user = scriptplan.user_params({"script": "train.py"}, FACTS)
    first = scriptplan.notes(user, s)[0]
    assert "its 5 steps were timed in the pre-flight alone, in one process on the CPU" in first
    assert "each case ran the script in a fresh process" not in first
    assert scriptplan.options(user, s, 20.0)["preflight_only"] == "--budget 20 was too short to run your script again"
    assert scriptplan.options(user, s)["preflight_only"] == "the budget was too short to run your script again"


def test_the_preflights_result_keeps_what_a_case_reads_and_no_more():
    r = {**RESULT, "step_trace": {"ops": ["x"] * 1000}, "plan_facts": {"a": 1}, "model": "M", "h2d": {"count": 3}}
    kept = script.timed_part(r)
    assert set(kept) <= set(script.TIMED_KEYS) and "step_trace" not in kept and kept["h2d"] == {"count": 3}


def _slow_setup(monkeypatch, seconds: float):
    """The pre-flight's facts as a script whose imports and data loading took ``seconds``: too long
    for even its baseline in processes of its own at --budget 20."""
    held = scriptplan.preflight

    def preflight(*a, **k):
        facts = held(*a, **k)
        return {**facts, "setup_s": seconds, "data_s": seconds - float(facts.get("import_s") or 0.0)}

    monkeypatch.setattr(scriptplan, "preflight", preflight)


def test_the_real_cli_answers_a_budget_too_short_for_the_baseline(tmp_path, capsys, monkeypatch):
    """The command on a corpus script whose set-up leaves --budget 20 no room for its baseline: exit 0,
    a record, the step time and the budget that measures more on the screen, no fix claimed."""
    pytest.importorskip("torch")
    path = tmp_path / "torch_dataloader.py"
    shutil.copy(CORPUS / "torch_dataloader.py", path)
    _slow_setup(monkeypatch, 60.0)
    out_dir = tmp_path / "out"
    record_path = tmp_path / "record.json"
    code, out, err = run_cli(
        ["diagnose", str(path), "--budget", "20", "--out", str(out_dir), "--json", str(record_path)], capsys
    )
    screen, said = " ".join(out.split()), " ".join(err.split())
    assert code == 0, said + screen
    assert "Answering from the pre-flight's steps: 20 s is too short to run the script again" in said
    assert "too short for this script" not in said
    record = RunRecord.model_validate_json(record_path.read_text())
    (base,) = [r for r in record.results if r.status == "ok"]
    assert script.PREFLIGHT not in base.spec.params and base.spec.params["batch"] == 32
    need = record.options["budget_for_all"]
    assert isinstance(need, int) and need > 20
    assert re.search(r"Timed in the pre-flight alone, in one process \(\d+ steps\): --budget 20 was too short", screen)
    assert f"--budget {need} or more measures the baseline in its own processes and every fix" in screen
    # a cause named from the pre-flight's steps (which one depends on the machine: waiting for
    # input, contention on a busy one), or, where none stands out, the step time with its shares;
    # on a busy machine the load's line takes the room, and the screen folds that line onto its
    # heading with the shares alone (firstscreen.quiet_folded)
    named = re.search(r"Why it is slow \(measured share of the time\):? 1\. \w", screen)
    folded = "Measured on a busy machine" in screen and re.search(
        r"Why it is slow \(measured share of the time\): no part the capture times stands out: [a-z ]+ \d+%", screen
    )
    assert named or folded or re.search(r"of a [\d.]+ m?s step \(batch 32", screen), screen
    assert "No change was measured here" in screen and not re.search(r"^\s*1\. ", out, re.M)  # no fix claimed
    assert (
        "timed in the pre-flight alone"
        in record.notes[next(i for i, n in enumerate(record.notes) if "Measured on" in n)]
    )


def test_a_cpu_baseline_the_budget_skipped_is_answered_from_the_preflights_steps():
    """On a busy machine the pre-flight and the set-up can take what the plan gave the baseline:
    seen at --budget 20, load 8-17, where every Keras corpus script ended "No case that decides
    the answer was measured" (exit 1) though its pre-flight had timed the step."""
    from tests.conftest import make_record
    from whichdevice.core.records import CaseResult

    s = json.loads(json.dumps(scriptplan.size(FACTS, 200.0)))  # a plan that holds the baseline and more
    assert not s["preflight_only"] and s["preflight_result"] == RESULT
    user = scriptplan.user_params({"script": "train.py"}, FACTS)
    specs = scriptplan.cases("torch", "CPU:0", user, s)
    assert script.PREFLIGHT not in specs[0].params  # measured in its own process as planned
    why = "skipped: the time budget (--budget) ran out before this case"
    skipped = [CaseResult(spec=c, status="skipped", failure="skipped", error=why, wall_s=0.0) for c in specs]
    record = make_record(skipped, experiment="diagnose")
    got = scriptplan.recorded_results(record, user, s)
    assert got[0].status == "ok" and got[0].timing is not None and got[0].timing.samples_s == RESULT["step_s"]
    assert all(r.status == "skipped" for r in got[1:])  # a variant is never the pre-flight's
    note = scriptplan.skipped_baseline_note(got)
    assert "its 5 steps are the pre-flight's, timed in one process on the CPU" in note
    # stopped at the limit the budget had left (not skipped): the same
    stopped = CaseResult(
        spec=specs[0],
        status="failed",
        failure="timeout",
        error=f"timed out after 15 s {failures.BUDGET_LIMIT_WORDS}: the case hung, or is far slower than planned",
        wall_s=15.0,
    )
    got = scriptplan.recorded_results(make_record([stopped, *skipped[1:]], experiment="diagnose"), user, s)
    assert got[0].status == "ok" and got[0].timing is not None
    # a timeout of --case-timeout is the user's limit, not the budget's: it stays a failure
    own = stopped.model_copy(update={"error": "timed out after 15 s (--case-timeout)"})
    assert scriptplan.recorded_results(make_record([own], experiment="diagnose"), user, s)[0].status == "failed"
    # where no step was kept (a pre-flight stopped after its first), the skip stands
    assert scriptplan.recorded_results(record, user, {**s, "preflight_result": None})[0].status == "skipped"


def test_the_record_says_once_why_its_steps_are_the_preflights_and_older_records_read_as_they_were():
    """The record keeps why the steps are the pre-flight's once, in ``preflight_only``, and the screen's
    line says it. Older records kept the plan's own words there (the line said the budget was too
    short), or the run-time reason twice, in ``preflight_why`` too: each reads as it did."""
    from tests.conftest import make_record
    from whichdevice.core.records import CaseResult
    from whichdevice.present.firstscreen import preflight_line

    s = scriptplan.size(FACTS, 20.0)
    user = scriptplan.user_params({"script": "train.py"}, FACTS)
    (spec,) = scriptplan.cases("torch", "CPU:0", user, s)
    got = script.preflight_timing(RESULT, 60.0)
    assert not isinstance(got, BaseException)
    base = CaseResult(spec=script.without_preflight(spec), status="ok", timing=got[0], metrics=got[1], wall_s=0.0)
    record = make_record([base], experiment="diagnose")
    assert scriptplan.preflight_steps(record.results) == scriptplan.preflight_steps(kept=RESULT) == 5

    def line(**options):
        given = {"budget_s": 20.0, "budget_for_all": 130, **options}
        return preflight_line(record.model_copy(update={"options": given}))

    head = "Timed in the pre-flight alone, in one process (5 steps): "
    tail = "; --budget 130 or more measures the baseline in its own processes and every fix."
    planned = scriptplan.options(user, s, 20.0)["preflight_only"]
    assert line(preflight_only=planned) == f"{head}--budget 20 was too short to run your script again{tail}"
    assert line(preflight_only=s["preflight_only"]) == line(preflight_only=planned)  # the plan's words, kept before
    ran_out = scriptplan.skipped_baseline_words(20.0)
    assert line(preflight_only=ran_out) == f"{head}{ran_out}{tail}"
    before = "--budget 20 ran out before the baseline's own process began"  # as records from before kept it
    assert line(preflight_only=before, preflight_why=before) == f"{head}{before}{tail}"
    assert line() == ""
