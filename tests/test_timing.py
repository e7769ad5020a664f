"""The timing core with an injected fake clock: no real time, no device."""

import pytest

from whichdevice.core.telemetry import GPU_NOT_REQUESTED, Telemetry
from whichdevice.core.timing import TimingPolicy, measure, measure_overhead


class FakeDevice:
    """A clock and a 'device' whose calls cost scripted times; sync costs `sync_s`.

    Calls only *queue* work (like a GPU): their cost lands on the clock at the next sync,
    so timings that forget to synchronize would read ~0 and the test would catch it.
    """

    def __init__(self, call_costs, sync_s=0.0, clock_s=0.0):
        self.now = 0.0
        self.queued = 0.0
        self.costs = list(call_costs)
        self.calls = 0
        self.syncs = 0
        self.sync_s = sync_s
        self.clock_s = clock_s

    def clock(self):
        self.now += self.clock_s
        return self.now

    def call(self):
        cost = self.costs[min(self.calls, len(self.costs) - 1)]
        self.calls += 1
        self.queued += cost
        return self.calls

    def sync(self, result):
        self.syncs += 1
        self.now += self.queued + self.sync_s
        self.queued = 0.0


def test_overhead_is_one_clock_read_plus_sync():
    dev = FakeDevice([0.0], sync_s=2e-5, clock_s=1e-6)
    assert measure_overhead(dev.clock, dev.sync) == pytest.approx(2e-5 + 1e-6)


def test_warmup_is_kept_apart_from_steady_samples():
    # First call 0.5 s (tracing), the next ones 1 ms.
    dev = FakeDevice([0.5, 0.001])
    raw = measure(
        dev.call, sync=dev.sync, clock=dev.clock, overhead_s=0.0, policy=TimingPolicy(min_time_s=0.2, warmup_calls=2)
    )
    assert raw.first_call_s == pytest.approx(0.5)
    # The first call alone exceeds min_time_s, so no further warm-up calls are made.
    assert raw.warmup_s == [pytest.approx(0.5)]
    assert all(s == pytest.approx(0.001) for s in raw.samples_s)


def test_extra_warmup_calls_while_cheap():
    dev = FakeDevice([0.01, 0.002, 0.001])
    raw = measure(
        dev.call, sync=dev.sync, clock=dev.clock, overhead_s=0.0, policy=TimingPolicy(min_time_s=0.2, warmup_calls=2)
    )
    assert raw.warmup_s == pytest.approx((0.01, 0.002, 0.001))
    assert max(raw.samples_s) == pytest.approx(0.001)


def test_block_sizing_targets_min_time_over_target_blocks():
    dev = FakeDevice([1e-4])
    policy = TimingPolicy(min_time_s=0.2, target_blocks=10)
    raw = measure(dev.call, sync=dev.sync, clock=dev.clock, overhead_s=0.0, policy=policy)
    # 0.2 s / 10 blocks / 100 us per call = 200 calls per block.
    assert raw.number_per_sample == 200
    assert len(raw.samples_s) == 10
    assert sum(raw.samples_s) * raw.number_per_sample >= 0.2 - 1e-9


def test_block_is_long_enough_to_hide_the_timer_cost():
    # A 30 us sync: blocks must last >= 1000 x 30 us = 30 ms (torch's 0.1 % rule).
    dev = FakeDevice([1e-5])
    raw = measure(
        dev.call, sync=dev.sync, clock=dev.clock, overhead_s=3e-5, policy=TimingPolicy(min_time_s=0.1, target_blocks=10)
    )
    assert raw.number_per_sample * 1e-5 >= 0.03 - 1e-12


def test_samples_are_synchronized_block_means():
    dev = FakeDevice([0.002], sync_s=0.0)
    raw = measure(dev.call, sync=dev.sync, clock=dev.clock, overhead_s=0.0)
    # If the clock were read before syncing, queued work would be missed and samples ~0.
    assert raw.samples_s[0] == pytest.approx(0.002)


