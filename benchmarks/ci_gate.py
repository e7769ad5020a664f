"""How often the CI gate (`whichdevice compare A B --fail-on-regression`) fails two identical
runs (a false alarm) and how often it catches a `--cpu-threads 1` change.

Per round: three runs of the same `whichdevice matmul` command, A and B as they are, C with
`--cpu-threads 1` (order A B C, then C B A in the next round, so a machine that drifts
does not always favour one side); then `compare A B --fail-on-regression` and
`compare A C --fail-on-regression`, each with an empty history (nothing learned), and their
exit codes.

    python benchmarks/ci_gate.py --rounds 6 --framework numpy --sizes 256,512,1024
    python benchmarks/ci_gate.py --rounds 4 --framework tensorflow --quick

`--learn 2`: before the gate, two more baseline runs (A1, A2) are compared with A in a fresh
history shared by the round (`A1 A2`, `A2 A`: two repeat pairs, so `compare` uses each case's
learned noise as its threshold), as the README's advice for a shared runner says.

Prints one line per round and a summary; `--out FILE.json` keeps every exit code and ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _wd(args: list[str], home: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, WHICHDEVICE_HOME=home)
    return subprocess.run(
        [sys.executable, "-m", "whichdevice.cli.app", *args], env=env, capture_output=True, text=True, timeout=900
    )


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--framework", default="numpy")
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--mode", default="steady")
    ap.add_argument("--threshold", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", default=None, help="a folder to keep every round's three records in")
    ap.add_argument("--learn", type=int, default=0, help="extra baseline runs compared first (learned noise)")
    o = ap.parse_args()
    base = ["matmul", "--framework", o.framework, "--mode", o.mode]
    if o.sizes:
        base += ["--sizes", o.sizes]
    if o.quick:
        base += ["--quick"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(o.rounds):
            home = tempfile.mkdtemp(dir=tmp)
            order = ["A", "B", "C"] if i % 2 == 0 else ["C", "B", "A"]
            paths = {}
            for name in order:
                p = Path(tmp) / f"r{i}_{name}.json"
                extra = ["--cpu-threads", "1"] if name == "C" else []
                r = _wd([*base, *extra, "--json", str(p), "--out", tmp], home)
                if r.returncode != 0:
                    sys.exit(f"run {name} failed: {r.stderr[-500:]}")
                paths[name] = str(p)
                if o.keep:
                    Path(o.keep).mkdir(parents=True, exist_ok=True)
                    (Path(o.keep) / p.name).write_text(p.read_text())
            row = {"round": i, "load": _load(), "order": "".join(order)}
            shared = tempfile.mkdtemp(dir=tmp)
            if o.learn:
                repeats = []
                for k in range(o.learn):
                    p = Path(tmp) / f"r{i}_A{k + 1}.json"
                    r = _wd([*base, "--json", str(p), "--out", tmp], home)
                    if r.returncode != 0:
                        sys.exit(f"run A{k + 1} failed: {r.stderr[-500:]}")
                    repeats.append(str(p))
                chain = [*repeats, paths["A"]]
                for x, y in zip(chain, chain[1:]):
                    _wd(["compare", x, y], shared)  # a repeat pair: stored as this machine's noise
            for pair, other in (("identical", "B"), ("threads1", "C")):
                cmd = ["compare", paths["A"], paths[other], "--fail-on-regression", "--json"]
                if o.threshold:
                    cmd += ["--threshold", o.threshold]
                r = _wd(cmd, shared if o.learn else tempfile.mkdtemp(dir=tmp))
                doc = json.loads(r.stdout)
                row[pair] = {
                    "exit": r.returncode,
                    "slower": doc["summary"]["slower"],
                    "faster": doc["summary"]["faster"],
                    "ratios": [round(p["ratio"], 3) if p["ratio"] else None for p in doc["points"]],
                }
            rows.append(row)
            print(
                f"round {i}: identical exit {row['identical']['exit']} (ratios {row['identical']['ratios']}); "
                f"--cpu-threads 1 exit {row['threads1']['exit']} (ratios {row['threads1']['ratios']}); load {row['load']}",
                flush=True,
            )
    n = len(rows)
    false_alarms = sum(r["identical"]["exit"] == 1 for r in rows)
    caught = sum(r["threads1"]["exit"] == 1 for r in rows)
    print(f"identical pairs failed (false alarms): {false_alarms} of {n}")
    print(f"--cpu-threads 1 pairs failed (caught): {caught} of {n}")
    if o.out:
        Path(o.out).write_text(
            json.dumps(
                {"command": sys.argv, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rounds": rows},
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
