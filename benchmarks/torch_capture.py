"""What the PyTorch capture takes of a training script, variant by variant.

    python benchmarks/torch_capture.py SCRIPT.py --variants baseline,autocast,compile \\
        [--warmup 1 --steps 3 --device cpu] [-- ARGS...]

Each variant runs the script once in a script child (``measure/scriptchild.py``, as ``diagnose
SCRIPT.py`` runs it, in the script's folder) with the torch capture installed; one markdown row
per variant: the status, the entry point captured, the trained model, the timed steps and their
median, the entry-point calls in them (a GAN's two optimizers: two a step), the batch, the wait
in the DataLoader, the script's host reads and host-to-device copies, its set-up, the reason a
variant does not apply, and the child's wall time. Nothing is cached: a row is one fresh child.
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

HEAD = "| variant | status | entry | model | steps | median s | calls | batch | wait s | syncs | h2d | setup s | why not | wall s |"


def run(script: Path, args: list[str], variant: str, ns: argparse.Namespace) -> dict:
    spec = {"variant": variant, "warmup_steps": ns.warmup, "steps": ns.steps, "device": ns.device, "deadline_s": 600}
    job = {"script": str(script), "args": args, "frameworks": ["torch"], "spec": spec}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "job.json").write_text(json.dumps(job))
        out = Path(tmp) / "out.jsonl"
        cmd = [sys.executable, "-m", "whichdevice.measure.scriptchild", str(Path(tmp) / "job.json"), str(out)]
        t0 = time.monotonic()
        done = subprocess.run(cmd, cwd=script.parent, capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        lines = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    results = [x["result"] for x in lines if x["type"] == "result"]
    end = lines[-1] if lines else {"status": f"exit {done.returncode}", "error": done.stderr[-300:]}
    return {"variant": variant, "result": results[0] if results else None, "end": end, "wall_s": wall}


def row(got: dict) -> str:
    r, end = got["result"], got["end"]
    if r is None:
        why = f"{end.get('error', '')} ({end.get('where', '')})".strip(" ()")
        return f"| {got['variant']} | {end['status']} | | | | | | | | | | | {why} | {got['wall_s']:.0f} |"
    steps = sorted(r["step_s"])
    median = f"{steps[len(steps) // 2]:.3g}" if steps else ""
    wait = f"{sum(r['data_wait_s']) / len(r['data_wait_s']):.3g}" if r["data_wait_s"] else "-"
    cells = [
        got["variant"],
        r["status"],
        r["entry"] or "",
        r["model"] or "",
        str(len(steps)),
        median,
        str(r.get("entry_calls", "")),
        str(r["batch_size"] or "-"),
        wait,
        str(r["syncs"]["count"]),
        str(r["h2d"]["count"]),
        f"{r['setup_s']:.1f}",
        r["why_not"] or "",
        f"{got['wall_s']:.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str]) -> int:
    args = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("script", type=Path)
    p.add_argument("--variants", default="baseline")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    ns = p.parse_args(argv)
    script = ns.script.resolve()
    print(f"{script.parent.name}/{script.name} {' '.join(args)}  (load: {os.getloadavg()[0]:.1f})\n")
    print(HEAD)
    print("|" + "---|" * HEAD.count(" | ") + "---|")
    for variant in ns.variants.split(","):
        print(row(run(script, args, variant, ns)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
