"""Does a shorter sampling floor change the medians? ("no accuracy lost")

`whichdevice matmul --framework torch --sizes 64,256,512,1024 --mode steady` with the new default
``--min-time 0.05`` (then until the median's 95 % CI is within 5 %, at most 1 s) against the old
fixed ``--min-time 0.2``, alternated in fresh processes, ROUNDS rounds. Prints per size each
round's median, sample count and the point's wall time, and the ratio of the medians of medians.

    python benchmarks/min_time_ab.py --out /tmp/mt [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics as st
import subprocess
from pathlib import Path

from whichdevice.core.records import load_run

SIZES = (64, 256, 512, 1024)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    uptime = lambda: subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()  # noqa: E731
    print("load before:", uptime())
    res: dict[tuple[str, int], list[tuple[float, int, float]]] = {}
    for i in range(a.rounds):
        for mt in ("0.05", "0.2"):
            js = a.out / f"r{i}-{mt}.json"
            cmd = ["whichdevice", "matmul", "--framework", "torch", "--sizes", ",".join(map(str, SIZES))]
            cmd += ["--mode", "steady", "--min-time", mt, "--json", str(js), "--out", str(a.out / "o")]
            subprocess.run(cmd, check=True, capture_output=True)
            for x in load_run(js).results:
                res.setdefault((mt, x.spec.params["n"]), []).append(
                    (x.timing.median_s, len(x.timing.samples_s), x.wall_s)
                )
    print("load after:", uptime())
    print("\n| n | --min-time | medians per round (µs) | samples | mean wall per point (s) |")
    print("|---|---|---|---|---|")
    for n in SIZES:
        for mt in ("0.05", "0.2"):
            r = res[(mt, n)]
            meds = ", ".join(f"{m * 1e6:.1f}" for m, _, _ in r)
            print(
                f"| {n} | {mt} | {meds} | {', '.join(str(k) for _, k, _ in r)} | {sum(w for *_, w in r) / len(r):.2f} |"
            )
        ratio = st.median(m for m, _, _ in res[("0.05", n)]) / st.median(m for m, _, _ in res[("0.2", n)])
        print(f"| {n} | ratio 0.05 / 0.2 of the medians of medians | {ratio:.3f} | | |")


if __name__ == "__main__":
    main()
