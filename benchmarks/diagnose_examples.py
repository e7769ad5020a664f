"""`whichdevice diagnose` on users' models, run as a user runs it: the wall time
against the budget, every case's status, the samples behind each, the pre-flight's time and
what the budget cut. Prints one markdown row per model and a detail block.

    python benchmarks/diagnose_examples.py --budget 90 /tmp/kio/mnist_convnet.py:build -- --batch 128
    python benchmarks/diagnose_examples.py --budget 90 MODEL.py:FUNC [-- DIAGNOSE ARGS] [++ MODEL2 ...]

Models are separated by ``++``; the arguments after ``--`` go to ``diagnose`` for that model.
The models of the keras-io examples are not in this repository (their code is not ours):
benchmarks/diagnose.md says how they were extracted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def run_one(model: str, extra: list[str], budget: float, out: Path) -> dict:
    json_file = out / (Path(model.split(":")[0]).stem + ".json")
    cmd = [sys.executable, "-m", "whichdevice", "diagnose", "--model", model, "--budget", f"{budget:g}"]
    cmd += [*extra, "--json", str(json_file), "--out", str(out), "--quiet"]
    before = load()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    row = {"model": model, "args": " ".join(extra), "code": done.returncode, "wall_s": wall, "load": (before, load())}
    if not json_file.exists():
        row["error"] = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return row
    rec = json.loads(json_file.read_text())
    results = rec["results"]
    status = {}
    for r in results:
        key = "ok" if r["status"] == "ok" else (r.get("failure") or "failed")
        status[key] = status.get(key, 0) + 1
    samples = [len((r.get("timing") or {}).get("samples_s") or []) for r in results if r["status"] == "ok"]
    o = rec["options"]
    row.update(
        cases=len(results),
        status=status,
        min_samples=min(samples) if samples else 0,
        preflight_s=o.get("preflight_s"),
        import_s=[round(s["import_s"], 1) for s in rec["sessions"]],
        step_s=o.get("preflight_step_s"),
        samples_measured=o.get("samples_measured"),
        sweep=o.get("sweep_batches"),
        cut=o.get("budget_cut") or [],
        losses=o.get("losses"),
        failed=[
            (r["spec"]["params"].get("kind"), r["spec"]["params"].get("batch"), r.get("error"))
            for r in results
            if r["status"] != "ok"
        ],
    )
    return row


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=90.0)
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    groups, cur = [], []
    for tok in a.rest:
        if tok == "++":
            groups.append(cur)
            cur = []
        else:
            cur.append(tok)
    if cur:
        groups.append(cur)
    print(
        f"machine: {os.cpu_count()} cores; budget {a.budget:g} s per device; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(
        "| model | args | exit | wall s | wall / budget | pre-flight s | import s | cases | statuses | min samples | load before/after |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    with tempfile.TemporaryDirectory(prefix="diagnose-bench-") as tmp:
        for g in groups:
            model, extra = g[0], (g[2:] if len(g) > 1 and g[1] == "--" else g[1:])
            r = run_one(model, extra, a.budget, Path(tmp))
            rows.append(r)
            if "error" in r:
                print(
                    f"| {Path(model).name} | {r['args']} | {r['code']} | {r['wall_s']:.0f} | | | | | {r['error']} | | |"
                )
                continue
            pre = r["preflight_s"] or 0.0
            print(
                f"| {Path(model).name} | {r['args']} | {r['code']} | {r['wall_s']:.0f} | "
                f"{r['wall_s'] / a.budget:.2f} ({(r['wall_s'] - pre) / a.budget:.2f} after the pre-flight) | "
                f"{pre:.0f} | {r['import_s']} | {r['cases']} | {r['status']} | {r['min_samples']} | "
                f"{r['load'][0]} / {r['load'][1]} |",
                flush=True,
            )
    for r in rows:
        print(
            f"\n{Path(r['model']).name}: losses {r.get('losses')}, pre-flight step {r.get('step_s')} s, "
            f"epochs of {r.get('samples_measured')} samples, sweep {r.get('sweep')}"
        )
        for c in r.get("cut", []):
            print(f"  budget cut: {c}")
        for f in r.get("failed", []):
            print(f"  not measured: {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
