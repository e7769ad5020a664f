"""What `whichdevice run`'s second round costs in wall time (repeatable verdicts against time to a verdict).

One target asks for `whichdevice run` within 30 s on the 2-core machine, another for the verdict
cases measured in two fresh processes. This measures both sides of that trade: the same
`whichdevice run` with its default two rounds, and with one round (``session.ROUNDED_EXPERIMENTS
["run"] = 1``, set in the process before the CLI runs: the product has no such option), in
turns 2 1 | 1 2 | ..., each in a fresh process. Per run it reports the wall time, the child's
framework import and the cases' own time (sum of ``CaseResult.wall_s``: set-up, warm-up and
samples of every round), and the load before and after.

    python benchmarks/run_rounds_wall.py --rounds 3 --out /tmp/rr
"""

from __future__ import annotations

import argparse
import json
import os
import statistics as st
import subprocess
import sys
import time
from pathlib import Path

ONE_ROUND = (
    "import sys; from whichdevice.measure import session; session.ROUNDED_EXPERIMENTS['run'] = 1; "
    "from whichdevice.cli.app import main; sys.argv = ['whichdevice', *sys.argv[1:]]; main()"
)


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def _once(rounds: int, out: Path) -> dict:
    head = [sys.executable, "-m", "whichdevice"] if rounds == 2 else [sys.executable, "-c", ONE_ROUND]
    record = out / "record.json"
    cmd = [*head, "run", "--out", str(out), "--json", str(record)]
    env = {**os.environ, "WHICHDEVICE_HOME": str(out / "home")}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    rec = json.loads(record.read_text())
    twice = sum(1 for r in rec["results"] if r.get("timing") and len(r["timing"].get("rounds_s") or []) >= 2)
    return {
        "wall_s": wall,
        "import_s": sum(s["import_s"] for s in rec["sessions"]),
        "cases_s": sum(r["wall_s"] for r in rec["results"]),
        "cases": len(rec["results"]),
        "in_two_rounds": twice,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="pairs of runs (default 3)")
    ap.add_argument("--out", required=True, type=Path)
    a = ap.parse_args()
    got: dict[int, list[dict]] = {1: [], 2: []}
    print(f"load before: {_load()} ({os.cpu_count()} cores)")
    for i in range(a.rounds):
        for n in (2, 1) if i % 2 == 0 else (1, 2):
            out = a.out / f"p{i}-r{n}"
            out.mkdir(parents=True, exist_ok=True)
            row = _once(n, out)
            got[n].append(row)
            print(
                f"pair {i + 1}, {n} round{'s' if n > 1 else ''}: {row['wall_s']:.1f} s wall, import "
                f"{row['import_s']:.1f} s, cases {row['cases_s']:.1f} s ({row['in_two_rounds']} of "
                f"{row['cases']} in two rounds); load {_load()}",
                flush=True,
            )
    print(f"load after: {_load()}")
    print("\n| rounds | median wall (s) | range (s) | median cases (s) |\n|---|---|---|---|")
    for n in (1, 2):
        w = [r["wall_s"] for r in got[n]]
        c = [r["cases_s"] for r in got[n]]
        print(f"| {n} | {st.median(w):.1f} | {min(w):.1f}–{max(w):.1f} | {st.median(c):.1f} |")


if __name__ == "__main__":
    main()
