"""Reliability figures: faults injected vs recorded, kill -9 at random moments then
--resume, and every bad input answered.

    python benchmarks/reliability.py [--part faults,resume,bad] [--kills 20] [--other-kills 5] [--out FILE.json]

(--part resume-matmul, resume-train or resume-pipeline runs one of the resumed runs only.)

faults  One job of 12 numpy matmul cases in which 5 cases fail in 5 different ways (raise,
        abort, hang past --case-timeout, MemoryError, really growing past a memory limit),
        plus a case too large for its allocator (n = 2**20: 4 TiB operands, no injection),
        a framework that cannot start, and, where installed, TensorFlow's own allocator OOM
        (the ResourceExhaustedError a full GPU raises). Counts faults, failed records with the
        expected kind, and finished cases lost.
resume  Starts a real run (`matmul --framework numpy`, 12 cases; `train --framework torch
        --quick`; a small `pipeline`), kills its whole process group with SIGKILL at a random
        moment between its journal's creation and an uninterrupted run's end, resumes with --resume, and checks that every
        case of the uninterrupted run is in the record exactly once and the journal is gone.
        --kills times for matmul, --other-kills times for train and pipeline.
bad     Runs the real CLI (a subprocess each) on bad inputs across the commands, in an empty
        folder, and checks each: exit code 2, one `error:` line naming the argument, no
        traceback, nothing written. Prints every message.

Everything here is measured on this machine; nothing is assumed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from whichdevice.measure import runner
from whichdevice.measure.journal import SUFFIX
from whichdevice.workloads.matmul import build_cases

POLICY = {
    "min_time_s": 0.01,
    "warmup_calls": 0,
    "min_samples": 2,
    "max_samples": 5,
    "target_blocks": 2,
    "max_time_s": 1.0,
}
SIZES = (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
# case (by its n) -> (fault injected, the failure kind the record must show)
FAULTS = {
    5: ("raise", "error"),
    11: ("abort", "crash"),
    17: ("hang", "timeout"),
    23: ("oom", "out_of_memory"),
    29: ("grow", "out_of_memory"),
}
HUGE = 1 << 20


def faults() -> dict:
    rows = []
    env = ";".join(f"{action}:n={n}" for n, (action, _) in FAULTS.items())
    os.environ["WHICHDEVICE_FAULT"] = env
    cases = build_cases("numpy", "CPU:0", SIZES, ["steady"], "float32") + build_cases(
        "numpy", "CPU:0", (HUGE,), ["seed"], "float32"
    )
    t0 = time.perf_counter()
    out = runner.run_job(
        runner.Job("numpy", "CPU:0", "cpu", cases, policy=POLICY), case_timeout_s=3, memory_limit_bytes=1 << 30
    )
    wall = time.perf_counter() - t0
    del os.environ["WHICHDEVICE_FAULT"]
    expected = {n: kind for n, (_, kind) in FAULTS.items()} | {HUGE: "out_of_memory"}
    by_n = {r.spec.params["n"]: r for r in out.results}
    for n in [*SIZES, HUGE]:
        r = by_n.get(n)
        rows.append(
            {
                "job": "numpy 13 cases",
                "case": f"n={n}",
                "fault": FAULTS.get(n, ("allocator",))[0] if n in expected else None,
                "expected": expected.get(n, "ok"),
                "got": None if r is None else (r.failure or r.status),
                "error": r.error if r else "LOST",
                "wall_s": r.wall_s if r else None,
            }
        )
    rows.append(
        {
            "job": "numpy 13 cases",
            "case": "(whole job)",
            "fault": None,
            "expected": None,
            "got": None,
            "error": None,
            "wall_s": wall,
        }
    )

    # A framework that cannot start: every case recorded, none lost.
    saved = runner.sys.executable
    runner.sys.executable = "/bin/false"
    try:
        out = runner.run_job(
            runner.Job(
                "numpy", "CPU:0", "cpu", build_cases("numpy", "CPU:0", (3, 5), ["steady"], "float32"), policy=POLICY
            ),
            case_timeout_s=10,
        )
    finally:
        runner.sys.executable = saved
    for r in out.results:
        rows.append(
            {
                "job": "cannot start",
                "case": f"n={r.spec.params['n']}",
                "fault": "no framework",
                "expected": "not_started",
                "got": r.failure,
                "error": r.error,
                "wall_s": r.wall_s,
            }
        )

    for fw in ("tensorflow", "torch"):
        if importlib.util.find_spec(fw) is None:
            continue
        job = runner.Job(fw, "CPU:0", "cpu", build_cases(fw, "CPU:0", (HUGE, 8), ["seed"], "float32"), policy=POLICY)
        by_n = {r.spec.params["n"]: r for r in runner.run_job(job, case_timeout_s=120).results}
        for n, exp in ((HUGE, "out_of_memory"), (8, "ok")):
            r = by_n.get(n)
            rows.append(
                {
                    "job": f"{fw} allocator",
                    "case": f"n={n}",
                    "fault": "allocator" if n == HUGE else None,
                    "expected": exp,
                    "got": None if r is None else (r.failure or r.status),
                    "error": r.error if r else "LOST",
                    "wall_s": r.wall_s if r else None,
                }
            )
    injected = [r for r in rows if r["fault"]]
    recorded = [r for r in injected if r["got"] == r["expected"]]
    lost = [r for r in rows if r["error"] == "LOST"]
    ok_expected = [r for r in rows if r["expected"] == "ok"]
    ok_got = [r for r in ok_expected if r["got"] == "ok"]
    print(
        f"\n## faults: {len(injected)} injected, {len(recorded)} recorded with the expected kind, "
        f"{len(ok_got)}/{len(ok_expected)} other cases finished ok, {len(lost)} lost"
    )
    for r in rows:
        if r["expected"] is None:
            print(f"  {r['job']}: whole job {r['wall_s']:.1f} s")
            continue
        print(
            f"  {r['job']:16} {r['case']:11} fault={r['fault'] or '-':12} expected={r['expected']:13} "
            f"got={r['got']!s:13} {(r['wall_s'] or 0):6.2f} s  {(r['error'] or '')[:90]}"
        )
    return {
        "rows": rows,
        "injected": len(injected),
        "recorded": len(recorded),
        "lost": len(lost),
        "others_ok": len(ok_got),
        "others": len(ok_expected),
    }


# The runs killed and resumed: each is killed at uniformly random moments of its own length.
RESUMED = {
    "matmul": ["matmul", "--framework", "numpy", "--sizes", "8,16,24,32,48,64", "--min-time", "0.15"],
    "train": ["train", "--framework", "torch", "--quick", "--parts", "create,sync", "--min-time", "0.05"],
    "pipeline": [
        "pipeline",
        "--variants",
        "serial,parallel",
        "--no-stages",
        "--images",
        "64",
        "--image-size",
        "32",
        "--net",
        "tiny",
        "--min-time",
        "0.05",
    ],
}


def _cli(args: list[str], out_dir: Path) -> list[str]:
    return [sys.executable, "-m", "whichdevice", *args, "--out", str(out_dir)]


def _keys(record: Path) -> list[str]:
    from whichdevice.core.records import CaseSpec

    return [CaseSpec.model_validate(r["spec"]).key for r in json.loads(record.read_text())["results"]]


def resume(name: str, kills: int, seed: int) -> dict:
    rng = random.Random(seed)
    args = RESUMED[name]
    with tempfile.TemporaryDirectory() as tmp:  # how long an uninterrupted run takes, and its cases
        t0 = time.perf_counter()
        subprocess.run(_cli(args, Path(tmp)), check=True, capture_output=True)
        full_s = time.perf_counter() - t0
        (full,) = Path(tmp).glob(f"{name}-*.json")
        want = sorted(_keys(full))
    rows = []
    for i in range(kills):
        with tempfile.TemporaryDirectory() as tmp:
            out_dir = Path(tmp) / "res"
            proc = subprocess.Popen(
                _cli(args, out_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
            )
            # A random moment between the journal's creation (before it, nothing has finished
            # and nothing is written: see the README) and the end of an uninterrupted run.
            t0 = time.perf_counter()
            while not (out_dir.exists() and list(out_dir.glob(f"*{SUFFIX}"))) and proc.poll() is None:
                time.sleep(0.005)
            journal_at = time.perf_counter() - t0
            time.sleep(rng.uniform(0.0, max(full_s - journal_at, 0.1)))
            at = time.perf_counter() - t0
            os.killpg(proc.pid, signal.SIGKILL)  # the whole run, as kill -9 or a crash would
            proc.wait()
            journals = list(out_dir.glob(f"*{SUFFIX}")) if out_dir.exists() else []
            records = list(out_dir.glob(f"{name}-*.json")) if out_dir.exists() else []
            row = {"kill_at_s": round(at, 2), "journal": bool(journals)}
            if not journals:  # killed before the journal existed, or after the run had finished
                row.update(finished_before=0, resumed=False, record_written=bool(records))
                row["ok"] = not records or sorted(_keys(records[0])) == want
                row["what"] = (
                    "the run had finished: record complete"
                    if records
                    else "killed before the journal existed: nothing finished, nothing written"
                )
            else:
                before = sum(1 for ln in journals[0].read_text().splitlines() if '"type": "result"' in ln)
                res = subprocess.run(
                    [sys.executable, "-m", "whichdevice", name, "--resume", str(out_dir)],
                    capture_output=True,
                    text=True,
                )
                records = list(out_dir.glob(f"{name}-*.json"))
                keys = _keys(records[0]) if res.returncode == 0 and len(records) == 1 else []
                row.update(
                    finished_before=before,
                    resumed=True,
                    exit=res.returncode,
                    cases=len(keys),
                    each_once=sorted(keys) == want,
                    journal_left=bool(list(out_dir.glob(f"*{SUFFIX}"))),
                )
                row["ok"] = row["each_once"] and not row["journal_left"]
                row["what"] = (
                    f"resumed: {len(keys)} cases, each once, journal removed"
                    if row["ok"]
                    else f"FAILED: exit {res.returncode}, {len(keys)} cases, journal left: "
                    f"{row['journal_left']}; {res.stderr.strip()[-200:]}"
                )
            rows.append(row)
            print(
                f"  {name} kill {i + 1:2}: at {at:5.2f} s, {row['finished_before']:2} cases finished before; "
                f"{row['what']}"
            )
    good = sum(r["ok"] for r in rows)
    resumed = sum(r["resumed"] for r in rows)
    print(
        f"\n## resume {name}: {good}/{len(rows)} kill points end with every case present exactly once "
        f"({resumed} of them resumed; uninterrupted run {full_s:.1f} s, {len(want)} cases)"
    )
    return {
        "rows": rows,
        "kills": len(rows),
        "good": good,
        "resumed": resumed,
        "full_run_s": full_s,
        "cases": len(want),
    }


GOOD_MODEL = """import keras
def build():
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
"""


def _bad_cases(d: Path) -> list[tuple[list[str], str]]:
    """(argv, the argument its one line must name). Fixture files are made in ``d``."""
    files = {
        "syntax.py": "def build(:\n",
        "nofn.py": "x = 1\n",
        "wrongtype.py": "def build():\n    return 42\n",
        "raises.py": "def build():\n    raise ValueError('inside the user function')\n",
        "good.py": GOOD_MODEL,
        "baddata.py": "def data():\n    return [1, 2, 3]\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)
    (d / "blocker").write_text("a file, not a folder")
    (d / "folder").mkdir()
    (d / "notjson.json").write_text("{oops")
    (d / "truncated.json").write_text('{"schema_version": 2, "experiment": "matmul", "comm')
    (d / "v0.json").write_text('{"schema_version": 0}')
    (d / "newer.json").write_text('{"schema_version": 99}')
    (d / "schema.json").write_text('{"schema_version": 2, "experiment": "matmul"}')
    (d / "profile.json").write_text('{"profile_version": 1, "name": "x"}')
    (d / "journal.partial.jsonl").write_text('{"type": "result"}\n')
    return [
        # sizes and batches
        (["matmul", "--sizes", "0"], "--sizes"),
        (["matmul", "--sizes", "-5"], "--sizes"),
        (["matmul", "--sizes", "ten"], "--sizes"),
        (["matmul", "--sizes", "1e3"], "--sizes"),
        (["matmul", "--sizes", "999999999"], "--sizes"),
        (["matmul", "--sizes", ""], "--sizes"),
        (["train", "--batches", "0"], "--batches"),
        (["train", "--batches", "-8"], "--batches"),
        (["train", "--batches", "abc"], "--batches"),
        (["train", "--batches", "99999999"], "--batches"),
        (["pipeline", "--images", "0"], "--images"),
        (["pipeline", "--batch", "-1"], "--batch"),
        (["pipeline", "--image-size", "100000"], "--image-size"),
        (["predict", "--batches", "0"], "--batches"),
        # other numbers
        (["matmul", "--min-time", "nan"], "--min-time"),
        (["matmul", "--min-time", "inf"], "--min-time"),
        (["matmul", "--case-timeout", "0"], "--case-timeout"),
        (["run", "--budget", "1"], "--budget"),
        (["run", "--budget", "-3"], "--budget"),
        (["run", "--cpu-threads", "0"], "--cpu-threads"),
        (["history", "--limit", "0"], "--limit"),
        # choices: devices, frameworks, dtypes, parts
        (["matmul", "--device", "NPU:0"], "--device"),
        (["train", "--device", "GPU:x"], "--device"),
        (["run", "--device", "TPU"], "--device"),
        (["matmul", "--device", "GPU:7"], "--device"),
        (["matmul", "--framework", "mxnet"], "--framework"),
        (["run", "--framework", "tensorflow,caffe"], "--framework"),
        (["matmul", "--dtype", "int7"], "--dtype"),
        (["train", "--parts", "everything"], "--parts"),
        # output paths
        (["matmul", "--out", str(d / "blocker")], "--out"),
        (["matmul", "--out", str(d / "blocker" / "sub")], "--out"),
        (["matmul", "--json", str(d / "folder")], "--json"),
        (["matmul", "--out", "/proc/whichdevice-out"], "--out"),
        # --model / --data files
        (["train", "--model", str(d / "absent.py") + ":build"], "--model"),
        (["train", "--model", "no_colon"], "--model"),
        (["train", "--model", str(d / "folder") + ":build"], "--model"),
        (["train", "--model", str(d / "syntax.py") + ":build"], "--model"),
        (["train", "--model", str(d / "nofn.py") + ":build"], "--model"),
        (["train", "--model", str(d / "wrongtype.py") + ":build"], "--model"),
        (["train", "--model", str(d / "raises.py") + ":build"], "--model"),
        (["train", "--model", str(d / "good.py") + ":build", "--input-shape", "3"], "--input-shape"),
        (["train", "--model", str(d / "good.py") + ":build", "--data", str(d / "baddata.py") + ":data"], "--data"),
        (["train", "--classes", "3"], "--classes"),
        (["diagnose", "--model", str(d / "nofn.py") + ":build"], "--model"),
        # result files and journals
        (["report", str(d / "absent.json")], "RESULT"),
        (["report", str(d / "folder")], "RESULT"),
        (["report", str(d / "notjson.json")], "RESULT"),
        (["report", str(d / "truncated.json")], "RESULT"),
        (["report", str(d / "v0.json")], "RESULT"),
        (["report", str(d / "newer.json")], "RESULT"),
        (["report", str(d / "schema.json")], "RESULT"),
        (["compare", str(d / "absent.json"), str(d / "newer.json")], "RUN_A"),
        (["compare", "99999", "1"], "RUN_A"),
        (["matmul", "--resume", str(d / "absent.partial.jsonl")], "--resume"),
        (["matmul", "--resume", str(d / "journal.partial.jsonl")], "--resume"),
        (["run", "--resume", str(d / "folder")], "--resume"),
        # profiles
        (["predict", "--profile", "nope"], "--profile"),
        (["predict", "--profile", str(d / "profile.json")], "--profile"),
        # audit, commands, options
        (["audit", str(d / "absent.py")], "SCRIPT"),
        (["matmul", "--no-such-option"], "--no-such-option"),
        (["no-such-command"], "no-such-command"),
    ]


def bad(only: str | None = None) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as fixtures, tempfile.TemporaryDirectory() as work:
        cases = _bad_cases(Path(fixtures))
        env = {**os.environ, "WHICHDEVICE_HOME": str(Path(work) / ".home"), "COLUMNS": "200"}
        for argv, argument in cases:
            if only and only not in " ".join(argv):
                continue
            before = set(Path(fixtures).rglob("*"))
            res = subprocess.run(
                [sys.executable, "-m", "whichdevice", *argv],
                cwd=work,
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
            written = [p for p in Path(work).rglob("*") if ".home" not in p.parts]
            written += [p for p in set(Path(fixtures).rglob("*")) - before]
            ok = (
                res.returncode == 2
                and len(errors) == 1
                and argument in errors[0]
                and "Traceback" not in res.stdout + res.stderr
                and not written
            )
            shown = " ".join(a if fixtures not in a else "…/" + Path(a).name for a in argv)
            rows.append(
                {
                    "argv": shown,
                    "argument": argument,
                    "exit": res.returncode,
                    "message": errors[0] if errors else (res.stderr.strip().splitlines() or [""])[-1],
                    "written": [str(p) for p in written],
                    "ok": ok,
                }
            )
            print(
                f"  {'ok ' if ok else 'BAD'} exit {res.returncode}  whichdevice {shown}\n        {rows[-1]['message']}"
            )
    good = sum(r["ok"] for r in rows)
    print(f"\n## bad inputs: {good}/{len(rows)} answered with one line naming the argument, exit 2, nothing written")
    return {"rows": rows, "tried": len(rows), "good": good}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="faults,resume,bad")
    ap.add_argument("--kills", type=int, default=20, help="kill points of the matmul run")
    ap.add_argument("--other-kills", type=int, default=5, help="kill points of the train and pipeline runs")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--only", default=None, help="bad: only the cases whose argv contains this")
    ap.add_argument("--out", type=Path, default=None)
    opts = ap.parse_args()
    parts = opts.part.split(",")
    result = {}
    if "faults" in parts:
        result["faults"] = faults()
    for name in RESUMED:
        if "resume" in parts or f"resume-{name}" in parts:
            kills = opts.kills if name == "matmul" else opts.other_kills
            result[f"resume-{name}"] = resume(name, kills, opts.seed)
    if "bad" in parts:
        result["bad"] = bad(opts.only)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
