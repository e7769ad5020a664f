"""The timing core: warm-up kept apart, device synchronized, blocked auto-range.

Method (after torch.utils.benchmark's ``blocked_autorange``, see ANCHORS.md):

1. **Overhead.** Time ``clock(); sync()`` with nothing queued, ``_OVERHEAD_REPS`` times; the
   median is the harness's own cost per block. It is recorded, so a reader can see how much
   of a tiny sample is the harness.
2. **Warm-up.** Call the workload once, synchronize, read the clock: ``first_call_s``
   includes one-time costs (tracing, kernel selection, allocation, autotuning) and is a
   *result*, reported apart, never mixed into the steady samples. Then up to
   ``warmup_calls`` more calls, each synchronized and timed, while the warm-up stays
   under ``min_time_s`` (a 13 s matmul is not warmed up three times).
3. **Blocks.** From the last warm-up call, choose ``number`` calls per block so one block
   lasts about ``min_time_s / target_blocks`` and at least ``1 / _MAX_OVERHEAD_FRACTION``
   times the harness overhead (0.1 %, as torch does). Each block: synchronize, read the
   clock, run ``number`` calls, synchronize, read the clock. One sample = block time /
   ``number``. Synchronizing once per block (not per call) measures throughput of queued
   work, which is what a training loop sees; the per-call sync cost is measured apart.
4. **Telemetry.** When the policy has a ``window`` factory (the child sets one: a
   utilization sampler, telemetry.py), it runs during the blocks only.
5. **Stop** once the blocks add up to ``min_time_s``, there are ``min_samples`` (5) of them
   *and* the median is precise: its distribution-free 95 % CI (order statistics,
   ``stats.median_ci``) has a half-width ≤ ``target_rel_halfwidth`` (5 %, MATLAB runperf's
   target) of the median — precision-targeted sampling. Otherwise go on until
   ``max_samples`` or ``max_time_s`` (with at least ``min_samples``): the point then did not
   converge and ``Timing.stop_reason`` says which cap stopped it ('time cap', 'sample cap';
   'precision' when it converged; 'min time' when no target is set), so the report can say
   so next to the busy-core telemetry of the same window.

Trade-off: long blocks hide per-call jitter (the IQR is of block means, not single calls)
but keep the timer's cost negligible; for kernels shorter than the clock's resolution this
is the only honest option. The clock and the sync function are injected, so the logic is
tested with fake clocks (tests/test_timing.py) and runs unchanged on any framework.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from whichdevice.core import stats
from whichdevice.core.records import Timing
from whichdevice.core.telemetry import Telemetry

Clock = Callable[[], float]
Sync = Callable[[Any], None]

_OVERHEAD_REPS = 25
# torch.utils.benchmark sizes blocks so the timer costs <= 0.1 % of a block.
_MAX_OVERHEAD_FRACTION = 1e-3
# The precision stop's confidence: 95 % but for 5 samples, whose order-statistic interval is
# their range with 93.75 % coverage (a 95 % one needs 6); so 5 tight samples can stop.
_STOP_CONFIDENCE = 0.93


@dataclass(frozen=True)
class TimingPolicy:
    """How long and how often to measure one point."""

    min_time_s: float = 0.2
    warmup_calls: int = 2
    # No claim rests on fewer than 5 samples (analysis/significance.MIN_SAMPLES).
    min_samples: int = 5
    max_samples: int = 50
    target_blocks: int = 10
    max_time_s: float = 30.0
    # Sample until the median's 95 % CI half-width is within this share of it (None: off).
    target_rel_halfwidth: float | None = 0.05
    # Utilization sampling period beside the steady window (telemetry.py); None: off.
    telemetry_period_s: float | None = 0.05
    # Makes the sampler for one window (set inside the child, where the device is known).
    # It may take a period (seconds) for a window sampled coarser than telemetry_period_s.
    window: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.min_time_s > 0:
            raise ValueError(f"min_time_s must be > 0, got {self.min_time_s}")
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise ValueError("need 1 <= min_samples <= max_samples")
        if self.warmup_calls < 0 or self.target_blocks < 1:
            raise ValueError("warmup_calls must be >= 0 and target_blocks >= 1")
        if self.target_rel_halfwidth is not None and not self.target_rel_halfwidth > 0:
            raise ValueError(f"target_rel_halfwidth must be > 0 or None, got {self.target_rel_halfwidth}")


# The timing core returns the record type itself (records.Timing: every number kept,
# statistics derived). ``RawTiming`` is the old name of the same type, kept only while
# workloads/train.py still imports it; new code names ``Timing``.
RawTiming = Timing


def measure_overhead(clock: Clock, sync: Sync, reps: int = _OVERHEAD_REPS) -> float:
    """Median cost of reading the clock around a sync that has nothing to wait for."""
    costs = []
    for _ in range(reps):
        t0 = clock()
        sync(None)
        costs.append(clock() - t0)
    return stats.median(costs)


def _warm_up(
    fn: Callable[[], Any], sync: Sync, clock: Clock, policy: TimingPolicy, overhead_s: float
) -> tuple[list[float], int]:
    """Warm-up calls (the first one kept apart as a result) and the calls per block (module doc, 2-3)."""
    warmup: list[float] = []
    t0 = clock()
    sync(fn())
    warmup.append(clock() - t0)
    while len(warmup) <= policy.warmup_calls and sum(warmup) < policy.min_time_s:
        t0 = clock()
        sync(fn())
        warmup.append(clock() - t0)
    per_call_s = max(warmup[-1], 1e-9)
    block_target_s = max(policy.min_time_s / policy.target_blocks, overhead_s / _MAX_OVERHEAD_FRACTION)
    # ceil: a block never falls short of its target (1e-9 absorbs float rounding).
    return warmup, max(1, math.ceil(block_target_s / per_call_s - 1e-9))


def _block(fn: Callable[[], Any], number: int, sync: Sync, clock: Clock) -> float:
    """One synchronized block of ``number`` calls: its seconds.

    Every call's result but the last is dropped at once, as a loop that discards it does
    (``timeit``, torch.utils.benchmark). Kept until the next call returned (``result = fn()``),
    two outputs were alive at each call and the allocator alternated two buffers: torch's CPU
    matmul at n = 512 (a 1 MiB output) was 2–15 % slower than torch.utils.benchmark in 4 of 7
    interleaved processes, against ≤ 5 % in 7 of 7 with the result dropped
    (benchmarks/performance.md). The last result is what ``sync`` waits for: a
    device runs its queue in order, so it is done when the last call is."""
    sync(None)
    t0 = clock()
    for _ in range(number - 1):
        fn()
    result = fn()
    sync(result)
    return clock() - t0


# Public name of one synchronized block, for callers outside this module that time their own
# rounds (the audit's interleaved re-run: the same ground as every measurement).
block = _block


def stop_reason(samples: list[float], total_s: float, policy: TimingPolicy) -> str | None:
    """Why a point's sampling stops now (module doc, 5), or None to go on: 'precision' (or
    'min time' without a target), 'time cap', 'sample cap'. The one rule of :func:`measure`
    and of every variant of :func:`interleave_blocks`."""
    enough = total_s >= policy.min_time_s * (1 - 1e-9) and len(samples) >= policy.min_samples
    target = policy.target_rel_halfwidth
    if enough and (target is None or stats.median_rel_halfwidth(samples, _STOP_CONFIDENCE) <= target):
        return "precision" if target is not None else "min time"
    if total_s >= policy.max_time_s and len(samples) >= policy.min_samples:
        return "time cap"
    if len(samples) >= policy.max_samples:
        return "sample cap"
    return None


def measure(
    fn: Callable[[], Any],
    *,
    sync: Sync,
    clock: Clock = time.perf_counter,
    policy: TimingPolicy = TimingPolicy(),
    overhead_s: float | None = None,
) -> Timing:
    """Time ``fn`` on one device: warm-up apart, then synchronized blocks (see module doc).

    ``sync(result)`` must block until the device has finished the work that produced
    ``result`` (and everything queued before it); it receives ``None`` when nothing ran.
    """
    if overhead_s is None:
        overhead_s = measure_overhead(clock, sync)
    warmup, number = _warm_up(fn, sync, clock, policy, overhead_s)

    # The sampler covers the steady blocks only: started after warm-up, stopped after the
    # last block, so one-time costs never show up as "utilization".
    sampler = policy.window() if policy.window is not None else None
    if sampler is not None:
        sampler.start()
    samples: list[float] = []
    total_s = 0.0
    while True:
        block_s = _block(fn, number, sync, clock)
        samples.append(block_s / number)
        total_s += block_s
        why = stop_reason(samples, total_s, policy)
        if why is not None:
            break
    telemetry = sampler.stop() if sampler is not None else None

    return Timing(
        first_call_s=warmup[0],
        warmup_s=warmup,
        samples_s=samples,
        number_per_sample=number,
        overhead_s=overhead_s,
        telemetry=telemetry,
        stop_reason=why,
    )


# ----------------------------------------------------------------------------- interleaving
#
# The two sides of a claimed ratio (fix off / on, batch 10 / 2048) measured one after
# the other in a process put every slow drift of a shared machine (another process starting,
# a thermal change) on whichever ran second. Interleaved, the variants of a group take turns:
# each *round* every variant runs one *slot* (a block, or a few loop steps), in an order
# shuffled per round (seeded: the same orders on every run), so drift hits all of them. Each
# variant is done by its own rule (``stop_reason``: precision target or its caps), the group
# when all are (or at its cap: members x per-point cap); each variant's samples then pool its
# slots into one ordinary Timing. ``Timing.rounds_s`` stays for *process* rounds (fresh children, the
# session's second pass): within-process rounds are not independent processes and are not put
# there. Warm-up (tracing, first call) stays per variant, before the interleaved phase.

#: Telemetry periods of each variant's own utilization window, run right after its warm-up:
#: one sampler over the interleaved phase would mix every variant's utilization.
WINDOW_PERIODS = 3


@dataclass
class Slotted:
    """One variant of an interleaved group: ``slot()`` runs one turn and returns the samples it
    produced; ``stop(samples, total_s)`` says why the variant is done (a stop reason) or None."""

    slot: Callable[[], list[float]]
    stop: Callable[[list[float], float], str | None]


@dataclass
class Interleaved:
    """What :func:`interleave` gives back per variant: its samples (all its slots pooled), why it
    stopped, how many slots (rounds) it took part in, or the exception one of its slots raised."""

    samples_s: list[float] = field(default_factory=list)
    stop_reason: str = ""
    rounds: int = 0
    error: BaseException | None = None


def _next_order(left: list[int], previous: list[int], reverse: bool, rng: Any) -> tuple[list[int], bool]:
    """Counterbalanced rounds (ABBA): a shuffled order, then the same order reversed, so that over
    each pair of rounds every variant stands as often early as late and a steady drift falls on
    each side alike. Returns the order and whether the next round reverses it. Shuffled alone, two
    variants went in the same order in 8 of 9 rounds (seed 0) and a 1 %-per-call drift read as a
    4.6 % difference between identical sides (tests/test_audit.py)."""
    if reverse and sorted(previous) == sorted(left):
        return previous[::-1], False
    order = list(left)
    rng.shuffle(order)
    return order, True


def interleave(
    variants: list[Slotted],
    *,
    clock: Clock = time.perf_counter,
    cap_s: float,
    seed: int = 0,
    before: Callable[[int], None] | None = None,
) -> list[Interleaved]:
    """Rounds of one slot per variant, in an order shuffled per round with
    ``random.Random(seed)``, until every variant's ``stop`` has said why it is done (its reason
    is kept: the first one it met) or the group has run for ``cap_s`` (the ones not done then
    stop with 'time cap'). A variant that is done keeps taking its turns while another is not:
    a cheap point that converges in 5 blocks would otherwise leave the others to sample alone,
    and drift after it would again fall on one side only. The cost is bounded by ``cap_s``
    (the caller passes members x per-point cap: a sequential run's worst case).
    ``before(i)`` is called before each of variant i's slots (the child's progress line). A
    slot that raises ends that variant only (``Interleaved.error``); the others go on."""
    import random

    rng = random.Random(seed)
    out = [Interleaved() for _ in variants]
    totals = [0.0 for _ in variants]
    left = list(range(len(variants)))  # still taking turns (not failed)
    t_start = clock()
    order: list[int] = []
    reverse = False
    while left and any(not out[i].stop_reason for i in left):
        order, reverse = _next_order(left, order, reverse, rng)
        for i in order:
            if before is not None:
                before(i)
            try:
                got = variants[i].slot()
            except Exception as e:  # this variant fails; the group goes on
                out[i].error = e
                left.remove(i)
                continue
            out[i].samples_s.extend(got)
            out[i].rounds += 1
            totals[i] += sum(got)
            if not out[i].stop_reason:
                out[i].stop_reason = variants[i].stop(out[i].samples_s, totals[i]) or ""
        if clock() - t_start >= cap_s:
            for i in left:
                out[i].stop_reason = out[i].stop_reason or "time cap"
            break
    return out


@dataclass
class Warm:
    """A variant warmed up for :func:`interleave_blocks`: its callable, its warm-up calls (the
    first kept apart), its calls per block and its own utilization window (None: no sampler)."""

    fn: Callable[[], Any]
    warmup_s: list[float]
    number: int
    telemetry: Telemetry | None = None


def abba_turns(n: int, passes: int = 2, seed: int = 0) -> list[int]:
    """The turn order of ``n`` variants timed in whole passes (an epoch, a pass over a data
    set: work that cannot be cut in blocks): the first pass in an order shuffled with ``seed``,
    every other pass reversed — A B C | C B A | A B C — so a slow drift of the machine falls on
    every variant alike."""
    import random

    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [i for k in range(passes) for i in (order if k % 2 == 0 else order[::-1])]


def take_turns(
    n: int,
    turns: list[int],
    turn: Callable[[int, int], list[float]],
    before: Callable[[int], None] | None = None,
) -> tuple[list[list[float]], list[BaseException | None]]:
    """Run ``n`` variants' whole passes in the order ``turns`` (:func:`abba_turns`): ``turn(k,
    i)`` runs variant ``i`` as the k-th turn and returns its samples. A variant that raises
    takes no further turn and the others go on. Each variant's samples, and the exception that
    stopped it (None: none did)."""
    samples: list[list[float]] = [[] for _ in range(n)]
    errors: list[BaseException | None] = [None] * n
    for k, i in enumerate(turns):
        if errors[i] is not None:
            continue
        if before is not None:
            before(i)
        try:
            samples[i] += turn(k, i)
        except Exception as e:  # this variant fails; the others go on
            errors[i] = e
    return samples, errors


def turns_timing(
    warmup_s: list[float],
    samples_s: list[float],
    overhead_s: float,
    *,
    stop_reason: str | None = "min time",
    telemetry: Telemetry | None = None,
) -> Timing:
    """A variant's timing from its turns (:func:`take_turns`) or passes: its warm-up pass's steps
    (the first one the first call), then its steady samples, one step each."""
    return Timing(
        first_call_s=warmup_s[0],
        warmup_s=warmup_s,
        samples_s=samples_s,
        number_per_sample=1,
        overhead_s=overhead_s,
        telemetry=telemetry,
        stop_reason=stop_reason,
    )


def warm_up(
    fn: Callable[[], Any],
    *,
    sync: Sync,
    clock: Clock = time.perf_counter,
    policy: TimingPolicy = TimingPolicy(),
    overhead_s: float,
) -> Warm:
    """Warm ``fn`` up and size its blocks as :func:`measure` does; with a telemetry window in
    the policy, then run its blocks for ``WINDOW_PERIODS`` sampler periods (at least one
    block) under the variant's own sampler (not timed: utilization only)."""
    warmup, number = _warm_up(fn, sync, clock, policy, overhead_s)
    telemetry = None
    if policy.window is not None:
        sampler = policy.window()
        span = WINDOW_PERIODS * (policy.telemetry_period_s or 0.05)
        sampler.start()
        t0 = clock()
        while True:
            _block(fn, number, sync, clock)
            if clock() - t0 >= span:
                break
        telemetry = sampler.stop()
    return Warm(fn, warmup, number, telemetry)


