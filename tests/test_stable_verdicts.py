"""Verdicts that survive a second run: a fix's claim on a busy machine, where threads contending
for busy cores put a whole process in a slow mode or a fast one.

- the interval of a claim from enough rounds holds without normality (the sign test's interval for
  the median round ratio, significance.median_interval);
- two processes a side whose steps fell in two modes decide nothing (fixes.processes_disagree);
- within the budget, further rounds measure only the pairs still undecided (fixes.undecided,
  session._further_rounds), in the ABBA order;
- the contention is named with the threads each process used and the measured one-thread pair.

Synthetic samples: clean (one mode, a clear change), straddling (an interval across the noise
threshold), bimodal (each process in one of two modes)."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import pytest

from whichdevice.analysis import fixes, significance as sig
from whichdevice.core.records import CaseResult, CaseSpec, Timing
from whichdevice.measure import session


def _round(ms: float, n: int = 10) -> list[float]:
    """One process's steps: tight around ``ms``."""
    return [ms / 1e3 * (1 + 0.002 * (i - (n - 1) / 2)) for i in range(n)]


def _timing(rounds: list[list[float]]) -> Timing:
    return Timing(
        first_call_s=rounds[0][0],
        warmup_s=[],
        samples_s=[x for r in rounds for x in r],
        number_per_sample=1,
        overhead_s=0.0,
        rounds_s=rounds if len(rounds) > 1 else None,
    )


_USER = {"kind": "steady", "sync": "none", "user_batch": 16, "script": "train.py"}


def _case(rounds: list[list[float]], **params: object) -> CaseResult:
    spec = CaseSpec(workload="train", framework="torch", device="CPU:0", params={**_USER, "batch": 16, **params})
    return CaseResult(spec=spec, status="ok", timing=_timing(rounds), wall_s=1.0)


# ------------------------------------------------------------------ the interval without normality


def test_the_median_interval_is_the_sign_test_s_order_statistics():
    # Conover's table: k = 6..8 -> the extremes (coverage 96.9-99.2 %), 9 -> 2nd and 8th (96.1 %),
    # 12 -> 3rd and 10th (96.1 %); fewer than 6 values reach no 95 % interval at all
    assert sig.median_interval(range(5)) is None
    assert sig.median_interval(range(6)) == (0, 5)
    assert sig.median_interval(range(8)) == (0, 7)
    assert sig.median_interval(range(9)) == (1, 7)
    assert sig.median_interval(range(12)) == (2, 9)


def test_a_straddling_claim_from_six_rounds_is_no_longer_a_change():
    # five processes 1.5x, one at 0.9x: the t-interval (normal rounds assumed) read 1.1-2.0x, a
    # gain; the order statistics of six rounds reach down to 0.9x, across the noise threshold
    ratios = [1.5, 1.5, 1.5, 1.5, 1.5, 0.9]
    c = sig.from_round_ratios(ratios)
    assert c.status != "faster"
    assert c.lo == pytest.approx(0.9) and c.hi > 1.5  # never narrower than either interval


def test_a_clean_claim_from_six_rounds_stays_a_change_its_interval_reaching_the_extreme_rounds():
    ratios = [2.0, 2.05, 1.98, 2.02, 2.01, 1.99]
    c = sig.from_round_ratios(ratios)
    logs = [math.log(r) for r in ratios]
    m = sum(logs) / 6
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 5)
    assert c.status == "faster"
    assert c.lo == pytest.approx(min(1.98, math.exp(m - sig.t975(5) * sd / math.sqrt(6))))


def test_a_bimodal_claim_from_eight_rounds_spans_both_modes():
    # the baseline's processes alternate 60 ms and 20 ms, the fix's sit at 8 ms: 7.5x or 2.5x
    a = [_round(60 if i % 2 else 20) for i in range(8)]
    b = [_round(8) for _ in range(8)]
    c = sig.from_rounds(a, b)
    assert c.lo <= 2.5 + 1e-9 and c.hi >= 7.5 - 1e-9
    assert c.status == "faster"  # a gain in either mode, from enough processes to say so


# ------------------------------------------------------------------ no claim from two processes in two modes


