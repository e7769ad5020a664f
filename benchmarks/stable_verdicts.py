"""Do ``diagnose SCRIPT.py``'s fix verdicts survive a second run? Three runs of each script, and
the fixes each run recommends, with the machine's load.

    python benchmarks/stable_verdicts.py --out /tmp/stable        # the defaults below
    python benchmarks/stable_verdicts.py --runs 3 --budget 60 --out /tmp/stable \\
        tests/data/input_bound_loader.py tests/script_corpus/torch_cnn.py
    # the same runs measured by another checkout's code (to compare before and after a change):
    python benchmarks/stable_verdicts.py --src /path/to/other/src --out /tmp/stable-before
    # score runs already made (each script's answers run by run, and whether they agree):
    python benchmarks/stable_verdicts.py --summary /tmp/stable/runs.jsonl [more runs.jsonl ...]

Each run is ``whichdevice diagnose SCRIPT --budget B --json ... --quiet`` in a subprocess, on a copy
of the script in ``OUT/work`` (its working folder), with ``OUT/home`` as its history
(``WHICHDEVICE_HOME``: the runs of one OUT share it, as a user's runs share ``~/.whichdevice``, so a
run's plan keeps the last run's where the costs moved little; ``plan_kept`` in the rows); then the
record is judged by the same code (``--src`` on ``PYTHONPATH`` for both) and each catalogue fix's
verdict written as the fix table words it: "helps: 5.8× faster (95 % CI 3.2–10.4×, 2 rounds)",
"not enough samples: ...", "no clear change ...". The table per script lists, run by run, the fixes
recommended (helps), then every fix's verdict; the 1-minute load average (``os.getloadavg``) is read
before and after each run, and the machine's logical cores. Rows append to ``OUT/runs.jsonl``; the
markdown goes to stdout.

A verdict is stable when the three runs recommend the same fixes, and a fix the runs disagree on
is "not enough samples" in at least all but one of them (never "helps" in one and "slower" or
"no clear change" in another).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = [ROOT / "tests" / "data" / "input_bound_loader.py", ROOT / "tests" / "script_corpus" / "torch_cnn.py"]


def judge(record: Path) -> dict:
    """Each fix's verdict on ``record`` in the fix table's words (run with the code under test)."""
    from whichdevice.analysis import facade
    from whichdevice.core.records import RunRecord
    from whichdevice.present.claims import ratio_text
    from whichdevice.present.fixes import not_measured_text

    rec = RunRecord.model_validate_json(record.read_text())
    out: dict[str, str] = {}
    helps: list[str] = []
    # the verdict the screens show: for a diagnose, the batch grid is the user's batch's (facade.suite),
    # where suite_verdict's default reads the built-in suite's batch 10 and finds no batch pair
    for v in facade.suite(rec).verdict.fixes:
        if v.outcome == "not_measured":
            why = v.not_measured
            if why is None or why.reason in ("not_in_suite", "no_gpu", "default", "none_larger"):
                continue
            out[v.kind] = not_measured_text(why, "diagnose")
            continue
        best = v.best or (v.deciding[0] if v.deciding else None)
        what = f"{best.baseline} → {best.variant}: " if best is not None else ""
        out[v.kind] = f"{v.outcome}: {what}{ratio_text(best.claim) if best is not None else ''}"
        if v.outcome == "helps":
            helps.append(f"{v.kind} {what}{ratio_text(best.claim) if best is not None else ''}")
    rounds = [len(r.timing.rounds) for r in rec.results if r.status == "ok" and r.timing is not None]
    further = [n for n in rec.notes if "cases again, those whose pairs" in n]
    return {"verdicts": out, "recommended": helps, "rounds_max": max(rounds or [0]), "further_rounds": further}


def one_run(script: Path, budget: float, out: Path, src: str | None, i: int) -> dict:
    """One ``diagnose`` of a copy of ``script`` in ``OUT/work``: diagnose puts the user's folder (the
    script's and the working one) back as it was after the run, so a checkout edited meanwhile would
    be put back too."""
    record = (out / f"{script.stem}.run{i}.json").absolute()
    work = out / "work"
    work.mkdir(exist_ok=True)
    copy = work / script.name
    shutil.copy2(script, copy)
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = str(Path(src).absolute())
    # the runs' own history, shared by the runs of one OUT as a user's runs share ~/.whichdevice: a
    # run's plan keeps the last run's of the same command (scriptplan.KEEP_PLAN)
    env["WHICHDEVICE_HOME"] = str((out / "home").absolute())
    cmd = [sys.executable, "-m", "whichdevice", "diagnose", copy.name, "--budget", f"{budget:g}"]
    cmd += ["--json", str(record), "--out", str((out / f"{script.stem}.run{i}").absolute()), "--quiet"]
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=work)
    wall = time.monotonic() - t0
    row = {"script": script.name, "run": i, "exit": done.returncode, "wall_s": round(wall, 1)}
    row |= {"load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2), "cores": os.cpu_count()}
    if not record.exists():
        row["error"] = (done.stderr.strip().splitlines() or [""])[-1][:300]
        return row
    judged = subprocess.run(
        [sys.executable, __file__, "--judge", str(record)], capture_output=True, text=True, check=False, env=env
    )
    try:
        row |= json.loads(judged.stdout)
    except json.JSONDecodeError:
        row["error"] = (judged.stderr.strip().splitlines() or [""])[-1][:300]
    notes = json.loads(record.read_text(encoding="utf-8")).get("notes") or []
    row["plan_kept"] = next((n for n in notes if n.startswith("The plan: planned as the last run")), "")
    return row


def table(rows: list[dict]) -> list[str]:
    """The markdown of one script's runs: recommended fixes, then each fix's verdict per run."""
    lines = ["| run | load (before → after) | wall s | most rounds | recommended |", "|---|---|---|---|---|"]
    for r in rows:
        rec = "; ".join(r.get("recommended") or []) or r.get("error") or "none"
        lines.append(
            f"| {r['run']} | {r['load_before']} → {r['load_after']} | {r['wall_s']} | {r.get('rounds_max', '-')} | "
            f"{rec} |"
        )
    kinds = sorted({k for r in rows for k in (r.get("verdicts") or {})})
    if kinds:
        lines += ["", "| fix | " + " | ".join(f"run {r['run']}" for r in rows) + " |"]
        lines.append("|---|" + "---|" * len(rows))
        for k in kinds:
            lines.append(f"| {k} | " + " | ".join((r.get("verdicts") or {}).get(k, "-") for r in rows) + " |")
    return lines


def _kind(verdict: str) -> str:
    """A verdict's outcome alone: helps, slower, no clear change, not enough samples, not measured."""
    return verdict.split(":", 1)[0].strip()


