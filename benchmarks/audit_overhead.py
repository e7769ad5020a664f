"""Audit overhead: each seed script run plainly (`python SCRIPT`) vs under `whichdevice audit`.

    python benchmarks/audit_overhead.py [--repeats 2] [--out benchmarks/results/audit.json]

Runs every script in tests/data/seeds/ (the reduced copies; see their README) in a temporary
folder, alternating plain and audited runs, and prints the median wall time of each, the
ratio, and the findings the audit reported. Real measurements only: nothing is assumed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SEEDS = Path(__file__).resolve().parent.parent / "tests" / "data" / "seeds"


def wall(cmd: list[str], cwd: str) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - t0, proc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    opts = ap.parse_args()
    rows = []
    for script in sorted(SEEDS.glob("*.py")):
        plain, audited, findings = [], [], []
        for _ in range(opts.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                t, _ = wall([sys.executable, str(script)], tmp)
                plain.append(t)
            with tempfile.TemporaryDirectory() as tmp:
                rec = Path(tmp) / "audit.json"
                t, proc = wall([sys.executable, "-m", "whichdevice", "audit", "--json", str(rec), str(script)], tmp)
                audited.append(t)
                data = json.loads(rec.read_text())
                findings = sorted({f["rule"] for f in data["findings"]})
        row = {
            "script": script.name,
            "plain_s": plain,
            "audit_s": audited,
            "ratio": statistics.median(audited) / statistics.median(plain),
            "findings": findings,
        }
        rows.append(row)
        print(
            f"{script.name:24s} plain {statistics.median(plain):6.2f} s  audit {statistics.median(audited):6.2f} s  "
            f"x{row['ratio']:.2f}  {', '.join(findings)}",
            flush=True,
        )
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
