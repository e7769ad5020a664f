"""What `StepTimer(mark_steps=True)` (the default) costs per batch when no profiler runs: the
callback's batch-begin hook timed in a loop, with and without the profiler check.

    python benchmarks/steptimer_marks.py
"""

from __future__ import annotations

import os
import time

from whichdevice.keras import StepTimer


def per_batch_ns(mark: bool, n: int = 200_000) -> float:
    t = StepTimer(verbose=0, mark_steps=mark)
    t.on_train_begin()
    t.on_epoch_begin(0)
    t0 = time.perf_counter()
    for i in range(n):
        t.on_train_batch_begin(i)
    return (time.perf_counter() - t0) / n * 1e9


if __name__ == "__main__":
    rows = {False: [], True: []}
    for _ in range(3):
        for mark in (False, True):
            rows[mark].append(per_batch_ns(mark))
    for mark, xs in rows.items():
        print(f"mark_steps={mark}: {sorted(xs)[1]:.0f} ns per batch (median of 3 x 200 000 calls)")
    print("load:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