def test_two_processes_in_two_modes_decide_nothing_even_when_the_ratio_agrees():
    # each round: the baseline and the fix in the same mode, 10x apart; one round slow (60 ms), the
    # other fast (20 ms). The old rule kept it (the change, 10x, beyond the modes' 3x)
    before, after = _timing([_round(60), _round(20)]), _timing([_round(6), _round(2)])
    claim = sig.from_rounds(before.rounds, after.rounds)
    assert claim.status == "faster"
    told = fixes.processes_disagree(claim, before, after)
    assert told.status == "not_enough" and told.note is not None and told.note.kind == "disagree"
    assert told.note.modes is not None and told.note.modes.high / told.note.modes.low == pytest.approx(3, rel=0.01)


def test_two_rounds_of_one_process_each_keep_a_claim_beyond_their_modes():
    # a suite's measuring child times both sides of a round in one process: the process's mode is
    # both sides', the round's ratio holds it out; a change beyond the modes' gap stands
    before, after = _timing([_round(60), _round(20)]), _timing([_round(6), _round(2)])
    claim = sig.from_rounds(before.rounds, after.rounds)
    assert fixes.processes_disagree(claim, before, after, own_draws=False) == claim


def test_two_processes_in_one_mode_keep_their_claim():
    before, after = _timing([_round(60), _round(61)]), _timing([_round(6), _round(6.1)])
    claim = sig.from_rounds(before.rounds, after.rounds)
    assert fixes.processes_disagree(claim, before, after) == claim


def test_six_processes_in_two_modes_are_judged_by_their_interval():
    before = _timing([_round(60 if i % 2 else 20) for i in range(6)])
    after = _timing([_round(2) for _ in range(6)])
    claim = sig.from_rounds(before.rounds, after.rounds)
    assert fixes.processes_disagree(claim, before, after) == claim
    assert claim.status == "faster"


# ------------------------------------------------------------------ which pairs a further round measures


def test_undecided_names_both_sides_of_a_bimodal_pair():
    base = _case([_round(60), _round(40)])
    batch = _case([_round(6 * 8), _round(4 * 8)], batch=128)  # 10x per sample in each mode, from 2 processes
    off = _case([_round(40), _round(40.2), _round(39.8)], fix="autocast", autocast="off")
    on = _case([_round(20), _round(20.1), _round(19.9)], fix="autocast", autocast="bfloat16")
    default = _case([_round(60), _round(60.3), _round(59.7)], fix="cpu_threads", cpu_threads="default")
    one = _case([_round(30), _round(30.1), _round(29.9)], fix="cpu_threads", cpu_threads=1)
    keys = fixes.undecided([base, batch, off, on, default, one])
    # the others: 2x from three processes in one mode each (the record's between-process spread,
    # the upper quartile over its cases, is theirs: the bimodal pair is a third of the cases)
    assert keys == {base.spec.key, batch.spec.key}


def test_undecided_leaves_a_clean_pair_and_a_no_change_inside_the_band():
    base = _case([_round(60), _round(60.5), _round(59.5)])
    batch = _case([_round(30 * 8), _round(30.2 * 8), _round(29.8 * 8)], batch=128)
    off = _case([_round(40), _round(40.1), _round(39.9)], fix="autocast", autocast="off")
    on = _case([_round(40.1), _round(40), _round(39.9)], fix="autocast", autocast="bfloat16")
    assert fixes.undecided([base, batch, off, on]) == set()


def test_undecided_names_a_straddling_pair():
    off = _case([_round(40), _round(40), _round(40)], fix="autocast", autocast="off")
    on = _case([_round(40), _round(36), _round(43)], fix="autocast", autocast="bfloat16")
    assert fixes.undecided([off, on]) == {off.spec.key, on.spec.key}


# ------------------------------------------------------------------ further rounds in the session


