"""Five training scripts with a cause built in (tests/cause_corpus/): the cause's ground truth
timed by hand, and whether `whichdevice diagnose SCRIPT --budget 60`'s first screen names it.

    python benchmarks/cause_scripts.py                   # hand timings + a diagnose per script
    python benchmarks/cause_scripts.py --records DIR     # screens from DIR/<script>.json (no diagnose run)
    python benchmarks/cause_scripts.py --runs 5 --only host_reads --no-truth
    python benchmarks/cause_scripts.py --truth-only

(a) The ground truth: each script run directly, in a fresh process per run, with its cause and
without it (env variables the scripts read: workers 0 vs 2, reads and print vs reads alone vs none, 8 threads vs 1,
batch 8 vs 256; the CNN at batch 16, 32, 64), its own step times printed (CAUSE_TIMES=1); per
run the median step, per setting the median of the runs' medians (``--runs``, at least 5).
(b) The first screen of `whichdevice diagnose SCRIPT --budget 60` (rendered from its record at
100 columns) and the rule per cause: the words that must appear under "Why it is slow".
The load (`uptime`) is printed before and after each part: on a busy machine every figure moves.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "cause_corpus"
HEAD = "Why it is slow"


@dataclass(frozen=True)
class Case:
    script: str
    cause: str
    settings: dict[str, dict[str, str]]  # label -> env; the first is the script as written (its cause)
    steps: int  # the steps a hand-timed run takes
    words: tuple[str, ...]  # the rule: every one of these under "Why it is slow" (case-insensitive)
    per_sample: bool = False  # compare time per sample (the batch changes), not per step
    extra: dict[str, str] = field(default_factory=dict)


CASES = [
    Case(
        "input_bound_loader",
        "input-bound loader",
        {"num_workers=0": {"CAUSE_WORKERS": "0"}, "num_workers=2": {"CAUSE_WORKERS": "2"}},
        60,
        ("waiting for input",),
    ),
    Case(
        "host_reads",
        "host reads every step",
        {
            "reads + print": {"CAUSE_READS": "1"},
            "reads, no print": {"CAUSE_READS": "1", "CAUSE_PRINT": "0"},
            "no reads": {"CAUSE_READS": "0"},
        },
        600,
        ("host reads", "sync per read"),
    ),
    Case(
        "compute_bound_cnn",
        "compute-bound CNN",
        {"batch 16": {"CAUSE_BATCH": "16"}, "batch 32": {"CAUSE_BATCH": "32"}, "batch 64": {"CAUSE_BATCH": "64"}},
        15,
        ("compute-bound",),
        per_sample=True,
    ),
    Case(
        "thread_oversubscription",
        "thread oversubscription",
        {"8 threads": {"CAUSE_THREADS": "8"}, "1 thread": {"CAUSE_THREADS": "1"}},
        200,
        ("threads",),
    ),
    Case(
        "sliced_tiny_batch",
        "tiny batch sliced by the loop",
        {"batch 8": {"CAUSE_BATCH": "8"}, "batch 256": {"CAUSE_BATCH": "256"}},
        300,
        ("fixed cost per step",),
        per_sample=True,
    ),
]


def seconds(s: float) -> str:
    from whichdevice.core.units import seconds as fmt

    return fmt(s)


def measured(path: Path) -> str:
    """What the capture measured in the baseline's steps (analysis/scriptsteps.py), cause or not."""
    from whichdevice.analysis.scriptsteps import script_steps
    from whichdevice.core.records import load_run

    out = []
    for st in script_steps(load_run(path)):
        pct = lambda x: "–" if x is None else f"{x:.0%}"  # noqa: E731
        out.append(
            f"{st.device}: median step {seconds(st.step_s)} ({st.steps} steps); wait {pct(st.wait_share)}; "
            f"{st.reads:.2g} host reads a step, {pct(st.read_share)}; batch line over {list(st.batches) or 'none'}: "
            f"compute {pct(st.compute_share)}, fixed {pct(st.fixed_share)}; threads {st.threads} on {st.cores} cores, "
            f"median over fastest tenth {pct(st.contention_share)}"
        )
    return "; ".join(out) or "no script step in the record"


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def one_run(case: Case, env: dict[str, str]) -> tuple[float, int]:
    """One fresh process of the script: its median step (s) and its batch."""
    full = {**os.environ, **env, "CAUSE_TIMES": "1", "CAUSE_STEPS": str(case.steps)}
    out = subprocess.run(
        [sys.executable, str(CORPUS / f"{case.script}.py")], env=full, capture_output=True, text=True, check=True
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("CAUSE_TIMES "))
    data = json.loads(line.split(" ", 1)[1])
    return statistics.median(data["steps_s"]), int(data["batch"])


