"""Does the telemetry sampler change the timings it sits beside?

Run:  python benchmarks/telemetry_overhead.py

Method
------
Two CPU TensorFlow workloads, eager, float32:

* ``matmul``: ``tf.matmul(a, a)`` with ``a`` 512 x 512;
* ``train``: one Keras ``train_on_batch`` step of Dense(128, relu) -> Dense(10), batch 32,
  100 input features, Adam, sparse categorical cross-entropy.

Each workload is warmed up, then timed in *blocks*: a block is ``calls`` back-to-back calls
(``calls`` chosen so a block lasts about ``--block-s``), and its per-call time is the block
time / ``calls``. A *window* is ``--blocks`` blocks in a row, with the sampler running
(started before the first block, stopped after the last, as the measurement core would) or
not. Windows alternate with / without, in the order AB BA AB BA ... (ABBA: alternating,
and balanced so that a linear drift of the machine, thermal or otherwise, adds the same to
both). Per condition the blocks of all its windows are pooled: median and IQR of the
per-call time. The sampler passes if |median(with) - median(without)| < IQR(without),
the noise of the timing it sits beside; a bootstrap 95 % interval of the difference of
medians (resampling whole windows) is printed as well, to show whether any effect is
detectable at all.

The sampler is run at its default period (50 ms) and at 5 ms, ten times denser, to show
how its cost scales. No GPU is asked for (this box has none), so a tick is the psutil
read of ``/proc/stat`` only; NVML queries would add their own cost on a GPU machine.

Finally the sampler's own cost: the median wall-clock seconds of one tick (measured by the
sampler, ``Telemetry.sampler_cost_s``), and its CPU seconds per second of window, measured
as the process CPU time during idle (sleeping) windows with the sampler minus the same
without it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"  # before importing TensorFlow: keep its INFO lines out

from whichdevice.analysis.utilization import summarize  # noqa: E402
from whichdevice.present.tables import telemetry_text as describe  # noqa: E402
from whichdevice.core.stats import iqr, median  # noqa: E402
from whichdevice.measure.telemetry import Sampler  # noqa: E402


def build_workloads() -> dict[str, Callable[[], object]]:
    import keras
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    a = tf.constant(rng.standard_normal((512, 512), dtype=np.float32))

    def matmul() -> object:
        # Eager CPU ops run synchronously: the call returns when the product exists.
        return tf.matmul(a, a)

    model = keras.Sequential([keras.Input((100,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x = rng.standard_normal((32, 100), dtype=np.float32)
    y = rng.integers(0, 10, size=(32,))

    def train() -> object:
        # Returns the loss as a NumPy value, so the step has finished when it returns.
        return model.train_on_batch(x, y)

    return {"matmul": matmul, "train": train}


def calls_per_block(fn: Callable[[], object], block_s: float) -> int:
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < block_s:
        fn()
        n += 1
    return max(1, n)


def time_window(fn: Callable[[], object], calls: int, blocks: int) -> list[float]:
    per_call_s = []
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per_call_s.append((time.perf_counter() - t0) / calls)
    return per_call_s


def bootstrap_ci(with_w: list[list[float]], without_w: list[list[float]], n: int = 2000) -> tuple[float, float]:
    """95 % percentile bootstrap interval of median(with) - median(without).

    Resamples whole windows, not blocks: blocks of one window share whatever else the
    machine was doing at the time, so resampling blocks would make the interval too narrow.
    """
    rng = random.Random(0)

    def pooled_median(windows: list[list[float]]) -> float:
        return median([x for w in rng.choices(windows, k=len(windows)) for x in w])

    diffs = sorted(pooled_median(with_w) - pooled_median(without_w) for _ in range(n))
    return diffs[int(0.025 * n)], diffs[int(0.975 * n) - 1]


def compare(fn, calls: int, period_s: float, rounds: int, blocks: int) -> dict:
    with_w: list[list[float]] = []  # per-call times, one list per window
    without_w: list[list[float]] = []
    costs_s: list[float] = []
    last = None
    for r in range(rounds):
        order = (True, False) if r % 2 == 0 else (False, True)  # AB BA AB BA ...
        for sampled in order:
            if sampled:
                with Sampler(period_s) as s:
                    with_w.append(time_window(fn, calls, blocks))
                costs_s.append(s.telemetry.sampler_cost_s)
                last = s.telemetry
            else:
                without_w.append(time_window(fn, calls, blocks))
    with_s = [x for w in with_w for x in w]
    without_s = [x for w in without_w for x in w]
    lo, hi = bootstrap_ci(with_w, without_w)
    diff = median(with_s) - median(without_s)
    return {
        "with_median": median(with_s),
        "with_iqr": iqr(with_s),
        "without_median": median(without_s),
        "without_iqr": iqr(without_s),
        "diff": diff,
        "ci": (lo, hi),
        "passes": abs(diff) < iqr(without_s),
        "n_blocks": len(with_s),
        "tick_cost_s": statistics.median(costs_s),
        "last_window": describe(summarize(last)),
        "samples_per_window": len(last.t_s),
    }


def idle_cpu_per_s(period_s: float, window_s: float, repeats: int) -> tuple[float, float]:
    """Sampler CPU seconds per second of window (idle-window difference) and tick cost."""
    extra, costs = [], []
    for _ in range(repeats):
        c0 = time.process_time()
        time.sleep(window_s)
        base_s = time.process_time() - c0
        with Sampler(period_s) as s:
            time.sleep(window_s)
        extra.append((s.telemetry.process_cpu_s - base_s) / s.telemetry.wall_s)
        costs.append(s.telemetry.sampler_cost_s)
    return statistics.median(extra), statistics.median(costs)


def us(x_s: float) -> str:
    return f"{x_s * 1e6:9.1f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=8, help="AB/BA pairs of windows per comparison")
    p.add_argument("--blocks", type=int, default=15, help="blocks per window")
    p.add_argument("--block-s", type=float, default=0.02, help="target seconds per block")
    p.add_argument("--warmup-s", type=float, default=1.0)
    args = p.parse_args()

    import psutil

    print(
        f"# {sys.platform}, {psutil.cpu_count()} logical cores, Python {sys.version.split()[0]}; "
        f"rounds={args.rounds} blocks/window={args.blocks} block~{args.block_s * 1e3:.0f} ms",
        flush=True,
    )
    # Other processes on the box add noise that the ABBA order spreads over both conditions.
    print(f"# load average at the start (1, 5, 15 min): {os.getloadavg()}")
    workloads = build_workloads()
    import tensorflow as tf

    print(f"# tensorflow {tf.__version__}, devices: {[d.name for d in tf.config.list_logical_devices()]}")

    rows = []
    for name, fn in workloads.items():
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < args.warmup_s:  # warm-up: tracing, allocator, caches
            fn()
        calls = calls_per_block(fn, args.block_s)
        for period_s in (0.05, 0.005):
            res = compare(fn, calls, period_s, args.rounds, args.blocks)
            rows.append((name, calls, period_s, res))

    print()
    print(
        f"{'workload':8} {'period':>7} {'calls':>5} {'blocks':>6} | {'median us':>9} {'IQR us':>9} "
        f"| {'median us':>9} {'IQR us':>9} | {'diff us':>9} {'95% CI of diff us':>21} | |diff|<IQR"
    )
    print(f"{'':8} {'':>7} {'':>5} {'':>6} | {'--- without sampler ---':>19} | {'----- with sampler -----':>19} |")
    for name, calls, period_s, r in rows:
        lo, hi = r["ci"]
        print(
            f"{name:8} {period_s * 1e3:5.0f}ms {calls:5d} {r['n_blocks']:6d} |"
            f"{us(r['without_median'])} {us(r['without_iqr'])} |"
            f"{us(r['with_median'])} {us(r['with_iqr'])} |"
            f"{us(r['diff'])} [{lo * 1e6:8.1f}, {hi * 1e6:8.1f}] | {'yes' if r['passes'] else 'NO'}"
        )
    print()
    for name, calls, period_s, r in rows:
        print(
            f"{name:8} {period_s * 1e3:3.0f} ms: tick {r['tick_cost_s'] * 1e6:6.1f} us (median over windows), "
            f"{r['samples_per_window']} samples in the last window: {r['last_window']}"
        )

    print()
    for period_s in (0.05, 0.005):
        cpu_per_s, tick_s = idle_cpu_per_s(period_s, window_s=1.0, repeats=3)
        print(
            f"sampler alone, period {period_s * 1e3:3.0f} ms, idle 1 s windows: "
            f"tick {tick_s * 1e6:.1f} us, CPU {cpu_per_s * 1e3:.2f} ms per s of window "
            f"({cpu_per_s * 100:.3f} % of one core)"
        )
    print(f"# load average at the end (1, 5, 15 min): {os.getloadavg()}")
    return 0 if all(r["passes"] for *_, r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