def _further(monkeypatch, undecided, *, budget_s: float = 60.0, n: int = 3, round_s: float | None = None):
    """``_later_rounds`` of ``n`` cases (each 5 samples, ok) with ``undecided``; which specs each
    child after round 1 measured, in order, and the merged results. ``round_s``: each child takes
    that long on a clock of the test's own (its start and the deadline it was given are kept in
    ``_further.calls``)."""
    children: list[list[str]] = []
    clock = [time.time()]
    _further.calls = []  # type: ignore[attr-defined]
    if round_s is not None:
        monkeypatch.setattr(session.time, "time", lambda: clock[0])

    def run_devices(framework, devices, cases_for, **kwargs):
        specs = cases_for(devices[0])
        children.append([s.params["case"] for s in specs])
        _further.calls.append((clock[0], kwargs.get("deadline")))  # type: ignore[attr-defined]
        clock[0] += round_s or 0.0
        out = [CaseResult(spec=s, status="ok", timing=_timing([_round(10)]), wall_s=0.01, metrics={}) for s in specs]
        return [], out, []

    monkeypatch.setattr(session.experiment, "run_devices", run_devices)
    specs = [
        CaseSpec(workload="train", framework="torch", device="CPU:0", params={"kind": "steady", "case": i})
        for i in range(n)
    ]
    first = [CaseResult(spec=s, status="ok", timing=_timing([_round(10)]), wall_s=0.01) for s in specs]
    run = SimpleNamespace(
        request=SimpleNamespace(
            budget_s=budget_s,
            repeat=lambda s: True,
            framework="torch",
            cpu_threads=None,
            case_timeout_s=60.0,
            memory_limit_bytes=None,
            undecided=undecided,
            rounds_share=session.ROUNDS_SHARE,
        ),
        n_rounds=2,
        progress=SimpleNamespace(on_start=None, on_result=None),
        count=SimpleNamespace(grow=lambda n: None),
        policy=None,
        sessions=[],
    )
    merged, notes = session._later_rounds(run, SimpleNamespace(name="CPU:0"), first, clock[0])
    return children, merged, notes


def test_no_further_round_starts_that_the_round_before_shows_would_end_past_the_stop(monkeypatch):
    # each child takes 35 s (a script's rounds: its set-up and every turn in one process) where the
    # cases' own walls read 0.01 s: priced by those, each run at load 8 ended on a round that
    # measured "0 of 7" past the stop
    children, _, notes = _further(monkeypatch, lambda rs: {r.spec.key for r in rs}, budget_s=200.0, round_s=35.0)
    further = _further.calls[2:]  # type: ignore[attr-defined]  # from round 4: a round before it to go by
    assert further and all(start + 35.0 <= deadline for start, deadline in further)
    assert any("did not start (time budget)" in x for x in notes)
    assert len(children) < session.MAX_ROUNDS - 1


def test_further_rounds_go_to_the_undecided_pairs_only_in_abba_order(monkeypatch):
    seen: list[int] = []

    def undecided(results):
        seen.append(len(results[0].timing.rounds))
        k = len(results[0].timing.rounds)
        if k >= 4:
            return set()
        return {r.spec.key for r in results if r.spec.params["case"] in (0, 2)}

    children, merged, notes = _further(monkeypatch, undecided)
    # round 2: every case, reversed; round 3: cases 0 and 2 as planned; round 4: reversed
    assert children == [[2, 1, 0], [0, 2], [2, 0]]
    assert [len(r.timing.rounds) for r in merged] == [4, 2, 4]
    assert sum("round 3 measured 2 of 2 cases again" in x for x in notes) == 1


def test_further_rounds_stop_at_the_most_rounds(monkeypatch):
    children, merged, _ = _further(monkeypatch, lambda rs: {r.spec.key for r in rs})
    assert len(children) == session.MAX_ROUNDS - 1
    assert all(len(r.timing.rounds) == session.MAX_ROUNDS for r in merged)


def test_no_further_round_after_the_rounds_stop(monkeypatch):
    # a budget whose rounds' window has passed: round 2 alone (its reserve), no further round
    monkeypatch.setattr(session, "round2_reserve", lambda budget: 0.0)
    children, merged, _ = _further(monkeypatch, lambda rs: {r.spec.key for r in rs}, budget_s=1e-6)
    assert len(children) == 1


def test_a_case_missing_a_round_is_not_measured_again(monkeypatch):
    # case 1 was undecided but left out of round 3: round 4 would pair its 3rd round with the
    # others' 4th, so it is not taken back
    calls = iter([{0, 2}, {0, 1, 2}, set()])

    def undecided(results):
        want = next(calls)
        return {r.spec.key for r in results if r.spec.params["case"] in want}

    children, merged, _ = _further(monkeypatch, undecided)
    assert children == [[2, 1, 0], [0, 2], [2, 0]]


