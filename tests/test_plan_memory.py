"""The same command twice asks the same question: a script plan keeps the last run's decisions
(two rounds or one, each fix measured or cut) while the costs stay within ``KEEP_PLAN`` of the
budget's edge, and decides afresh beyond it. Read from the history of this machine's diagnoses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from whichdevice.core.records import load_run
from whichdevice.measure import history
from whichdevice.workloads import scriptplan
from whichdevice.workloads.scriptplan import FixCost, PlanCosts, PriorPlan

DATA = Path(__file__).parent / "data"
# a 20 s diagnose of a Keras fit: batch and steps_per_execution measured, three fixes cut
RECORD = DATA / "diagnose_script_keras_fit_validation_callbacks_budget20_cpu_2core.json"

BUDGET = 60.0
START = 6.0  # the measuring child's start: the round may plan (60 - 4 - 6) / 2 = 25 s
BASELINE = 10.0


def _costs(batch_s: float) -> PlanCosts:
    batch = FixCost("batch", ({},), ((batch_s, False),), draws=(1,), warmup=(2,), apart=(batch_s + START,))
    return PlanCosts(start=START, baseline=BASELINE, least=BASELINE + START, fixes=(batch,))


def _measured(p: scriptplan.Plan) -> set[str]:
    return {f.fix for f in p.planned}


def _prior(planned: set[str], cut: set[str], rounds: int = 2) -> PriorPlan:
    return PriorPlan(frozenset(planned), frozenset(cut), rounds, "2026-12-07T15:42:29+00:00")


def test_the_round_is_sized_so_that_its_second_fits_the_budget_too():
    assert scriptplan.two_rounds_s(START, BUDGET) == pytest.approx(25.0)
    assert _measured(scriptplan.plan(_costs(15.0), BUDGET)) == {"batch"}  # 10 + 15 = 25 s: both rounds fit
    assert _measured(scriptplan.plan(_costs(15.5), BUDGET)) == set()  # 25.5 s: its round 2 would not


def test_a_fix_the_last_run_measured_stays_measured_while_its_cost_moves_less_than_the_margin():
    last = _prior({"batch"}, set())
    # a few per cent past the edge: a fresh plan cuts it, the same command's plan keeps it
    assert _measured(scriptplan.plan(_costs(15.5), BUDGET)) == set()
    assert _measured(scriptplan.plan(_costs(15.5), BUDGET, last)) == {"batch"}
    # past KEEP_PLAN (25 x 1.15 = 28.75 s for the round): decided afresh
    assert _measured(scriptplan.plan(_costs(19.0), BUDGET, last)) == set()


def test_a_fix_the_last_run_cut_stays_cut_while_its_cost_moves_less_than_the_margin():
    last = _prior(set(), {"batch"})
    assert _measured(scriptplan.plan(_costs(14.5), BUDGET)) == {"batch"}
    assert _measured(scriptplan.plan(_costs(14.5), BUDGET, last)) == set()
    # well inside the edge (25 / 1.15 = 21.7 s for the round): measured again
    assert _measured(scriptplan.plan(_costs(11.0), BUDGET, last)) == {"batch"}


def test_a_fix_the_last_run_never_planned_is_decided_afresh():
    other = _prior({"autocast"}, {"precision"})
    assert _measured(scriptplan.plan(_costs(15.5), BUDGET, other)) == set()
    assert _measured(scriptplan.plan(_costs(14.5), BUDGET, other)) == {"batch"}


def test_the_notes_say_what_the_plan_kept_and_nothing_where_a_fresh_plan_agrees():
    costs = _costs(15.5)
    last = _prior({"batch"}, set())
    note = scriptplan._kept(costs, BUDGET, scriptplan.plan(costs, BUDGET, last), last)
    assert note is not None
    assert note.startswith("planned as the last run of this command (2026-12-07 15:42): batch measured")
    assert "1.15×" in note
    agreed = _costs(12.0)
    assert scriptplan._kept(agreed, BUDGET, scriptplan.plan(agreed, BUDGET, last), last) is None


def test_a_record_of_the_same_script_arguments_and_budget_gives_its_plan():
    record = load_run(RECORD)
    job = {"script": str(record.options["script"]), "args": []}
    prior = scriptplan.prior_plan(record, job, 20.0)
    assert prior is not None
    assert (prior.planned, prior.cut, prior.rounds, prior.created_at) == (
        frozenset({"batch", "steps_per_execution"}),
        frozenset({"cpu_threads", "jit_compile", "precision"}),
        2,
        record.created_at,
    )
    # each measured variant's case, with what it took a round: its warm-up and its longest round
    cases = [r for r in record.results if r.status == "ok" and r.spec.variant is not None]
    assert set(prior.measured) == {f"{r.spec.variant.fix}={r.spec.variant.value}" for r in cases}
    one = cases[0]
    assert one.timing is not None and one.timing.rounds_s
    took = sum(one.timing.warmup_s) + max(sum(x) for x in one.timing.rounds_s) * one.timing.number_per_sample
    assert prior.measured[f"{one.spec.variant.fix}={one.spec.variant.value}"] == pytest.approx(took)
    assert scriptplan.prior_plan(record, job, 60.0) is None  # another budget: another question
    assert scriptplan.prior_plan(record, {**job, "args": ["--epochs", "1"]}, 20.0) is None
    assert scriptplan.prior_plan(record, {**job, "script": "/elsewhere/train.py"}, 20.0) is None


def test_the_history_gives_the_newest_matching_record_of_this_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path))
    record = load_run(RECORD)
    mine = record.model_copy(update={"machine": record.machine.model_copy(update={"hostname": "here"})})
    theirs = record.model_copy(update={"machine": record.machine.model_copy(update={"hostname": "there"})})
    for i, r in enumerate((mine, theirs)):
        path = tmp_path / f"r{i}.json"
        path.write_text(r.model_dump_json(), encoding="utf-8")
        history.add(r, path)
    monkeypatch.setattr(history.socket, "gethostname", lambda: "here")
    job = {"script": str(record.options["script"]), "args": []}
    found = history.latest("diagnose", lambda r: scriptplan.prior_plan(r, job, 20.0))
    assert found is not None and found.planned == frozenset({"batch", "steps_per_execution"})
    assert history.latest("diagnose", lambda r: scriptplan.prior_plan(r, job, 30.0)) is None
    # a record whose command line does not name the script is not read at all
    assert history.latest("diagnose", lambda r: scriptplan.prior_plan(r, job, 20.0), mentions="other.py") is None
    named = Path(str(record.options["script"])).name
    assert history.latest("diagnose", lambda r: scriptplan.prior_plan(r, job, 20.0), mentions=named) == found
    monkeypatch.setattr(history.socket, "gethostname", lambda: "elsewhere")  # another machine's runs
    assert history.latest("diagnose", lambda r: scriptplan.prior_plan(r, job, 20.0)) is None


def test_an_unreadable_history_plans_afresh(tmp_path, monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path))
    (tmp_path / "history.sqlite").write_text("not a database", encoding="utf-8")
    assert history.latest("diagnose", lambda r: r) is None


def _batch_costs(each_s: float) -> PlanCosts:
    batch = FixCost(
        "batch",
        tuple({"variant": {"fix": "batch", "value": k}} for k in (32, 128)),
        ((each_s, False), (each_s, False)),
        draws=(1, 1),
        warmup=(2, 2),
        apart=(each_s + START, each_s + START),
    )
    return PlanCosts(start=START, baseline=BASELINE, least=BASELINE + START, fixes=(batch,))


def test_a_fix_the_last_run_measured_cheaply_is_priced_at_what_it_took_not_at_the_scaled_step():
    # the pre-flight's step in its slow mode, scaled by the batch, prices each case at 20 s: far past
    # the edge and KEEP_PLAN; the last run measured the two cases at 0.5 s a round each
    costs = _batch_costs(20.0)
    assert _measured(scriptplan.plan(costs, BUDGET)) == set()
    last = PriorPlan(
        frozenset({"batch"}), frozenset(), 2, "2026-12-07T19:51:18+00:00", {"batch=32": 0.5, "batch=128": 0.5}
    )
    assert _measured(scriptplan.plan(costs, BUDGET, last)) == {"batch"}
    note = scriptplan._kept(costs, BUDGET, scriptplan.plan(costs, BUDGET, last), last)
    assert note == (
        "batch measured as in the last run of this command (2026-12-07 19:51): its cases took 1 s a round "
        "there, where this pre-flight's step priced them at 40 s"
    )
    # a measured time never raises the price, and a case the last run did not measure keeps its own
    dear = PriorPlan(frozenset({"batch"}), frozenset(), 2, "2026-12-07T19:51:18+00:00", {"batch=32": 30.0})
    assert dear.repriced(costs.fixes[0]) == costs.fixes[0]
    # a fix the last run cut is not repriced, even where a case of that name was timed
    cut = PriorPlan(frozenset(), frozenset({"batch"}), 2, "2026-12-07T19:51:18+00:00", {"batch=32": 0.5})
    assert cut.repriced(costs.fixes[0]) == costs.fixes[0]
    # two fixes repriced: one sentence, the fixes in alphabetical order
    both = PlanCosts(
        start=START,
        baseline=BASELINE,
        least=BASELINE + START,
        fixes=(
            costs.fixes[0],
            dataclasses.replace(
                costs.fixes[0],
                fix="autocast",
                params=(
                    {"variant": {"fix": "autocast", "value": "off"}},
                    {"variant": {"fix": "autocast", "value": "bfloat16"}},
                ),
            ),
        ),
    )
    two = PriorPlan(
        frozenset({"batch", "autocast"}),
        frozenset(),
        2,
        "2026-12-07T19:51:18+00:00",
        {"batch=32": 0.5, "batch=128": 0.5, "autocast=off": 0.25, "autocast=bfloat16": 0.25},
    )
    assert scriptplan._kept(both, BUDGET, scriptplan.plan(both, BUDGET, two), two) == (
        "autocast and batch measured as in the last run of this command (2026-12-07 19:51): their cases took "
        "500 ms and 1 s a round there, where this pre-flight's step priced them at 40 s and 40 s"
    )


def test_on_a_busy_machine_the_last_run_s_decisions_hold_over_a_wider_band():
    # quiet: KEEP_PLAN; busier than the cores: as much wider as a refusal's headroom (load 2 per
    # core: 1.15 x 1.75 / 1.5), so a set-up that moves 40 % under contention keeps the same question
    assert scriptplan.keep_band({"load_per_core": 0.4}) == pytest.approx(scriptplan.KEEP_PLAN)
    assert scriptplan.keep_band({}) == pytest.approx(scriptplan.KEEP_PLAN)
    assert scriptplan.keep_band({"load_per_core": 2.0}) == pytest.approx(1.15 * 1.75 / 1.5)
    assert scriptplan.keep_band({"load_per_core": 9.0}) == pytest.approx(1.15 * 2.0 / 1.5)
    cut = PriorPlan(frozenset(), frozenset({"batch"}), 2, "2026-12-07T21:09:23+00:00")
    # 10 + 11 = 21 s of a 25 s round: 1.15 keeps it cut only past 21.7 s, 1.34 past 18.6 s
    assert _measured(scriptplan.plan(_costs(11.0), BUDGET, cut)) == {"batch"}
    wide = dataclasses.replace(cut, band=scriptplan.keep_band({"load_per_core": 2.0}))
    assert _measured(scriptplan.plan(_costs(11.0), BUDGET, wide)) == set()
    note = scriptplan._kept(_costs(11.0), BUDGET, scriptplan.plan(_costs(11.0), BUDGET, wide), wide)
    assert note is not None and "within 1.34× of the budget's edge" in note
