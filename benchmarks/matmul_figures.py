"""Figures for the foundation: wall times of `whichdevice matmul`, the harness's
own overhead, and the agreement of two identical sweeps.

Run:  python benchmarks/matmul_figures.py [--full]      (writes benchmarks/results/*.json)

Every number printed is measured here; nothing is assumed. Wall times include the
TensorFlow imports of the discovery and measurement children.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
RESULTS = HERE / "results"


def timed_cli(args: list[str], json_path: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "whichdevice", *args, "--json", str(json_path)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def harness_overhead() -> dict:
    """The timing core on an empty op with TensorFlow's device sync, in a fresh process."""
    code = r"""
import json, os, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
from whichdevice.frameworks.tensorflow import sync
from whichdevice.core.timing import TimingPolicy, measure, measure_overhead
ov = measure_overhead(time.perf_counter, sync.sync, reps=200)
raw = measure(lambda: None, sync=sync.sync, policy=TimingPolicy(min_time_s=0.5))
print(json.dumps({"clock_plus_sync_s": ov, "empty_call_s": sorted(raw.samples_s)[len(raw.samples_s)//2],
                  "calls_per_block": raw.number_per_sample, "blocks": len(raw.samples_s)}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def agreement(a: Path, b: Path) -> list[dict]:
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    key = lambda r: (r["spec"]["device"], r["spec"]["params"]["mode"], r["spec"]["params"]["n"])  # noqa: E731
    tb = {key(r): r for r in rb["results"] if r["status"] == "ok"}
    rows = []
    for r in ra["results"]:
        if r["status"] != "ok" or key(r) not in tb:
            continue
        ta, tb_ = r["timing"], tb[key(r)]["timing"]
        diff = tb_["median_s"] / ta["median_s"] - 1
        spread = max(ta["rel_iqr"], tb_["rel_iqr"])
        rows.append(
            {
                "point": "/".join(map(str, key(r))),
                "median_a_s": ta["median_s"],
                "median_b_s": tb_["median_s"],
                "diff": diff,
                "rel_iqr_max": spread,
                "within_iqr": abs(diff) <= spread,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="also time the full default sweep (~4 min)")
    args = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    out: dict = {"cores": os.cpu_count()}
    out["harness"] = harness_overhead()
    print("harness:", out["harness"])
    small = ["matmul", "--sizes", "1,10,100,500,1000"]
    out["small_wall_s"] = timed_cli(small, RESULTS / "small_a.json")
    print(f"matmul --sizes 1,10,100,500,1000: {out['small_wall_s']:.1f} s")
    out["small_repeat_wall_s"] = timed_cli(small, RESULTS / "small_b.json")
    rows = agreement(RESULTS / "small_a.json", RESULTS / "small_b.json")
    out["agreement"] = rows
    diffs = [abs(r["diff"]) for r in rows]
    print(
        f"two identical sweeps: median |diff| {statistics.median(diffs):.1%}, max {max(diffs):.1%}, "
        f"{sum(r['within_iqr'] for r in rows)}/{len(rows)} points within their IQR/median"
    )
    for r in rows:
        print(
            f"  {r['point']:>22}: {r['median_a_s']:.3e} vs {r['median_b_s']:.3e}  diff {r['diff']:+.1%} "
            f"(rel IQR {r['rel_iqr_max']:.1%})"
        )
    out["quick_wall_s"] = timed_cli(["matmul", "--quick"], RESULTS / "quick.json")
    print(f"matmul --quick: {out['quick_wall_s']:.1f} s")
    if args.full:
        out["full_wall_s"] = timed_cli(["matmul"], RESULTS / "full.json")
        print(f"matmul (full default sweep): {out['full_wall_s']:.1f} s")
    (RESULTS / "matmul_figures.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
