"""Benchmarking mistakes, each next to the correct measurement (``whichdevice pitfalls``).

Most mistakes are measured with the ``train`` workload's own kinds (see ``build_cases``); this
module adds the one that needs its own loop, kind ``nosync``: the clock is read right after
each call of the train step *without* synchronizing the device, as ``t0 = time(); step();
t1 = time()`` does. On a GPU the call returns once the kernels are queued, so this times the
dispatch, not the work. On a CPU TensorFlow runs the step before the call returns, so the
two methods read the same (the analysis says so rather than calling it a distortion).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whichdevice.core.records import CaseSpec, Timing
    from whichdevice.core.timing import TimingPolicy
    from whichdevice.frameworks.contracts import Framework

import time

from whichdevice.core.records import CaseSpec, scalar_int
from whichdevice.core.steps import raw_from_steps

SEED_BATCH = 10  # seed 001 ex2's batch: where per-step costs weigh most
LARGE_BATCH = 512  # seed 002's batch
THREADS_BATCH = 4096  # the one-thread pitfall is about compute: a batch where cores have work to share
NOSYNC_STEPS = 200


def build_cases(framework: str, device: str, *, quick: bool, is_cpu: bool) -> tuple[list[CaseSpec], list[CaseSpec]]:
    """(cases for the default child, cases for the one-thread child). Cheapest first."""

    def t(**p) -> CaseSpec:
        return CaseSpec(workload="train", framework=framework, device=device, params={"model": "seed001", **p})

    epochs = 2 if quick else 3
    ex2 = dict(example="ex2", samples=1000, batch=SEED_BATCH, data="numpy")
    main = [
        t(kind="steady", batch=SEED_BATCH, sync="none"),  # right figure for sync, nosync and batch
        t(kind="steady", batch=SEED_BATCH, sync="each"),  # syncing every step
        t(kind="nosync", batch=SEED_BATCH, steps=NOSYNC_STEPS // (2 if quick else 1)),  # clock without sync
        t(kind="steady", batch=LARGE_BATCH, sync="none"),  # the batch pitfall's right figure
        t(kind="steady", batch=THREADS_BATCH, sync="none"),  # the one-thread pitfall's right figure
        t(kind="fit", epochs=epochs, **ex2),  # first epoch vs steady epochs
        t(kind="fit", epochs=2, jit_compile=False, **ex2),  # what jit_compile="auto" gives on a CPU-only machine
        t(kind="fit", epochs=2, jit_compile=True, **ex2),  # what it gives where a GPU is visible
    ]
    one = [t(kind="steady", batch=THREADS_BATCH, sync="none", threads=1)] if is_cpu else []
    return main, one


def run_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict[str, float]]:
    from whichdevice.workloads.train import steady_step

    b, steps = scalar_int(spec.params["batch"]), scalar_int(spec.params.get("steps", NOSYNC_STEPS))
    _, step, xb, yb = steady_step(spec, fw)
    with fw.placement.scope(spec.device):
        for _ in range(3):  # warm-up, synchronized: the mistake under test is the clock, not the warm-up
            fw.sync.sync(step(xb, yb))
        # The same per-step clock both ways, interleaved in rounds so drift hits both alike:
        # only the sync differs between the two series.
        times, synced = [], []
        out = None
        for i in range(steps):
            if i % 2:
                t0 = time.perf_counter()
                out = step(xb, yb)
                times.append(time.perf_counter() - t0)  # no sync: the mistake
            else:
                fw.sync.sync(out)
                t0 = time.perf_counter()
                fw.sync.sync(step(xb, yb))
                synced.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fw.sync.sync(out)
        drain_s = time.perf_counter() - t0
    raw = raw_from_steps([times[0], *times], warmup_steps=1, overhead_s=overhead_s)
    from whichdevice.core import stats

    return raw, {
        "samples_per_step": float(b),
        "drain_s": drain_s,
        "steps": float(steps),
        "synced_median_s": stats.median(synced),
        "synced_q1_s": stats.quantile(synced, 0.25),
        "synced_q3_s": stats.quantile(synced, 0.75),
    }
