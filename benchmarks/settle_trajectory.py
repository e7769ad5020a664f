"""How a fresh TensorFlow train step's time changes over its first calls.

Why: the pipeline's "model step alone" measured 0.75 ms in round 1 and 0.65 ms in round 2 of
the same run. This script builds the pipeline's tiny CNN (and, for comparison, the seeds'
MLP train step at batch 10) in a fresh process, calls its train step ``--steps`` times on one
batch without settling it first, and prints the median of every 25 calls. Each model is run in
``--repeats`` fresh processes (the effect is per process).

    python benchmarks/settle_trajectory.py --steps 400 --repeats 3

What it showed on the 2-core machine (benchmarks/pipeline.md): the CNN step ~0.9 ms for its
first 75-200 calls, then ~0.7 ms; the MLP step drifting by ≈ 5 % only. Hence
``workloads/pipeline.SETTLE_STEPS``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = r"""
import statistics as st, sys, time
from whichdevice import frameworks
from whichdevice.core.records import CaseSpec
from whichdevice.workloads import pipeline as wp, train as wt
which, steps = sys.argv[1], int(sys.argv[2])
fw = frameworks.load("tensorflow")
if which == "cnn":
    wp.SETTLE_STEPS = 0  # the raw start: nothing run before the first timed call
    wp.SETTLE_MAX_S = 0.0
    p = {"images": 256, "image_size": 64, "batch": 32, "net": "tiny", "variant": "serial", "part": "model"}
    tfp = wp._tfp(fw)
    _, step = wp._model(tfp, fw, p, "CPU:0")
    ds, _ = wp._dataset(tfp, p, wp.MODEL_BATCH_FROM)
    x, y = next(iter(ds))
    fn = lambda: step(x, y)
else:
    spec = CaseSpec(workload="train", framework="tensorflow", device="CPU:0",
                    params={"kind": "steady", "model": "seed001", "batch": 10, "sync": "none"})
    fn, _ = wt._steady_fn(spec, fw)
ts = []
for _ in range(steps):
    t0 = time.perf_counter(); fw.sync.sync(fn()); ts.append(time.perf_counter() - t0)
print(" ".join(f"{st.median(ts[a:a + 25]) * 1e3:.3f}" for a in range(0, steps, 25)))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}; median ms of every 25 calls, from the first:")
    for which, name in (("cnn", "pipeline tiny CNN, batch 32"), ("mlp", "seeds' MLP, batch 10")):
        for r in range(a.repeats):
            out = (
                subprocess.run(
                    [sys.executable, "-c", CHILD, which, str(a.steps)], capture_output=True, text=True, check=True
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            print(f"{name}, process {r + 1}: {out}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
