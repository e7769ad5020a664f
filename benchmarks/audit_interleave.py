"""The audit's corrected ratio on two identical blocks: does its interval contain 1.0?

    python benchmarks/audit_interleave.py [--repeats 10] [--out benchmarks/results/audit_interleave.json]

Audits tests/data/audit_identical_blocks.py (the same traced step under '/CPU:0' and '/GPU:0';
without a GPU both run on CPU:0, so the true ratio is 1.0) ``--repeats`` times, each a fresh
``whichdevice audit`` process, and prints each corrected ratio with its 95 % interval (the
interleaved rounds of ``audit/interleave.py``). The target: the interval contains 1.0
in ≥ 9 of 10 repeats. Real measurements only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "tests" / "data" / "audit_identical_blocks.py"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--out", type=Path, default=None)
    opts = ap.parse_args()
    rows = []
    for i in range(opts.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            rec = Path(tmp) / "audit.json"
            cmd = [sys.executable, "-m", "whichdevice", "audit", "--json", str(rec), str(SCRIPT)]
            subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=True)
            data = json.loads(rec.read_text())
        (c,) = data["corrections"]
        row = {
            "repeat": i + 1,
            "script_ratio": c["script_ratio"],
            "ratio": c["real_ratio"],
            "low": c["real_ratio_low"],
            "high": c["real_ratio_high"],
            "rounds": len(c["round_ratios"]),
            "contains_1": c["real_ratio_low"] <= 1.0 <= c["real_ratio_high"],
            "significant": c["significant"],
        }
        rows.append(row)
        print(
            f"{i + 1:2d}: script {row['script_ratio']:.3f}  corrected {row['ratio']:.3f} "
            f"({row['low']:.3f}-{row['high']:.3f}), {row['rounds']} rounds, contains 1.0: {row['contains_1']}",
            flush=True,
        )
    hits = sum(r["contains_1"] for r in rows)
    print(f"interval contains 1.0 in {hits} of {len(rows)} repeats")
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
