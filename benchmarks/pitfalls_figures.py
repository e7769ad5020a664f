"""Measure every pitfall's distortion on this machine and print the table for pitfalls.md.

    python benchmarks/pitfalls_figures.py [OUT_DIR]

Runs `whichdevice pitfalls` (full, not --quick) and `whichdevice placement --quick`, times both
commands end to end (`--quick` must stay <= 60 s on 2 cores), and prints a Markdown table from
the saved record: pitfall, wrong figure, right figure, wrong / right.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from whichdevice.analysis.pitfalls import analyze_pitfalls
from whichdevice.present.pages.pitfalls import TITLES, methods
from whichdevice.core.units import seconds
from whichdevice.core.records import load_run


def timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-pitfalls")
    exe = [sys.executable, "-m", "whichdevice.cli.app"]
    full = out / "pitfalls.json"
    wall = {
        "pitfalls": timed([*exe, "pitfalls", "--out", str(out), "--json", str(full)]),
        "pitfalls --quick": timed([*exe, "pitfalls", "--quick", "--out", str(out), "--json", str(out / "q.json")]),
        "placement --quick": timed([*exe, "placement", "--quick", "--out", str(out), "--json", str(out / "pl.json")]),
    }
    rec = load_run(full)
    print(
        f"Machine: {rec.machine.cpu_model}, {rec.machine.cpu_cores_logical} cores; "
        f"{rec.sessions[0].framework.name} {rec.sessions[0].framework.version}\n"
    )
    print("| pitfall | device | wrong | right | wrong / right | per |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for r in analyze_pitfalls(rec):
        sig = "" if r.significant else " (within noise)"
        print(
            f"| {TITLES[r.pitfall]} | {r.device} | {seconds(r.wrong_s)} ({methods(r)[0]}) | {seconds(r.right_s)} "
            f"({methods(r)[1]}) | {r.ratio:.3g}x{sig} | {r.unit.removeprefix('s per ')} |"
        )
    print()
    for k, v in wall.items():
        print(f"- `whichdevice {k}`: {v:.1f} s wall")


if __name__ == "__main__":
    main()
