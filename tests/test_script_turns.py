"""Set-up paid once for a torch loop: the variants its capture applies per step (autocast on and
off) take turns with the baseline in the round's shared process, so the script's imports and data
loading are paid once for them (``workloads/script.shares_child``, ``time_group``;
``frameworks/torch/capture.py``'s members), and the plan counts them so (``scriptplan.size``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from whichdevice.core.records import CaseSpec
from whichdevice.frameworks.torch import scriptfixes as torch_scriptfixes
from whichdevice.workloads import fixes, script, scriptplan

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


TURNS_BEFORE = ("baseline", "autocast")  # autocast alone took turns


def _plan(facts: dict, budget: float) -> list[CaseSpec]:
    sizing = scriptplan.size(facts, budget)
    return scriptplan.cases("torch", "CPU:0", scriptplan.user_params({"script": "train.py"}, facts), sizing)


def test_every_planned_torch_variant_but_the_thread_count_takes_turns_with_the_baseline(monkeypatch):
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])  # this machine's cores aside
    sizing = scriptplan.size(LIGHTNING_LIKE, 600.0)
    cases = _plan(LIGHTNING_LIKE, 600.0)
    shared = [script.variant_of(c) for c in cases if script.group_key(c) is not None]
    alone = [script.variant_of(c) for c in cases if script.group_key(c) is None]
    assert alone == ["threads:1"]  # read at import: a process of its own
    assert {"autocast", "channels_last", "compile", "workers:2"} <= set(shared)
    assert sum(v.startswith("batch:") for v in shared) >= 2
    assert processes(cases) == 2  # was 8: the set-up paid once for every fix but the thread count
    # each costs its steps, not the set-up again, and the shared process's limit holds them all
    c = scriptplan._Costs(LIGHTNING_LIKE)
    for params in sizing["planned"]:
        cost, own = scriptplan._cost(c, LIGHTNING_LIKE, params, keras=False)
        v = params["variant"]
        assert own == (v["fix"] == "cpu_threads" and v["value"] != "default"), params
        compiling = torch_scriptfixes.TORCH_COMPILE_S if v == {"fix": "torch_compile", "value": True} else 0.0
        assert own or cost - compiling < LIGHTNING_LIKE["setup_s"], params
    costs = [scriptplan._cost(c, LIGHTNING_LIKE, p, keras=False) for p in sizing["planned"]]
    in_turns = sum(x for x, own in costs if not own)
    assert sizing["child_limit_s"] >= 1.5 * (c.baseline() + in_turns)


def test_a_60_s_budget_now_measures_four_fixes_where_it_measured_one(monkeypatch):
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])
    after = scriptplan.size(LIGHTNING_LIKE, 60.0)
    assert _fixes(after) >= {"autocast", "channels_last", "batch"}, after["cut"]
    assert {"fix": "num_workers", "value": 2} in [p["variant"] for p in after["planned"]]
    assert processes(_plan(LIGHTNING_LIKE, 60.0)) == 1
    monkeypatch.setattr(torch_scriptfixes, "TURNS", TURNS_BEFORE)  # as before: autocast alone in turns,
    monkeypatch.setattr(scriptplan, "TURNS_FIRST", False)  # the plan in priority order only
    before = scriptplan.size(LIGHTNING_LIKE, 60.0)
    assert len(_fixes(before)) == 1, before["planned"]


def _torch_case(params: dict, fix: str | None = None, value: object = None) -> CaseSpec:
    """A torch script case: the baseline, or the variant of catalogue fix ``fix`` at ``value``."""
    variant = fixes.entry(fix).variant(value) if fix else None
    return CaseSpec(workload="train", framework="torch", device="CPU:0", params=params, variant=variant)


def _fixes(sizing: dict) -> set[str]:
    """The fixes a plan measures (its planned cases' variants)."""
    return {p["variant"]["fix"] for p in sizing["planned"]}


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
    batch = {"kind": "steady", "sync": "none", "variant": {"fix": "batch", "value": 64}}
    cost, own = scriptplan._cost(c, f, batch, keras=False)
    assert own and cost > f["setup_s"]
    on = {"kind": "steady", "sync": "none", "variant": {"fix": "channels_last", "value": True}}
    assert scriptplan._cost(c, f, on, keras=False)[1] is False  # the model's memory format takes turns still


def test_a_larger_budget_never_measures_fewer_fixes(monkeypatch):
    """The fixes that take turns are planned before a thread count that pays the set-up again: in
    priority order alone, 70 s measured 2 fixes where 60 s measured 4."""
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])

    def fixes(budget: float) -> int:
        return len(_fixes(scriptplan.size(LIGHTNING_LIKE, budget)))

    got = [fixes(b) for b in (60.0, 70.0, 90.0, 120.0, 600.0)]
    assert got == sorted(got) and got[0] >= 4, got


