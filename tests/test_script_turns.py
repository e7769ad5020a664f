"""Set-up paid once for a torch loop: the variants its capture applies per step (autocast on and
off) take turns with the baseline in the round's shared process, so the script's imports and data
loading are paid once for them (``workloads/script.shares_child``, ``time_group``;
``frameworks/torch/capture.py``'s members), and the plan counts them so (``scriptplan.size``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from whichdevice.core.records import CaseSpec
from whichdevice.workloads import script, scriptplan

CORPUS = Path(__file__).parent / "script_corpus"

# A Lightning-like script on a 2-core CPU: 14 s of imports and data loading, a 60 ms step, a
# DataLoader without workers, a Conv2d model.
LIGHTNING_LIKE = {
    "framework": "torch",
    "entry": "torch.optim.Optimizer.step",
    "batch": 32,
    "step_s": 0.06,
    "first_step_s": 0.5,
    "setup_s": 14.0,
    "import_s": 10.0,
    "data_s": 4.0,
    "model": "LitModel",
    "conv2d": True,
    "data_source": "DataLoader",
    "loader": {"batch_size": 32, "num_workers": 0, "pin_memory": False},
    "samples": 4096,
}


def processes(cases: list[CaseSpec]) -> int:
    """Script processes a round starts for these cases: one per shared group, one per other case."""
    return len({script.group_key(c) for c in cases} - {None}) + sum(script.group_key(c) is None for c in cases)


TURNS_BEFORE = {e: ("baseline", "autocast") for e in script.TURN_ENTRIES}  # autocast alone took turns


def _plan(facts: dict, budget: float) -> list[CaseSpec]:
    sizing = scriptplan.size(facts, budget)
    return scriptplan.cases("torch", "CPU:0", scriptplan.user_params({"script": "train.py"}, facts), sizing)


def test_every_planned_torch_variant_but_the_thread_count_takes_turns_with_the_baseline(monkeypatch):
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])  # this machine's cores aside
    sizing = scriptplan.size(LIGHTNING_LIKE, 600.0)
    cases = _plan(LIGHTNING_LIKE, 600.0)
    shared = [script.variant_of(c.params) for c in cases if script.group_key(c) is not None]
    alone = [script.variant_of(c.params) for c in cases if script.group_key(c) is None]
    assert alone == ["threads:1"]  # read at import: a process of its own
    assert {"autocast", "channels_last", "compile", "workers:2"} <= set(shared)
    assert sum(v.startswith("batch:") for v in shared) >= 2
    assert processes(cases) == 2  # was 8: the set-up paid once for every fix but the thread count
    # each costs its steps, not the set-up again, and the shared process's limit holds them all
    c = scriptplan._Costs(LIGHTNING_LIKE)
    for params in sizing["planned"]:
        cost, own = scriptplan._cost(c, LIGHTNING_LIKE, params, keras=False)
        assert own == ("cpu_threads" in params and params["cpu_threads"] != "default"), params
        compiling = scriptplan.TORCH_COMPILE_S if params.get("torch_compile") is True else 0.0
        assert own or cost - compiling < LIGHTNING_LIKE["setup_s"], params
    costs = [scriptplan._cost(c, LIGHTNING_LIKE, p, keras=False) for p in sizing["planned"]]
    in_turns = sum(x for x, own in costs if not own)
    assert sizing["child_limit_s"] >= 1.5 * (c.baseline() + in_turns)


def test_a_60_s_budget_now_measures_four_fixes_where_it_measured_one(monkeypatch):
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])
    after = scriptplan.size(LIGHTNING_LIKE, 60.0)
    assert {p.get("fix") for p in after["planned"]} >= {"autocast", "channels_last"}, after["cut"]
    assert any("batch" in p for p in after["planned"]) and any(p.get("num_workers") for p in after["planned"])
    assert processes(_plan(LIGHTNING_LIKE, 60.0)) == 1
    monkeypatch.setattr(script, "TURN_ENTRIES", TURNS_BEFORE)  # as before: autocast alone in turns
    before = scriptplan.size(LIGHTNING_LIKE, 60.0)
    assert {p.get("fix") for p in before["planned"]} == {"cpu_threads"}, before["planned"]


@pytest.mark.parametrize(
    "facts",
    [
        {"trainer": "lightning"},  # a trainer's loop fetches ahead
        {"fetches": 2},  # the pre-flight saw the loop take two batches in its first step
        {"loader": {"batch_size": 32, "num_workers": 2, "pin_memory": False}},  # workers load between turns
    ],
)
def test_a_loader_variant_whose_batches_could_not_be_its_turns_is_planned_alone(facts):
    f = {**LIGHTNING_LIKE, **facts}
    c = scriptplan._Costs(f)
    batch = {"kind": "steady", "sync": "none", "batch": 64}
    cost, own = scriptplan._cost(c, f, batch, keras=False)
    assert own and cost > f["setup_s"]
    on = {"kind": "steady", "sync": "none", "fix": "channels_last", "channels_last": True}
    assert scriptplan._cost(c, f, on, keras=False)[1] is False  # the model's memory format takes turns still


def test_shares_child_by_variant_name():
    base = {"entry": "torch.optim.Optimizer.step", "user_batch": 32, "kind": "steady", "sync": "none"}
    assert script.shares_child({**base, "batch": 64})
    assert script.shares_child({**base, "fix": "torch_compile", "torch_compile": True})
    assert not script.shares_child({**base, "batch": 64, "trainer": "lightning"})
    assert script.shares_child({**base, "fix": "channels_last", "channels_last": True, "trainer": "lightning"})
    assert not script.shares_child({**base, "fix": "cpu_threads", "cpu_threads": 1})
    assert not script.shares_child({**base, "fix": "cudnn_benchmark", "cudnn_benchmark": True})


def test_a_member_the_shared_process_hands_back_is_run_alone(monkeypatch):
    """The capture found a loader variant cannot take turns in this loop (``alone``): the measuring
    child times it in a process of its own; the others keep the shared process's results."""
    runs: list[tuple[str, tuple[str, ...]]] = []

    def fake_run(p, spec, framework):
        runs.append((spec.variant, tuple(spec.also)))
        ok = {"status": "ok", "step_s": [0.01] * 3, "warmup_s": [0.02], "setup_s": 1.0}
        if spec.also:
            back = {"status": "not_applicable", "why_not": "fetches ahead", "alone": True}
            return script.ChildRun(results=[{**ok, "member": 0}, {**back, "member": 1}, {**ok, "member": 2}])
        return script.ChildRun(results=[{**ok, "samples_per_step": 64, "step_s": [0.02] * 3}])

    monkeypatch.setattr(script, "_run", fake_run)
    common = {"script": "/x/train.py", "entry": "torch.optim.Optimizer.step", "user_batch": 32, "steps": 3}
    common |= {"warmup": 1, "kind": "steady", "sync": "none", "batch": 32}
    sides = [{}, {"batch": 64}, {"fix": "autocast", "autocast": "bfloat16"}]
    prepared = [CaseSpec(workload="train", framework="torch", device="CPU:0", params={**common, **p}) for p in sides]
    got = script.time_group(prepared, None, None, 0.0)
    assert runs == [("baseline", ("batch:64", "autocast")), ("batch:64", ())]
    assert not any(isinstance(g, BaseException) for g in got), got
    assert got[1][1]["samples_per_step"] == 64 and got[0][1].get("samples_per_step") is None