def test_slow_calls_still_give_min_samples():
    dev = FakeDevice([5.0])
    raw = measure(
        dev.call,
        sync=dev.sync,
        clock=dev.clock,
        overhead_s=0.0,
        policy=TimingPolicy(min_time_s=0.2, min_samples=3, target_rel_halfwidth=None),
    )
    assert raw.number_per_sample == 1
    assert len(raw.samples_s) == 3
    assert raw.warmup_s == [5.0]


def test_max_samples_caps_the_run():
    dev = FakeDevice([1e-3])
    raw = measure(
        dev.call,
        sync=dev.sync,
        clock=dev.clock,
        overhead_s=0.0,
        policy=TimingPolicy(min_time_s=100.0, max_samples=7, max_time_s=1e9),
    )
    assert len(raw.samples_s) == 7


def test_policy_rejects_nonsense():
    with pytest.raises(ValueError):
        TimingPolicy(min_time_s=0)
    with pytest.raises(ValueError):
        TimingPolicy(min_samples=5, max_samples=2)


def test_telemetry_window_covers_the_steady_blocks_only():
    dev = FakeDevice([0.05, 0.001])
    events = []
    window = Telemetry(
        period_s=0.05,
        t_s=[],
        cpu_percent_per_core=[],
        process_cpu_s=0.0,
        wall_s=0.0,
        gpu_index=None,
        gpu_util_percent=None,
        gpu_mem_used_bytes=None,
        gpu_sm_clock_mhz=None,
        gpu_unavailable=GPU_NOT_REQUESTED,
        sampler_cost_s=0.0,
    )

    class FakeSampler:
        def start(self):
            events.append(("start", dev.calls))

        def stop(self):
            events.append(("stop", dev.calls))
            return window

    raw = measure(
        dev.call,
        sync=dev.sync,
        clock=dev.clock,
        overhead_s=0.0,
        policy=TimingPolicy(min_time_s=0.2, warmup_calls=2, window=FakeSampler),
    )
    warmup_calls = len(raw.warmup_s)
    assert events[0] == ("start", warmup_calls)  # after warm-up, before the first block
    assert events[1] == ("stop", dev.calls)  # after the last block
    assert raw.telemetry is window


def test_precision_target_stops_a_tight_point_at_min_samples():
    dev = FakeDevice([1e-3])
    raw = measure(
        dev.call, sync=dev.sync, clock=dev.clock, overhead_s=0.0, policy=TimingPolicy(min_time_s=0.01, target_blocks=5)
    )
    assert len(raw.samples_s) == 5 and raw.stop_reason == "precision"


def test_precision_target_samples_a_noisy_point_until_its_median_is_precise():
    # One warm-up call, then calls alternating 1 ms and 2 ms, one call per block: the median's
    # CI spans both values (half-width ~33 %) until enough samples pin it down.
    costs = [1e-3] + [1e-3 if i % 3 else 2e-3 for i in range(400)]
    dev = FakeDevice(costs)
    policy = TimingPolicy(min_time_s=1e-3, warmup_calls=0, target_blocks=1, max_time_s=1e9, max_samples=200)
    raw = measure(dev.call, sync=dev.sync, clock=dev.clock, overhead_s=0.0, policy=policy)
    assert raw.stop_reason == "precision"
    assert len(raw.samples_s) > 5


def test_a_point_that_does_not_converge_says_which_cap_stopped_it():
    costs = [1e-3] + [1e-3 if i % 2 else 3e-3 for i in range(400)]  # two values, half each: never precise
    dev = FakeDevice(costs)
    policy = TimingPolicy(min_time_s=1e-3, warmup_calls=0, target_blocks=1, max_time_s=0.05, max_samples=200)
    raw = measure(dev.call, sync=dev.sync, clock=dev.clock, overhead_s=0.0, policy=policy)
    assert raw.stop_reason == "time cap"
    dev = FakeDevice(costs)
    capped = TimingPolicy(min_time_s=1e-3, warmup_calls=0, target_blocks=1, max_time_s=1e9, max_samples=9)
    raw = measure(dev.call, sync=dev.sync, clock=dev.clock, overhead_s=0.0, policy=capped)
    assert raw.stop_reason == "sample cap" and len(raw.samples_s) == 9
    with pytest.raises(ValueError):
        TimingPolicy(target_rel_halfwidth=0)


