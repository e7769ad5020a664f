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
   target) of the median — precision-targeted sampling (issue 16). Otherwise go on until
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
    window: Callable[[], Any] | None = field(default=None, compare=False, repr=False)

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
    number = max(1, math.ceil(block_target_s / per_call_s - 1e-9))

    # The sampler covers the steady blocks only: started after warm-up, stopped after the
    # last block, so one-time costs never show up as "utilization".
    sampler = policy.window() if policy.window is not None else None
    if sampler is not None:
        sampler.start()
    samples: list[float] = []
    total_s = 0.0
    stop_reason = ""
    while True:
        sync(None)
        t0 = clock()
        result = None
        for _ in range(number):
            result = fn()
        sync(result)
        block_s = clock() - t0
        samples.append(block_s / number)
        total_s += block_s
        enough = total_s >= policy.min_time_s * (1 - 1e-9) and len(samples) >= policy.min_samples
        target = policy.target_rel_halfwidth
        if enough and (target is None or stats.median_rel_halfwidth(samples, _STOP_CONFIDENCE) <= target):
            stop_reason = "precision" if target is not None else "min time"
            break
        if total_s >= policy.max_time_s and len(samples) >= policy.min_samples:
            stop_reason = "time cap"
            break
        if len(samples) >= policy.max_samples:
            stop_reason = "sample cap"
            break
    telemetry = sampler.stop() if sampler is not None else None

    return Timing(
        first_call_s=warmup[0],
        warmup_s=warmup,
        samples_s=samples,
        number_per_sample=number,
        overhead_s=overhead_s,
        telemetry=telemetry,
        stop_reason=stop_reason,
    )


def measure_interleaved(
    fns: list[Callable[[], Any]],
    *,
    sync: Sync,
    clock: Clock = time.perf_counter,
    policy: TimingPolicy = TimingPolicy(),
    overhead_s: float | None = None,
    rounds: int = 5,
    seed: int = 0,
) -> list[Timing]:
    """Time several variants of the same work (A, B, ...) *interleaved* in one process: warm
    each up apart, size one block per variant (as :func:`measure`), then ``rounds`` rounds in
    each of which every variant runs its blocks once, in an order shuffled per round (seeded:
    the same order on every run). Slow drift of the machine (another process starting, a
    thermal change) then hits every variant alike instead of whichever ran last, and the
    ratio's interval comes from the per-round ratios (``Timing.rounds_s``: each round's
    samples; analysis/significance.from_rounds pairs them by position).

    Each round takes ``policy.min_samples`` blocks per variant; ``samples_s`` pools the rounds.
    The timings carry no telemetry (one window would cover every variant)."""
    import random

    if not fns:
        return []
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if overhead_s is None:
        overhead_s = measure_overhead(clock, sync)
    rng = random.Random(seed)
    block_target_s = max(policy.min_time_s / policy.target_blocks, overhead_s / _MAX_OVERHEAD_FRACTION)
    warmups: list[list[float]] = []
    numbers: list[int] = []
    for fn in fns:
        warm: list[float] = []
        t0 = clock()
        sync(fn())
        warm.append(clock() - t0)
        while len(warm) <= policy.warmup_calls and sum(warm) < policy.min_time_s:
            t0 = clock()
            sync(fn())
            warm.append(clock() - t0)
        warmups.append(warm)
        numbers.append(max(1, math.ceil(block_target_s / max(warm[-1], 1e-9) - 1e-9)))
    per_round: list[list[list[float]]] = [[] for _ in fns]
    for _ in range(rounds):
        order = list(range(len(fns)))
        rng.shuffle(order)
        got: list[list[float]] = [[] for _ in fns]
        for _ in range(policy.min_samples):
            for i in order:
                sync(None)
                t0 = clock()
                result = None
                for _ in range(numbers[i]):
                    result = fns[i]()
                sync(result)
                got[i].append((clock() - t0) / numbers[i])
        for i in range(len(fns)):
            per_round[i].append(got[i])
    return [
        Timing(
            first_call_s=warmups[i][0],
            warmup_s=warmups[i],
            samples_s=[x for r in per_round[i] for x in r],
            number_per_sample=numbers[i],
            overhead_s=overhead_s,
            rounds_s=per_round[i],
            stop_reason="interleaved rounds",
        )
        for i in range(len(fns))
    ]
