"""The figures of benchmarks/diagnose_torch.md: `whichdevice diagnose --framework torch` run as a
user runs it, then every case's measurement and every fix's claim read back from its record.

    python benchmarks/diagnose_torch.py -- --model /tmp/mnist.py:Net --input-shape 1,28,28 --classes 10

Everything after ``--`` goes to ``whichdevice diagnose --framework torch`` unchanged (add
``--budget``, ``--cpu-threads``...). The script prints the command, the date, ``uptime`` before
and after (the machine is shared: say how busy it was), the wall time, the first screen, and a
table of the record: each case's first step, steady median, samples, rounds; then each torch
fix's claim (the catalogue's torch entries, workloads/fixes.TORCH_FIXES) or why it was not measured. ``--record FILE`` reads an
existing record instead of running.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _table(record_path: Path) -> None:
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.core.records import load_run
    from whichdevice.present import fixes as fixwords
    from whichdevice.present.claims import ratio_text

    record = load_run(record_path)
    o = record.options
    if "fixes_planned" in o:  # the plan sized to the budget (workloads/torch_diagnose.size_cases)
        print(
            f"\nplan: pre-flight {o.get('preflight_s') or 0:.1f} s, its step {o['preflight_step_s'] * 1e3:.3g} ms; "
            f"rounds {o.get('rounds_planned')}; fixes {', '.join(o['fixes_planned']) or 'none'}; "
            f"sweep {o.get('sweep_batches')}; cases' wall {sum(r.wall_s for r in record.results):.0f} s"
        )
        for line in o.get("budget_cut") or []:
            print(f"  cut: {line}")
    print("\n| case | first step | steady median | samples | rounds | status |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in record.results:
        p = r.spec.params
        label = " ".join(f"{k}={p[k]}" for k in ("kind", "op", "batch", "sync", "data", "num_workers", "fix") if k in p)
        if "fix" in p:
            label += f" ({p['fix']}={p[p['fix']]})"
        if r.status != "ok" or r.timing is None:
            print(f"| {label} | | | | | {r.status}: {(r.error or '')[:80]} |")
            continue
        t = r.timing
        rounds = len(t.rounds_s) if t.rounds_s else 1
        print(
            f"| {label} | {t.first_call_s * 1e3:.3g} ms | {t.median_s * 1e3:.3g} ms | {len(t.samples_s)} | {rounds} | ok |"
        )
    print("\n| torch fix | claim (per sample, baseline / fix) |")
    print("| --- | --- |")
    v = suite_verdict(record, seed_batch=int(record.options.get("batch", 32)))
    for fv in v.fixes:
        if fv.entry.framework != "torch":
            continue
        for f in fv.fixes:
            print(f"| {fv.entry.short} ({f.device}) | {ratio_text(f.claim)} |")
        if not fv.fixes and fv.not_measured is not None:
            print(f"| {fv.entry.short} | {fixwords.not_measured_text(fv.not_measured, 'diagnose')} |")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", type=Path, help="read this record instead of running")
    args, rest = ap.parse_known_args(argv)
    rest = [a for a in rest if a != "--"]
    if args.record:
        _table(args.record)
        return 0
    out = Path(tempfile.mkdtemp(prefix="diagnose-torch-"))
    json_file = out / "diagnose.json"
    cmd = ["whichdevice", "diagnose", "--framework", "torch", *rest, "--out", str(out), "--json", str(json_file)]
    print("command:", " ".join(cmd))
    print("date:", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    print("uptime before:", _uptime())
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "whichdevice", *cmd[1:]])
    print(f"wall: {time.monotonic() - t0:.0f} s, exit {done.returncode}")
    print("uptime after:", _uptime())
    if json_file.exists():
        _table(json_file)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
