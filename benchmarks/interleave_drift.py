"""Does interleaving protect an A/B ratio from drift?

Two identical steady training steps (seed 001's MLP, batch 32, TensorFlow on the CPU): the true
ratio is 1. A CPU hog (2 busy processes, as another user's job) starts part-way through:
- sequential (``core.timing.measure``: A's blocks, then B's): the hog starts between A and B;
- interleaved (``core.timing.interleave_blocks``, what the suite's steady steps use): the hog
  starts after 10 turns.
Prints the A/B median ratio of each, 3 repeats, and the load. The hogs are killed at the end
(``finally``), whatever happens.

    python benchmarks/interleave_drift.py
"""

import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from whichdevice import frameworks
from whichdevice.core import stats
from whichdevice.core.records import CaseSpec
from whichdevice.core.timing import TimingPolicy, measure, warm_up, interleave_blocks
from whichdevice.workloads.train import _steady_fn

fw = frameworks.load("tensorflow")
fw.placement.configure("CPU:0", None)
spec = CaseSpec(
    workload="train",
    framework="tensorflow",
    device="CPU:0",
    params={"kind": "steady", "model": "seed001", "batch": 32, "sync": "none"},
)
policy = TimingPolicy(min_time_s=0.5, max_time_s=1.0, target_rel_halfwidth=None, max_samples=40)
fa, _ = _steady_fn(spec, fw)
fb, _ = _steady_fn(spec, fw)
hogs = []


def hog_on():
    for _ in range(2):
        hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))


def hog_off():
    while hogs:
        p = hogs.pop()
        p.kill()
        p.wait()


print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
try:
    for rep in range(3):
        ta = measure(fa, sync=fw.sync.sync, policy=policy, overhead_s=0.0)
        hog_on()
        time.sleep(0.2)
        tb = measure(fb, sync=fw.sync.sync, policy=policy, overhead_s=0.0)
        hog_off()
        time.sleep(0.5)
        seq = stats.median(ta.samples_s) / stats.median(tb.samples_s)
        warms = [warm_up(f, sync=fw.sync.sync, policy=policy, overhead_s=0.0) for f in (fa, fb)]
        turns = [0]

        def before(i):
            turns[0] += 1
            if turns[0] == 10:
                hog_on()

        ia, ib = interleave_blocks(warms, sync=fw.sync.sync, policy=policy, overhead_s=0.0, before=before)
        hog_off()
        time.sleep(0.5)
        inter = stats.median(ia.samples_s) / stats.median(ib.samples_s)
        print(
            f"rep {rep}: sequential A/B {seq:.2f} (n {len(ta.samples_s)}/{len(tb.samples_s)})  interleaved A/B {inter:.2f} (n {len(ia.samples_s)}/{len(ib.samples_s)})",
            flush=True,
        )
finally:
    hog_off()
print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