def _answer(row: dict) -> str:
    """What a run answered: the fixes it recommends ("none"), or that it refused (exit 2), measured
    no case that decides the answer (exit 1, its record written: "no baseline"), or failed."""
    if row.get("exit") == 2:
        return "refused"
    if row.get("exit") == 1 and not row.get("error"):
        return "no baseline"
    if row.get("exit") not in (0, None) or row.get("error"):
        return "error"
    return "; ".join(sorted(r.split(" ", 1)[0] for r in row.get("recommended") or [])) or "none"


def stable(rows: list[dict]) -> bool:
    """The rule of this file's docstring: the runs recommend the same fixes, and no fix reads
    "helps" in one run and "slower" or "no clear change" in another."""
    if len({_answer(r) for r in rows}) != 1:
        return False
    for fix in {k for r in rows for k in (r.get("verdicts") or {})}:
        kinds = {_kind((r.get("verdicts") or {}).get(fix, "-")) for r in rows}
        if "helps" in kinds and kinds & {"slower", "no clear change"}:
            return False
    return True


def summary(files: list[Path]) -> list[str]:
    """One line per script over the rows of ``runs.jsonl`` files: the loads, each run's answer,
    and whether the runs agree by :func:`stable`; then the count."""
    by: dict[str, list[dict]] = {}
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            by.setdefault(row["script"], []).append(row)
    lines = [
        "| script | runs | load (before, lowest–highest) | answers, run by run | same answer |",
        "|---|---|---|---|---|",
    ]
    agree = 0
    for name, rows in sorted(by.items()):
        loads = [r["load_before"] for r in rows]
        ok = stable(rows)
        agree += ok
        answers = " / ".join(_answer(r) for r in rows)
        lines.append(
            f"| {name} | {len(rows)} | {min(loads):.1f}–{max(loads):.1f} | {answers} | {'yes' if ok else 'no'} |"
        )
    lines += ["", f"{agree} of {len(by)} scripts gave the same answer in every run."]
    return lines


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--budget", type=float, default=60.0)
    p.add_argument("--out", type=Path)
    p.add_argument("--src", help="the code to measure and judge with (put first on PYTHONPATH)")
    p.add_argument("--judge", type=Path, help=argparse.SUPPRESS)  # one record's verdicts, as JSON
    p.add_argument("--summary", nargs="+", type=Path, help="score earlier runs: their runs.jsonl files")
    p.add_argument(
        "--rejudge", type=Path, help="judge the records in this --out folder again (the judge changed), run nothing"
    )
    p.add_argument("scripts", nargs="*", type=Path)
    ns = p.parse_args(argv)
    if ns.rejudge:
        rows = [json.loads(line) for line in (ns.rejudge / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
        for row in rows:
            record = ns.rejudge / f"{Path(row['script']).stem}.run{row['run']}.json"
            if record.exists():
                row.update(judge(record))
        (ns.rejudge / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return 0
    if ns.summary:
        print("\n".join(summary(ns.summary)))
        return 0
    if ns.judge:
        print(json.dumps(judge(ns.judge)))
        return 0
    if ns.out is None:
        p.error("--out is required: the folder for the records (e.g. --out /tmp/stable)")
    ns.out.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} logical cores; load at start {os.getloadavg()[0]:.2f}; budget {ns.budget:g} s\n")
    for script in ns.scripts or SCRIPTS:
        rows = []
        for i in range(1, ns.runs + 1):
            row = one_run(script, ns.budget, ns.out, ns.src, i)
            with open(ns.out / "runs.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            rows.append(row)
        print(f"### {script.name}\n")
        print("\n".join(table(rows)) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
