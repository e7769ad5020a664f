"""``diagnose --model`` on the old path (its own pre-flight, sizer and planner) and on the script
path (the generated script), at the same budget: the fixes each recommends.

Runs ``python -m whichdevice diagnose --model FILE:build`` once with ``--old-src`` and once with
``--new-src`` on ``PYTHONPATH`` for each model of the Keras (``tests/diagnose_corpus``) and torch
(``tests/torch_models``) corpora named, and prints the "What to change" lines of each answer and
whether the recommended fixes (their names, in order) are the same.

    python benchmarks/model_on_script_path.py --old-src OLD/src --new-src src --budget 60 \
        keras:seq_mlp_sparse torch:mlp ...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = {"keras": ROOT / "tests" / "diagnose_corpus", "torch": ROOT / "tests" / "torch_models"}
FIX = re.compile(r"^\s+(\d+)\. (.+?): ([\d.]+)× (faster|slower)")


# The torch corpus's function, --input-shape, --classes and --data (as tests/test_torch_diagnose.py runs it).
TORCH = {
    "mlp": ("build", None, "10", None),
    "cnn": ("SmallCNN", "1,28,28", "10", None),
    "rnn": ("build", "20,8", "4", None),
    "transformer": ("build", "16", "3", None),
    "batchnorm_dropout": ("build", None, None, None),
    "module_loss_optimizer": ("build", None, None, None),
    "custom_loss": ("build", None, None, None),
    "dataloader_data": ("build", None, None, "loader"),
}


def _args(kind: str, name: str) -> list[str]:
    path = CORPUS[kind] / f"{name}.py"
    if kind == "torch":
        fn, shape, classes, data = TORCH[name]
        args = ["--model", f"{path}:{fn}", "--framework", "torch"]
        args += ["--input-shape", shape] if shape else []
        args += ["--classes", classes] if classes else []
        return args + (["--data", f"{path}:{data}"] if data else [])
    args = ["--model", f"{path}:build"]
    text = path.read_text()
    m = re.search(r"^INPUT_SHAPE = \(([^)]*)\)", text, re.M)
    if m:
        args += ["--input-shape", ",".join(w.strip() for w in m.group(1).split(",") if w.strip())]
    return args


def run(src: str, kind: str, name: str, budget: float) -> tuple[list[str], float, str]:
    """The fixes recommended (names, best first), the wall time, the "What to change" block."""
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(Path(src).resolve()), "COLUMNS": "200"}
        cmd = [sys.executable, "-m", "whichdevice", "diagnose", *_args(kind, name), "--budget", f"{budget:g}"]
        t0 = time.perf_counter()
        p = subprocess.run([*cmd, "--out", out], capture_output=True, text=True, env=env, cwd=out, timeout=900)
        wall = time.perf_counter() - t0
    lines = p.stdout.splitlines()
    block = [ln for ln in lines if FIX.match(ln) or ln.strip().startswith("Not measured")]
    fixes = [FIX.match(ln).group(2) for ln in lines if FIX.match(ln)]  # type: ignore[union-attr]
    if p.returncode not in (0, 1):
        block = [f"exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1][:200]}"]
    return fixes, wall, "\n".join(block)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old-src", required=True)
    ap.add_argument("--new-src", required=True)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("models", nargs="+", help="keras:NAME or torch:NAME")
    a = ap.parse_args()
    same = 0
    for m in a.models:
        kind, name = m.split(":")
        old, old_s, old_block = run(a.old_src, kind, name, a.budget)
        new, new_s, new_block = run(a.new_src, kind, name, a.budget)
        top = bool(old and new and old[0].split()[0] == new[0].split()[0])
        same += top
        print(f"## {m}  (old {old_s:.0f} s, new {new_s:.0f} s; same first fix: {top})")
        print("old:\n" + (old_block or "  (no fix recommended)"))
        print("new:\n" + (new_block or "  (no fix recommended)"))
        print(flush=True)
    print(f"same first fix: {same} of {len(a.models)}")


if __name__ == "__main__":
    main()
