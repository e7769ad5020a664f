"""Time a sequence of training steps one by one, the device synchronized after each.

``timing.measure`` times blocks of identical calls, which is right for a steady step. A
seed's loop as written (100 steps, one pass over a tf.data pipeline, epochs of
``model.fit``) is a fixed sequence instead: every step is timed on its own, the device
synchronized before the clock is read, and the sequence becomes a ``Timing`` whose
first call is the first step (tracing, allocation, pipeline start-up) and whose samples
are the steady steps. One sample = one step (``number_per_sample = 1``), so the spread is
the real step-to-step jitter, not a block mean's.

Trade-off: a sync per step adds the sync's own cost (``overhead_s``, recorded) to every
step; the seeds sync every step anyway (``.numpy()``), so this is what they see.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from whichdevice.core.records import Timing
from whichdevice.core.timing import Clock, Sync


def time_loop(
    batches: Iterable[Any],
    step: Callable[[Any], Any],
    *,
    sync: Sync,
    clock: Clock = time.perf_counter,
    limit: int | None = None,
) -> list[float]:
    """Seconds per iteration of ``for b in batches: sync(step(b))``; fetching the next
    batch is part of the step, as in the seeds' loops. Stops after ``limit`` steps."""
    it = iter(batches)
    times: list[float] = []
    while limit is None or len(times) < limit:
        t0 = clock()
        try:
            b = next(it)
        except StopIteration:
            break
        sync(step(b))
        times.append(clock() - t0)
    return times


def raw_from_steps(times: Sequence[float], *, warmup_steps: int = 1, overhead_s: float = 0.0) -> Timing:
    """First ``warmup_steps`` steps kept apart (the first is ``first_call_s``); the rest are
    the steady samples. With no step left after the warm-up, the last step stands in."""
    if not times:
        raise ValueError("no steps were timed")
    w = max(1, min(warmup_steps, len(times)))
    steady = list(times[w:]) or [times[-1]]
    return Timing(
        first_call_s=times[0], warmup_s=list(times[:w]), samples_s=steady, number_per_sample=1, overhead_s=overhead_s
    )
