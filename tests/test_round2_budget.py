"""A later round's window is the reserve round 1 left, so a small budget is kept too."""

from __future__ import annotations

import time

import pytest
from types import SimpleNamespace

from whichdevice.core.records import CaseSpec
from whichdevice.measure import session


def _later_round_stop(
    monkeypatch, budget_s: float, round1_ended_after_s: float, rounds_share: float = session.ROUNDS_SHARE
) -> float:
    """When ``_later_rounds`` tells round 2's child to stop starting cases, in seconds after
    the device's budget started, round 1 having ended ``round1_ended_after_s`` in."""
    seen: dict[str, float] = {}

    def run_devices(*args, deadline=None, **kwargs):
        seen["deadline"] = deadline
        return [], [], []

    monkeypatch.setattr(session.experiment, "run_devices", run_devices)
    spec = CaseSpec(workload="matmul", framework="tensorflow", device="CPU:0", params={"n": 10})
    first = [
        SimpleNamespace(spec=spec, status="ok", timing=SimpleNamespace(samples_s=[0.001] * 10), metrics={}, wall_s=0.1)
    ]
    run = SimpleNamespace(
        request=SimpleNamespace(
            budget_s=budget_s,
            repeat=lambda s: True,
            framework="tensorflow",
            cpu_threads=None,
            case_timeout_s=60.0,
            memory_limit_bytes=None,
            undecided=None,
            rounds_share=rounds_share,
        ),
        n_rounds=2,
        progress=SimpleNamespace(on_start=None, on_result=None),
        count=SimpleNamespace(grow=lambda n: None),
        policy=None,
    )
    started = time.time() - round1_ended_after_s
    session._later_rounds(run, SimpleNamespace(name="CPU:0"), first, started)
    return seen["deadline"] - started


def test_round2_of_a_small_budget_ends_with_its_reserve_not_a_fixed_12_s(monkeypatch):
    # `run --budget 30`: round 1 stops starting cases 4.5 s before the end; ending at 27 s, round
    # 2 may start cases until 31.5 s (it was 39 s: 12 s after round 1, 1.3 x the budget)
    stop = _later_round_stop(monkeypatch, 30.0, 27.0)
    assert 31.0 <= stop <= 32.0, stop
    assert session.round2_reserve(30.0) == 4.5


def test_round2_of_the_default_budget_keeps_its_12_s(monkeypatch):
    stop = _later_round_stop(monkeypatch, 90.0, 70.0)
    assert 81.5 <= stop <= 82.5, stop
    early = _later_round_stop(monkeypatch, 90.0, 40.0)  # round 1 ended early: until 75 % of the budget
    assert 67.0 <= early <= 68.0, early


def test_diagnose_s_later_rounds_run_to_the_budget_s_end_less_the_page_s_reserve(monkeypatch):
    # a fix's pair needs its round 2 to be judged at all: diagnose's rounds may start cases until
    # the budget's end less the page's reserve, not 75 % of it (run's)
    stop = _later_round_stop(monkeypatch, 20.0, 9.0, session.ALL_ROUNDS_SHARE)
    assert 16.5 <= stop <= 17.5, stop  # 20 s less the page's 3 s (was 15 s)
    stop = _later_round_stop(monkeypatch, 90.0, 40.0, session.ALL_ROUNDS_SHARE)
    assert 85.5 <= stop <= 86.5, stop  # 90 s less the page's 4 s (was 67.5 s)


def _second_pass_deadline(budget_s: float, first_device: bool) -> float:
    """Round 1's stop, in seconds after the device's budget started, for the first device of
    the run or another."""
    cpu, gpu = SimpleNamespace(name="CPU:0"), SimpleNamespace(name="GPU:0")
    run = SimpleNamespace(
        request=SimpleNamespace(budget_s=budget_s, repeat=lambda s: True),
        n_rounds=2,
        chosen=[cpu, gpu],
        warms={},
    )
    started = time.time()
    deadline, _ = session._second_pass(run, cpu if first_device else gpu, started, {})
    assert deadline is not None
    return deadline - started


