"""What leaving the user's folder as it was costs diagnose SCRIPT: the snapshot before the
pre-flight (a walk of the working folder plus a copy of each file up to 64 MiB, 1 GiB in all) and
one settle after a run of the script (a walk, nothing changed), on synthetic folders shaped like
users' project folders, with the machine's load at the time.

    python benchmarks/userfolder_cost.py [--out benchmarks/userfolder_cost.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from whichdevice.workloads import userfolder


def _folder(root: Path, files: int, size: int, big_mb: int) -> None:
    root.mkdir(parents=True)
    for i in range(files):
        d = root / f"d{i // 500}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}.txt").write_bytes(os.urandom(size))
    if big_mb:
        with open(root / "data.npy", "wb") as f:
            for _ in range(big_mb):
                f.write(os.urandom(2**20))


def _time(shape: tuple[str, int, int, int], repeats: int) -> dict:
    name, files, size, big = shape
    snap, settle = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as t:
            root = Path(t, "proj")
            _folder(root, files, size, big)
            os.chdir(root)
            t0 = time.perf_counter()
            g = userfolder.watch(str(root / "train.py"), str(Path(t, "out", "rec.json")))
            snap.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            userfolder.Guard(g.home).settle()
            settle.append(time.perf_counter() - t0)
            userfolder.finish(str(Path(t, "out", "rec.json")))
            os.chdir("/")
    return {"shape": name, "snapshot_s": statistics.median(snap), "settle_s": statistics.median(settle), "n": repeats}


SHAPES = [
    ("a script, 20 small files", 20, 2_000, 0),
    ("1,000 files of 10 kB", 1_000, 10_000, 0),
    ("10,000 files of 1 kB", 10_000, 1_000, 0),
    ("20 files + a 50 MB array", 20, 2_000, 50),
    ("20 files + a 200 MB array (not copied: over 64 MiB)", 20, 2_000, 200),
]


def main() -> None:
    a = argparse.ArgumentParser()
    a.add_argument("--out", default=None)
    a.add_argument("--repeats", type=int, default=3)
    args = a.parse_args()
    load0 = os.getloadavg()[0]
    rows = [_time(s, args.repeats) for s in SHAPES]
    load1 = os.getloadavg()[0]
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
        f"load average {load0:.1f} before, {load1:.1f} after; median of {args.repeats} per shape.",
        "",
        "| folder | snapshot (s) | settle, nothing changed (s) |",
        "| --- | --- | --- |",
        *(f"| {r['shape']} | {r['snapshot_s']:.3f} | {r['settle_s']:.3f} |" for r in rows),
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(
            "# The cost of leaving the user's folder as it was\n\n`python benchmarks/userfolder_cost.py "
            "--out benchmarks/userfolder_cost.md`\n\n" + text + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
