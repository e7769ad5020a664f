"""Does the budget figure ``diagnose`` asks for hold when the user re-runs with it?

    python benchmarks/refusal_rerun.py [--tries 10] [--budget 12] [--script PATH] [-- SCRIPT ARGS]

Each try copies the script into a fresh folder and runs ``whichdevice diagnose SCRIPT --budget B``
with a budget too short for it. Two figures are checked, as a user would follow them:
  refusal   exit 2 with "Pass --budget N or more": the re-run at N must be accepted (exit 0);
  partial   exit 0 with "--budget N or more measures the fixes too" (the baseline alone was
            measured) or "left out: time budget; --budget N or more measures every fix": the
            re-run at N must leave no fix out for the budget.
A try whose first run neither refuses nor answers partially says so and is not counted. The
machine's load (1-minute average) is printed before and after each run, because the figure allows
for the load it saw and the re-run may see another.
The default script is the corpus's heavy set-up one (seconds of per-sample data preparation, a
small CNN's step), the case where set-up dominates a budget.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "script_corpus" / "torch_heavy_setup.py"
REFUSAL = re.compile(r"Pass --budget (\d+) or more")
PARTIAL = re.compile(r"--budget (\d+) or more measures (?:the fixes too|every fix)")


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def diagnose(folder: Path, script: str, budget: int, args: list[str]) -> tuple[int, str, float, dict | None]:
    out = folder.parent / "out"
    rec = folder.parent / f"r{budget}-{time.monotonic_ns()}.json"
    cmd = [sys.executable, "-m", "whichdevice", "diagnose", script, "--budget", str(budget)]
    cmd += ["--out", str(out), "--json", str(rec), "--", *args]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})
    wall = time.perf_counter() - t0
    record = json.loads(rec.read_text()) if rec.exists() else None
    return done.returncode, done.stdout + done.stderr, wall, record


def one_try(i: int, script: Path, budget: int, args: list[str]) -> tuple[str, bool | None]:
    with tempfile.TemporaryDirectory(prefix="refusal-") as tmp:
        folder = Path(tmp) / "user"
        folder.mkdir()
        shutil.copy(script, folder / script.name)
        l0 = load()
        code, screen, wall, _ = diagnose(folder, script.name, budget, args)
        refused, partial = REFUSAL.search(screen) if code == 2 else None, PARTIAL.search(screen) if code == 0 else None
        m = refused or partial
        if not m:
            return f"try {i}: --budget {budget}: exit {code} in {wall:.0f} s (load {l0}), no figure asked for", None
        n = int(m.group(1))
        kind = "refused" if refused else "partial"
        l1 = load()
        code2, screen2, wall2, _ = diagnose(folder, script.name, n, args)
        left = PARTIAL.search(screen2) or "left out: time budget" in screen2
        held = code2 == 0 and not left if kind == "partial" else code2 == 0
        line = (
            f"try {i}: --budget {budget} {kind} in {wall:.0f} s (load {l0}) asking {n}; "
            f"re-run at {n}: exit {code2} in {wall2:.0f} s (load {l1}→{load()}): {'held' if held else 'NOT held'}"
        )
        if not held:
            tail = [ln for ln in screen2.strip().splitlines() if ln.strip()][-2:]
            line += "\n    " + "\n    ".join(t[:300] for t in tail)
        return line, held


def main() -> None:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        k = argv.index("--")
        argv, extra = argv[:k], argv[k + 1 :]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--script", type=Path, default=DEFAULT)
    a = ap.parse_args(argv)
    if a.script == DEFAULT and not extra:  # enough samples that their preparation outgrows 20 s of budget
        extra = ["--samples", "2500"]
    held = counted = 0
    for i in range(1, a.tries + 1):
        line, ok = one_try(i, a.script.resolve(), a.budget, extra)
        print(line, flush=True)
        if ok is not None:
            counted += 1
            held += ok
    print(f"\nHeld: {held} of {counted} re-runs at the figure asked for ({a.tries} tries, {a.script.name})")


if __name__ == "__main__":
    main()
