"""Figures for benchmarks/pipeline.md: runs `whichdevice pipeline` (the quick run and two
constructed cases) and prints the numbers the issue asks for from the saved records.

    python benchmarks/pipeline_figures.py OUT_DIR

Every number printed is read from the JSON records the runs wrote; nothing is typed in.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from whichdevice.analysis.pipeline import analyze_pipeline
from whichdevice.core.records import load_run
from whichdevice.present.claims import comparison_text

RUNS = {
    "quick": ["--quick"],
    "heavy-augment": [
        "--quick",
        "--net",
        "tiny",
        "--variants",
        "serial",
        "--heavy-stage",
        "augment",
        "--heavy-factor",
        "30",
    ],
    "heavy-parse": [
        "--quick",
        "--net",
        "tiny",
        "--variants",
        "cache",
        "--heavy-stage",
        "parse",
        "--heavy-factor",
        "30",
    ],
}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, args in RUNS.items():
        path = out / f"{name}.json"
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "whichdevice", "pipeline", *args, "--json", str(path)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - t0
        for rep in analyze_pipeline(load_run(path)):
            print(f"## {name}: wall {wall:.1f} s (whole command, TF import included), {rep.device}")
            for r in rep.rows:
                ps = comparison_text(r.pipeline_speedup) if r.pipeline_speedup else "baseline"
                ls = comparison_text(r.loop_speedup) if r.loop_speedup else "baseline"
                eps = f"{r.examples_per_s:,.0f}" if r.examples_per_s else "-"
                wait = f"{r.wait_percent:.1f} %" if r.wait_percent is not None else "-"
                print(
                    f"  {r.variant:9s} alone {eps:>8s} ex/s [{ps}]  loop {r.loop.median_s * 1e3:.2f} ms "
                    f"[{ls}]  wait {wait} {r.input_bound}"
                )
            if rep.model:
                print(f"  model step alone {rep.model.median_s * 1e3:.2f} ms")
            for c in rep.stages:
                print(
                    f"  stage {c.stage:9s} {c.seconds_per_example * 1e6:8.1f} µs/example"
                    f"{'  (below floor)' if c.below_floor else ''}"
                )
            if rep.slowest:
                print(f"  slowest stage: {rep.slowest.stage}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "pipeline-bench"))
