"""Does `whichdevice run --budget B` keep its budget? Runs it for each B a few times, one after
the other, with the machine's load before and after each, and writes benchmarks/run_budget.md:
the wall time split into start-up (before the budget's clock starts: the CLI, the parent's
discovery), measuring (round 1, round 2) and the page (analysis, report, record), each run's
wall over the budget, and what the record says was skipped or cut.

The budget's clock starts when the progress line's own clock does (its elapsed time, printed
on every line, is read back against this script's clock), so start-up is what precedes it.

    python benchmarks/run_budget.py [--budgets 30,90] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).with_name("run_budget.md")
# "CPU:0 matmul steady: 5 cases done (7/42, 0:00:15)": done, total, elapsed
PROGRESS = re.compile(r"\((\d+)/(\d+), (\d+):(\d\d):(\d\d)\)\s*$")


def one_run(budget: float, out_dir: str) -> dict:
    """One `run --budget` with each output line's time; its phases and its record's facts."""
    argv = [sys.executable, "-m", "whichdevice", "run", "--budget", f"{budget:g}", "--out", out_dir]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    child = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLUMNS="150")
    )
    assert child.stdout is not None
    offsets, totals, last_case, record = [], [], None, None
    for line in child.stdout:
        now = time.perf_counter() - t0
        m = PROGRESS.search(line)
        if m:
            done, total, h, mi, s = map(int, m.groups())
            offsets.append(now - (3600 * h + 60 * mi + s))  # when the progress clock started
            totals.append((done, total, now))
            last_case = now
        if line.startswith("Record: "):
            record = line.split("Record: ", 1)[1].strip()
    code = child.wait()
    wall = time.perf_counter() - t0
    # the progress clock shows whole seconds: its start is the latest line's time less its
    # elapsed, at most 1 s late; the earliest such estimate is the closest
    startup = min(offsets) if offsets else float("nan")
    first_total = totals[0][1] if totals else 0
    round1_end = max((t for done, total, t in totals if total == first_total), default=float("nan"))
    facts = _record_facts(Path(record)) if record else {}
    return {
        "budget": budget,
        "exit": code,
        "load": load,
        "load_after": os.getloadavg()[0],
        "wall": wall,
        "startup": startup,
        "round1": round1_end - startup,
        "measuring": (last_case or startup) - startup,
        "page": wall - (last_case or wall),
        **facts,
    }


def _record_facts(path: Path) -> dict:
    record = json.loads(path.read_text(encoding="utf-8"))
    results = record.get("results", [])
    sessions = record.get("sessions", [])
    return {
        "ok": sum(r["status"] == "ok" for r in results),
        "skipped": sum(r["status"] == "skipped" for r in results),
        "longest_case": max((r.get("wall_s") or 0.0 for r in results), default=0.0),
        "import_s": max((s.get("import_s") or 0.0 for s in sessions), default=0.0),
        "round2": "; ".join(n for n in record.get("notes", []) if "round 2" in n or "round 3" in n) or "-",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budgets", default="30,90")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    budgets = [float(b) for b in args.budgets.split(",")]
    runs = []
    with tempfile.TemporaryDirectory(prefix="whichdevice-run-budget-") as out_dir:
        for _ in range(args.repeats):  # alternating, so a change of load falls on every budget
            for budget in budgets:
                runs.append(one_run(budget, out_dir))
                print(json.dumps(runs[-1]), flush=True)
    lines = [
        "# `run --budget B`: wall time against the budget",
        "",
        f"`python benchmarks/run_budget.py --budgets {args.budgets} --repeats {args.repeats}`: "
        f"{os.cpu_count()} CPUs, one device (the CPU: no GPU here), budgets alternating. "
        "Start-up: before the budget's clock (the progress line's) starts. Round 1: until its last case "
        "ended, from the clock's start. Measuring: until the last case of any round ended. Page: from "
        "then to the exit (analysis, report, record, history). × budget: (wall − start-up) / B.",
        "",
        "| B s | load 1 min (before → after) | wall s | start-up s | round 1 s | measuring s | page s "
        "| × budget | cases ok / skipped | longest case s | framework import s | exit |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in runs:
        lines.append(
            f"| {r['budget']:g} | {r['load']:.1f} → {r['load_after']:.1f} | {r['wall']:.1f} | {r['startup']:.1f} "
            f"| {r['round1']:.1f} | {r['measuring']:.1f} | {r['page']:.1f} "
            f"| {(r['wall'] - r['startup']) / r['budget']:.2f} | {r.get('ok', '-')} / {r.get('skipped', '-')} "
            f"| {r.get('longest_case', 0):.1f} | {r.get('import_s', 0):.1f} | {r['exit']} |"
        )
    for budget in budgets:
        ratios = [(r["wall"] - r["startup"]) / budget for r in runs if r["budget"] == budget]
        lines.append("")
        lines.append(
            f"B = {budget:g} s: (wall − start-up) / B median {statistics.median(ratios):.2f}, max {max(ratios):.2f}."
        )
    notes = sorted({r.get("round2", "-") for r in runs} - {"-"})
    if notes:
        lines += ["", "The records' notes on later rounds:", ""] + [f"- {n}" for n in notes]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