def truth(case: Case, runs: int) -> list[str]:
    """The hand timing: per setting the median of ``runs`` processes' median steps, interleaved
    (setting A, B, A, B ...) so a change of load falls on every setting alike."""
    meds: dict[str, list[float]] = {k: [] for k in case.settings}
    batch: dict[str, int] = {}
    for _ in range(runs):
        for label, env in case.settings.items():
            m, b = one_run(case, env)
            meds[label].append(m)
            batch[label] = b
    rows = []
    first = next(iter(case.settings))
    unit = "per sample" if case.per_sample else "per step"

    def value(label: str) -> float:
        m = statistics.median(meds[label])
        return m / batch[label] if case.per_sample else m

    for label in case.settings:
        spread = f"{min(meds[label]) * 1e3:.2f}–{max(meds[label]) * 1e3:.2f} ms"
        ratio = value(first) / value(label)
        rows.append(
            f"| {case.script} | {label} | {statistics.median(meds[label]) * 1e3:.2f} ms (runs {spread}) | "
            f"{seconds(value(label))} {unit} | {ratio:.2f}× vs {first} | {runs} |"
        )
    return rows


def diagnose(case: Case, out: Path, budget: int) -> Path:
    """`whichdevice diagnose SCRIPT --budget B`, its record written to OUT/<script>.json."""
    out = out.resolve()
    path = out / f"{case.script}.json"
    cmd = [sys.executable, "-m", "whichdevice", "diagnose", str(CORPUS / f"{case.script}.py")]
    cmd += ["--budget", str(budget), "--out", str(out / case.script), "--json", str(path), "--quiet"]
    # run from OUT: diagnose puts its working folder back as it was when it ends, so a run from the
    # repository would undo whatever was edited there meanwhile
    subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=out)
    return path


def screen(path: Path) -> str:
    """The first screen of the record as `diagnose` prints it, at 100 columns."""
    from rich.console import Console

    from whichdevice.core.records import load_run
    from whichdevice.jobs import running
    from whichdevice.present import plots

    plots.plot_sweep = plots.plot_batch_sweep = lambda _t, png, **_k: Path(png).write_bytes(b"")
    buf = io.StringIO()
    running.console = Console(file=buf, width=100, force_terminal=False, color_system=None)
    with tempfile.TemporaryDirectory() as tmp:
        running.page(load_run(path), Path(tmp) / "run.png", loglog=True)
    return buf.getvalue()


def why_block(text: str) -> str:
    """The lines under "Why it is slow" (folded onto its line, or numbered below it)."""
    lines = text.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith(HEAD)), None)
    if start is None:
        return ""
    block = [lines[start]]
    for x in lines[start + 1 :]:
        if not x.startswith("  ") or not x.strip():
            break
        block.append(x)
    return "\n".join(block)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--records", type=Path, help="read OUT/<script>.json instead of running diagnose")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "cause_scripts")
    ap.add_argument("--only", action="append", help="a script's name (repeatable)")
    ap.add_argument("--no-truth", action="store_true", help="skip the hand timings")
    ap.add_argument("--truth-only", action="store_true", help="only the hand timings")
    a = ap.parse_args()
    cases = [c for c in CASES if not a.only or c.script in a.only]
    if not a.no_truth:
        print(f"## (a) Ground truth timed by hand\n\nload before: {load()}\n")
        print("| script | setting | median step (min–max of runs) | time | vs the cause | runs |")
        print("| --- | --- | --- | --- | --- | --- |")
        for c in cases:
            for row in truth(c, max(5, a.runs)):
                print(row, flush=True)
        print(f"\nload after: {load()}\n")
    if a.truth_only:
        return
    print(f"## (b) `whichdevice diagnose SCRIPT --budget {a.budget}`: the first screen\n")
    a.out.mkdir(parents=True, exist_ok=True)
    named = 0
    for c in cases:
        before = load()
        path = a.records / f"{c.script}.json" if a.records else diagnose(c, a.out, a.budget)
        if not path.exists():
            print(f"### {c.script} ({c.cause}): no record ({path})\n")
            continue
        block = why_block(screen(path))
        ok = bool(block) and all(w in block.lower() for w in c.words)
        named += ok
        print(f"### {c.script} ({c.cause}): {'named' if ok else 'NOT named'}")
        when = f"from the record {path}" if a.records else f"load at start: {before}"
        print(f"rule: {' + '.join(repr(w) for w in c.words)} under {HEAD!r}; {when}")
        print(f"the capture measured: {measured(path)}\n")
        print("```\n" + (block or "(no 'Why it is slow' block)") + "\n```\n", flush=True)
    print(f"Score: {named} of {len(cases)} first screens name the built-in cause.")


if __name__ == "__main__":
    main()
