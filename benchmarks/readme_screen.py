"""The README's sample screen and its `run` timing, from real runs of today's code.

    python benchmarks/readme_screen.py                 # `whichdevice run` (default budget, 90 s), 3 times
    python benchmarks/readme_screen.py --rounds 1 --budget 300
    python benchmarks/readme_screen.py --rerender      # no run: today's render of the same record

Each round runs `whichdevice run` exactly as the README's first line does (no option but a scratch
`--out` and a fresh `$WHICHDEVICE_HOME`; `--budget` only when asked for), with stdout on a pipe, and
notes its wall time and the load average just before and just after. Then the last round's record:

* is copied to tests/data/run_cpu_readme.json, its origin (command, machine, time, load, wall, commit)
  written beside it in tests/data/run_cpu_readme.md;
* is rendered by `whichdevice report` (piped, 100 columns), and the render, followed by the lines the
  run itself printed after its screen (Report:, Record:, History:; the scratch folder shortened to
  whichdevice-results/), replaces the README's block between the `readme-screen` markers, with the
  sentence saying what run it was.

Every round's wall and load is appended to benchmarks/readme_screen.md, with the figure the README
states (the range of the walls, and of the loads they ran at). tests/test_readme.py renders the record
again and fails when the README's block no longer matches it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RECORD = ROOT / "tests" / "data" / "run_cpu_readme.json"
ORIGIN = RECORD.with_suffix(".md")
RESULTS = ROOT / "benchmarks" / "readme_screen.md"
BEGIN, END = "<!-- readme-screen: begin -->", "<!-- readme-screen: end -->"
DEFAULT_BUDGET = 90.0  # run's own default (cli/run.py), passed on only when another is asked for
TAIL = ("Report: ", "Record: ", "History: ")  # the lines `run` prints after its first screen


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "WHICHDEVICE_HOME": str(home), "COLUMNS": "100"}


def render(record: Path) -> str:
    """`whichdevice report RECORD` as a pipe gets it at 100 columns: the README's block, less the tail."""
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run(
            [sys.executable, "-m", "whichdevice", "report", str(record)],
            capture_output=True,
            text=True,
            env=_env(Path(home)),
            check=True,
        )
    return done.stdout


def one_round(budget: float, work: Path, k: int) -> dict:
    out = work / f"round{k}"
    cmd = ["run", "--out", str(out)]
    if budget != DEFAULT_BUDGET:
        cmd[1:1] = ["--budget", f"{budget:g}"]
    before = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "whichdevice", *cmd], capture_output=True, text=True, env=_env(work / "home"), cwd=work
    )
    wall = time.perf_counter() - t0
    after = os.getloadavg()[0]
    if done.returncode != 0:
        raise SystemExit(f"whichdevice {' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    record = next(out.glob("run-*.json"))
    tail = [line.replace(str(out), "whichdevice-results") for line in done.stdout.splitlines() if line.startswith(TAIL)]
    started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=wall)
    return {
        "wall": wall,
        "before": before,
        "after": after,
        "record": record,
        "tail": tail,
        "started": started,
        "command": "whichdevice " + " ".join(a for a in cmd if not a.startswith(str(work)) and a != "--out"),
    }


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    dirty = subprocess.run(["git", "status", "--porcelain", "src"], capture_output=True, text=True, cwd=ROOT)
    return done.stdout.strip() + ("+uncommitted src" if dirty.stdout.strip() else "")