def interleave_blocks(
    warms: list[Warm],
    *,
    sync: Sync,
    clock: Clock = time.perf_counter,
    policy: TimingPolicy = TimingPolicy(),
    overhead_s: float,
    before: Callable[[int], None] | None = None,
) -> list[Timing | BaseException]:
    """Time warmed-up variants interleaved: one synchronized block per variant and round, each
    variant stopping by :func:`stop_reason` (its own precision target or caps), the group
    capped at ``len(warms) x policy.max_time_s``. One ordinary Timing per variant (its blocks
    pooled, ``rounds_s`` None: see the section comment), or the exception it raised."""

    def slotted(w: Warm) -> Slotted:
        def slot() -> list[float]:
            return [_block(w.fn, w.number, sync, clock) / w.number]

        # stop() is given block means; the rule wants seconds of blocks (calls x mean).
        return Slotted(slot, lambda samples, total: stop_reason(samples, total * w.number, policy))

    got = interleave([slotted(w) for w in warms], clock=clock, cap_s=len(warms) * policy.max_time_s, before=before)
    out: list[Timing | BaseException] = []
    for w, g in zip(warms, got):
        if g.error is not None:
            out.append(g.error)
            continue
        out.append(
            Timing(
                first_call_s=w.warmup_s[0],
                warmup_s=w.warmup_s,
                samples_s=g.samples_s,
                number_per_sample=w.number,
                overhead_s=overhead_s,
                telemetry=w.telemetry,
                stop_reason=g.stop_reason,
            )
        )
    return out
