"""A torch loop too short for every variant's turns: the shared process's members take their
steps from the script's own loop (each its warm-up, then its timed steps, in turn), so a loop of
16 steps (torch_cnn.py: 2 epochs of 8 batches) fed the baseline and ran out before the others'
turns. The plan now puts no more members in turns than the loop's steps feed (the rest each in a
process of their own, or left out saying why), and a member the loop ended before is recorded as
not measured for that reason, never as a failed case ("child process died (exit code 0)")."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from whichdevice.analysis import suite
from whichdevice.core import failures
from whichdevice.core.records import CaseResult, CaseSpec, Variant
from whichdevice.present import firstscreen
from whichdevice.present import fixes as fixwords
from whichdevice.workloads import script, scriptplan

from tests.test_script_turns import CORPUS

# torch_cnn.py's pre-flight on the loaded 2-core machine: its survey followed the loop to its end
CNN = {
    "framework": "torch",
    "entry": "torch.optim.Optimizer.step",
    "batch": 32,
    "step_s": 0.06,
    "first_step_s": 0.57,
    "setup_s": 5.7,
    "import_s": 3.4,
    "data_s": 2.3,
    "model": "Net",
    "conv2d": True,
    "data_source": "DataLoader",
    "loader": {"batch_size": 32, "num_workers": 0, "pin_memory": False},
    "samples": 256,
    "fetches": 1,
    "entry_call": 1,
    "entries": [{"entry": "torch.optim.Optimizer.step", "kind": "loop", "call": 1, "batch": 32, "steps": 16}],
    "survey_stopped": False,
    "load_per_core": 0.5,
}


def _shared(facts: dict, sizing: dict) -> list[CaseSpec]:
    """The planned cases that take turns in the shared process, the baseline first."""
    cases = scriptplan.cases("torch", "CPU:0", scriptplan.user_params({"script": "train.py"}, facts), sizing)
    return [c for c in cases if script.group_key(c) is not None]


def _steps_needed(facts: dict, shared: list[CaseSpec]) -> int:
    """The loop's steps the shared process's turns take: every member its warm-up, then its timed
    steps, in turn; a loader member draws its batches from a DataLoader of its own."""
    draws = sum(scriptplan._draws(facts, c) for c in shared)
    warm = max(scriptplan._warmup(c) for c in shared)
    return draws * (warm + scriptplan.STEPS)


@pytest.mark.parametrize("budget", [60.0, 120.0, 600.0])
def test_the_plan_puts_no_more_turns_in_the_shared_process_than_the_loop_feeds(monkeypatch, budget):
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])
    sizing = scriptplan.size(CNN, budget)
    shared = _shared(CNN, sizing)
    assert shared and _steps_needed(CNN, shared) <= 16, shared
    cases = scriptplan.cases("torch", "CPU:0", scriptplan.user_params({"script": "train.py"}, CNN), sizing)
    apart = [c for c in cases if c.params.get("own_process")]
    assert apart and all(script.group_key(c) is None for c in apart)
    # each fix whole: both sides of a pair in turns, or both in processes of their own
    apart_fixes = {c.variant.fix for c in apart if c.variant is not None}
    for fix in apart_fixes:
        assert all(script.group_key(c) is None for c in cases if c.variant is not None and c.variant.fix == fix), fix
    assert set(sizing["fixes_apart"]) >= apart_fixes
    for line in sizing["cut"][:-1]:  # what the steps pushed apart and the budget then could not hold
        assert "your script's loop takes 16 steps" in line or "more than the budget leaves" in line
    if budget >= 600:
        assert not sizing["cut"] and {"autocast", "channels_last", "torch_compile"} <= set(sizing["fixes_apart"])


def test_a_loop_long_enough_or_of_unknown_length_keeps_every_variant_in_turns(monkeypatch):
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])
    for entries in (
        [{**CNN["entries"][0], "steps": 400}],  # 400 steps feed every turn
        [{**CNN["entries"][0], "stopped": True}],  # the survey stopped following it: its length not known
        [],
    ):
        facts = {**CNN, "entries": entries}
        sizing = scriptplan.size(facts, 600.0)
        assert not sizing["fixes_apart"] and not any(p.get("own_process") for p in sizing["planned"]), entries
    assert scriptplan.script_steps({**CNN, "entries": [{**CNN["entries"][0], "stopped": True}]}) is None
    assert scriptplan.script_steps(CNN) == 16


def test_the_budget_for_all_holds_the_fixes_in_processes_of_their_own(monkeypatch):
    """The figure the screen names measures every fix, each where the loop can feed it."""
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])
    whole = scriptplan.budget_for_all(CNN)
    sizing = scriptplan.size(CNN, whole)
    assert not sizing["cut"] and sizing["fixes_apart"], sizing["cut"]
    assert scriptplan.size(CNN, 60.0)["budget_for_all"] == whole


def _prepared(sides: list[dict]) -> list[CaseSpec]:
    common = {"script": "/x/train.py", "entry": "torch.optim.Optimizer.step", "user_batch": 32, "steps": 3}
    common |= {"warmup": 1, "kind": "steady", "sync": "none", "batch": 32}
    out = []
    for side in sides:
        p = {k: v for k, v in side.items() if k != "variant"}
        variant = Variant(fix=side["variant"][0], value=side["variant"][1]) if "variant" in side else None
        out.append(
            CaseSpec(workload="train", framework="torch", device="CPU:0", params={**common, **p}, variant=variant)
        )
    return out


def test_a_member_the_scripts_loop_ended_before_is_not_measured_not_failed(monkeypatch):
    """The script's loop ran out (the process ended normally, exit code 0) with the autocast pair's
    turns not reached: those cases are skipped with the reason, the others keep their results."""
    ok = {"status": "ok", "step_s": [0.01] * 3, "warmup_s": [0.02], "setup_s": 1.0, "stopped": "script end"}

    def fake_run(p, spec, framework):
        done = [{**ok, "member": j, "script_steps": 16} for j in (0, 1)]
        return script.ChildRun(results=done, end={"type": "end", "status": "ok", "script_ended": True})

    monkeypatch.setattr(script, "_run", fake_run)
    sides = [{}, {"variant": ("batch", 8)}, {"variant": ("autocast", "off")}, {"variant": ("autocast", "bfloat16")}]
    got = script.time_group(_prepared(sides), None, None, 0.0)
    assert not isinstance(got[0], BaseException) and not isinstance(got[1], BaseException)
    for g in got[2:]:
        assert isinstance(g, script.NotApplicable) and failures.of_exception(g) == "skipped", g
        assert str(g) == (
            "not measured: your script's loop ended after 16 steps, before this variant's turn "
            "(its data holds fewer steps than the turns need)"
        )
        assert "died" not in str(g) and "failed" not in str(g)
    # a process that died is still a failure
    monkeypatch.setattr(script, "_run", lambda p, spec, fw: script.ChildRun(results=[{**ok, "member": 0}]))
    assert isinstance(script.time_group(_prepared(sides[:3]), None, None, 0.0)[2], RuntimeError)


def test_the_reason_reads_the_same_in_the_fix_table_and_the_case_list():
    specs = _prepared([{"variant": ("autocast", "off")}, {"variant": ("autocast", "bfloat16")}])
    text = str(script.loop_ended(script.ChildRun(results=[{"member": 0, "script_steps": 16}])))
    cases = [CaseResult(spec=s, status="skipped", error=text, failure="skipped", wall_s=0.0) for s in specs]
    why = suite._not_applicable(cases)
    assert why is not None and why.reason == "script_ended" and why.n == 16
    said = fixwords.not_measured_text(why)
    assert said == text  # the record's own words, as the fix table says them
    assert "failed" not in said and "budget" not in fixwords.short_reason(why)
    assert firstscreen._skip_words(suite.skip_reason(cases[0])) == said
    reasons = [fixwords.short_reason(why)] * 2 + [""]
    summary = firstscreen.skipped_summary(reasons, [])
    assert summary == (
        f"1 case not measured (time budget; raise --budget); 2 cases not measured ({fixwords.SCRIPT_ENDED})"
    )


@pytest.mark.slow
@pytest.mark.frameworks
def test_torch_cnn_at_a_small_budget_has_no_case_that_died(tmp_path, capsys, monkeypatch):
    """The real script (16 steps in all) diagnosed: no case failed, none read "died"."""
    pytest.importorskip("torch")
    work = tmp_path / "work"
    work.mkdir()
    (work / "torch_cnn.py").write_text((CORPUS / "torch_cnn.py").read_text())
    monkeypatch.chdir(work)
    record = tmp_path / "r.json"
    code, out, err = run_cli(
        ["diagnose", "torch_cnn.py", "--budget", "60", "--json", str(record), "--out", str(tmp_path / "o"), "--quiet"],
        capsys,
    )
    assert code == 0, err[-2000:]
    rec = json.loads(record.read_text())
    assert not [r for r in rec["results"] if r["status"] == "failed"], rec["results"]
    # its results and notes, not its command: run alone (no xdist), the test's folder, named after
    # the test ("..._has_no_case_that_died"), is in the command the record keeps
    assert "died" not in json.dumps([rec["results"], rec["notes"]])