def test_rounds_in_a_fresh_child_for_an_undecided_case_end_to_end():
    """numpy's matmul in real children: the case a further round could decide gets a third round
    (a third child), the other keeps its two; the record's notes say so."""
    from whichdevice.workloads import matmul

    def undecided(results):
        return {r.spec.key for r in results if r.spec.params["n"] == 8 and len(r.timing.rounds) < 3}

    req = session.Request(
        "matmul",
        "numpy",
        lambda found, d: matmul.build_cases("numpy", d.name, [8, 64], ["steady"], "float32"),
        {},
        ["test"],
        min_time_s=0.01,
        rounds=2,
        budget_s=60.0,
        undecided=undecided,
    )
    rec = session.measure(req)
    small, large = rec.results
    assert len(small.timing.rounds_s) == 3 and len(large.timing.rounds_s) == 2
    assert any("round 3 measured 1 of 1 cases again" in x for x in rec.notes)


# ------------------------------------------------------------------ steps sized by the step


def _clock_steps(monkeypatch, durations) -> list[float]:
    """The timed steps a ``StepClock`` (2 warm-up, 10 steps asked) hands over when the loop's
    steps take ``durations`` (seconds, one after another, on a fake clock)."""
    from whichdevice.frameworks.common import capturekit
    from whichdevice.frameworks.contracts import CaptureDone, CaptureSpec

    t = [0.0]
    monkeypatch.setattr(capturekit, "now", lambda: t[0])
    got: list[dict] = []
    # no deadline: T0 is this process's start, and a long test run is past any a child would have
    clock = capturekit.StepClock(CaptureSpec(warmup_steps=2, steps=10, deadline_s=1e9), got.append, "loop")
    with pytest.raises(CaptureDone):
        for d in durations:
            clock.begin()
            t[0] += d
            clock.end()
    (res,) = got
    return res["step_s"]


