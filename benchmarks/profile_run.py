"""Where the wall time of `whichdevice run` goes: a profile, phase by phase.

Runs `python -m cProfile -m whichdevice run ...` once (the parent process profiled; the
measuring children are separate processes) and splits the command's wall time into:

- start-up: interpreter start and the imports before the command runs (wall time minus the
  CLI entry point's cumulative time),
- discovery: the child that lists the devices (``experiment.discover``),
- measuring children: ``session.measure`` minus discovery, split with the record into the
  children's framework imports (``Session.import_s``), the cases themselves (``wall_s``: warm-up,
  samples, set-up) and the rest (process start, the child's own imports, the parent's polling),
- analysis, plots, HTML and terminal: the parent's cumulative time in ``analysis/``,
  ``present/plots.py``, ``present/html.py`` / templates and the terminal renderers.

    python benchmarks/profile_run.py                      # this checkout's `whichdevice run`
    PYTHONPATH=/path/to/other/src python benchmarks/profile_run.py   # another version
    python benchmarks/profile_run.py -- --budget 30       # extra arguments for `run`

Figures depend on the machine's load: the report starts with it.
"""

from __future__ import annotations

import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def _cumulative(stats: pstats.Stats, predicate) -> float:
    """The largest cumulative time among functions matching ``predicate`` whose callers do not
    also match it (so nested calls are not counted twice)."""
    total = 0.0
    raw = stats.stats  # type: ignore[attr-defined]
    for key, (_, _, _, ct, callers) in raw.items():
        if not predicate(key):
            continue
        if any(predicate(c) for c in callers):
            continue
        total += ct
    return total


def main() -> None:
    extra = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="wd-profile-") as tmp:
        out = Path(tmp) / "out"
        prof = Path(tmp) / "run.prof"
        record = Path(tmp) / "run.json"
        cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "whichdevice", "run"]
        cmd += ["--out", str(out), "--json", str(record), *extra]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        wall = time.perf_counter() - t0
        if done.returncode not in (0, 1):
            raise SystemExit(f"whichdevice run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        stats = pstats.Stats(str(prof))
        data = json.loads(record.read_text())

    def in_file(*parts: str):
        return lambda key: any(p in key[0] for p in parts)

    def func(file_part: str, name: str):
        return lambda key: file_part in key[0] and key[2] == name

    entry = _cumulative(stats, func("whichdevice/cli/app.py", "main"))
    measure = _cumulative(stats, func("whichdevice/measure/session.py", "measure"))
    if measure == 0.0:  # before the one measuring path: the suite's own orchestrator
        measure = _cumulative(stats, func("whichdevice/suite.py", "measure_suite"))
    discovery = _cumulative(stats, func("whichdevice/measure/experiment.py", "discover"))
    analysis = _cumulative(stats, in_file("whichdevice/analysis/"))
    plots = _cumulative(stats, in_file("whichdevice/present/plots.py"))
    html = _cumulative(stats, in_file("whichdevice/present/html.py", "jinja2/"))
    imports_s = sum(s.get("import_s", 0.0) for s in data.get("sessions", []))
    cases_s = sum(r.get("wall_s", 0.0) for r in data.get("results", []))
    n_children = len(data.get("sessions", []))

    rows = [
        ("total wall time", wall),
        ("start-up (interpreter, imports before the command)", wall - entry),
        ("discovery child", discovery),
        ("measuring children", measure - discovery),
        (f"  of which framework imports in {n_children} children", imports_s),
        (f"  of which the {len(data.get('results', []))} cases (set-up, warm-up, samples)", cases_s),
        ("  of which process start, child set-up, polling", measure - discovery - imports_s - cases_s),
        ("analysis (parent; partly inside the plots and HTML below)", analysis),
        ("plots (matplotlib)", plots),
        ("HTML (jinja2)", html),
        ("the rest (terminal output, analysis outside plots/HTML, record, history)", entry - measure - plots - html),
    ]
    print(f"Load average (1, 5, 15 min) before: {load_before}; after: {_load()}; {os.cpu_count()} cores.")
    print(f"Command: whichdevice run {' '.join(extra)}  (exit {done.returncode})")
    print()
    print("| phase | seconds | share |")
    print("|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {100 * seconds / wall:.0f} % |")


if __name__ == "__main__":
    main()
