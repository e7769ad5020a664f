"""Audit overhead: each script run plainly (`python SCRIPT`) vs under `whichdevice audit`.

    python benchmarks/audit_overhead.py [--repeats 2] [--out benchmarks/results/audit.json]

Runs every script in tests/data/seeds/ (the reduced copies; see their README) and in
tests/data/audit_torch/ and audit_jax/ (PyTorch and JAX scripts, one classic mistake each) in a temporary folder,
alternating plain and audited runs, and prints the median wall time of each, the ratio, the
user+system CPU seconds of each (less sensitive than wall time to other people's load), and the
findings the audit reported. Real measurements only: nothing is assumed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
SCRIPTS = [p for d in ("seeds", "audit_torch", "audit_jax") for p in sorted((DATA / d).glob("*.py"))]


def wall(cmd: list[str], cwd: str) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the children, the finished process)."""
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return time.perf_counter() - t0, cpu, proc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", default="", help="run only the scripts whose name contains this")
    opts = ap.parse_args()
    rows = []
    for script in [s for s in SCRIPTS if opts.only in s.name]:
        plain, audited, plain_cpu, audit_cpu, findings = [], [], [], [], []
        for _ in range(opts.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                t, c, _ = wall([sys.executable, str(script)], tmp)
                plain.append(t)
                plain_cpu.append(c)
            with tempfile.TemporaryDirectory() as tmp:
                rec = Path(tmp) / "audit.json"
                cmd = [sys.executable, "-m", "whichdevice", "audit", "--json", str(rec), str(script)]
                t, c, proc = wall(cmd, tmp)
                audited.append(t)
                audit_cpu.append(c)
                data = json.loads(rec.read_text())
                findings = sorted({f["rule"] for f in data["findings"]})
        row = {
            "script": f"{script.parent.name}/{script.name}",
            "plain_s": plain,
            "audit_s": audited,
            "plain_cpu_s": plain_cpu,
            "audit_cpu_s": audit_cpu,
            "ratio": statistics.median(audited) / statistics.median(plain),
            "cpu_ratio": statistics.median(audit_cpu) / statistics.median(plain_cpu),
            "findings": findings,
            "load": os.getloadavg(),
        }
        rows.append(row)
        print(
            f"{row['script']:36s} plain {statistics.median(plain):6.2f} s  audit {statistics.median(audited):6.2f} s  "
            f"x{row['ratio']:.2f}  (CPU x{row['cpu_ratio']:.2f})  load {row['load'][0]:.1f}  {', '.join(findings)}",
            flush=True,
        )
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
