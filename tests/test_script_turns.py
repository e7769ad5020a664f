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


def test_autocast_takes_turns_with_the_baseline_the_rest_runs_alone():
    sizing = scriptplan.size(LIGHTNING_LIKE, 600.0)
    user = scriptplan.user_params({"script": "train.py"}, LIGHTNING_LIKE)
    cases = scriptplan.cases("torch", "CPU:0", user, sizing)
    shared = [script.variant_of(c.params) for c in cases if script.group_key(c) is not None]
    alone = {script.variant_of(c.params) for c in cases if script.group_key(c) is None}
    assert shared.count("autocast") == 1 and set(shared) == {"baseline", "autocast"}
    # what changes what the script builds once (its DataLoader, the model's memory format, a compiled module)
    assert {"channels_last", "compile", "workers:2"} <= alone and "autocast" not in alone
    assert any(v.startswith("batch:") for v in alone)
    # the autocast pair costs its steps, not the set-up again
    c = scriptplan._Costs(LIGHTNING_LIKE)
    on = {"kind": "steady", "sync": "none", "fix": "autocast", "autocast": "bfloat16"}
    cost, own = scriptplan._cost(c, LIGHTNING_LIKE, on, keras=False)
    assert not own and cost < LIGHTNING_LIKE["setup_s"]
    # the shared process's limit holds every member taking its turns
    assert sizing["child_limit_s"] >= 1.5 * (c.baseline() + cost)


def test_a_70_s_budget_now_measures_autocast_beside_the_threads(monkeypatch):
    """At --budget 70 a 14 s set-up paid again by autocast left it cut behind the thread count;
    in turns it costs its steps, so it is planned (and the plan is the same size but for it)."""
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])  # this machine's cores aside
    after = scriptplan.size(LIGHTNING_LIKE, 70.0)
    assert {p.get("fix") for p in after["planned"]} >= {"cpu_threads", "autocast"}, after["cut"]
    monkeypatch.setattr(script, "TURN_ENTRIES", {})  # as before: every variant a process of its own
    before = scriptplan.size(LIGHTNING_LIKE, 70.0)
    assert "autocast" not in {p.get("fix") for p in before["planned"]}


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

    results, end = capture(tmp_path, "torch_dataloader.py", "baseline", also=["autocast", "workers:2"])
    by = {r["member"]: r for r in results}
    assert by[2]["status"] == "not_applicable" and "of its own" in by[2]["why_not"]
    assert by[0]["status"] == by[1]["status"] == "ok" and by[1]["variant"] == "autocast"
    assert len(by[0]["step_s"]) == len(by[1]["step_s"]) == 3