def test_shares_child_by_variant_name():
    base = {"entry": "torch.optim.Optimizer.step", "user_batch": 32, "batch": 32, "kind": "steady", "sync": "none"}

    def case(fix: str, value: object, **more: object) -> CaseSpec:
        variant = fixes.entry(fix).variant(value)
        return CaseSpec(workload="train", framework="torch", device="CPU:0", params={**base, **more}, variant=variant)

    assert script.shares_child(case("batch", 64))
    assert script.shares_child(case("torch_compile", True))
    assert not script.shares_child(case("batch", 64, trainer="lightning"))
    assert script.shares_child(case("channels_last", True, trainer="lightning"))
    assert not script.shares_child(case("cpu_threads", 1))
    assert script.shares_child(case("cudnn_benchmark", True))


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
    prepared = [_torch_case(common, *side) for side in [(), ("batch", 64), ("autocast", "bfloat16")]]
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
    prepared = [_torch_case(common, *side) for side in [(), ("autocast", "off"), ("autocast", "bfloat16")]]
    assert len({script.group_key(s) for s in prepared}) == 1 and script.group_key(prepared[0]) is not None
    got = script.time_group(prepared, None, None, 0.0)
    # What the turns mean, counted rather than timed (a wall-clock bound fails on a loaded machine
    # and would not tell one set-up from three anyway): one script process for the three members,
    # its set-up (imports, data loading) paid once and shown apart, each member timed on steps of
    # its own in it.
    assert started == [("baseline", ("baseline", "autocast"))]
    for item in got:
        assert not isinstance(item, BaseException), item
        timing, metrics = item
        assert len(timing.samples_s) == common["steps"] and len(timing.warmup_s) == common["warmup"]
        assert metrics["setup_s"] > 0
    assert len({m["setup_s"] for _t, m in got}) == 1  # one process's set-up, shown apart


@pytest.mark.frameworks
def test_loader_variants_take_turns_each_fed_its_own_batches_a_thread_count_refused(tmp_path):
    """One process: the baseline, a batch of 64 and two DataLoader workers in turns, each timed on
    its own batches (64 rows a step for the batch, the workers' processes really used, none left
    after the run); a thread count, read at import, refused as needing a run of its own."""
    pytest.importorskip("torch")
    psutil = pytest.importorskip("psutil")
    from tests.test_torch_capture import capture

    from whichdevice.frameworks.torch import capture_hooks as hooks

    also = ["batch:64", "workers:2", "threads:1"]
    results, end = capture(tmp_path, "torch_dataloader.py", "baseline", also=also)
    by = {r["member"]: r for r in results}
    assert by[3]["status"] == "not_applicable" and "of its own" in by[3]["why_not"]
    for j in range(3):
        assert by[j]["status"] == "ok" and len(by[j]["step_s"]) >= 3, by[j]
    assert [by[j]["samples_per_step"] for j in range(3)] == [32, 64, 32]
    assert by[1]["batch_size"] == 64 and by[1]["fed"]["batch_size"] == 64 and by[1]["fed"]["num_workers"] == 0
    assert by[0]["fed"] is None and by[0]["batch_size"] == 32  # the script's own DataLoader
    assert len({by[j]["setup_s"] for j in range(3)}) == 1  # one process's set-up
    if hooks.PAUSABLE:
        pids = by[2]["fed"]["worker_pids"]
        assert by[2]["fed"]["num_workers"] == 2 and len(pids) == 2
        assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


PREFETCHING = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Prefetcher:  # the next batch taken while the step runs, as the ImageNet examples' data_prefetcher
    def __init__(self, loader):
        self.it = iter(loader)
        self.next = next(self.it, None)

    def __iter__(self):
        while self.next is not None:
            batch, self.next = self.next, next(self.it, None)
            yield batch


