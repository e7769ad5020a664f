"""The public-code check: run whichdevice on public examples as a user would, and list
the lines of its first screen that break one of the "every claim true" rules.

    python benchmarks/public_check_39.py FOLDER [--budget 30] [--out DIR] [--only NAME,...]

FOLDER holds one .py file per public example (renditions of keras-io, pytorch/examples and forum
scripts; their code is not ours, so it is never in this repository: benchmarks/public_check_39.md
names the sources). A file that defines ``def build(`` is a model, run as
``whichdevice diagnose --model FILE:build --budget B`` plus the arguments of its
``# whichdevice-args: ...`` line; any other file is a timing script, run as
``whichdevice audit FILE``. When diagnose refuses the budget with "Pass --budget N" (exit 2), it
is run once more with that budget, as a user would.

Each screen is checked by simple rules (the checks below, one function each):
  claim      a ratio claim ("N× faster/slower", the audit's real ratio) without an interval and
             a sample count;
  thin       "no clear change" from fewer than 3 rounds (or n < 5 samples);
  skipped    a skipped case called failed (on the screen, or status "failed" in the record for
             a case the budget skipped);
  batch      "a larger batch" claimed while no batch above the user's ran;
  wide       "no clear change" (in --verbose's fix table) whose interval cannot rule out a 2× change;
  nothing    "No measured change helps" on a screen where no change was measured;
  warmup     the fix table's warm-up check "overstates the steady cost" at a ratio below 1;
  reason     "not measured (one side did not run)" in a run whose plan cut cases for the budget;
  words      another framework's words (tf.function in a torch run, torch.compile in a JAX script);
  synced     an audit row of a JAX script that saw no work and no host read, yet reads "synced yes";
  converge   "did not converge" with an interval inside its target;
  budget     diagnose wall > 1.3 × budget × devices + start-up (the pre-flight and each
             measuring process's framework import, read from the record);
  crash      a traceback from whichdevice, or exit 2 without one "error: --ARG" line.
The screen is printed 400 columns wide so that no claim is folded across lines.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ARGS = re.compile(r"^#\s*whichdevice-args:\s*(.*)$", re.M)
RATIO = re.compile(r"\d[\d.,]*\s*[×x]\s+(?:faster|slower)")
INTERVAL = re.compile(r"(?:CI|interval)[^)]*\d|\(\d[\d.]*\s*[-–]\s*\d[\d.]*[×x]?\)")
COUNT = re.compile(r"\bn\s*=\s*\d+|\d+\s+(?:rounds?|samples?)\b")
AUDIT_ROW = re.compile(r"^\W*(\d+) vs (\d+)\W.*?(\d[\d.]*) \((\d[\d.]*)-(\d[\d.]*)\)")
PASS_BUDGET = re.compile(r"Pass --budget (\d+)")
NOT_CONVERGED = re.compile(r"did not converge — its median's 95 % interval is ±(\d+)% \(target ±(\d+) %\)")
QUOTED = re.compile(r"(?:^|— )\s*line \d+: .*$")  # a script line the audit quotes

# Words that belong to one framework only; a screen about another framework must not use them.
WORDS = {
    "tensorflow": ["tf.function", "tf.data", "jit_compile", "steps_per_execution", "model.fit"],
    "torch": ["torch.compile", "nn.Module", "DataLoader", "pin_memory", "torch.cuda.synchronize"],
    "jax": ["jax.jit", "block_until_ready"],
}
FOREIGN = {
    "tensorflow": WORDS["torch"] + WORDS["jax"],
    "keras": WORDS["torch"],
    "torch": WORDS["tensorflow"] + WORDS["jax"],
    "jax": WORDS["tensorflow"] + WORDS["torch"],
}


@dataclass
class Run:
    name: str
    command: list[str]
    wall_s: float
    code: int
    screen: str
    record: dict | None
    retried_from: str = ""
    broken: list[tuple[str, str]] = field(default_factory=list)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["COLUMNS"] = "400"
    return env


def _command(path: Path, budget: float, out: Path) -> list[str]:
    text = path.read_text()
    json_file = out / (path.stem + ".json")
    base = [sys.executable, "-m", "whichdevice"]
    if "def build(" not in text:
        return [*base, "audit", path.name, "--out", str(out), "--json", str(json_file)]
    m = ARGS.search(text)
    extra = m.group(1).split() if m else []
    model = f"{path.name}:build"
    return [
        *base,
        "diagnose",
        "--model",
        model,
        "--budget",
        f"{budget:g}",
        *extra,
        "--out",
        str(out),
        "--json",
        str(json_file),
    ]


def run_one(path: Path, budget: float, out: Path) -> Run:
    cmd = _command(path, budget, out)
    json_file = Path(cmd[cmd.index("--json") + 1])
    json_file.unlink(missing_ok=True)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=path.parent, capture_output=True, text=True, env=_env())
    wall = time.perf_counter() - t0
    record = json.loads(json_file.read_text()) if json_file.exists() else None
    return Run(path.name, cmd, wall, done.returncode, done.stdout + done.stderr, record)


def run_as_user(path: Path, budget: float, out: Path) -> Run:
    """Run the example; when diagnose asks for a larger --budget, run it once more with it."""
    run = run_one(path, budget, out)
    m = PASS_BUDGET.search(run.screen)
    if run.code == 2 and m and "diagnose" in run.command:
        first = run.screen.strip().splitlines()[-1]
        run = run_one(path, float(m.group(1)), out)
        run.retried_from = f"--budget {budget:g} refused (exit 2): {first}"
    rescore(run, path, out)
    return run


def rescore(run: Run, path: Path, out: Path) -> None:
    rows = fix_table(run, out)
    run.broken = check(run, path.read_text()) + check_wide(rows) + check_warmup(rows)


# ------------------------------------------------------------------------------ the checks


def _tool_lines(screen: str) -> list[str]:
    """The screen's lines with what the audit quotes of the script cut off."""
    return [QUOTED.sub("", line) for line in screen.splitlines()]


