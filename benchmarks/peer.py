"""whichdevice against a peer on the same points: wall time and medians.

The points: torch on the CPU, steady square matmul at n = 64, 256, 512, 1024.

- A: ``whichdevice matmul --framework torch --sizes 64,256,512,1024 --mode steady``
  (its own record gives the medians; wall time is the whole command, imports included).
- B: a script timing the same four points with ``torch.utils.benchmark.Timer(...)
  .adaptive_autorange(threshold=0.05)`` — torch's own adaptive timer, stopping when the
  IQR/median of its blocks is under 5 % — at the same thread count (torch's default: every
  core, as whichdevice's CPU run; ``Timer`` itself defaults to ONE thread, so it is passed
  ``num_threads`` explicitly), torch import included.

A and B are interleaved (the order drawn at random in each round) so that slow drift of a
shared machine hits both; each tool runs in fresh processes every round. The report gives
the median wall time of each tool over the rounds, their ratio, and per point the median of
the per-round medians of each tool with their ratio (and the range over the rounds).

    python benchmarks/peer.py --rounds 5            # prints a Markdown report
    python benchmarks/peer.py --rounds 5 --json peer.json

The whichdevice command is run through the same interpreter (``python -m whichdevice``), so
the comparison does not include a shell wrapper's start-up (pyenv shims add ~0.3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (64, 256, 512, 1024)

PEER = r"""
import json, sys, time
t0 = time.perf_counter()
import torch
import torch.utils.benchmark as benchmark
out = {"import_s": time.perf_counter() - t0, "threads": torch.get_num_threads(), "medians_s": {}}
for n in SIZES:
    a = torch.rand(n, n)
    b = torch.rand(n, n)
    # Timer runs single-threaded unless told (num_threads defaults to 1): give it torch's own
    # default, the thread count whichdevice's CPU run uses.
    timer = benchmark.Timer(stmt="a @ b", globals={"a": a, "b": b}, num_threads=torch.get_num_threads())
    m = timer.adaptive_autorange(threshold=0.05)
    out["medians_s"][str(n)] = m.median
print(json.dumps(out))
"""


def _load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def run_whichdevice(sizes: tuple[int, ...], workdir: Path) -> tuple[float, dict[int, float]]:
    record = workdir / f"wd-{time.time_ns()}.json"
    cmd = [sys.executable, "-m", "whichdevice", "matmul", "--framework", "torch", "--mode", "steady"]
    cmd += ["--sizes", ",".join(map(str, sizes)), "--out", str(workdir), "--json", str(record)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"whichdevice failed ({out.returncode}):\n{out.stderr[-2000:]}")
    data = json.loads(record.read_text())
    medians = {}
    for result in data["results"]:
        if result["spec"]["device"] == "CPU:0" and result.get("timing"):
            medians[int(result["spec"]["params"]["n"])] = result["timing"]["median_s"]
    return wall, medians


def run_peer(sizes: tuple[int, ...]) -> tuple[float, dict[int, float], dict]:
    code = f"SIZES = {tuple(sizes)!r}\n" + PEER
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"torch.utils.benchmark script failed:\n{out.stderr[-2000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, {int(k): v for k, v in data["medians_s"].items()}, data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="also write the raw rounds here")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    rounds = []
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="wd-peer-") as tmp:
        for r in range(args.rounds):
            order = ["whichdevice", "peer"]
            rng.shuffle(order)
            row: dict = {"order": order}
            for tool in order:
                if tool == "whichdevice":
                    row["wd_wall_s"], row["wd_medians_s"] = run_whichdevice(SIZES, Path(tmp))
                else:
                    row["peer_wall_s"], row["peer_medians_s"], info = run_peer(SIZES)
                    row["peer_threads"] = info["threads"]
                    row["peer_import_s"] = info["import_s"]
            rounds.append(row)
            print(
                f"round {r + 1}/{args.rounds} ({' then '.join(order)}): whichdevice {row['wd_wall_s']:.2f} s, "
                f"torch.utils.benchmark {row['peer_wall_s']:.2f} s",
                file=sys.stderr,
            )
    load_after = _load()
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "load": [load_before, load_after]}, indent=1))

    wd_wall = statistics.median(r["wd_wall_s"] for r in rounds)
    peer_wall = statistics.median(r["peer_wall_s"] for r in rounds)
    print(f"Load average (1, 5, 15 min) before: {load_before}; after: {load_after}; {os.cpu_count()} cores.")
    print(f"Rounds: {len(rounds)}, interleaved (order drawn per round). torch threads: {rounds[0]['peer_threads']}.")
    print()
    print("| tool | median wall (s) | range (s) |")
    print("|---|---|---|")
    print(
        f"| whichdevice matmul | {wd_wall:.2f} | {min(r['wd_wall_s'] for r in rounds):.2f}–"
        f"{max(r['wd_wall_s'] for r in rounds):.2f} |"
    )
    print(
        f"| torch.utils.benchmark adaptive_autorange(0.05) | {peer_wall:.2f} | "
        f"{min(r['peer_wall_s'] for r in rounds):.2f}–{max(r['peer_wall_s'] for r in rounds):.2f} |"
    )
    print(f"| ratio whichdevice / peer | {wd_wall / peer_wall:.2f}× | |")
    print()
    print("| n | whichdevice median (µs) | peer median (µs) | ratio | per-round ratios |")
    print("|---|---|---|---|---|")
    for n in SIZES:
        wd = [r["wd_medians_s"].get(n) for r in rounds]
        pe = [r["peer_medians_s"].get(n) for r in rounds]
        pairs = [(a, b) for a, b in zip(wd, pe) if a and b]
        if not pairs:
            print(f"| {n} | – | – | – | – |")
            continue
        wd_m = statistics.median(a for a, _ in pairs)
        pe_m = statistics.median(b for _, b in pairs)
        ratios = ", ".join(f"{a / b:.2f}" for a, b in pairs)
        print(f"| {n} | {wd_m * 1e6:.1f} | {pe_m * 1e6:.1f} | {wd_m / pe_m:.2f} | {ratios} |")


if __name__ == "__main__":
    main()
