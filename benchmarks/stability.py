"""Do whichdevice's conclusions survive a second run?

Runs ``whichdevice run`` twice back to back with the same options, then ``whichdevice compare``
of the two, and reports:

- verdict lines: the rule findings (rule, device, what) of both runs, and how many agree;
- the input-bound class of every pipeline variant (one figure: share of the loop step spent
  waiting for the batch);
- the recommended settings (batch, steps_per_execution: ``analysis/suite.grid_pick``) and the device verdict;
- every fix claim (each A/B pair, analysis/fixes.py, plus the pipeline's prefetch and
  tf.py_function claims): how many are significant in either run and how many of those agree
  in direction in both;
- compare's false positives: cases flagged "beyond the noise" between the two identical runs;
- the sanity check (``--sanity``): a real change is still flagged — ``whichdevice matmul`` at
  n = 500, 1000 with ``--cpu-threads 1`` against the default (all cores).

Usage::

    python benchmarks/stability.py --out /tmp/stability [--budget 90] [--sanity]

The history database goes to OUT/home (``WHICHDEVICE_HOME``), so the user's is untouched. The
figures and the load (``uptime``) are printed as Markdown for benchmarks/stability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from whichdevice.analysis.diff import diff_runs
from whichdevice.analysis.pipeline import analyze_pipeline
from whichdevice.analysis.significance import Claim
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import RunRecord, load_run
from whichdevice.present.claims import ratio_text
from whichdevice.present.suitepage import finding_text, settings_advice
from whichdevice.workloads.suite import SEED_BATCH


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return time.monotonic() - t0, p.stdout


def _strip_numbers(text: str) -> str:
    return re.sub(r"[0-9][0-9.,×x%–-]*", "#", text)


def findings(rec: RunRecord) -> set[tuple[str, str, str]]:
    v = suite_verdict(rec)
    return {(f.rule, f.device, _strip_numbers(finding_text(f))) for f in v.findings}


def input_bound(rec: RunRecord) -> dict[str, str | None]:
    return {f"{rep.device} {r.variant}": r.input_bound for rep in analyze_pipeline(rec) for r in rep.rows}


def recommended(rec: RunRecord) -> dict[str, str]:
    """The recommended batch and steps_per_execution per device (the grid's pick, analysis/suite.py)
    and the device line of the settings advice."""
    out: dict[str, str] = {}
    v = suite_verdict(rec)
    for fv in v.fixes:
        if fv.entry.param not in ("batch", "steps_per_execution"):
            continue
        for device in sorted({f.device for f in fv.fixes}):
            picked = [f for f in fv.deciding if f.device == device and f.outcome == "helps"]
            out[f"{device} {fv.entry.param}"] = str(picked[0].variant) if picked else "none"
    out["device"] = next((line for line in settings_advice(v, SEED_BATCH) if line.startswith("Device:")), "")
    out["device"] = _strip_numbers(out["device"])
    return out


def fix_claims(rec: RunRecord) -> dict[str, Claim]:
    """Every measured pair of every catalogue fix, and every pipeline variant's speedup."""
    claims: dict[str, Claim] = {}
    for fv in suite_verdict(rec).fixes:
        for f in fv.fixes:
            where = " ".join(f"{k}={val}" for k, val in f.where.items())
            claims[f"{f.device} {fv.entry.param or fv.kind} {f.baseline}->{f.variant} ({where})"] = f.claim
    for rep in analyze_pipeline(rec):
        for r in rep.rows:
            for what, sp in (("pipeline alone", r.pipeline_speedup), ("loop", r.loop_speedup)):
                if sp is not None:
                    claims[f"{rep.device} pipeline {rep.baseline}->{r.variant} ({what})"] = sp.claim
    return claims


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget", default=None, help="--budget for both runs (default: run's own)")
    ap.add_argument("--sanity", action="store_true", help="also the real-change check on matmul")
    ap.add_argument("--reuse", action="store_true", help="analyse OUT/a.json and OUT/b.json again")
    args = ap.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "WHICHDEVICE_HOME": str(out / "home")}
    print(f"- load before: `{uptime()}`")
    times = {}
    for name in ("a", "b"):
        if args.reuse and (out / f"{name}.json").exists():
            continue
        cmd = ["whichdevice", "run", "--out", str(out / name), "--json", str(out / f"{name}.json")]
        if args.budget:
            cmd += ["--budget", str(args.budget)]
        times[name], _ = run(cmd, env)
        print(f"- `{' '.join(cmd)}`: {times[name]:.0f} s wall; load after: `{uptime()}`")
    a, b = load_run(out / "a.json"), load_run(out / "b.json")
    rounds = {
        n: sum(1 for r in rec.results if r.timing is not None and r.timing.rounds_s) for n, rec in (("a", a), ("b", b))
    }
    print(f"- cases measured in 2 rounds: run a {rounds['a']}, run b {rounds['b']} of {len(a.results)}")

    fa, fb = findings(a), findings(b)
    print(f"\n**Verdict lines (rule findings)**: {len(fa & fb)} of {len(fa | fb)} agree")
    for f in sorted(fa ^ fb):
        print(f"  - only in run {'a' if f in fa else 'b'}: {f[0]} {f[1]}: {f[2][:140]}")

    ia, ib = input_bound(a), input_bound(b)
    same_ib = [k for k in ia if k in ib and ia[k] == ib[k]]
    print(f"\n**Input-bound class**: {len(same_ib)} of {len(set(ia) | set(ib))} variants agree")
    for k in sorted(set(ia) | set(ib)):
        print(f"  - {k}: {ia.get(k)} / {ib.get(k)}")

    ra, rb = recommended(a), recommended(b)
    same_r = [k for k in ra if k in rb and ra[k] == rb[k]]
    print(f"\n**Recommended settings**: {len(same_r)} of {len(set(ra) | set(rb))} agree")
    for k in sorted(set(ra) | set(rb)):
        print(f"  - {k}: {ra.get(k)} / {rb.get(k)}")

    ca, cb = fix_claims(a), fix_claims(b)
    keys = sorted(set(ca) & set(cb))
    sig = [k for k in keys if ca[k].significant or cb[k].significant]
    agree = [k for k in sig if ca[k].status == cb[k].status]
    opposite = [
        k for k in sig if {ca[k].status, cb[k].status} == {"faster", "slower"}
    ]  # a direction flip, the worst case
    # 's "agree in direction": both runs' ratios on the same side of 1 (a claim significant
    # in one run and "no clear change" with the same sign in the other agrees in direction, not in class)
    same_side = [k for k in sig if (ca[k].ratio - 1) * (cb[k].ratio - 1) > 0]
    share = f"{len(agree) / len(sig):.0%}" if sig else "n/a"
    side = f"{len(same_side) / len(sig):.0%}" if sig else "n/a"
    print(
        f"\n**Fix claims**: {len(keys)} claims in both runs; {len(sig)} significant in at least one run; "
        f"{len(agree)} of those the same class in both ({share}); {len(same_side)} agree in direction "
        f"(ratios on the same side of 1: {side}); {len(opposite)} flip direction (significant both ways); "
        f"{sum(not ca[k].enough for k in keys)} / {sum(not cb[k].enough for k in keys)} not enough samples"
    )
    for k in keys:
        mark = "=" if ca[k].status == cb[k].status else "≠"
        print(f"  - {mark} {k}: {ca[k].text()} | {cb[k].text()}")

    d = diff_runs(a, b)
    flagged = [p for p in d.points if p.comparison is not None and p.comparison.significant]
    print(f"\n**compare of the two runs**: {len(flagged)} of {len(d.points)} cases flagged beyond the noise")
    for p in flagged:
        print(f"  - {p.label}: {ratio_text(p.comparison)}")
    _, text = run(["whichdevice", "compare", str(out / "a.json"), str(out / "b.json")], env)
    line = next((ln.strip() for ln in text.splitlines() if "changed beyond the noise" in ln), "")
    print(f"  - `whichdevice compare a.json b.json` says: {line}")

    if args.sanity:
        print("\n**Sanity: a real change is still flagged** (matmul steady n=500,1000, --cpu-threads 1 vs all cores)")
        for name, extra in (("one", ["--cpu-threads", "1"]), ("all", [])):
            cmd = ["whichdevice", "matmul", "--sizes", "500,1000", "--mode", "steady"]
            cmd += ["--out", str(out / name), "--json", str(out / f"{name}.json"), *extra]
            t, _ = run(cmd, env)
            print(f"- `{' '.join(cmd)}`: {t:.0f} s; load after: `{uptime()}`")
        s = diff_runs(load_run(out / "one.json"), load_run(out / "all.json"))
        for p in s.points:
            c = p.comparison
            print(f"  - {p.label}: {'FLAGGED' if c and c.significant else 'not flagged'}: {ratio_text(c) if c else ''}")
    summary = {
        "findings_agree": [len(fa & fb), len(fa | fb)],
        "input_bound_agree": [len(same_ib), len(set(ia) | set(ib))],
        "recommended_agree": [len(same_r), len(set(ra) | set(rb))],
        "fix_claims_significant": len(sig),
        "fix_claims_agree": len(agree),
        "fix_claims_same_direction": len(same_side),
        "fix_claims_flip": len(opposite),
        "compare_flagged": [len(flagged), len(d.points)],
        "wall_s": times,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