data = TensorDataset(torch.randn(1024, 16), torch.randint(0, 4, (1024,)))
loader = DataLoader(data, batch_size=32, shuffle=True)
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in Prefetcher(loader):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
"""


@pytest.mark.frameworks
@pytest.mark.slow
def test_a_loop_that_fetches_ahead_hands_its_batch_variant_back(tmp_path):
    """Its batch taken during the step before would be another member's: the batch variant is
    handed back (``alone``), the autocast member measured in turns still."""
    pytest.importorskip("torch")
    from tests.test_torch_capture import capture

    path = tmp_path / "prefetching.py"
    path.write_text(PREFETCHING)
    results, end = capture(tmp_path, path, "baseline", also=["batch:64", "autocast"])
    by = {r["member"]: r for r in results}
    assert by[1]["status"] == "not_applicable" and by[1].get("alone") is True, by[1]
    assert "ahead" in by[1]["why_not"]
    assert by[0]["status"] == by[2]["status"] == "ok" and by[0]["fetches"] == 2


@pytest.mark.frameworks
@pytest.mark.slow
def test_channels_last_and_compile_take_turns_on_a_convolutional_model(tmp_path):
    pytest.importorskip("torch")
    from tests.test_torch_capture import capture

    results, end = capture(tmp_path, "torch_cnn.py", "baseline", also=["channels_last", "compile"])
    by = {r["member"]: r for r in results}
    assert [by[j]["status"] for j in range(3)] == ["ok"] * 3, results
    assert len(by[2]["warmup_s"]) >= 2  # its compile is a warm-up, never a timed step
    assert max(by[2]["warmup_s"]) > 5 * max(by[2]["step_s"])


@pytest.mark.frameworks
def test_the_loader_variants_take_turns_only_where_each_batch_is_its_turns():
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from whichdevice.frameworks.torch import capture_hooks as hooks

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(8, 2)), batch_size=2)
    user = {"batch_size": 2, "batch_sampler": False, "num_workers": 0, "pin_memory": False}
    loader._whichdevice_user = user
    cap = SimpleNamespace(torch=torch, spec=None, fed=loader, trainer=None, fetches=1)
    assert hooks.alone_why(cap, "batch:64") is None and hooks.alone_why(cap, "channels_last") is None
    assert "ahead" in hooks.alone_why(SimpleNamespace(**{**vars(cap), "fetches": 2}), "batch:64")
    assert "trainer" in hooks.alone_why(SimpleNamespace(**{**vars(cap), "trainer": "lightning"}), "pin_memory")
    assert hooks.alone_why(SimpleNamespace(**{**vars(cap), "fetches": 2}), "batch:2") is None  # a misfit, said so
    loader._whichdevice_user = {**user, "num_workers": 2}
    assert "worker processes" in hooks.alone_why(cap, "workers:4")


@pytest.mark.frameworks
def test_a_workers_feed_uses_its_workers_pauses_them_between_turns_and_shuts_them_down():
    """A workers member's batches come from worker processes (the variant really used), paused
    outside its turns, and none outlives the run."""
    torch = pytest.importorskip("torch")
    psutil = pytest.importorskip("psutil")
    from whichdevice.frameworks.torch import capture_hooks as hooks

    if not hooks.PAUSABLE:
        pytest.skip("worker processes are paused between turns on Linux only")
    dataloader = __import__("torch.utils.data.dataloader", fromlist=["_BaseDataLoaderIter"])
    hooks._LOADER_INIT[0] = torch.utils.data.DataLoader.__init__
    data = torch.utils.data.TensorDataset(torch.arange(64.0).reshape(32, 2), torch.zeros(32))
    user = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)
    user._whichdevice_args = {"dataset": data, "batch_size": 4, "shuffle": True, "num_workers": 0}
    feed = hooks.Feed(torch, user, {"num_workers": 2})
    orig_next, orig_iter = dataloader._BaseDataLoaderIter.__next__, torch.utils.data.DataLoader.__iter__
    rows = [int(feed.next(orig_next, orig_iter)[0].shape[0]) for _ in range(12)]  # past an epoch's 8 batches
    assert rows == [4] * 12
    pids = feed.pids()
    assert len(pids) == 2 and feed.settings()["num_workers"] == 2

    def stopped(want: bool) -> list[bool]:  # a signal takes a moment to arrive: polled up to 5 s
        end = time.monotonic() + 5
        while True:
            got = [psutil.Process(p).status() == psutil.STATUS_STOPPED for p in pids]
            if got == [want] * len(pids) or time.monotonic() > end:
                return got
            time.sleep(0.05)

    try:
        feed.pause(True)
        assert stopped(True) == [True, True]
        feed.pause(False)
        assert stopped(False) == [False, False]
        feed.pause(True)
    finally:
        feed.close()  # resumed first: a paused worker would not see the shutdown
    time.sleep(0.2)
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


@pytest.mark.frameworks
def test_channels_last_and_compile_are_switched_in_for_a_turn_and_back_out():
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from whichdevice.frameworks.torch import capture_hooks as hooks

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 3, 8, 8)).sum().backward()
    opt.step()  # Adam's state exists, in the script's own format
    hooks._OPTIMIZERS.add(opt)
    weight = model[0].weight
    cap = SimpleNamespace(torch=torch, trained=[model], compiled={}, feed=None, fed=None)
    cl = torch.channels_last
    hooks.enter(cap, SimpleNamespace(variant="channels_last", index=1))
    assert model[0].weight is weight and weight.is_contiguous(memory_format=cl)  # the optimizer's tensor still
    assert opt.state[weight]["exp_avg"].is_contiguous(memory_format=cl)
    hooks.leave(cap, SimpleNamespace(variant="channels_last", index=1))
    assert weight.is_contiguous() and not weight.is_contiguous(memory_format=cl)
    assert opt.state[weight]["exp_avg"].is_contiguous()
    assert model._compiled_call_impl is None
    cap.why_not = None
    torch.backends.cudnn.benchmark = False  # the script's own setting
    hooks.enter(cap, SimpleNamespace(variant="cudnn_benchmark", index=3))
    assert torch.backends.cudnn.benchmark is True and cap.why_not is None
    hooks.leave(cap, SimpleNamespace(variant="cudnn_benchmark", index=3))
    assert torch.backends.cudnn.benchmark is False
    hooks.enter(cap, SimpleNamespace(variant="compile", index=2))
    assert model._compiled_call_impl is not None  # its steps run the compiled module
    hooks.leave(cap, SimpleNamespace(variant="compile", index=2))
    assert model._compiled_call_impl is None


def test_what_a_capture_started_beside_the_script_is_ended_when_the_script_raises(tmp_path, monkeypatch):
    """A turn's DataLoader workers must not outlive a script that raised (``capturekit.CLOSERS``)."""
    from whichdevice.frameworks.common import capturekit
    from whichdevice.workloads import scriptrun

    closed: list[int] = []
    monkeypatch.setattr(capturekit, "CLOSERS", [lambda end: closed.append(1)])
    path = tmp_path / "boom.py"
    path.write_text("raise ValueError('boom')\n")
    job = {"script": str(path), "args": [], "frameworks": [], "spec": {"variant": "baseline"}}
    end = scriptrun.execute(job, lambda r: None)
    assert end["status"] == "script_error" and closed == [1]