def test_a_tiny_step_with_hiccups_is_timed_until_its_median_settles(monkeypatch):
    # 0.5 ms steps, every 4th held up 10x by the busy machine: ten steps leave the median's
    # interval reaching the hiccups; the clock goes on until it settles, a fraction of a second
    steps = _clock_steps(monkeypatch, [5e-3 if i % 4 == 3 else 5e-4 for i in range(2000)])
    assert len(steps) > 10
    assert sorted(steps)[len(steps) // 2] == pytest.approx(5e-4)
    assert sum(steps) < 0.25 + 5e-3


def test_a_steady_tiny_step_and_a_slow_step_stop_at_the_steps_asked(monkeypatch):
    assert len(_clock_steps(monkeypatch, [5e-4] * 100)) == 10
    slow = [0.06 if i % 2 else 0.02 for i in range(100)]  # two modes, but 10 steps already past 0.25 s
    assert len(_clock_steps(monkeypatch, slow)) == 10


def test_a_tiny_step_never_settling_stops_at_its_bound(monkeypatch):
    import random

    rng = random.Random(1)
    steps = _clock_steps(monkeypatch, [rng.choice((1e-4, 1e-3)) for _ in range(5000)])
    from whichdevice.frameworks.common import capturekit

    assert len(steps) <= capturekit.SETTLE_FACTOR * 10


@pytest.mark.parametrize(("window_s", "import_s"), [(0.5, 0.0), (3.0, 2.0)])
def test_a_further_round_whose_pair_cannot_end_before_the_stop_does_not_start(monkeypatch, window_s, import_s):
    # round 2 ends with ``window_s`` of the rounds' window left; each case took 1 s in round 1 and
    # round 1's child took ``import_s`` to import its framework: a fresh child would skip both
    # sides of the pair, so none is started and the notes say why
    monkeypatch.setattr(session, "ROUNDS_SHARE", 0.0)
    monkeypatch.setattr(session, "round2_reserve", lambda budget: window_s)
    children: list[int] = []

    def run_devices(framework, devices, cases_for, **kwargs):
        specs = cases_for(devices[0])
        children.append(len(specs))
        return [], [CaseResult(spec=s, status="ok", timing=_timing([_round(10)]), wall_s=1.0) for s in specs], []

    monkeypatch.setattr(session.experiment, "run_devices", run_devices)
    specs = [CaseSpec(workload="train", framework="torch", device="CPU:0", params={"case": i}) for i in range(2)]
    first = [CaseResult(spec=s, status="ok", timing=_timing([_round(10)]), wall_s=1.0) for s in specs]
    run = SimpleNamespace(
        request=SimpleNamespace(
            budget_s=60.0,
            repeat=lambda s: True,
            framework="torch",
            cpu_threads=None,
            case_timeout_s=60.0,
            memory_limit_bytes=None,
            undecided=lambda rs: {r.spec.key for r in rs},
            rounds_share=0.0,
        ),
        n_rounds=2,
        progress=SimpleNamespace(on_start=None, on_result=None),
        count=SimpleNamespace(grow=lambda n: None),
        policy=None,
        sessions=[SimpleNamespace(device=SimpleNamespace(name="CPU:0"), import_s=import_s)],
    )
    _, notes = session._later_rounds(run, SimpleNamespace(name="CPU:0"), first, time.time())
    assert children == [2]  # round 2 only
    assert any("round 3 of the undecided pairs did not start (time budget)" in n for n in notes)


# ------------------------------------------------------------------ contention seen: rounds up to the rank interval


def test_a_one_thread_case_three_times_faster_shows_contention_and_keeps_every_few_round_claim_open():
    # both rounds in the slow mode: the batch pair reads a clean 10x and would be decided from 2
    # rounds; one thread runs the step 50x faster in the same rounds, the sign of threads waiting
    # for busy cores, whose mode the next run may not share
    base = _case([_round(40), _round(40.2)], fix="cpu_threads", cpu_threads="default")
    batch = _case([_round(4), _round(4.02)], fix="cpu_threads", cpu_threads="default", batch=128)
    one = _case([_round(0.8), _round(0.81)], fix="cpu_threads", cpu_threads=1)
    assert fixes.contention_seen([base, batch, one])
    assert fixes.undecided([base, batch, one]) == {base.spec.key, batch.spec.key, one.spec.key}
    # without the one-thread case nothing shows the contention: the clean pair is decided
    assert not fixes.contention_seen([base, batch])
    assert fixes.undecided([base, batch]) == set()


def test_contention_seen_needs_a_gap_no_arithmetic_explains():
    default = _case([_round(2), _round(2.01)], fix="cpu_threads", cpu_threads="default")
    one = _case([_round(3.9), _round(3.91)], fix="cpu_threads", cpu_threads=1)  # two threads 2x faster
    slower_one = _case([_round(5), _round(5.02)], fix="cpu_threads", cpu_threads=1)
    assert not fixes.contention_seen([default, one])
    assert not fixes.contention_seen([default, slower_one])
    assert not fixes.contention_seen([_case([_round(60), _round(40)])])  # modes 1.5x apart
    assert fixes.contention_seen([_case([_round(60), _round(6)])])  # modes 10x apart


def test_under_contention_a_pair_from_six_rounds_is_decided():
    # six rounds, three in each mode: the distribution-free interval holds across them
    base = _case([_round(40 if i % 2 else 0.4) for i in range(6)], fix="cpu_threads", cpu_threads="default")
    one = _case([_round(0.3) for _ in range(6)], fix="cpu_threads", cpu_threads=1)
    assert fixes.contention_seen([base, one])
    assert fixes.undecided([base, one]) == set()


def test_a_real_run_decided_from_two_slow_rounds_now_goes_on():
    # tests/data/README.md: diagnose torch_sliced_batches.py --budget 90 at load 10 on 2 cores, both
    # rounds of every 2-thread case in the slow mode (40-48 ms a step, one thread 0.5 ms); the run
    # stopped after round 2 with 31 s of its budget left and claimed 94x, 16x and 1.6x slower, where
    # the run before it had met the fast mode in 2 of 5 rounds and claimed nothing
    from conftest import DATA

    from whichdevice.core.records import load_run

    rec = load_run(DATA / "diagnose_script_torch_sliced_batches_budget90_cpu_2core_load10.json")
    ok = [r for r in rec.results if r.status == "ok"]
    assert max(len(r.timing.rounds) for r in ok if r.timing is not None) == 2
    assert fixes.contention_seen(ok)
    assert fixes.undecided(list(rec.results)) == {r.spec.key for r in ok}
