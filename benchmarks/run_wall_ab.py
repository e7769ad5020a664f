"""Wall time of one whichdevice command, two versions of the code, interleaved.

Runs the same command (default: `whichdevice run`) with version A's and version B's source on
``PYTHONPATH`` in turns, A B | B A | A B ..., each in a fresh process, and reports every wall
time, the median of each version and the ratio of the medians, with the machine's load before
and after. Version A is usually a ``git worktree`` of an older commit:

    git worktree add /tmp/old 5774bc5
    python benchmarks/run_wall_ab.py --a /tmp/old/src --b src --rounds 3 --out /tmp/ab
    python benchmarks/run_wall_ab.py --a /tmp/old/src --b src --out /tmp/ab -- matmul --framework torch

Everything after ``--`` replaces ``run`` (the output paths are added).
"""

from __future__ import annotations

import argparse
import os
import statistics as st
import subprocess
import sys
import time
from pathlib import Path


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def _once(src: Path, args: list[str], out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    cmd = [sys.executable, "-m", "whichdevice", *args, "--out", str(out), "--json", str(out / "record.json")]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else ["run"]
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, type=Path, help="version A's src directory")
    ap.add_argument("--b", required=True, type=Path, help="version B's src directory")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True, type=Path)
    a = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    walls: dict[str, list[float]] = {"A": [], "B": []}
    print(f"load before: {_load()} ({os.cpu_count()} cores); command: whichdevice {' '.join(extra)}")
    for i in range(a.rounds):
        order = ("A", "B") if i % 2 == 0 else ("B", "A")
        for v in order:
            out = a.out / f"r{i}-{v}"
            out.mkdir(parents=True, exist_ok=True)
            w = _once(a.a if v == "A" else a.b, extra, out)
            walls[v].append(w)
            print(f"round {i + 1} {v}: {w:.1f} s (load {_load()})", flush=True)
    ma, mb = st.median(walls["A"]), st.median(walls["B"])
    print(f"load after: {_load()}")
    print("\n| version | wall times (s) | median (s) |\n|---|---|---|")
    for v, src in (("A", a.a), ("B", a.b)):
        print(f"| {v} ({src}) | {', '.join(f'{w:.1f}' for w in walls[v])} | {st.median(walls[v]):.1f} |")
    print(f"\nB / A: {mb / ma:.3f} (medians of {a.rounds} runs each, interleaved)")


if __name__ == "__main__":
    main()
