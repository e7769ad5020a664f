"""Score ``whichdevice diagnose SCRIPT.py`` on training scripts as a user runs them.

    python benchmarks/diagnose_script.py --budget 90 --out /tmp/bench tests/script_corpus/*.py [-- ARGS]

Each script is diagnosed through the CLI in a subprocess (``--quiet``, a record per script); the
table says, per script: the exit code, the entry point and framework captured, the cases planned
and how many were measured (every one "ok"), those not measured and why, the budget's cuts, the
script's set-up per process, and the wall time against the bar: 1.3 x budget + 40 s per device
(one device here). Results append to ``OUT/score.jsonl``; the markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def score(script: str, args: list[str], budget: float, out: Path) -> dict:
    name = Path(script).name
    record = out / f"{Path(script).stem}.json"
    cmd = [sys.executable, "-m", "whichdevice", "diagnose", script, *(["--", *args] if args else [])]
    cmd += ["--budget", f"{budget:g}", "--json", str(record), "--out", str(out), "--quiet"]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    row: dict = {"script": name, "exit": done.returncode, "wall_s": round(wall, 1), "budget_s": budget}
    row["bar_s"] = round(1.3 * budget + 40, 1)
    if not record.exists():
        row["error"] = (done.stderr.strip().splitlines() or [""])[-1][:300]
        return row
    rec = json.loads(record.read_text())
    res = rec["results"]
    row |= {
        "entry": rec["options"].get("entry"),
        "framework": rec["options"].get("framework", "tensorflow"),
        "cases": len(res),
        "ok": sum(r["status"] == "ok" for r in res),
        "not_ok": [f"{r['status']}: {(r.get('error') or '')[:90]}" for r in res if r["status"] != "ok"],
        "cut": [c for c in rec["options"].get("budget_cut") or [] if "larger --budget" not in c],
        "setup_s": round(float(rec["options"].get("script_setup_s") or 0.0), 1),
        "rounds": rec["options"].get("rounds"),
    }
    return row


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--budget", type=float, default=90.0)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("scripts", nargs="+")
    ns, rest = p.parse_known_args(argv)
    args = rest[1:] if rest[:1] == ["--"] else rest
    ns.out.mkdir(parents=True, exist_ok=True)
    print("| script | exit | entry (framework) | measured | wall s (bar) | set-up s | not measured / cut |")
    print("|---|---|---|---|---|---|---|")
    for s in ns.scripts:
        row = score(s, args, ns.budget, ns.out)
        with open(ns.out / "score.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        ok = f"{row.get('ok', 0)}/{row.get('cases', 0)}"
        why = "; ".join(row.get("not_ok", []) + row.get("cut", [])) or row.get("error", "")
        entry = f"{row.get('entry')} ({row.get('framework')})" if row.get("entry") else "-"
        print(
            f"| {row['script']} | {row['exit']} | {entry} | {ok} | {row['wall_s']} ({row['bar_s']}) | "
            f"{row.get('setup_s', '-')} | {why} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