def check_claims(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        if "script" in line and ("claims" in line or "ratio" in line):
            continue  # the script's own ratio, quoted
        if RATIO.search(line) and not (INTERVAL.search(line) and COUNT.search(line)):
            out.append(("claim", line.strip()))
    return out


def check_audit_rows(lines: list[str]) -> list[tuple[str, str]]:
    """The audit's corrected ratios: each row's interval is on the row, its count in its note."""
    notes = "\n".join(line for line in lines if line.strip().startswith("lines "))
    out = []
    for line in lines:
        m = AUDIT_ROW.search(line)
        if not m:
            continue
        note = re.search(rf"lines {m.group(1)} vs {m.group(2)}:.*?(\d+) rounds", notes)
        if not note:
            out.append(("claim", line.strip() + "  [no round count in its note]"))
    return out


def check_thin(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        if "no clear change" not in line.lower():
            continue
        n = re.search(r"\bn\s*=\s*(\d+)|(\d+) rounds?", line)
        count = int(next(g for g in n.groups() if g)) if n else None
        if count is not None and count < 3:
            out.append(("thin", line.strip()))
    return out


NO_CHANGE = re.compile(r"no clear change \(([\d.]+)×, CI ([\d.]+)–([\d.]+)×, n=(\d+)")


def fix_table(run: Run, out: Path) -> list[str]:
    """The fix table of ``report --verbose`` (a diagnose's record), one row a line."""
    if not run.record or "diagnose" not in run.command:
        return []
    json_file = run.command[run.command.index("--json") + 1]
    cmd = [sys.executable, "-m", "whichdevice", "report", json_file, "--verbose", "--out", str(out / "verbose")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    return [ln for ln in done.stdout.splitlines() if re.match(r"^│ \d+\. ", ln)]


def check_wide(rows: list[str]) -> list[tuple[str, str]]:
    """A first-screen "No clear change" whose fix-table interval reaches below 0.5× or above 2×: it
    cannot rule out a 2× change, so it is too few samples, not "no clear change"."""
    out = []
    for row in rows:
        for m in NO_CHANGE.finditer(row):
            lo, hi = float(m.group(2)), float(m.group(3))
            if lo < 0.5 or hi > 2.0:
                cells = [c.strip() for c in row.strip("│ ").split("│")]
                out.append(("wide", f"{cells[0]}: {m.group(0)})  [cannot rule out a 2× change]"))
    return out


def check_skipped(lines: list[str], record: dict | None) -> list[tuple[str, str]]:
    out = [("skipped", ln.strip()) for ln in lines if re.search(r"failed[^.]*skipped|skipped[^.]*failed", ln)]
    for r in (record or {}).get("results", []):
        failure = str(r.get("failure") or "")
        if r.get("status") == "failed" and re.search(r"skip|budget", failure):
            out.append(("skipped", f"record: case {r.get('spec', {}).get('params', {})} status failed ({failure})"))
    return out


def _ok_batches(record: dict) -> set[int]:
    """The batches measured: a case's own, or its typed variant's where it is a batch (records of
    schema 5 keep the variant apart from the parameters, which hold the user's batch)."""
    found = set()
    for r in record.get("results", []):
        spec = r.get("spec") or {}
        variant = spec.get("variant") or {}
        b = variant.get("value") if variant.get("fix") == "batch" else spec.get("params", {}).get("batch")
        if (
            r.get("status") == "ok"
            and isinstance(b, int)
            and (r.get("spec") or {}).get("params", {}).get("kind") != "create"
        ):
            found.add(b)
    return found


def check_batch(lines: list[str], record: dict | None) -> list[tuple[str, str]]:
    if not record or "batch" not in record.get("options", {}):
        return []
    user = int(record["options"]["batch"])
    larger = [b for b in _ok_batches(record) if b > user]
    out = []
    for line in lines:
        low = line.lower()
        if "larger batch" in low and "not measured" not in low and not larger:
            out.append(("batch", line.strip() + f"  [no batch above {user} ran]"))
    return out


def check_reason(lines: list[str], record: dict | None) -> list[tuple[str, str]]:
    """ "Not measured: ... (one side did not run)" in a run whose plan cut cases for the budget
    (its notes say what): the reason a user needs is the budget."""
    if not (record or {}).get("options", {}).get("budget_cut"):
        return []
    return [("reason", ln.strip() + "  [the budget cut it]") for ln in lines if "(one side did not run)" in ln]


def script_framework(text: str) -> str:
    if re.search(r"^\s*import torch|^\s*from torch", text, re.M):
        return "torch"
    if re.search(r"^\s*import jax|^\s*from jax", text, re.M):
        return "jax"
    return "tensorflow"


def check_words(lines: list[str], framework: str) -> list[tuple[str, str]]:
    words = FOREIGN.get(framework, [])
    return [("words", ln.strip()) for ln in lines if any(w in ln for w in words)]


def check_nothing(lines: list[str]) -> list[tuple[str, str]]:
    """ "No measured change helps" when the screen lists no measured change at all (only "Not measured")."""
    text = " ".join(lines)
    if "No measured change helps significantly here." not in text:
        return []
    measured = ("Slower here:", "No clear change:", "Not enough samples to tell:", "Also helps:", "Already the default")
    if "Not measured:" in text and not any(m in text for m in measured):
        return [("nothing", "No measured change helps significantly here.  [no change was measured]")]
    return []


def check_warmup(rows: list[str]) -> list[tuple[str, str]]:
    """A warm-up check that says the first step "overstates" the steady cost at a ratio below 1."""
    out = []
    for row in rows:
        m = re.search(r"\((\d[\d.]*)x\): a one-step or first-epoch timing overstates", row)
        if m and float(m.group(1)) < 1:
            out.append(("warmup", row.strip("│ ").split("│")[-1].strip()))
    return out


def check_converge(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        m = NOT_CONVERGED.search(line)
        if m and int(m.group(1)) <= int(m.group(2)):
            out.append(("converge", line.strip()))
    return out


def check_synced(lines: list[str], record: dict | None) -> list[tuple[str, str]]:
    """A JAX row of the audit's timing table whose interval saw no work and no host read (the
    record's measurement) yet reads "synced yes"."""
    unseen = {
        str(m.get("line"))
        for m in (record or {}).get("measurements", [])
        if m.get("framework") == "jax"
        and not (m.get("ran_on") or m.get("fn_calls") or m.get("syncs"))
        and not m.get("eager_ops")
        and not m.get("unsynced_gpu_end")
    }
    out = []
    for line in lines:
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 8 and cells[0] in unseen and cells[7] == "yes":
            out.append(("synced", line.strip() + "  [no JAX work or host read seen, yet 'synced yes']"))
    return out


def startup_s(record: dict) -> float:
    o = record.get("options", {})
    return float(o.get("preflight_s") or 0) + sum(float(s.get("import_s") or 0) for s in record.get("sessions", []))


def check_budget(run: Run) -> list[tuple[str, str]]:
    if not run.record or "diagnose" not in run.command:
        return []
    budget = float(run.record.get("options", {}).get("budget_s") or 0)
    devices = max(1, len(run.record.get("sessions", [])))
    allowed = 1.3 * budget * devices + startup_s(run.record)
    if budget and run.wall_s > allowed:
        return [("budget", f"wall {run.wall_s:.0f} s > 1.3 × {budget:g} s × {devices} + start-up = {allowed:.0f} s")]
    return []


def check_crash(run: Run) -> list[tuple[str, str]]:
    # a traceback through whichdevice's own code (the audited script's own traceback is its own)
    ours = re.search(r'Traceback \(most recent call last\):\n(?:\s+.*\n)*?\s+File "[^"]*/whichdevice/', run.screen)
    out = [("crash", "a traceback from whichdevice")] if ours else []
    if run.code == 2 and len(re.findall(r"^error: --\S+", run.screen, re.M)) != 1:
        out.append(("crash", "exit 2 without one 'error: --ARG' line"))
    return out


def check(run: Run, text: str) -> list[tuple[str, str]]:
    lines = _tool_lines(run.screen)
    if "audit" in run.command:
        lines = lines[next((i for i, ln in enumerate(lines) if ln.startswith("whichdevice audit  ")), len(lines)) :]
        framework = script_framework(text)
    else:
        framework = str((run.record or {}).get("options", {}).get("framework") or "tensorflow").split("-")[0]
    return [
        *check_claims(lines),
        *check_audit_rows(lines),
        *check_thin(lines),
        *check_skipped(lines, run.record),
        *check_batch(lines, run.record),
        *check_reason(lines, run.record),
        *check_words(lines, "jax" if framework == "keras" and "jax" in str(run.command) else framework),
        *check_converge(lines),
        *check_nothing(lines),
        *check_synced(lines, run.record),
        *check_budget(run),
        *check_crash(run),
    ]


# ------------------------------------------------------------------------------ main


def saved(path: Path, out: Path) -> Run:
    """An example's run as saved in ``out`` (its screen, its record, ``.run.json``)."""
    meta = json.loads((out / (path.stem + ".run.json")).read_text())
    json_file = Path(meta["command"][meta["command"].index("--json") + 1])
    record = json.loads(json_file.read_text()) if json_file.exists() else None
    screen = (out / (path.stem + ".screen.txt")).read_text()
    return Run(path.name, meta["command"], meta["wall_s"], meta["code"], screen, record, meta["retried_from"])


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def report(run: Run, load_before: str) -> None:
    shown = " ".join(run.command[3:]).replace(str(run.command[-1]), Path(run.command[-1]).name)
    print(f"## {run.name}\n  command: whichdevice {shown}")
    if run.retried_from:
        print(f"  first try: {run.retried_from}")
    extra = f", start-up {startup_s(run.record):.0f} s" if run.record and "diagnose" in run.command else ""
    print(f"  wall {run.wall_s:.1f} s{extra}, exit {run.code}, load before {load_before}, after {load()}")
    for rule, line in run.broken or [("ok", "no line breaks a rule")]:
        print(f"  [{rule}] {line[:300]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/public_check_39"))
    ap.add_argument("--only", default="", help="comma-separated file names (default: every .py)")
    ap.add_argument("--rescore", action="store_true", help="check the screens and records saved in --out again")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    files = sorted(a.folder.resolve().glob("*.py"))
    if a.only:
        files = [f for f in files if f.name in a.only.split(",")]
    clean = 0
    for path in files:
        before = load()
        run = saved(path, a.out) if a.rescore else run_as_user(path, a.budget, a.out)
        if a.rescore:
            rescore(run, path, a.out)
        else:
            (a.out / (path.stem + ".screen.txt")).write_text(run.screen)
            meta = {"command": run.command, "wall_s": run.wall_s, "code": run.code, "retried_from": run.retried_from}
            (a.out / (path.stem + ".run.json")).write_text(json.dumps(meta))
        report(run, before)
        clean += not run.broken
    print(f"\nScore: {clean} of {len(files)} examples with no line that breaks a rule")


if __name__ == "__main__":
    main()
