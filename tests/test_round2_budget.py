"""A later round's window is the reserve round 1 left, so a small budget is kept too."""

from __future__ import annotations

import time
from types import SimpleNamespace

from whichdevice.core.records import CaseSpec
from whichdevice.measure import session


def _later_round_stop(monkeypatch, budget_s: float, round1_ended_after_s: float) -> float:
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