def _span(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else fmt.format(lo) + "–" + fmt.format(hi)


def stated(rounds: list[dict]) -> str:
    """The README's figure: the walls' range and the loads (1-minute average, before and after) they ran at."""
    walls = _span([r["wall"] for r in rounds], "{:.0f}")
    loads = _span([x for r in rounds for x in (r["before"], r["after"])], "{:.1f}")
    return f"{walls} s on a 2-core machine without a GPU at load {loads}"


def readme_block(rounds: list[dict], shown: str, cores: int) -> str:
    last = rounds[-1]
    text = shown.rstrip("\n") + "\n" + "\n".join(last["tail"])
    return (
        f"{BEGIN}\n```\n{text}\n```\n\n"
        f"This is `{last['command']}` on a {cores}-core VM without a GPU, shared with other work (load "
        f"average {last['before']:.1f} before, {last['after']:.1f} after; {last['wall']:.0f} s wall), made by "
        f"`python benchmarks/readme_screen.py`. The record is `{RECORD.relative_to(ROOT)}`; the screen above "
        f"is `whichdevice report {RECORD.relative_to(ROOT)}` (that record rendered), followed by the lines "
        f"the run printed after it (its output folder shortened).\n{END}"
    )


def rerender() -> None:
    """The README's block with its screen rendered again from the same record by today's code; the
    lines the run printed after its screen and the sentence about the run are kept as they were."""
    readme = README.read_text()
    pattern = re.compile(re.escape(BEGIN) + r"\n```\n(.*?)```\n", re.S)
    m = pattern.search(readme)
    if not m:
        raise SystemExit(f"README.md has no {BEGIN} block with a fenced screen")
    lines = m.group(1).splitlines()
    tail = [ln for ln in lines if ln.startswith(("Report: ", "Record: ", "History: "))]
    text = render(RECORD).rstrip("\n") + "\n" + "\n".join(tail)
    README.write_text(readme[: m.start(1)] + text + "\n" + readme[m.end(1) :])
    print(f"README.md's sample screen: {RECORD.relative_to(ROOT)} rendered again")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds per device (default: run's own, 90)")
    ap.add_argument("--rounds", type=int, default=3, help="runs, back to back; the last one is shown")
    ap.add_argument("--keep", type=Path, help="keep the runs' folders here (default: a temporary folder)")
    ap.add_argument("--no-readme", action="store_true", help="measure and note the walls only")
    ap.add_argument(
        "--rerender",
        action="store_true",
        help="run nothing: render the README's record again with today's code (when a renderer changed)",
    )
    a = ap.parse_args()
    if a.rerender:
        rerender()
        return
    work = a.keep or Path(tempfile.mkdtemp(prefix="readme-screen-"))
    work.mkdir(parents=True, exist_ok=True)
    commit = _commit()  # the code the rounds ran, before anything is written
    rounds = []
    for k in range(1, a.rounds + 1):
        r = one_round(a.budget, work, k)
        rounds.append(r)
        print(
            f"round {k}: {r['command']}: {r['wall']:.1f} s wall, load {r['before']:.2f} before, {r['after']:.2f} after",
            flush=True,
        )
    cores = os.cpu_count() or 0
    when = rounds[0]["started"].strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"\n## {when}, commit {commit}, {cores} cores ({platform.processor() or platform.machine()})\n",
        f"`python benchmarks/readme_screen.py{'' if a.budget == DEFAULT_BUDGET else f' --budget {a.budget:g}'}"
        f" --rounds {a.rounds}`: `{rounds[0]['command']}`, {a.rounds} round(s) back to back, stdout piped.\n",
        "| round | wall (s) | load before | load after |",
        "| --- | --- | --- | --- |",
        *(f"| {k} | {r['wall']:.1f} | {r['before']:.2f} | {r['after']:.2f} |" for k, r in enumerate(rounds, 1)),
        f"\nREADME figure: {stated(rounds)}.",
    ]
    with RESULTS.open("a") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    if a.no_readme:
        return
    last = rounds[-1]
    shutil.copyfile(last["record"], RECORD)
    ORIGIN.write_text(
        f"# Origin of {RECORD.name}\n\nA real `{last['command']}` (`python benchmarks/readme_screen.py`), "
        f"round {len(rounds)} of {len(rounds)}, on a {cores}-core machine without a GPU, started "
        f"{last['started']:%Y-%m-%d %H:%M UTC}, load average {last['before']:.2f} before and {last['after']:.2f} "
        f"after (other work on the machine), {last['wall']:.1f} s wall, code at commit {commit}. "
        "The README's sample screen is this record rendered by `whichdevice report`.\n"
    )
    readme = README.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        raise SystemExit(f"README.md has no {BEGIN} … {END} block")
    block = readme_block(rounds, render(RECORD), cores)
    README.write_text(pattern.sub(lambda _m: block, readme, count=1))
    print(f"README.md's sample screen: {RECORD.relative_to(ROOT)}, rendered; {ORIGIN.relative_to(ROOT)} written")


if __name__ == "__main__":
    main()
