"""How long `whichdevice --help` and each `COMMAND --help` take against the floor of
`python -c "import typer, rich"`, timed in one loop, alternating, so a change of the machine's
load falls on every command alike. Writes benchmarks/help_speed.md (medians, ratios to the floor,
the load before and after).

Each command is timed two ways, one right after the other in the same round:

- as installed: every module read from its bytecode cache (what pip's install and any second
  run give: Python writes ``__pycache__`` on first import). Here the caches go to a temporary
  ``PYTHONPYCACHEPREFIX``, written by one untimed round first, so the floor's typer and rich
  and whichdevice's own modules are read alike.
- as run here: with the environment as it is. Where ``PYTHONDONTWRITEBYTECODE`` is set (this
  project's sandboxes), whichdevice's own modules are compiled from source on every run while
  typer and rich come with their site-packages caches: the floor is cheaper than a user's
  by that compile.

    python benchmarks/help_speed.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from whichdevice.cli.app import COMMANDS

OUT = Path(__file__).with_name("help_speed.md")
FLOOR = "floor: import typer, rich"


def _cases() -> dict[str, list[str]]:
    cases = {FLOOR: [sys.executable, "-c", "import typer, rich"]}
    cases["whichdevice --help"] = [sys.executable, "-m", "whichdevice", "--help"]
    for name in COMMANDS:
        cases[f"whichdevice {name} --help"] = [sys.executable, "-m", "whichdevice", name, "--help"]
    return cases


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run. The CPU time is the steadier
    figure on a loaded machine: a run's waits for a core count in its wall time only."""
    t = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    cases = _cases()
    here = dict(os.environ, COLUMNS="120")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="whichdevice-pycache-") as cache_dir:
        installed = {k: v for k, v in here.items() if k != "PYTHONDONTWRITEBYTECODE"}
        installed["PYTHONPYCACHEPREFIX"] = cache_dir
        envs = {"installed": installed, "here": here}
        for argv in cases.values():  # writes the bytecode caches, untimed
            _run(argv, installed)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {(k, m): [] for k in cases for m in envs}
        for _ in range(rounds):
            for label, argv in cases.items():
                for mode, env in envs.items():
                    times[label, mode].append(_run(argv, env))
    load_after = os.getloadavg()
    med = {key: (statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts)) for key, ts in times.items()}
    no_bytecode = "PYTHONDONTWRITEBYTECODE" in os.environ
    lines = [
        "# `--help` against the typer + rich floor",
        "",
        f"`python benchmarks/help_speed.py --rounds {rounds}`: each command once per round, in turn, "
        f"{rounds} rounds, each run as installed and as run here one after the other; "
        f"{os.cpu_count()} CPUs; load average (1, 5, 15 min) "
        f"before {', '.join(f'{x:.2f}' for x in load_before)}, after {', '.join(f'{x:.2f}' for x in load_after)}.",
        "",
        "*As installed*: every module, the floor's and whichdevice's, read from its bytecode cache "
        "(written by one untimed round), as after `pip install` or any first run. "
        "*As run here*: the environment as it is"
        + (
            " — PYTHONDONTWRITEBYTECODE is set, so whichdevice's own modules are compiled from source "
            "on every run while typer's and rich's come from their caches."
            if no_bytecode
            else "."
        ),
        "",
        "Wall: median seconds from start to exit (min); CPU: median user + system seconds of the run, "
        "which a busy machine's waits for a core do not inflate. × floor: each median over the floor's, "
        "same mode.",
        "",
        "| command | installed: wall s (min) | × floor | CPU s | × floor | here: wall s (min) | × floor | CPU s | × floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label in cases:
        row = [f"`{label}`"]
        for mode in envs:
            wall, cpu = med[label, mode]
            floor_wall, floor_cpu = med[FLOOR, mode]
            fastest = min(w for w, _ in times[label, mode])
            row += [f"{wall:.3f} ({fastest:.3f})", f"{wall / floor_wall:.2f}", f"{cpu:.3f}", f"{cpu / floor_cpu:.2f}"]
        lines.append("| " + " | ".join(row) + " |")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
