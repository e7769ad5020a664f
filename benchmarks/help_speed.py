"""How long `whichdevice --help` and each `COMMAND --help` take against the floor of
`python -c "import typer, rich"`, timed in one loop, alternating, so a change of the machine's
load falls on every command alike. Writes benchmarks/help_speed.md (medians, ratios to the floor,
the load before and after).

    python benchmarks/help_speed.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from whichdevice.cli.app import COMMANDS

OUT = Path(__file__).with_name("help_speed.md")


def _cases() -> dict[str, list[str]]:
    cases = {"floor: import typer, rich": [sys.executable, "-c", "import typer, rich"]}
    cases["whichdevice --help"] = [sys.executable, "-m", "whichdevice", "--help"]
    for name in COMMANDS:
        cases[f"whichdevice {name} --help"] = [sys.executable, "-m", "whichdevice", name, "--help"]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    cases = _cases()
    env = dict(os.environ, COLUMNS="120")
    times: dict[str, list[float]] = {k: [] for k in cases}
    load_before = os.getloadavg()
    for _ in range(rounds):
        for label, argv in cases.items():
            t = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
            times[label].append(time.perf_counter() - t)
    load_after = os.getloadavg()
    floor = statistics.median(times["floor: import typer, rich"])
    lines = [
        "# `--help` against the typer + rich floor",
        "",
        f"`python benchmarks/help_speed.py --rounds {rounds}`: each command once per round, in turn, "
        f"{rounds} rounds; {os.cpu_count()} CPUs; load average (1, 5, 15 min) "
        f"before {', '.join(f'{x:.2f}' for x in load_before)}, after {', '.join(f'{x:.2f}' for x in load_after)}.",
        "",
        "| command | median s | min s | × floor |",
        "|---|---:|---:|---:|",
    ]
    for label, ts in times.items():
        med = statistics.median(ts)
        lines.append(f"| `{label}` | {med:.3f} | {min(ts):.3f} | {med / floor:.2f} |")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