@pytest.mark.frameworks
def test_a_torch_loop_times_autocast_in_turns_in_one_process(monkeypatch):
    """A real script: the baseline, autocast's off side and autocast, one process, one result each."""
    pytest.importorskip("torch")
    monkeypatch.setattr(script, "_RAN_HERE", [True])  # a fresh process, as a measuring child's later runs
    started: list[tuple[str, tuple[str, ...]]] = []
    run_child = script.run_child

    def counted(job, spec, captures, **kw):
        started.append((spec.variant, spec.also))
        return run_child(job, spec, captures, **kw)

    monkeypatch.setattr(script, "run_child", counted)
    common = {
        "script": str(CORPUS / "torch_dataloader.py"),
        "entry": "torch.optim.Optimizer.step",
        "user_batch": 32,
        "batch": 32,
        "steps": 4,
        "warmup": 1,
        "child_limit_s": 60,
        "kind": "steady",
        "sync": "none",
    }
    params = [{}, {"fix": "autocast", "autocast": "off"}, {"fix": "autocast", "autocast": "bfloat16"}]
    prepared = [CaseSpec(workload="train", framework="torch", device="CPU:0", params={**common, **p}) for p in params]
    assert len({script.group_key(s) for s in prepared}) == 1 and script.group_key(prepared[0]) is not None
    t = time.perf_counter()
    got = script.time_group(prepared, None, None, 0.0)
    assert time.perf_counter() - t < 15
    assert started == [("baseline", ("baseline", "autocast"))]  # the set-up paid once
    for item in got:
        assert not isinstance(item, BaseException), item
        timing, metrics = item
        assert metrics["setup_s"] > 0
    assert len({m["setup_s"] for _t, m in got}) == 1  # one process's set-up, shown apart


@pytest.mark.frameworks
def test_a_member_that_needs_its_own_process_is_refused_the_others_measured(tmp_path):
    pytest.importorskip("torch")
    from tests.test_torch_capture import capture

    results, end = capture(tmp_path, "torch_dataloader.py", "baseline", also=["autocast", "threads:1"])
    by = {r["member"]: r for r in results}
    assert by[2]["status"] == "not_applicable" and "of its own" in by[2]["why_not"]
    assert by[0]["status"] == by[1]["status"] == "ok" and by[1]["variant"] == "autocast"
    assert len(by[0]["step_s"]) == len(by[1]["step_s"]) == 3
