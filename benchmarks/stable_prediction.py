"""Would a GPU help? The same answer from runs back to back? Runs `whichdevice run --budget B`
three times, then `whichdevice predict --quick` three times, one after the other, with the
machine's load (1-minute average) before and after each, and writes
benchmarks/stable_prediction.md: each run's answer as the page printed it, its per-batch
decision read back from its record, and beside it the decision the record gives with the CPU's
inputs taken as before (the pooled median and quartiles of every process's samples), so that
one set of runs shows both rules on the same measurements.

    python benchmarks/stable_prediction.py [--budget 60] [--repeats 3] [--out FILE.md] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

OUT = Path(__file__).with_name("stable_prediction.md")
NOTES = "<!-- notes -->"


@contextmanager
def pooled_inputs():
    """The CPU's inputs as the prediction took them before: every process's samples pooled,
    their median and quartiles."""
    from whichdevice.analysis import gpudecision, prediction
    from whichdevice.core import stats

    def pooled(rounds):
        xs = [x for r in rounds for x in r]
        return gpudecision.CpuStep(
            stats.median(xs), stats.quantile(xs, 0.25), stats.quantile(xs, 0.75), 1.0, len(rounds)
        )

    kept = prediction.cpu_step
    prediction.cpu_step = pooled
    try:
        yield
    finally:
        prediction.cpu_step = kept


def decisions(record_path: Path, command: str) -> tuple[str, str, str]:
    """(the decision as this code takes it, as the pooled inputs gave it, how far the CPU varied)."""
    from whichdevice.analysis import facade
    from whichdevice.analysis.suite import gpu_prediction
    from whichdevice.core.records import load_run
    from whichdevice.present.claims import cpu_varied_words

    record = load_run(record_path)

    def report():
        return gpu_prediction(record)[0] if command == "run" else facade.predict(record).report

    now = report()
    if now is None:
        return "no prediction", "no prediction", ""
    with pooled_inputs():
        before = report()
    assert before is not None
    gist = now.decision.gist.removeprefix("predicted per batch: ")
    old = before.decision.gist.removeprefix("predicted per batch: ")
    return gist, old, cpu_varied_words(now.cpu_varied)


def one(command: str, budget: float, folder: Path, i: int) -> dict:
    record = folder / f"{command}-{i}.json"
    argv = [sys.executable, "-m", "whichdevice", command, "--out", str(folder), "--json", str(record)]
    argv += ["--budget", f"{budget:g}"] if command == "run" else ["--quick"]
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, COLUMNS="400"), check=False)
    wall = time.perf_counter() - t0
    load_after = os.getloadavg()[0]
    lines = done.stdout.splitlines()
    key = "Would a GPU help?" if command == "run" else "Answer:"
    answer = next((x.strip() for x in lines if key in x), f"(no answer line; exit {done.returncode})")
    answer = answer.split("Would a GPU help? ", 1)[-1].removeprefix("Answer: ")
    round2 = next((x.strip() for x in lines if x.strip().startswith(("Round ", "The answer changed"))), "")
    provisional = [x for x in done.stderr.splitlines() if x.startswith("  ") and "Would a GPU help?" in x]
    now, old, varied = decisions(record, command) if record.exists() else ("not written", "not written", "")
    return {
        "command": " ".join(["whichdevice", *argv[3:4], *argv[-2 if command == "run" else -1 :]]),
        "load": f"{load_before:.1f} / {load_after:.1f}",
        "wall": wall,
        "answer": answer.split("; at batch")[0].rstrip("."),
        "decision": now,
        "pooled": old,
        "varied": varied,
        "round2": round2,
        "provisional": provisional[0].strip().removeprefix("Would a GPU help? ").split("; at batch")[0]
        if provisional
        else "",
        "code": done.returncode,
    }


def table(rows: list[dict]) -> list[str]:
    out = [
        "| # | command | load before / after | wall | per-batch decision (this code) | the same record, pooled inputs (before) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for i, r in enumerate(rows, 1):
        out.append(f"| {i} | `{r['command']}` | {r['load']} | {r['wall']:.0f} s | {r['decision']} | {r['pooled']} |")
    out += ["", "The answers as printed:", ""]
    for i, r in enumerate(rows, 1):
        out.append(f"{i}. {r['answer']}." + (f" {r['varied']}" if r["varied"] else ""))
        if r["provisional"]:
            out.append(f"   - piped, the provisional answer said: {r['provisional']}")
        if r["round2"]:
            out.append(f"   - {r['round2']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--keep", type=Path, help="keep the records here (default: a temporary folder)")
    args = ap.parse_args()
    uptime_before = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    rows: dict[str, list[dict]] = {"run": [], "predict": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for command in ("run", "predict"):
            for i in range(args.repeats):
                rows[command].append(one(command, args.budget, folder, i))
                print(rows[command][-1], flush=True)
    uptime_after = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    text = [
        "# Would a GPU help? The same answer from runs back to back",
        "",
        f"`python benchmarks/stable_prediction.py --budget {args.budget:g} --repeats {args.repeats}`: "
        f"`whichdevice run --budget {args.budget:g}` {args.repeats} times, then `whichdevice predict --quick` "
        f"{args.repeats} times, one after the other (stdout and stderr piped). Each row's per-batch decision is "
        "read back from its record; beside it, the decision the same record gives with the CPU's inputs taken "
        "as before (the pooled median and quartiles of all its processes' samples).",
        "",
        f"`uptime` before: `{uptime_before}`; after: `{uptime_after}`.",
        "",
        "## run",
        "",
        *table(rows["run"]),
        "",
        "## predict --quick",
        "",
        *table(rows["predict"]),
        "",
    ]
    # notes written by hand below the marker stay (they say what a given run's figures mean)
    kept = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    notes = kept[kept.index(NOTES) :] if NOTES in kept else ""
    args.out.write_text("\n".join(text) + ("\n" + notes if notes else ""), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