class Drifting:
    """A machine that slows down 1 % at every sync (another process ramping up): A costs 1 ms,
    B 2 ms at the start. Calls queue work; the clock moves at the next sync."""

    def __init__(self):
        self.now = 0.0
        self.queued = 0.0
        self.slow = 1.0

    def clock(self):
        return self.now

    def sync(self, _):
        self.now += self.queued
        self.queued = 0.0
        self.slow *= 1.01

    def a(self):
        self.queued += 1e-3 * self.slow

    def b(self):
        self.queued += 2e-3 * self.slow


def measure_interleaved(fns, *, sync, clock, overhead_s, policy):
    """Each variant warmed up apart, then their blocks timed in turns, as workloads/train.py does."""
    from whichdevice.core.timing import interleave_blocks, warm_up

    warms = [warm_up(fn, sync=sync, clock=clock, policy=policy, overhead_s=overhead_s) for fn in fns]
    return interleave_blocks(warms, sync=sync, clock=clock, policy=policy, overhead_s=overhead_s)


def test_interleaved_ab_sees_drift_on_both_sides_and_sequential_does_not():
    # The same pair on the same drifting machine: one after the other, B carries the drift A
    # did not see and A/B reads far below the true 0.5; interleaved, it stays at 0.5.
    from whichdevice.core import stats

    policy = TimingPolicy(min_time_s=0.01, target_rel_halfwidth=None, max_samples=50)
    m = Drifting()
    ta = measure(m.a, sync=m.sync, clock=m.clock, overhead_s=0.0, policy=policy)
    tb = measure(m.b, sync=m.sync, clock=m.clock, overhead_s=0.0, policy=policy)
    sequential = stats.median(ta.samples_s) / stats.median(tb.samples_s)
    assert sequential < 0.45  # biased: B ran later, on a slower machine

    m = Drifting()
    ia, ib = measure_interleaved([m.a, m.b], sync=m.sync, clock=m.clock, overhead_s=0.0, policy=policy)
    interleaved = stats.median(ia.samples_s) / stats.median(ib.samples_s)
    assert 0.48 < interleaved < 0.52
    # One ordinary result each: the blocks pooled, no process rounds (rounds_s is for children).
    assert ia.rounds_s is None and ib.rounds_s is None
    assert len(ia.samples_s) >= 5 and ia.stop_reason == "min time"


def test_interleaving_order_is_shuffled_per_round_and_seeded():
    from whichdevice.core.timing import Slotted, interleave

    def orders(seed):
        seen = []
        variants = [Slotted(lambda i=i: [1.0], lambda s, t: "precision" if len(s) >= 6 else None) for i in range(3)]
        interleave(variants, clock=lambda: 0.0, cap_s=1e9, seed=seed, before=seen.append)
        return [tuple(seen[k : k + 3]) for k in range(0, len(seen), 3)]

    first = orders(0)
    assert len(first) == 6 and all(sorted(r) == [0, 1, 2] for r in first)  # every variant once a round
    assert len(set(first)) > 1  # not always the same order
    assert orders(0) == first  # the same orders on every run


def test_each_variant_stops_by_its_own_precision_and_the_group_ends_when_all_did():
    # A is tight (precise at 5 samples); B alternates 1 and 3 ms and never converges: A keeps
    # taking its turns (drift after its 5th block must hit it too) until B's time cap.
    class Two:
        def __init__(self):
            self.now, self.queued, self.n_b = 0.0, 0.0, 0

        def clock(self):
            return self.now

        def sync(self, _):
            self.now += self.queued
            self.queued = 0.0

        def a(self):
            self.queued += 1e-3

        def b(self):
            self.n_b += 1
            self.queued += 1e-3 if self.n_b % 2 else 3e-3

    d = Two()
    policy = TimingPolicy(min_time_s=1e-3, warmup_calls=0, target_blocks=1, max_time_s=0.05, max_samples=200)
    ta, tb = measure_interleaved([d.a, d.b], sync=d.sync, clock=d.clock, overhead_s=0.0, policy=policy)
    assert ta.stop_reason == "precision" and tb.stop_reason == "time cap"
    assert len(ta.samples_s) == len(tb.samples_s) > 5
    # and the group ends when both are done: both precise at 5 blocks -> 5 rounds
    d = Two()
    ta, ta2 = measure_interleaved([d.a, d.a], sync=d.sync, clock=d.clock, overhead_s=0.0, policy=policy)
    assert len(ta.samples_s) == len(ta2.samples_s) == 5


