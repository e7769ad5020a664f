"""Public training scripts under ``whichdevice diagnose``, scored as a user would judge the answer.

    python benchmarks/public_check_49.py FOLDER [--budget 60] [--out DIR] [--only NAME,...] [--rescore]

FOLDER holds one sub-folder per public script (its code is not ours, so it is never in this
repository; the .md beside this file names each source and commit). Each sub-folder holds the
script as fetched, with only its dataset swapped for random arrays of the same shapes, plus an
optional ``whichdevice.args`` file: its first line is what follows ``diagnose SCRIPT`` (``-- --epochs
2``), an optional ``env: KERAS_BACKEND=jax`` line sets the environment, and ``script: NAME.py``
names the script when the folder holds several files. The script is run in its own folder, as a
user runs it, and that folder is fingerprinted before and after.

The rules, each a function below (a run passes when it breaks none):
  entry      the record names the training entry it captured (``options.entry``);
  planned    every planned case was measured or is "not measured" with its reason: no case
             failed without its reason on the screen;
  wall       wall ≤ 1.3 × budget + 40 s;
  screen     the first screen (up to the first blank line after "What to change") says which
             device ("Answer:"), why it is slow (a cause, or why none was named) and what to
             change (a measured fix, or "No measured change helps" with what was and was not
             measured), in at most 25 lines;
  claims     every ratio claim carries its interval and its count (the rules of
             ``public_check_39.check``: claim, thin, skipped, batch, reason, words, nothing,
             converge, crash);
  folder     the script's folder reads the same afterwards (every path's type, size, SHA-256
             and modification time; ``__pycache__`` aside).
A refusal (exit 2) is scored as the user sees it: it passes "screen" only when it names the
step time it measured and a budget figure; it is not re-run here (the re-run figure's own check is
``benchmarks/refusal_rerun.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import public_check_39 as pc  # noqa: E402  (the claim rules are shared with the older check)

SCREEN_LINES = 25


def fingerprint(folder: Path) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for p in sorted(folder.rglob("*")):
        if "__pycache__" in p.parts:
            continue
        st = p.lstat()
        if p.is_file() and not p.is_symlink():
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            digest = ""
        out[str(p.relative_to(folder))] = (p.is_dir(), st.st_size if p.is_file() else 0, digest, st.st_mtime_ns)
    return out


def _args(folder: Path) -> tuple[str, list[str], dict[str, str]]:
    spec = folder / "whichdevice.args"
    extra: list[str] = []
    env: dict[str, str] = {}
    script = ""
    if spec.exists():
        lines = spec.read_text().splitlines()
        for i, ln in enumerate(lines):
            if ln.startswith("env:"):
                k, _, v = ln[4:].strip().partition("=")
                env[k] = v
            elif ln.startswith("script:"):
                script = ln[7:].strip()
            elif i == 0:
                extra = ln.split()
    if not script:
        pys = sorted(p.name for p in folder.glob("*.py"))
        script = pys[0] if len(pys) == 1 else "train.py"
    return script, extra, env


def run_one(folder: Path, budget: float, out: Path) -> tuple[pc.Run, dict[str, tuple], dict[str, tuple]]:
    script, extra, env_extra = _args(folder)
    json_file = out / (folder.name + ".json")
    json_file.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "whichdevice", "diagnose", script, "--budget", f"{budget:g}"]
    cmd += ["--out", str(out / folder.name), "--json", str(json_file)]
    # the script's own arguments go last, after "--"
    cmd += extra
    env = {**os.environ, "COLUMNS": "400", **env_extra}
    before = fingerprint(folder)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = fingerprint(folder)
    record = json.loads(json_file.read_text()) if json_file.exists() else None
    return pc.Run(folder.name, cmd, wall, done.returncode, done.stdout + done.stderr, record), before, after


def first_screen(screen: str) -> list[str]:
    lines = screen.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("whichdevice diagnose")), None)
    if start is None:
        return []
    body = lines[start:]
    # the screen ends at its pointer to the report, or (a screen short of room drops it) before the
    # lines saying where the files are; stderr's progress lines follow stdout in the capture
    end = next((i + 1 for i, ln in enumerate(body) if ln.startswith("Every table, the plots")), None)
    if end is None:
        end = next((i for i, ln in enumerate(body) if ln.startswith("Report: ")), len(body))
    return body[:end]


def check_entry(run: pc.Run) -> list[tuple[str, str]]:
    if run.code == 2:
        return []
    entry = ((run.record or {}).get("options") or {}).get("entry")
    return [] if entry else [("entry", "the record names no captured training entry")]


def check_planned(run: pc.Run) -> list[tuple[str, str]]:
    out = []
    for r in (run.record or {}).get("results", []):
        if r.get("status") == "failed":
            name = str((r.get("spec") or {}).get("name", "?"))
            why = str(r.get("error") or "")[:80]
            if not why or name not in run.screen and "failed" not in run.screen:
                out.append(("planned", f"{name} failed without its reason on the screen"))
    return out


def check_wall(run: pc.Run, budget: float) -> list[tuple[str, str]]:
    allowed = 1.3 * budget + 40
    return (
        [("wall", f"wall {run.wall_s:.0f} s > 1.3 × {budget:g} + 40 = {allowed:.0f} s")] if run.wall_s > allowed else []
    )


def check_screen(run: pc.Run) -> list[tuple[str, str]]:
    if run.code == 2:
        text = " ".join(run.screen.split())
        if "a training step took" in text:  # a step was timed: the refusal gives it and a figure that holds
            ok = bool(re.search(r"--budget \d+", text))
        else:  # nothing timed: it says why, in words that fit what happened, and what to do
            ok = bool(re.search(r"error: (?:SCRIPT|--[\w-]+): ", text))
        return [] if ok else [("screen", "a refusal without the step it timed and a figure, or without why")]
    lines = first_screen(run.screen)
    if not lines:
        return [("screen", "no first screen")]
    text = "\n".join(lines)
    out = []
    if len(lines) > SCREEN_LINES:
        out.append(("screen", f"first screen is {len(lines)} lines (> {SCREEN_LINES})"))
    if "Answer:" not in text:
        out.append(("screen", "no 'Answer:' line (which device)"))
    if "Why it is slow" not in text and "cause" not in text.lower():
        out.append(("screen", "no 'Why it is slow' (a cause, or why none was named)"))
    if "What to change" not in text and "No measured change helps" not in text:
        out.append(("screen", "no 'What to change'"))
    return out


def _names_argument(screen: str) -> bool:
    return len(re.findall(r"^error: (?:SCRIPT|--[\w-]+): ", screen, re.M)) == 1


def check_folder(before: dict[str, tuple], after: dict[str, tuple]) -> list[tuple[str, str]]:
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return [("folder", f"changed in the script's folder: {', '.join(changed[:5])}")] if changed else []


def score(run: pc.Run, folder: Path, budget: float, before: dict, after: dict) -> list[tuple[str, str]]:
    script, _, _ = _args(folder)
    claims = pc.check(run, (folder / script).read_text(errors="replace"))
    # the wall rule below is this check's own; an error names SCRIPT, the positional argument, too
    claims = [c for c in claims if c[0] != "budget" and not (c[0] == "crash" and _names_argument(run.screen))]
    fw = str(((run.record or {}).get("options") or {}).get("framework") or "")
    if fw.startswith("keras") or "keras.Model" in str(((run.record or {}).get("options") or {}).get("entry")):
        # Keras' own words (jit_compile, steps_per_execution) fit a Keras script on any backend
        claims = [c for c in claims if c[0] != "words" or any(w in c[1] for w in pc.WORDS["torch"])]
    return [
        *check_entry(run),
        *check_planned(run),
        *check_wall(run, budget),
        *check_screen(run),
        *claims,
        *check_folder(before, after),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/public_check_49"))
    ap.add_argument("--only", default="", help="comma-separated sub-folder names (default: every one)")
    ap.add_argument(
        "--rescore",
        action="store_true",
        help="score the runs saved in --out again (the rules changed), running nothing",
    )
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    folders = sorted(p for p in a.folder.resolve().iterdir() if p.is_dir())
    if a.only:
        folders = [f for f in folders if f.name in a.only.split(",")]
    passed = 0
    for folder in folders:
        saved = a.out / (folder.name + ".run.json")
        if a.rescore:  # the run as saved: its command, wall, exit, screen, record and the folder's prints
            kept = json.loads(saved.read_text())
            record_file = a.out / (folder.name + ".json")
            record = json.loads(record_file.read_text()) if record_file.exists() else None
            run = pc.Run(folder.name, kept["command"], kept["wall_s"], kept["code"], kept["screen"], record)
            before, after = kept["before"], kept["after"]
            load_before, load_after = kept["load_before"], kept["load_after"]
        else:
            load_before = pc.load()
            run, before, after = run_one(folder, a.budget, a.out)
            load_after = pc.load()
            kept = {"command": run.command, "wall_s": run.wall_s, "code": run.code, "screen": run.screen}
            kept |= {"before": before, "after": after, "load_before": load_before, "load_after": load_after}
            saved.write_text(json.dumps(kept))
        before, after = ({k: list(v) for k, v in d.items()} for d in (before, after))  # as JSON keeps them
        broken = score(run, folder, a.budget, before, after)
        (a.out / (folder.name + ".screen.txt")).write_text(run.screen)
        entry = ((run.record or {}).get("options") or {}).get("entry", "—")
        print(
            f"## {folder.name}: exit {run.code}, wall {run.wall_s:.1f} s, load {load_before}→{load_after}, entry {entry}"
        )
        for line in first_screen(run.screen)[1:4] if run.code != 2 else run.screen.strip().splitlines()[-2:]:
            print(f"   | {line[:200]}")
        for rule, line in broken or [("ok", "no rule broken")]:
            print(f"  [{rule}] {line[:300]}")
        passed += not broken
        sys.stdout.flush()
    print(f"\nScore: {passed} of {len(folders)} scripts break no rule (--budget {a.budget:g})")


if __name__ == "__main__":
    main()