def test_a_script_that_raises_in_a_members_turn_runs_the_others_again_without_it(monkeypatch):
    """A step that cannot take the variant's batch (the script reshapes to its own batch size)
    raised in that member's turn: the run gave the others nothing, so they take turns again
    without it, and it runs alone, where the error is its own."""
    runs: list[tuple[str, tuple[str, ...]]] = []
    ok = {"status": "ok", "step_s": [0.01] * 3, "warmup_s": [0.02], "setup_s": 1.0}

    def fake_run(p, spec, framework):
        runs.append((spec.variant, tuple(spec.also)))
        if spec.also == ("batch:64", "autocast"):  # raised in batch:64's turn: its result alone
            back = {"status": "not_applicable", "why_not": "the script raised", "alone": True, "member": 1}
            return script.ChildRun(results=[back], end={"status": "script_error", "error": "RuntimeError: shape"})
        if spec.also:
            return script.ChildRun(results=[{**ok, "member": j} for j in range(1 + len(spec.also))])
        return script.ChildRun(end={"status": "script_error", "error": "RuntimeError: shape", "where": "train.py:9"})

    monkeypatch.setattr(script, "_run", fake_run)
    common = {"script": "/x/train.py", "entry": "torch.optim.Optimizer.step", "user_batch": 32, "steps": 3}
    common |= {"warmup": 1, "kind": "steady", "sync": "none", "batch": 32}
    prepared = [_torch_case(common, *side) for side in [(), ("batch", 64), ("autocast", "bfloat16")]]
    got = script.time_group(prepared, None, None, 0.0)
    assert runs == [
        ("baseline", ("batch:64", "autocast")),
        ("baseline", ("autocast",)),
        ("batch:64", ()),
    ]
    assert not isinstance(got[0], BaseException) and not isinstance(got[2], BaseException)
    assert isinstance(got[1], RuntimeError) and "RuntimeError: shape" in str(got[1])


RESHAPES = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

BATCH = 32
data = TensorDataset(torch.randn(1024, 4, 4), torch.randint(0, 4, (1024,)))
loader = DataLoader(data, batch_size=BATCH, shuffle=True)
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x.reshape(BATCH, 16)), y).backward()  # its own batch size, always
        opt.step()
"""


@pytest.mark.frameworks
@pytest.mark.slow
def test_a_real_step_that_raises_at_another_batch_size_costs_the_others_nothing(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(script, "_RAN_HERE", [True])
    path = tmp_path / "reshapes.py"
    path.write_text(RESHAPES)
    common = {"script": str(path), "entry": "torch.optim.Optimizer.step", "user_batch": 32, "batch": 32}
    common |= {"steps": 3, "warmup": 1, "child_limit_s": 60, "kind": "steady", "sync": "none"}
    prepared = [_torch_case(common, *side) for side in [(), ("batch", 64), ("autocast", "bfloat16")]]
    got = script.time_group(prepared, None, None, 0.0)
    assert not isinstance(got[0], BaseException) and not isinstance(got[2], BaseException), got
    assert isinstance(got[1], RuntimeError) and "raised RuntimeError" in str(got[1]), got[1]