def test_the_group_cap_stops_what_is_left_and_a_failing_variant_does_not_stop_the_others():
    from whichdevice.core.timing import Slotted, interleave

    now = [0.0]

    def slot():
        now[0] += 1.0
        return [1.0]

    def broken():
        raise RuntimeError("OOM at batch 8192")

    never = lambda s, t: None  # noqa: E731
    out = interleave(
        [Slotted(slot, never), Slotted(broken, never), Slotted(slot, never)], clock=lambda: now[0], cap_s=10.0
    )
    assert isinstance(out[1].error, RuntimeError) and out[1].samples_s == []
    assert out[0].stop_reason == out[2].stop_reason == "time cap"
    assert len(out[0].samples_s) == len(out[2].samples_s) == out[0].rounds == 5  # 10 s of 1 s slots, two at a time


def _window(n):
    return Telemetry(
        period_s=0.05,
        t_s=[float(n)],
        cpu_percent_per_core=[[float(n)]],
        process_cpu_s=0.0,
        wall_s=0.0,
        gpu_index=None,
        gpu_util_percent=None,
        gpu_mem_used_bytes=None,
        gpu_sm_clock_mhz=None,
        gpu_unavailable=GPU_NOT_REQUESTED,
        sampler_cost_s=0.0,
    )


def test_interleaved_variants_get_their_own_telemetry_window_after_warm_up():
    from whichdevice.core.timing import interleave_blocks, warm_up

    dev = FakeDevice([1e-3])
    windows = []

    class FakeSampler:
        def start(self):
            windows.append(["start", dev.now])

        def stop(self):
            windows[-1].append(dev.now)
            return _window(len(windows))  # the variant's own window

    policy = TimingPolicy(min_time_s=0.01, window=FakeSampler, telemetry_period_s=0.05)
    warms = [warm_up(dev.call, sync=dev.sync, clock=dev.clock, policy=policy, overhead_s=0.0) for _ in range(2)]
    assert len(windows) == 2 and all(end - start >= 0.15 - 1e-9 for _, start, end in windows)
    assert warms[0].telemetry != warms[1].telemetry
    timings = interleave_blocks(warms, sync=dev.sync, clock=dev.clock, policy=policy, overhead_s=0.0)
    assert [t.telemetry for t in timings] == [w.telemetry for w in warms]  # each its own, not the group's
    assert len(windows) == 2  # no sampler over the interleaved phase


def test_abba_turns_reverse_every_other_pass_from_a_seeded_shuffle():
    from whichdevice.core.timing import abba_turns

    turns = abba_turns(4)
    first, second = turns[:4], turns[4:]
    assert sorted(first) == [0, 1, 2, 3] and second == first[::-1]
    assert abba_turns(4) == turns  # seeded: the same order on every run
    assert abba_turns(3, passes=3)[6:] == abba_turns(3)[:3]


def test_take_turns_runs_the_order_and_a_failing_variant_leaves_the_others_going():
    from whichdevice.core.timing import take_turns

    seen: list[tuple[int, int]] = []
    before: list[int] = []

    def turn(k: int, i: int) -> list[float]:
        seen.append((k, i))
        if i == 1:
            raise RuntimeError("variant 1 broke")
        return [float(10 * i + k)]

    samples, errors = take_turns(3, [0, 1, 2, 2, 1, 0], turn, before.append)
    assert seen == [(0, 0), (1, 1), (2, 2), (3, 2), (5, 0)]  # variant 1 takes no turn after it failed
    assert before == [0, 1, 2, 2, 0]
    assert samples == [[0.0, 5.0], [], [22.0, 23.0]]
    assert errors[0] is None and errors[2] is None and str(errors[1]) == "variant 1 broke"