def test_round1_of_the_first_device_leaves_the_page_its_time():
    # the page (analysis, report, plots, history) took 4-5.5 s at load 7-9 after a 30 s budget,
    # outside it: round 1 stops starting cases the round-2 reserve and the page's before the end
    assert _second_pass_deadline(30.0, first_device=True) == pytest.approx(30.0 - 4.5 - 4.0, abs=0.05)
    assert _second_pass_deadline(90.0, first_device=True) == pytest.approx(90.0 - 12.0 - 4.0, abs=0.05)
    # the page comes once, after the first device's later rounds (ABBA): not from every device
    assert _second_pass_deadline(90.0, first_device=False) == pytest.approx(90.0 - 12.0, abs=0.05)
    assert session.page_reserve(20.0) == 3.0  # at most RESERVE_SHARE of a small budget


def test_round2_is_told_each_case_s_round1_time(monkeypatch):
    seen: dict = {}

    def run_devices(*args, **kwargs):
        seen.update(kwargs)
        return [], [], []

    monkeypatch.setattr(session.experiment, "run_devices", run_devices)
    spec = CaseSpec(workload="matmul", framework="tensorflow", device="CPU:0", params={"n": 10})
    first = [
        SimpleNamespace(spec=spec, status="ok", timing=SimpleNamespace(samples_s=[0.001] * 10), metrics={}, wall_s=2.5)
    ]
    run = SimpleNamespace(
        request=SimpleNamespace(
            budget_s=30.0,
            repeat=lambda s: True,
            framework="tensorflow",
            cpu_threads=None,
            case_timeout_s=60.0,
            memory_limit_bytes=None,
            undecided=None,
            rounds_share=session.ROUNDS_SHARE,
        ),
        n_rounds=2,
        progress=SimpleNamespace(on_start=None, on_result=None),
        count=SimpleNamespace(grow=lambda n: None),
        policy=None,
    )
    session._later_rounds(run, SimpleNamespace(name="CPU:0"), first, time.time() - 20.0)
    assert seen["expected_s"] == {spec.key: 2.5}


def _measured(monkeypatch, left_s: float, expected_s: dict[int, float], round_no: int) -> list[int]:
    """Which of three single cases (their indexes) ``child.measure_cases`` measured, not
    skipped, ``left_s`` before its deadline, each case taking no time; ``expected_s`` by index."""
    from whichdevice.measure import child

    specs = [CaseSpec(workload="matmul", framework="tensorflow", device="CPU:0", params={"n": n}) for n in (1, 2, 3)]
    ran: list[str] = []

    def run_one(spec, fw, policy, overhead_s):
        ran.append(spec.key)
        return SimpleNamespace(spec=spec, status="ok", model_dump=lambda mode=None: {})

    monkeypatch.setattr(child, "_run_one", run_one)
    monkeypatch.setattr(child, "_stderr_position", lambda: 0)
    monkeypatch.setattr(child.workloads, "interleave_groups", lambda cases: [[c.key] for c in cases])
    until = time.time() + left_s
    ctx = SimpleNamespace(fw=None, policy=None, overhead_s=0.0, emit=lambda line: None)
    child.measure_cases(
        specs,
        ctx,
        expired=lambda need_s=0.0: time.time() + need_s > until,
        round_no=round_no,
        expected_s={specs[i].key: s for i, s in expected_s.items()},
    )
    return [[s.key for s in specs].index(k) for k in ran]


def test_a_case_or_group_starts_only_if_its_expected_time_fits(monkeypatch):
    # 10 s left: a case expected to take 30 s does not start (it ran 3.5 s past round 2's stop
    # at `--budget 30`), one of 2 s does
    assert _measured(monkeypatch, 10.0, {0: 2.0, 1: 30.0, 2: 2.0}, round_no=1) == [0, 2]  # round 1: skipped, on
    assert _measured(monkeypatch, 10.0, {0: 2.0, 1: 30.0, 2: 2.0}, round_no=2) == [0]  # round 2: it stops there
    assert _measured(monkeypatch, 10.0, {}, round_no=2) == [0, 1, 2]  # no expected times: as before
