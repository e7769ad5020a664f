"""`whichdevice audit` on the scripts of nine public "why is it slower on the GPU?" threads.

The scripts are the threads' own code, saved by hand under --dir (never committed: they are not
ours); each entry below names its file, the thread, the cause the thread's answer gives and the
audit rules that name that cause. Each script runs once plainly (`python SCRIPT`) and once under
`python -m whichdevice audit --json`, in --dir (the scripts read files there), one after the other.
Printed: one markdown row per script (plain and audited wall time, the findings, whether a
cause-naming rule fired, the verdict line), and the JSON of every run to --out.

    python benchmarks/audit_threads.py --dir /tmp/a33/threads --out /tmp/a33/threads.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

THREADS = [
    ("tf1532.py", "tensorflow/tensorflow#1532", "session set-up dominates one run", ["first_run_is_setup"]),
    ("tf24774.py", "tensorflow/tensorflow#24774", "one graph branch per element (map_fn)", ["per_element_loop"]),
    ("tf34231.py", "tensorflow/tensorflow#34231", "the clock is read while tracing", ["clock_read_while_tracing"]),
    (
        "tf39850.py",
        "tensorflow/tensorflow#39850",
        "tracing in the first call",
        ["setup_inside_timing", "first_includes_setup"],
    ),
    ("tf40708.ipynb", "tensorflow/tensorflow#40708", "scalar while_loop (tf.range); timeit", ["per_element_loop"]),
    ("pt2219.py", "pytorch/pytorch#2219", "launch overhead of tiny ops", ["latent_from_source", "dispatch_bound"]),
    ("pt2219_fallback.py", "pytorch/pytorch#2219 (fallback copy)", "launch overhead of tiny ops", ["dispatch_bound"]),
    (
        "pt_bpb.py",
        "torch.ones(4,4) b += b question",
        "10^6 tiny dependent ops",
        ["dispatch_bound", "latent_from_source"],
    ),
    ("pt_bpb_fallback.py", "b += b question (fallback copy)", "10^6 tiny dependent ops", ["dispatch_bound"]),
    (
        "pt33044.py",
        "pytorch/pytorch#33044",
        "asynchronous CUDA, no sync",
        ["latent_from_source", "gpu_timing_without_sync"],
    ),
    (
        "pt33044_fallback.py",
        "pytorch/pytorch#33044 (fallback copy, sizes cut)",
        "asynchronous CUDA, no sync",
        ["gpu_timing_without_sync"],
    ),
    ("keras_lstm.py", "Keras LSTM on CPU faster than GPU", "not on the cuDNN path", ["recurrent_layer"]),
]


def run(cmd: list[str], cwd: Path, timeout: float) -> dict:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return {
            "rc": p.returncode,
            "wall_s": time.perf_counter() - t0,
            "stdout": p.stdout[-20000:],
            "stderr": p.stderr[-4000:],
        }
    except subprocess.TimeoutExpired:
        return {"rc": None, "wall_s": time.perf_counter() - t0, "stdout": "", "stderr": "timeout"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-plain", action="store_true", help="skip the plain runs (audit only)")
    args = ap.parse_args()
    results = []
    for name, thread, cause, naming in THREADS:
        if args.only and args.only not in name:
            continue
        script = args.dir / name
        if not script.exists():
            print(f"| {thread} | missing: {script} |")
            continue
        plain = None
        if not args.no_plain and script.suffix == ".py":
            plain = run([sys.executable, str(script)], args.dir, 900)
        rec_path = args.out.with_suffix(f".{script.stem}.audit.json")
        env_cmd = [sys.executable, "-m", "whichdevice", "audit", "--json", str(rec_path), str(script)]
        audited = run(env_cmd, args.dir, 1200)
        record = json.loads(rec_path.read_text()) if rec_path.exists() else {}
        rules = [f["rule"] for f in record.get("findings", [])]
        out = " ".join(audited["stdout"].split())
        timed = [m for m in record.get("measurements", []) if not m.get("tracing")]
        row = {
            "script": name,
            "thread": thread,
            "cause": cause,
            "naming_rules": naming,
            "named": any(r in rules for r in naming),
            "rules": rules,
            "timings": len(timed),
            "no_timing_seen": "No timing seen" in out,
            "nothing_misleading_with_zero_timings": (not timed)
            and ("none misleading" in out or "nothing misleading" in out),
            "plain_wall_s": plain["wall_s"] if plain else None,
            "plain_rc": plain["rc"] if plain else None,
            "audit_wall_s": audited["wall_s"],
            "audit_rc": audited["rc"],
            "script_s": record.get("script_s"),
            "overhead": record.get("overhead"),
            "load": os.getloadavg()[0],
        }
        results.append({**row, "audit_stdout": audited["stdout"]})
        pw = f"{plain['wall_s']:.1f} s (rc {plain['rc']})" if plain else "—"
        print(
            f"| {thread} | {cause} | {pw} | {audited['wall_s']:.1f} s | {', '.join(rules) or '—'} | "
            f"{'yes' if row['named'] else 'NO'} | {len(timed)} | {row['load']:.1f} |",
            flush=True,
        )
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
