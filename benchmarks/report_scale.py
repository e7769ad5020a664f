"""report and compare on records with many samples per point.

Builds records from the recorded H200 runs in tests/data/h200/ with each point's samples
resampled (with a small jitter) to N samples, then times ``whichdevice report`` (the page on the
terminal: the plots are still drawn, into a scratch folder that is removed), ``report --markdown``
(no plots) and ``whichdevice compare`` of the record with itself, each a real
``python -m whichdevice`` run: wall seconds and CPU seconds of the process. Also times
``stats.median_ci`` alone.

    python benchmarks/report_scale.py [--samples 1000,3000] [--big-mb 50]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "h200"
WD = [sys.executable, "-m", "whichdevice"]


def resampled(src: Path, n: int, seed: int = 0) -> dict:
    """``src`` with each ok point's ``samples_s`` replaced by ``n`` draws of its own samples ×(1 ± 1 %)."""
    rng = random.Random(seed)
    data = json.loads(src.read_text())
    for r in data["results"]:
        timing = r.get("timing") or {}
        xs = timing.get("samples_s")
        if xs:
            timing["samples_s"] = [rng.choice(xs) * (1 + rng.uniform(-0.01, 0.01)) for _ in range(n)]
    return data


def padded_to(src: Path, mb: float) -> dict:
    """``src`` with samples added to every point until the JSON is about ``mb`` MB."""
    size = len(src.read_text())
    ok = [r for r in json.loads(src.read_text())["results"] if (r.get("timing") or {}).get("samples_s")]
    per_point = int((mb * 1e6 - size) / 22 / max(len(ok), 1))  # ~22 characters a sample
    return resampled(src, per_point)


def timed(args: list[str], cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the process, exit code) of one real ``python -m whichdevice`` run."""
    env = {**os.environ, "WHICHDEVICE_HOME": str(cwd / "home"), "COLUMNS": "120"}
    c0, t0 = os.times(), time.perf_counter()
    p = subprocess.run([*WD, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    wall, c1 = time.perf_counter() - t0, os.times()
    cpu = c1.children_user + c1.children_system - c0.children_user - c0.children_system
    return wall, cpu, p.returncode


def median_ci_times(sizes: list[int]) -> list[tuple[int, float]]:
    sys.path.insert(0, str(HERE.parent / "src"))
    from whichdevice.core import stats

    rng = random.Random(1)
    out = []
    for n in sizes:
        xs = [rng.random() for _ in range(n)]
        t0 = time.perf_counter()
        stats.median_ci(xs)
        out.append((n, time.perf_counter() - t0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default="1000,3000")
    ap.add_argument("--big-mb", type=float, default=50.0)
    ap.add_argument("--source", default="run.json,matmul_torch.json")
    args = ap.parse_args()
    print("| record | samples per point | size | command | wall s | CPU s | exit |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="wd-report-scale-") as tmp:
        root = Path(tmp)
        for name in args.source.split(","):
            src = DATA / name
            builds = [(n, resampled(src, n)) for n in map(int, args.samples.split(","))]
            if args.big_mb:
                builds.append((0, padded_to(src, args.big_mb)))
            for n, data in builds:
                rec = root / f"{src.stem}-{n or 'big'}.json"
                rec.write_text(json.dumps(data))
                per = max(len((r.get("timing") or {}).get("samples_s") or []) for r in data["results"])
                size = f"{rec.stat().st_size / 1e6:.1f} MB"
                for cmd in (["report", str(rec)], ["report", str(rec), "--markdown"], ["compare", str(rec), str(rec)]):
                    wall, cpu, rc = timed(cmd, root)
                    what = " ".join(c for c in cmd if c != str(rec))
                    print(f"| {src.name} | {per} | {size} | {what} | {wall:.2f} | {cpu:.2f} | {rc} |", flush=True)
    for n, s in median_ci_times([1000, 2000, 3000, 100_000, 1_000_000]):
        print(f"| stats.median_ci alone | {n} | - | - | {s:.4f} | - | - |")


if __name__ == "__main__":
    main()
