"""How many times a round pays a torch script's set-up (imports and data loading), before and
after the DataLoader's batch size, workers and pinning, the model's memory format and
torch.compile take turns with the baseline in the round's shared process (as autocast did).

    PYTHONPATH=src python benchmarks/setup_runs.py            # the plan's count, and what budgets hold
    PYTHONPATH=src python benchmarks/setup_runs.py --real     # and a real small torch script, timed

"before" is the same code with ``script.TURN_ENTRIES`` as it was (autocast alone takes turns:
every other variant runs the script again in a process of its own) and the plan in priority order
only (``scriptplan.TURNS_FIRST`` off).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from whichdevice.core.records import CaseSpec
from whichdevice.workloads import script, scriptplan

ROOT = Path(__file__).resolve().parents[1]
# A Lightning-like script on a 2-core CPU: 14 s of imports and data loading, a 60 ms step, a
# DataLoader without workers, a Conv2d model (tests/test_script_turns.py).
FACTS = {
    "framework": "torch",
    "entry": "torch.optim.Optimizer.step",
    "batch": 32,
    "step_s": 0.06,
    "first_step_s": 0.5,
    "setup_s": 14.0,
    "import_s": 10.0,
    "data_s": 4.0,
    "model": "LitModel",
    "conv2d": True,
    "data_source": "DataLoader",
    "loader": {"batch_size": 32, "num_workers": 0, "pin_memory": False},
    "samples": 4096,
}


@contextmanager
def before():
    autocast = {e: ("baseline", "autocast") for e in script.TURN_ENTRIES}
    with mock.patch.object(script, "TURN_ENTRIES", autocast), mock.patch.object(scriptplan, "TURNS_FIRST", False):
        yield


def processes(cases: list[CaseSpec]) -> int:
    """Script processes (set-up runs) one round starts on one device."""
    return len({script.group_key(c) for c in cases} - {None}) + sum(script.group_key(c) is None for c in cases)


def plan_row(budget: float) -> str:
    out = []
    for label, ctx in (("before", before), ("after", _nothing)):
        with ctx(), mock.patch.object(scriptplan, "thread_counts", lambda fw: [1]):
            s = scriptplan.size(FACTS, budget)
            cases = scriptplan.cases("torch", "CPU:0", scriptplan.user_params({"script": "train.py"}, FACTS), s)
            fixes = sorted({p.get("fix") or next(iter(set(p) - {"kind", "sync"}), "?") for p in s["planned"]})
            out.append(f"{label}: {processes(cases)} set-up runs, {len(cases)} cases, fixes {', '.join(fixes) or '-'}")
    return f"| {budget:g} | " + " | ".join(out) + " |"


def gpu_row(budget: float) -> str:
    """A GPU round of the same script (pin_memory and cudnn.benchmark planned; no thread count)."""
    out = []
    for label, ctx in (("before", before), ("after", _nothing)):
        with ctx():
            s = scriptplan.size(FACTS, budget, gpu=True)
            cases = scriptplan.cases("torch", "GPU:0", scriptplan.user_params({"script": "train.py"}, FACTS), s)
            out.append(f"{label}: {processes(cases)} set-up runs, {len(cases)} cases")
    return f"| {budget:g} (GPU) | " + " | ".join(out) + " |"


@contextmanager
def _nothing():
    yield


# The variants a CPU round plans for torch_dataloader.py (no Conv2d: no channels_last; pin_memory
# and cudnn.benchmark are a GPU's), each pair's baseline side included; the thread count aside.
SIDES = [
    {},
    {"batch": 64},
    {"batch": 16},
    {"kind": "loop", "num_workers": 0},
    {"kind": "loop", "num_workers": 2},
    {"fix": "autocast", "autocast": "off"},
    {"fix": "autocast", "autocast": "bfloat16"},
    {"fix": "torch_compile", "torch_compile": False},
    {"fix": "torch_compile", "torch_compile": True},
]


def real() -> list[str]:
    """A real torch script (tests/script_corpus/torch_dataloader.py): the baseline and 4 fixes'
    pairs (2 batch sizes, 2 workers, autocast, torch.compile), timed as a round times them;
    processes started, the wall, and each case's step median and rows per step."""
    common = {
        "script": str(ROOT / "tests/script_corpus/torch_dataloader.py"),
        "entry": "torch.optim.Optimizer.step",
        "user_batch": 32,
        "batch": 32,
        "steps": 10,
        "warmup": 2,
        "child_limit_s": 60,
        "kind": "steady",
        "sync": "none",
    }
    specs = [CaseSpec(workload="train", framework="torch", device="CPU:0", params={**common, **p}) for p in SIDES]
    rows = []
    for label, ctx in (("before", before), ("after", _nothing)):
        started: list[str] = []
        orig = script.run_child

        def counted(job, spec, captures, **kw):  # type: ignore[no-untyped-def]
            started.append(spec.variant)
            return orig(job, spec, captures, **kw)

        with ctx(), mock.patch.object(script, "run_child", counted), mock.patch.object(script, "_RAN_HERE", [True]):
            t = time.perf_counter()
            groups: dict[object, list[int]] = {}
            for i, s in enumerate(specs):
                groups.setdefault(script.group_key(s) or s.key, []).append(i)
            by: dict[int, object] = {}
            for members in groups.values():
                if script.group_key(specs[members[0]]) is None:
                    by |= {i: _tried(script.run_case, specs[i]) for i in members}
                else:
                    by |= dict(zip(members, script.time_group([specs[i] for i in members], None, None, 0.0)))
            got = [by[i] for i in range(len(specs))]
            wall = time.perf_counter() - t
        ms = [
            f"{1e3 * statistics.median(g[0].samples_s):.2f} ({g[1].get('samples_per_step', 0):.0f})"
            if not isinstance(g, BaseException)
            else "err"
            for g in got
        ]
        rows.append(f"| {label} | {len(started)} | {wall:.1f} s | {' / '.join(ms)} |")
    return rows


def _tried(run, spec):  # type: ignore[no-untyped-def]
    try:
        return run(spec, None, None, 0.0)
    except Exception as e:  # noqa: BLE001 (a case the script could not run: shown as err)
        return e


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", action="store_true")
    a = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print("\nThe plan for a Lightning-like torch script (14 s set-up, 60 ms step), one CPU device, one round:\n")
    print("| --budget | before | after |\n|---|---|---|")
    for b in (60, 70, 90, 120, 600):
        print(plan_row(float(b)))
    print(gpu_row(600.0))
    if a.real:
        print("\nReal: torch_dataloader.py, the baseline and 4 fixes' pairs, 10 steps each:\n")
        steady = {"kind": "steady", "sync": "none", "user_batch": 32, "batch": 32}
        names = " / ".join(script.variant_of({**steady, **s}) for s in SIDES)
        print(f"| | script processes | wall | step median ms (rows a step): {names} |\n|---|---|---|---|")
        print("\n".join(real()))
        print(f"\nload {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
