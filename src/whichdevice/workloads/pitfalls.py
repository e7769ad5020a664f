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

from whichdevice.core.records import scalar_int
from whichdevice.core.steps import raw_from_steps
from whichdevice.frameworks.common.pitfalls import NOSYNC_STEPS
from whichdevice.workloads.fixes import BATCH


def build_cases(framework: str, device: str, *, quick: bool, is_cpu: bool) -> tuple[list[CaseSpec], list[CaseSpec]]:
    """(cases for the default child, cases for the one-thread child): the framework's
    ``pitfalls`` part says which (``frameworks/<fw>/pitfalls.py``). Cheapest first."""
    from whichdevice import frameworks

    return frameworks.part(framework, "pitfalls").cases(framework, device, quick=quick, is_cpu=is_cpu)


def run_own_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict]:
    """A ``pitfall`` case: measured by the framework's own ``pitfalls`` part (torch.compile, a
    DataLoader, jax.device_put...)."""
    from whichdevice import frameworks

    return frameworks.part(fw.name, "pitfalls").run_case(spec, fw, policy, overhead_s)


def run_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict[str, float]]:
    from whichdevice.workloads.train import steady_step

    if spec.params["kind"] == "pitfall":
        return run_own_case(spec, fw, policy, overhead_s)
    b, steps = scalar_int(spec.params[BATCH.param]), scalar_int(spec.params.get("steps", NOSYNC_STEPS))
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
