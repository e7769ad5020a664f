"""``diagnose SCRIPT.py``'s plan: the pre-flight, the cases sized to the budget.

The pre-flight runs the script once on the CPU with every capture installed: it finds the entry
point the script trains through, its framework, batch and model, and times a few of its steps.
It is a survey: the script goes on past the timed call, each further training call recorded
and passed over, so a script that trains several models is listed whole (:func:`entry_words`)
and the call with the most steps, or the one ``--entry`` names, is the one measured.
A script that never reaches one, raises first, needs a GPU this machine lacks or downloads data
with no network is refused here, before anything is measured: one line quoting the script's own
error (``UsageError``, exit 2).

Then the cases, sized from the measured step: every script process pays the script's imports and data loading
(``setup_s``, measured in the pre-flight, counted once per process and shown apart), then
its steps. Variants that take turns in the round's shared process (``script.shares_child``: a
Keras fit's, a JAX step's batches, a torch loop's autocast, DataLoader, memory format and compile
variants) cost their steps only: the set-up is paid once for all of them. Round 1 is planned to ``ROUND1_SHARE`` of the budget left after the measuring
child's start-up, so round 2 (the deciding cases again, in a fresh process) fits in the rest;
what does not fit is left out and said (``cut``), never started and skipped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from whichdevice import frameworks
from whichdevice.core.errors import UsageError
from whichdevice.core.textsafe import clean
from whichdevice.core.units import listed, seconds, times
from whichdevice.core import failures, records
from whichdevice.core.records import CaseSpec, StepTrace, Variant
from whichdevice.frameworks.contracts import CaptureSpec, PlanCases, StepCost
from whichdevice.workloads import fixes, script, scriptwatch
from whichdevice.workloads.defaults import PAGE_RESERVE_S, page_reserve
from whichdevice.workloads.suite import USER_SWEEP_BATCHES
from whichdevice.workloads.fixes import params_of

# The case parameters the plan lays out itself, as the catalogue names them: the batch (the
# user's, in the pre-flight's facts; a sweep's), and the loss never read (a steady case).
BATCH = fixes.BATCH.param
SPE = fixes.STEPS_PER_EXECUTION.param
_SYNC = fixes.SYNC.param
_STEADY = {"kind": "steady", _SYNC: "none"}

STEPS = 10  # timed steps per case and round (a claim needs 5 samples a side)
WARMUP = 2  # the first step (tracing, compiling, the data pipeline's start) and one more
PREFLIGHT_STEPS = 5
TURNS = 2  # a Keras fit's turns per variant (kerasfit.TURNS)
TURN_OVERHEAD_S = 0.2  # a fit call per turn: its data adapter, callbacks' begin and end
ROUND1_SHARE = 0.55  # the round-2 run is in a fresh measuring child, in its own process: cheaper than round 1 (measured walls: 0.5-1.3 x budget at 0.45)
ROUND1_ONLY_SHARE = 0.85
PROCESS_START_S = 1.0  # Python and whichdevice before the script's first line
# The budget figure a refusal asks for allows this much more set-up and step time than the
# pre-flight measured: a script's imports and data loading took 25.8 s at one try and 41.5 s at
# the next on a loaded 2-core machine (x1.6), so a figure computed from one try's times alone was
# refused again when the user re-ran with it. More headroom where the machine was busier than its
# cores (the load the pre-flight saw, per core), up to MAX_HEADROOM.
HEADROOM = 1.5
LOAD_HEADROOM = 0.25  # added per unit of load per core beyond 1
MAX_HEADROOM = 2.0
# A budget too short for the baseline still gets it measured, alone, where the run's wall (the
# pre-flight, then the baseline in the measuring child) stays within this many times the budget
# plus OVERRUN_S: the user gets the step they asked about, with what a larger budget would add,
# rather than a refusal.
OVERRUN = 1.3
OVERRUN_S = 40.0
# A variant's trace in the shared process against the pre-flight's first step (which also pays the
# process's one-time costs): batch 128's first step 0.64 s against the baseline's 1.78 s (keras_fit_arrays.py)
LATER_TRACE = 0.5
KERAS_DATA_REBATCHED = ("arrays", "tfdata")
ENTRY_FACTS = ("entry_call", "entries", "entry_reason", "survey_stopped")
MIN_BATCHES = 10  # a sweep batch leaves the user's arrays at least this many batches (a turn's steps)
# A step re-batched by tiling its own inputs (a jitted JAX step, a torch loop that slices its own
# batches) needs no more data for a larger batch: the sweep's larger batches, up to this many
# times the script's (the question the sweep answers is whether a larger batch helps).
TILED_AT_MOST = 32
TILED_SWEEP = 2

_GPU_NEEDED = re.compile(
    r"CUDA|cuda|NVIDIA|nvidia-smi|no GPU|GPU device|torch\.cuda|cudnn|Found no NVIDIA driver|device='?cuda|"
    r"Cannot access accelerator device when none is available",  # torch 2.13's CPU build on model.to(0)
    re.I,
)
_NETWORK = re.compile(
    r"URLError|urlopen|Name or service not known|Temporary failure in name resolution|getaddrinfo|"
    r"HTTPError|HTTP Error|ConnectionError|Max retries exceeded|Network is unreachable|nodename nor servname",
    re.I,
)


def _name(job: dict[str, Any]) -> str:
    return str(job.get("name") or Path(job["script"]).name)


def _line(text: str) -> str:
    return clean(str(text), newlines=False)[:300]


_ARGPARSE = re.compile(r"^\S+: error: (.+)$", re.M)  # argparse's last line before its SystemExit(2)


def _argparse_said(run: script.ChildRun) -> str | None:
    """What the script's argument parser printed before it exited with code 2, if it did."""
    said = _ARGPARSE.findall(run.stderr_tail)
    return said[-1].strip() if said else None


def _args_fix(name: str, said: str, args: list[str]) -> str:
    """The command that passes the script's arguments, with the ones argparse asked for."""
    m = re.search(r"the following arguments are required: (.+)", said)
    wanted = [w.strip() for w in m.group(1).split(",")] if m else []
    shown = " ".join(f"{w} ..." if w.startswith("-") else w.upper() for w in wanted) or "ARGS"
    given = f" (given: {' '.join(args)})" if args else ""
    return f"Pass the script's arguments after --, as to python: whichdevice diagnose {name} -- {shown}{given}"


def _maybe_elsewhere(end: dict[str, Any]) -> bool:
    """Whether a pre-flight's end leaves room for training in another process: it reached no entry,
    never ended (it waited on its processes past the limit), or the process it started failed."""
    if end.get("status") == "script_error":
        return bool(
            re.match(r"(ProcessRaisedException|ProcessExitedException|CalledProcessError)\b", str(end.get("error")))
        )
    return end.get("status") in (None, "no_entry")


def _elsewhere(run: script.ChildRun, name: str) -> UsageError | None:
    """A script that started another Python process and reached no step in its own: its training
    runs there, where no capture is installed."""
    seen = {**run.seen, **run.end}
    processes = [str(p) for p in seen.get("processes") or []]
    if not processes:
        return None
    launched = next((scriptwatch.script_in(p) for p in processes if scriptwatch.script_in(p)), None)
    fix = (
        "For diagnose, run the training function in the script's own process (e.g. call train(0, ...) where it calls "
        "torch.multiprocessing.spawn, behind a flag passed after --), then diagnose it again"
    )
    if launched:
        other, args = launched
        fix = f"Diagnose the script that trains: whichdevice diagnose {other}" + (
            f" -- {' '.join(args)}" if args else ""
        )
    return UsageError(
        "SCRIPT",
        f"{name} trains in another process (it started {'; '.join(processes)}): diagnose captures the training "
        "steps of the script's own process, not of the processes it starts",
        fix,
    )


def _script_error(run: script.ChildRun, job: dict[str, Any], err: str, where: str) -> UsageError:
    """The line for a script that raised or exited with an error code: argparse's own message, the
    exit code and the training step it came at."""
    name, end = _name(job), run.end
    code, said = end.get("exit_code"), _argparse_said(run)
    if code == 2 and said:
        return UsageError(
            "SCRIPT",
            f'{name} refused its arguments and exited with code 2: its argument parser said "{_line(said)}"',
            _args_fix(name, said, [str(a) for a in job.get("args") or []]),
        )
    if code is not None and end.get("step"):
        return UsageError(
            "SCRIPT",
            f"{name} exited with code {code} {script.at_step(end)} ({where}), before diagnose had timed its steps",
            f"Let it train at least {WARMUP + STEPS} steps before it exits (give it arguments after -- for more steps "
            f"or epochs): each case times {WARMUP} warm-up steps, then {STEPS}",
        )
    if code is not None:
        return UsageError(
            "SCRIPT",
            f"{name} exited with code {code} at {where} before its first training step",
            f"Make `python {name}` run here first, then diagnose it again",
        )
    return UsageError(
        "SCRIPT",
        f"{name} raised {err} at {where} {script.at_step(end) or 'before its first training step'}",
        f"Make `python {name}` run here first, then diagnose it again",
    )


def _users_file(run: script.ChildRun) -> UsageError | None:
    """The script ``--model`` writes found a problem in the user's files: its option's own line."""
    usage = run.end.get("usage")
    if isinstance(usage, dict):
        return UsageError(str(usage["argument"]), str(usage["problem"]), str(usage["fix"]).rstrip(".") + ".")
    return None


def refusal(
    run: script.ChildRun, job: dict[str, Any], limit_s: float, memory_limit_bytes: int | None = None
) -> UsageError:
    """The one line for a pre-flight that reached no training step (``memory_limit_bytes``: the
    run's --memory-limit the pre-flight was held to, None: the default)."""
    name, end = _name(job), run.end
    if run.finished is not None and run.finished.stopped == "memory":
        return _stopped_by_memory(name, run.finished.rss_bytes, memory_limit_bytes)
    err, where = _line(end.get("error") or ""), _line(end.get("where") or name)
    error = end.get("status") == "script_error"
    if error and _GPU_NEEDED.search(err):
        return UsageError(
            "SCRIPT",
            f"{name} needs a GPU and this machine has none: it raised {err} at {where}",
            "Run diagnose on the machine with the GPU, or let the script fall back to the CPU "
            "(e.g. device = 'cuda' if torch.cuda.is_available() else 'cpu')",
        )
    if error and _NETWORK.search(err):
        return UsageError(
            "SCRIPT",
            f"{name} downloads data and this machine cannot reach the network: it raised {err} at {where}",
            "Download the data once where there is a network and point the script at the local copy",
        )
    elsewhere = _elsewhere(run, name) if _maybe_elsewhere(end) else None
    if elsewhere is not None:
        return elsewhere
    stdin = run.seen.get("stdin") or end.get("stdin")
    if stdin and end.get("status") in ("script_error", "no_entry"):
        what = f"it raised {err} at {where}" if error else "it ran to its end without training"
        return UsageError(
            "SCRIPT",
            f"{name} reads its standard input (at {_line(stdin)}), which diagnose does not pass on: each run of the "
            f"script gets an empty stdin, and {what}",
            "Give the script what it reads as arguments after -- or in a file: diagnose runs it several times",
        )
    if error:
        return _script_error(run, job, err, where)
    if end.get("status") == "no_entry" and end.get("plain_jax"):
        return UsageError(
            "SCRIPT",
            f"{name} imported JAX and ran to its end without a training step diagnose captures: a jax.jit function "
            "that takes a gradient (jax.grad, jax.value_and_grad, nnx.value_and_grad) or applies optax updates "
            "(optax.apply_updates, TrainState.apply_gradients, nnx.Optimizer.update), or optax.apply_updates in the loop",
            f"Train through one of them (jit the step with its gradient and update inside), or check its timing with "
            f"`whichdevice audit {name}`",
        )
    if end.get("status") == "no_entry":
        return UsageError(
            "SCRIPT",
            f"{name} ran to its end without reaching a training entry point (watched: "
            f"{', '.join(end.get('watched') or ['none: no framework capture is installed'])})",
            "Train through one of them (model.fit, a GradientTape loop with optimizer.apply_gradients or apply, "
            "optimizer.step() or loss.backward()), or pass your model as --model FILE.py:FUNCTION",
        )
    why = script.child_failure(run, limit_s)
    fix = "Pass a larger --budget, or give the script arguments that load less data (after --)"
    if end.get("status") == "too_short":  # the script ended by itself: a larger budget changes nothing
        fix = (
            f"Give the script arguments (after --) that make it take at least {WARMUP + STEPS} training steps "
            f"(more steps, epochs or data): each case times {WARMUP} warm-up steps, then {STEPS}"
        )
    return UsageError("SCRIPT", f"{name} reached no timed training step in the pre-flight ({_line(why)})", fix)


def _stopped_by_memory(name: str, rss_bytes: int, memory_limit_bytes: int | None) -> UsageError:
    """The line for a pre-flight its parent stopped over the memory limit: which limit, what the
    script held, and how to move one or the other."""
    used = rss_bytes / 2**30
    less = "give the script arguments (after --) that load less data"
    if memory_limit_bytes is None:
        return UsageError(
            "SCRIPT",
            f"{name} was stopped by the memory limit (90 % of this machine's memory) in the pre-flight: its "
            f"process held {used:.2f} GiB before its first timed training step",
            f"Free memory, or {less}",
        )
    asked = memory_limit_bytes / 2**30
    return UsageError(
        "SCRIPT",
        f"{name} was stopped by --memory-limit {asked:g} GiB in the pre-flight: its process held {used:.2f} GiB "
        "before its first timed training step",
        f"Raise it (e.g. --memory-limit {max(math.ceil(used * 1.25), math.ceil(asked) + 1)}), or {less}",
    )


def _cpu_env(cpu_threads: int | None = None) -> dict[str, str]:
    """The pre-flight's environment: every framework's on the CPU, at the run's ``--cpu-threads``
    (None: the frameworks' own default), the count its measuring cases run at."""
    env: dict[str, str] = {}
    for fw in ("tensorflow", "torch", "jax"):
        try:
            env.update(frameworks.env_module(fw).child_env("cpu", cpu_threads))
        except Exception:  # noqa: BLE001 (a framework not installed: its env is not needed)
            continue
    env.pop("KERAS_BACKEND", None)  # torch's children set it; the script's own Keras backend is measured
    return env


def longest_call(entries: list[dict[str, Any]]) -> int | None:
    """The training call that asks for the most steps (epochs x batches; the first of equals), or
    of loops the survey followed to their end (a torch script's: ``s``, the seconds each ran), the
    longest-running; None where that is not known of every call (a generator's length): then the
    first is measured."""
    if entries and all(e.get("s") is not None for e in entries):
        return int(max(entries, key=lambda e: (float(e["s"]), -int(e.get("call") or 1))).get("call") or 1)
    if not entries or any(not e.get("steps") for e in entries):
        return None
    return int(max(entries, key=lambda e: (int(e["steps"]), -int(e.get("call") or 1))).get("call") or 1)


def _entries(run: script.ChildRun) -> list[dict[str, Any]]:
    """The training calls the run saw, each once, by call number."""
    seen = {int(e.get("call") or 0): e for e in [*(run.end.get("entries") or []), *run.entries]}
    return [seen[k] for k in sorted(seen) if k]


def _wrong_entry(entry_call: int, entries: list[dict[str, Any]], name: str) -> UsageError:
    calls = len(entries)
    what = f"{calls} {entries[0].get('entry', 'training')} call{'s' if calls != 1 else ''}" if entries else "none"
    if entries and entries[0].get("kind") == "loop":
        what = f"{calls} training loop{'s' if calls != 1 else ''}"
    return UsageError(
        "--entry",
        f"{entry_call} asks for a training call {name} did not make (the pre-flight saw {what})",
        f"Pass --entry 1 to {calls}" if calls > 1 else "Leave --entry out",
    )


def preflight(
    job: dict[str, Any],
    budget_s: float,
    *,
    memory_limit_bytes: int | None = None,
    case_timeout_s: float | None = None,
    entry_call: int | None = None,
    cpu_threads: int | None = None,
) -> dict[str, Any]:
    """Run the script once on the CPU with every capture: its facts, or a ``UsageError``. The
    script's process is held to the limits its measuring cases will be held to: the run's
    ``--memory-limit`` (None: the default) and, when shorter than the pre-flight's own, the case
    timeout; a script that only fits under the defaults would pass here and fail every case.
    It runs at the run's ``--cpu-threads`` (``cpu_threads``) too: its step's time prices every
    case, and a step timed at another thread count prices them wrong (a tiny MLP timed at 76 ms a
    step with 2 threads on 2 busy cores, 0.27 ms with the one thread its cases ran at, left the
    batch sweep out of --budget 60).

    The run is a survey: it times the chosen training call (``entry_call``: ``--entry``; None:
    the first) and lets the script go on, each further call recorded and passed over, so a
    script that trains several models (a teacher, then a student) has them all listed. Without
    ``--entry``, the call that asks for the most steps is measured: where that is not the
    first, the script runs once more to time it."""
    limit = max(30.0, 0.6 * budget_s)
    timeout = limit + 30.0 if case_timeout_s is None else min(limit + 30.0, case_timeout_s)
    limit = min(limit, timeout)
    run = _preflight_run(job, entry_call or 1, True, limit, timeout, memory_limit_bytes, cpu_threads)
    entries, survey_seen, survey_end = _entries(run), dict(run.seen), dict(run.end)
    ended = run.end.get("status") in ("ok", "no_entry")  # it ran to its end (not an error, not stopped)
    if entry_call is not None and _measured(run) is None and ended and entries:
        raise _wrong_entry(entry_call, entries, _name(job))
    chosen, reason = entry_call or 1, "asked" if entry_call is not None else "first"
    longest = longest_call(entries) if entry_call is None and len(entries) > 1 else None
    if longest is not None:
        reason = "longest"
        if longest != 1 and _measured(run) is not None:  # the most steps are another call's: time that one
            first_wall = run.finished.wall_s if run.finished else 0.0
            again = _preflight_run(job, longest, False, limit, timeout, memory_limit_bytes, cpu_threads)
            if _measured(again) is not None:
                chosen, run = longest, again
                if run.finished is not None:
                    run.finished = dataclasses.replace(run.finished, wall_s=run.finished.wall_s + first_wall)
            else:
                reason = "first"
    r = _measured(run)
    if r is None:
        stopped = _partial_facts(run, chosen, reason, entries)  # stopped at its limit after timing steps
        if stopped is not None:
            return stopped
        if run.results and run.results[0].get("status") not in ("ok",):
            run.end = {"status": "script_error", "error": run.results[0].get("error") or run.results[0].get("why_not")}
        raise _users_file(run) or refusal(run, job, limit, memory_limit_bytes)
    return _facts_of(r, run, chosen, reason, entries, survey_seen, survey_end)


def _facts_of(
    r: dict[str, Any],
    run: script.ChildRun,
    chosen: int,
    reason: str,
    entries: list[dict[str, Any]],
    survey_seen: dict[str, Any],
    survey_end: dict[str, Any],
) -> dict[str, Any]:
    """The pre-flight's facts from its measured call ``r`` (the plan's and the record's input)."""
    warm, steps = list(r.get("warmup_s") or []), list(r["step_s"])
    imported = [float(v) for v in (run.end.get("imported_s") or {}).values()]
    setup = float(r.get("setup_s") or 0.0)
    return {
        "import_s": min(max(imported, default=0.0), setup),  # the frameworks' imports in the set-up
        "data_s": max(0.0, setup - max(imported, default=0.0)),  # the rest: the script's own loading
        "framework": framework_of(r),
        "entry": r.get("entry"),
        BATCH: int(r.get("batch_size") or r.get("samples_per_step") or 0),
        "step_s": statistics.median(steps),
        "first_step_s": warm[0] if warm else steps[0],
        "setup_s": float(r.get("setup_s") or 0.0),
        "model": r.get("model"),
        "data": r.get("data"),
        SPE: int(r.get(SPE) or 1),
        "data_source": r.get("data_source"),
        "samples": r.get("samples"),
        "loader": r.get("loader") or {},
        "conv2d": bool(r.get("conv2d")),
        "trainer": r.get("trainer"),  # the trainer whose loop ran the step (Lightning, the HF Trainer), or None
        # batches a torch loop took from its DataLoader in its first step (2: it fetches ahead)
        "fetches": int(r.get("fetches") or 0),
        "rebatch": r.get("rebatch"),  # "step": a loop that slices its own batches, re-batched by tiling its step
        "preflight_s": float((run.finished.wall_s if run.finished else 0.0)),
        "entry_call": chosen,
        "entries": entries,
        "entry_reason": reason,
        # the survey ended before the script did: its deadline, or an error after the measured call
        "survey_stopped": bool(survey_seen.get("survey_stopped")) or survey_end.get("status") == "script_error",
        "load_per_core": _load_per_core(),
        "step_trace": step_trace(r, statistics.median(steps)),  # one warm-up step traced for the no-GPU prediction
        "plan_facts": r.get("plan_facts") or {},  # what the fix adapters plan from (frameworks/<fw>/scriptfixes.py)
        # the measured call's result as a case reads it: the answer where the budget holds no baseline of its own
        "preflight_result": script.timed_part(r),
    }


def _partial_facts(
    run: script.ChildRun, chosen: int, reason: str, entries: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The facts of a pre-flight stopped at its time limit after some steps of its training entry
    had ended but before its capture had all it waits for (a step of many seconds): the set-up and
    the steps it timed (``script.partial_steps``), the first with its tracing. None where no step
    ended, or the process ended otherwise (an error, the memory limit: those refusals say why)."""
    if run.finished is None or run.finished.stopped != "timeout" or run.results:
        return None
    got = script.partial_steps(run)
    if got is None:
        return None
    steps = [float(x) for x in got["steps"]]
    later = steps[1:]  # past the first (its tracing, the data pipeline's start)
    # with the first step alone, the next one was under way when the process was stopped: it took
    # at least that long (a loop whose first step starts at its model's call leaves its data out)
    running = float(run.finished.wall_s) - max(t for _n, t in run.ticks)
    mine: dict[str, Any] = next((e for e in entries if int(e.get("call") or 0) == chosen), {})
    entry = got.get("entry") or mine.get("entry")
    setup = float(got["setup_s"])
    batch = int(got.get(BATCH) or mine.get(BATCH) or 0)
    return {
        "import_s": None,
        "data_s": setup,  # the imports are not told apart: a measuring child is assumed to pay them all
        "framework": framework_of({"entry": entry, **got}) if entry else None,
        "entry": entry,
        BATCH: batch,
        "step_s": statistics.median(later) if later else max(steps[0], running),
        "first_step_s": steps[0],
        "setup_s": setup,
        "model": got.get("model") or mine.get("model"),
        "data": None,
        SPE: 1,
        "data_source": None,
        "samples": None,
        "loader": {},
        "conv2d": False,
        "trainer": None,
        "preflight_s": float(run.finished.wall_s),
        "entry_call": chosen,
        "entries": entries,
        "entry_reason": reason,
        "survey_stopped": True,
        "load_per_core": _load_per_core(),
        # what the pre-flight timed before it was stopped: its steps, and when it was stopped
        "partial": {"steps": len(steps), "stopped_s": float(run.finished.wall_s)},
        # its steps after the first as a case reads them; None with the first step alone (no step after
        # its tracing ended: nothing to answer from)
        "preflight_result": {
            "status": "ok",
            "step_s": later,
            "warmup_s": steps[:1],
            "setup_s": setup,
            **({"samples_per_step": float(batch)} if batch else {}),
        }
        if later
        else None,
    }


def step_trace(r: dict[str, Any], step_s: float) -> dict[str, Any] | None:
    """The pre-flight's traced step (``frameworks/<fw>/steptrace.py``) with what tracing it added
    to the pre-flight where the capture did not say it (a traced step of the loop: its wall beyond
    an untraced one, the median ``step_s``). None where the capture traces no step."""
    got = r.get("step_trace")
    if not isinstance(got, dict):
        fw = framework_of(r)
        why_not = frameworks.declared(fw, "STEP_UNTRACED", "")
        if why_not:  # said in one line where the answer would be
            return {"framework": fw, "source": "", "why_not": why_not}
        return None
    out = dict(got)
    if out.get("overhead_s") is None and got.get("collect_s") and not got.get("why_not"):
        out["overhead_s"] = max(float(got["collect_s"]) - step_s, 0.0)
    return out


def recorded_trace(sizing: dict[str, Any] | None) -> StepTrace | None:
    """The plan's traced step as the record keeps it (None: none, or one this version cannot read)."""
    got = (sizing or {}).get("step_trace")
    if not isinstance(got, dict):
        return None
    try:
        return StepTrace.model_validate(got)
    except ValueError:
        return None


def _load_per_core() -> float | None:
    """The machine's load over the last minute per core, as the pre-flight ends (None where the
    system does not say)."""
    try:
        return os.getloadavg()[0] / max(os.cpu_count() or 1, 1)
    except (OSError, AttributeError):
        return None


def _preflight_run(  # noqa: PLR0913 (the pre-flight's limits, each the run's own)
    job: dict[str, Any],
    call: int,
    survey: bool,
    limit: float,
    timeout: float,
    memory_limit_bytes: int | None,
    cpu_threads: int | None = None,
    env: dict[str, str] | None = None,
) -> script.ChildRun:
    """The one pre-flight child (``measure/scriptchild.py``): the script run once on the CPU under
    the capture (``env``: the pre-flight's own, :func:`_cpu_env`), or a model function checked
    (:func:`check_model`)."""
    spec = CaptureSpec(
        "baseline",
        warmup_steps=WARMUP,
        steps=PREFLIGHT_STEPS,
        device="cpu",
        deadline_s=limit,
        entry_call=call,
        survey=survey,
        trace_step=True,  # one warm-up step traced for the no-GPU prediction (frameworks/*/steptrace.py)
    )
    return script.run_child(
        job,
        spec,
        ["tensorflow", "torch", "jax"],
        timeout_s=timeout,
        env=_cpu_env(cpu_threads) if env is None else env,
        memory_limit_bytes=memory_limit_bytes,
    )


def check_model(
    check: dict[str, Any], env: dict[str, str], timeout_s: float, memory_limit_bytes: int | None
) -> script.ChildRun:
    """The pre-flight's model check: the user's model function (``--model`` of train, pipeline,
    placement, predict and scale; ``check``: its file, function, data, input shape and classes)
    built and checked in the pre-flight child, in the framework's ``env``; no script runs. Its one
    result is the facts or the one-line failure (``frameworks/common/usermodel.check_job``)."""
    return _preflight_run({"model_check": check}, 1, False, timeout_s, timeout_s, memory_limit_bytes, env=env)


def _measured(run: script.ChildRun) -> dict[str, Any] | None:
    return next((x for x in run.results if x.get("status") == "ok" and x.get("step_s")), None)


def entry_words(facts: dict[str, Any]) -> tuple[str, str]:
    """Which training call was measured, and the others, in words (both "" for a script with one):
    ("the 2nd of 3 fit calls, the one with the most steps (192)", "also trains: Sequential 'teacher'
    fit (1st call, 128 steps), ...; choose with --entry 1 or 3")."""
    entries = list(facts.get("entries") or [])
    if len(entries) < 2:
        return "", ""
    n, kind = int(facts.get("entry_call") or 1), str(entries[0].get("entry") or "").rsplit(".", 1)[-1]
    mine: dict[str, Any] = next((e for e in entries if int(e.get("call") or 0) == n), {})
    if entries[0].get("kind") == "loop":  # a torch script's loops, each followed to its end
        return _loop_words(facts, entries, n, mine)
    why = {
        "longest": "the one with the most steps",
        "asked": "as --entry asked",
        "first": "the first: the steps of every call are not known",
    }.get(str(facts.get("entry_reason")), "")
    steps = f" ({mine['steps']} steps)" if mine.get("steps") and facts.get("entry_reason") == "longest" else ""
    said = f"the {script.ordinal(n)} of {len(entries)} {kind} calls" + (f", {why}{steps}" if why else "")
    others = [e for e in entries if int(e.get("call") or 0) != n]
    listed = ", ".join(f"{_call_name(e)} ({script.ordinal(int(e['call']))} call{_steps(e)})" for e in others)
    return said, _also_trains(facts, others, listed)


def _loop_words(facts: dict[str, Any], entries: list[dict[str, Any]], n: int, mine: dict[str, Any]) -> tuple[str, str]:
    """``entry_words`` for a script's training loops: "the 2nd of 2 training loops (Classifier,
    batch 32, 384 steps in 0.41 s), the longest-running", and the others with theirs."""
    why = {
        "longest": "the longest-running",
        "asked": "as --entry asked",
        "first": "the first: the pre-flight did not see every loop to its end",
    }.get(str(facts.get("entry_reason")), "")
    said = f"the {script.ordinal(n)} of {len(entries)} training loops{_loop_facts(mine)}" + (f", {why}" if why else "")
    others = [e for e in entries if int(e.get("call") or 0) != n]
    listed = ", ".join(f"the {script.ordinal(int(e['call']))} loop{_loop_facts(e)}" for e in others)
    return said, _also_trains(facts, others, listed)


def _also_trains(facts: dict[str, Any], others: list[dict[str, Any]], listed: str) -> str:
    """The second half of ``entry_words``, for calls and loops alike: the others (``listed``, in
    words), whether the survey stopped before the end, and the ``--entry`` numbers to choose from."""
    numbers = [str(int(e["call"])) for e in others]
    choose = " or ".join([", ".join(numbers[:-1]), numbers[-1]] if len(numbers) > 1 else numbers)
    more = "; the pre-flight stopped following the script there: later ones are not listed"
    more = more if facts.get("survey_stopped") else ""
    return f"also trains: {listed}{more}; choose with --entry {choose}"


def _loop_facts(e: dict[str, Any]) -> str:
    """ " (Classifier, batch 32, 384 steps in 0.41 s)": what the survey saw of one loop."""
    bits = [str(e["model"])] if e.get("model") else []
    bits += [f"batch {e[BATCH]}"] if e.get(BATCH) else []
    if e.get("steps"):
        took = f" in {seconds(float(e['s']))}" if e.get("s") is not None else ""
        bits.append(
            f"{e['steps']} steps{took}{' when the pre-flight stopped following it' if e.get('stopped') else ''}"
        )
    return f" ({', '.join(bits)})" if bits else ""


def _call_name(e: dict[str, Any]) -> str:
    kind = str(e.get("entry") or "").rsplit(".", 1)[-1]
    name = str(e.get("name") or "")
    model = str(e.get("model") or "")
    named = f"{model} '{name}'" if name and name.lower() != model.lower() else model
    return f"{named} {kind}".strip()


def _steps(e: dict[str, Any]) -> str:
    return f", {e['steps']} steps" if e.get("steps") else ""


def framework_of(r: dict[str, Any]) -> str:
    if r.get("framework"):  # a capture that names its framework (JAX's: a jitted step, optax)
        return str(r["framework"])
    entry = str(r.get("entry") or "")
    if entry.startswith("keras."):
        return frameworks.keras_on(str(r.get("backend")))
    return "tensorflow" if entry.startswith("tf.") else "torch"


# ------------------------------------------------------------------ sizing


class _Costs:
    def __init__(self, facts: dict[str, Any], slower: float = 1.0) -> None:
        """The costs of the measured times, or of those times ``slower`` times longer."""
        self.batch = int(facts[BATCH] or 0)
        self.step = max(float(facts["step_s"]), 1e-5) * slower
        self.trace = max(float(facts["first_step_s"]) * slower - self.step, 0.0)
        self.start = PROCESS_START_S + float(facts["setup_s"]) * slower
        # A measuring child's first script run is in its own process (the framework imported
        # already): it pays the script's own loading, not the imports.
        self.here = float(facts.get("data_s", facts["setup_s"])) * slower

    def member(self, k: int | None = None, *, trace_factor: float = 1.0, spe: int = 1, shared: bool = True) -> float:
        """One variant's share of a process: its trace and its steps (and a fit's turns)."""
        f = max(1.0, (k or self.batch or 1) / max(self.batch, 1))
        steps = (WARMUP + STEPS + TURNS) * max(1, spe if spe == 1 else 3 * TURNS * spe // max(STEPS, 1))
        return self.trace * trace_factor + steps * self.step * f + (TURNS * TURN_OVERHEAD_S if shared else 0.0)

    def process(self, member: float) -> float:
        return self.start + member

    def baseline(self) -> float:
        """The baseline's run, in the measuring child itself (always planned): the script's own
        loading, then the baseline's trace and steps."""
        return self.here + self.member()


def least_budget(c: _Costs) -> float:
    """The least ``--budget`` whose plan holds the baseline: ``size`` gives the cases the budget
    less the measuring child's start (at least half the budget), and the baseline must fit in it.
    The one test of whether a budget is refused, and (at the times with headroom) the figure a
    refusal asks for."""
    return min(c.baseline() + c.start, 2.0 * c.baseline())


def headroom(facts: dict[str, Any]) -> float:
    """How much slower than the pre-flight the next run may be, for the figure a refusal asks for."""
    load = float(facts.get("load_per_core") or 0.0)
    return min(HEADROOM + LOAD_HEADROOM * max(load - 1.0, 0.0), MAX_HEADROOM)


def budget_that_holds(facts: dict[str, Any]) -> int:
    """The budget a refusal asks for: the least budget at the pre-flight's times with
    :func:`headroom`, rounded up to 10 s; never below the least budget at the times measured."""
    return math.ceil(max(least_budget(_Costs(facts, headroom(facts))), least_budget(_Costs(facts))) / 10) * 10


def thread_counts(framework: str) -> list[int]:
    """The CPU thread counts tried against the framework's default: one thread, and the physical
    cores where the default is every logical core (a machine with SMT); none where the
    framework has no thread setting a child's environment can make (JAX)."""
    if not script.threads_env(framework, 1):
        return []
    import os

    import psutil

    logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    physical = min(psutil.cpu_count(logical=False) or logical, logical)
    default = physical if frameworks.declared(framework, "DEFAULT_CPU_THREADS", "logical") == "physical" else logical
    return [n for n in dict.fromkeys((1, physical)) if n != default] if default > 1 else []


def _batches(facts: dict[str, Any], gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """The batch sweep's cases (each a batch, steady, the loss never read), where the script's
    batch can be changed: larger batches tiled into its step, or batches near the user's."""
    fw, entry, b = facts["framework"], facts["entry"], int(facts[BATCH] or 0)
    steady = _STEADY
    rebatched = facts.get("data") in KERAS_DATA_REBATCHED if entry in script.KERAS_ENTRIES else True
    source = frameworks.declared(fw, "REBATCHES", None)  # torch: the batch variant re-batches the DataLoader
    if source is not None:
        rebatched = facts.get("data_source") == source or tiled(facts)
    if b and tiled(facts):  # the step's own batch tiled: larger batches, in the baseline's process
        larger = [k for k in USER_SWEEP_BATCHES if b < k <= TILED_AT_MOST * b][:TILED_SWEEP]
        return [(k, dict(steady)) for k in larger]
    if b and rebatched:
        n = int(facts.get("samples") or 0)  # a batch needs enough of the data for a turn's steps
        # without the data's size (a DataLoader, tf.data), at most 4x the user's batch: a larger one
        # may leave the script fewer batches than its warm-up (torch_cnn.py: 256 samples)
        fits = [k for k in USER_SWEEP_BATCHES if k != b and (n // k >= MIN_BATCHES if n else k <= 4 * b)]
        others = sorted(fits, key=lambda k: (abs(math.log(k / b)), k))
        return [(k, dict(steady)) for k in others[:3]]
    return []


def _threads(facts: dict[str, Any], gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    """The CPU thread counts' cases: the default side runs as the script does; each count in a
    process of its own (:func:`thread_counts`)."""
    threads = thread_counts(facts["framework"])
    return [(v, dict(_STEADY)) for v in ("default", *threads)] if threads else []


def _planned_here(fix: str) -> PlanCases | None:
    """The cases of a fix every framework's script plan sizes itself, from the data and the machine
    (the catalogue says which); None: its framework's adapter's (frameworks/<fw>/scriptfixes.py)."""
    return _batches if _is(fix, "sweeps_batch") else _threads if _is(fix, "thread_count") else None


def _is(fix: str, what: str) -> bool:
    """Whether the catalogue's entry ``fix`` has the attribute ``what`` set (``sweeps_batch``, ...)."""
    e = fixes.BY_KEY.get(fix)
    return bool(e is not None and getattr(e, what))


def _variants(facts: dict[str, Any], gpu: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """Every variant worth trying on this script, in priority order (the order its framework's
    capture lists its fixes): (fix, what it is, the planned case: its parameters and its
    ``variant``, typed by the catalogue entry)."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for fix, adapter in script.adapters(facts["framework"]).items():
        plan = adapter.cases or _planned_here(fix)
        for value, params in plan(facts, gpu) if plan is not None else []:
            variant = fixes.entry(fix).variant(value)
            out.append((fix, f"{fix} {value}", {**params, "variant": variant.model_dump()}))
    return out


# The pre-flight's load per core (1-minute average over logical cores) from which the thread-count
# fix is planned first: more runnable threads than cores, the script's threads wait for each other.
CONTENDED_LOAD = 1.0


def planned_spec(facts: dict[str, Any], planned: dict[str, Any]) -> CaseSpec:
    """A planned case as the plan costs it: the user's entry, batch and trainer beside its own
    parameters, its variant typed (its device aside: the sizing is the same on each)."""
    rest, variant = _split(planned)
    p = {"entry": facts["entry"], BATCH: facts[BATCH], "user_batch": facts[BATCH], **rest}
    p["trainer"] = facts.get("trainer")  # a trainer's loop: the loader variants run alone (script.shares_child)
    if facts.get("rebatch"):
        p["rebatch"] = facts["rebatch"]
    return CaseSpec(workload="train", framework=facts["framework"], device="CPU:0", params=p, variant=variant)


def _split(planned: dict[str, Any]) -> tuple[dict[str, Any], Variant | None]:
    """A planned case's parameters and its variant (None: the baseline)."""
    rest = {k: v for k, v in planned.items() if k != "variant"}
    variant = planned.get("variant")
    return rest, Variant.model_validate(variant) if variant is not None else None


def planned_batches(planned: list[dict[str, Any]]) -> list[int]:
    """The batches of the batch sweep's planned cases."""
    return [int(v.value) for v in (_split(p)[1] for p in planned) if v is not None and _is(v.fix, "sweeps_batch")]


# Plan the fixes that take turns before those that pay the set-up again (False: in priority order
# only, as the plan was before most torch variants took turns; benchmarks/setup_runs.py compares).
TURNS_FIRST = True


def _loader_alone(facts: dict[str, Any], spec: CaseSpec) -> bool:
    """A torch loader variant that the shared process will hand back to a process of its own
    (``capture_hooks.alone_why``): the pre-flight saw the loop take its batches ahead of its steps
    (or several a step), or a DataLoader with worker processes of its own."""
    if spec.params.get("entry") not in script.TURN_ENTRIES or not script.loader_member(spec):
        return False
    return int(facts.get("fetches") or 1) > 1 or bool(
        int((facts.get("loader") or {}).get(fixes.NUM_WORKERS.param) or 0)
    )


def tiled(facts: dict[str, Any]) -> bool:
    """Whether the script's batch variants re-batch its step by tiling the step's own inputs (a
    jitted JAX step; a torch loop with no DataLoader that slices its batches from tensors)."""
    return facts.get("entry") in script.STEP_ENTRIES or facts.get("rebatch") == "step"


def script_steps(facts: dict[str, Any]) -> int | None:
    """The steps the measured torch loop takes in all, where the pre-flight's survey followed it to
    its end (its entry's ``steps``, not ``stopped``); None where that is not known. The members of
    the shared process draw their steps from these (:func:`turns_fed`)."""
    if facts.get("entry") not in script.TURN_ENTRIES:
        return None
    n = int(facts.get("entry_call") or 1)
    mine = next((e for e in facts.get("entries") or [] if int(e.get("call") or 0) == n), None)
    if not mine or mine.get("kind") != "loop" or mine.get("stopped") or not mine.get("steps"):
        return None
    return int(mine["steps"])


def _draws(facts: dict[str, Any], spec: CaseSpec) -> int:
    """The script's own steps a member takes per turn: none for a loader member, which a DataLoader
    of the capture's feeds (its epochs renewed: ``capture_hooks.Feed``), one for every other."""
    fed = script.loader_member(spec) and facts.get("data_source") == "DataLoader" and not tiled(facts)
    return 0 if fed else 1


def _warmup(spec: CaseSpec) -> int:
    """A member's warm-up steps in turns: a compile member's first turn compiles (one more)."""
    return WARMUP + (script.variant_of(spec) == "compile")


def turns_fed(steps: int, draws: int, warmup: int) -> bool:
    """Whether a loop of ``steps`` steps feeds the shared process's turns: its members take a step
    each in turn, and none is timed before every member's warm-up ended, so the loop must last
    ``warmup`` (the longest) + ``STEPS`` rounds, each taking ``draws`` of its steps (one per member
    that takes the script's own batches)."""
    return draws * (warmup + STEPS) <= steps


def _cost(c: _Costs, facts: dict[str, Any], params: dict[str, Any], keras: bool) -> tuple[float, bool]:
    """One planned case's cost: its share of the shared process, or a process of its own (then
    True). What its variant adds (a compiled trace, steps per call, a compile) is its framework's
    adapter's (``ScriptFix.cost``)."""
    spec = planned_spec(facts, params)
    v = spec.variant
    adapter = script.adapters(spec.framework).get(v.fix) if v is not None else None
    cost = adapter.cost(v.value) if adapter is not None and v is not None else StepCost()
    trace = cost.trace
    shares = script.shares_child(spec)
    if keras and shares:  # a later trace in the same process: measured 0.35-0.5 of the first
        trace *= LATER_TRACE
    m = c.member(int(params_of(spec)[BATCH] or 0), trace_factor=trace, spe=cost.per_call, shared=keras) + cost.extra_s
    shared = shares and not _loader_alone(facts, spec)
    return (m, False) if shared else (c.process(m), True)


@dataclasses.dataclass(frozen=True)
class FixCost:
    """One fix's cases as the plan counts them: each case's cost, and whether it runs in a
    process of its own (True) or takes its turn in the shared one (False)."""

    fix: str
    params: tuple[dict[str, Any], ...]
    costs: tuple[tuple[float, bool], ...]
    draws: tuple[int, ...] = ()  # each case's steps of the script's own per turn (_draws)
    warmup: tuple[int, ...] = ()  # each case's warm-up steps in turns (_warmup)
    apart: tuple[float, ...] = ()  # each case's cost in a process of its own
    moved: bool = False  # its turns put in processes of their own: the script's loop could not feed them

    @property
    def cost(self) -> float:
        return sum(x for x, _own in self.costs)

    @property
    def most(self) -> float:
        """Its cost at most: its turns in processes of their own where the loop cannot feed them."""
        return max(self.cost, sum(self.apart)) if self.apart else self.cost

    def turns(self) -> tuple[int, int]:
        """The script's steps its cases in turns take per round, and their longest warm-up."""
        shared = [(d, w) for (_x, own), d, w in zip(self.costs, self.draws, self.warmup) if not own]
        return sum(d for d, _w in shared), max((w for _d, w in shared), default=0)

    def alone(self) -> FixCost:
        """Its cases that would take turns, each in a process of its own instead (``own_process``:
        ``script.shares_child``)."""
        moved = [not own for _x, own in self.costs]
        return dataclasses.replace(
            self,
            params=tuple({**p, "own_process": True} if m else p for p, m in zip(self.params, moved)),
            costs=tuple((a, True) for a in self.apart),
            moved=True,
        )


@dataclasses.dataclass(frozen=True)
class PlanCosts:
    """What the plan weighs against a budget, at one set of times: the measuring child's start,
    the baseline, the least budget that holds it, and each fix in the order the plan takes them."""

    start: float
    baseline: float
    least: float
    fixes: tuple[FixCost, ...]
    steps: int | None = None  # the script's loop's steps in all, where the survey saw its end (script_steps)


@dataclasses.dataclass(frozen=True)
class Plan:
    """Which fixes one budget holds (:func:`plan`): the rounds, the fixes planned and cut, and the
    seconds the measuring child's limits are sized from."""

    rounds: int
    alone: bool  # the baseline alone: the budget leaves it too little for anything else
    planned: tuple[FixCost, ...]
    cut: tuple[FixCost, ...]
    used: float  # the round's planned seconds, the baseline's included
    longest: float  # the longest process: the shared one's baseline or a case in its own
    in_turns: float  # the shared process: the baseline and the cases that take turns in it


def plan_costs(
    facts: dict[str, Any],
    gpu: bool = False,
    slower: float = 1.0,
    variants: list[tuple[str, str, dict[str, Any]]] | None = None,
) -> PlanCosts:
    """The costs :func:`plan` weighs, at the pre-flight's times or at those ``slower`` times longer."""
    c = _Costs(facts, slower)
    keras = facts["entry"] in script.KERAS_ENTRIES
    groups: dict[str, list[dict[str, Any]]] = {}
    for fix, _what, params in _variants(facts, gpu) if variants is None else variants:
        groups.setdefault(fix, []).append(params)
    fixes = []
    for f, ms in groups.items():
        each = tuple(_cost(c, facts, p, keras) for p in ms)
        fixes.append(
            FixCost(
                f,
                tuple(ms),
                each,
                draws=tuple(_draws(facts, planned_spec(facts, p)) for p in ms),
                warmup=tuple(_warmup(planned_spec(facts, p)) for p in ms),
                apart=tuple(x if own else c.process(x) for x, own in each),
            )
        )
    # the fixes that take turns in the shared process first (each in priority order): a fix that
    # pays the set-up again would otherwise crowd out several that cost their steps only, and a
    # larger budget measure fewer fixes than a smaller one
    # ... except the thread count on a machine busier than its cores: there one thread against the
    # contention is the likeliest fix (4-6x on the corpus's input-bound loader at load 5-7), and
    # planned last it was the one a slower pre-flight cut (benchmarks/stable_verdicts.md)
    busy = float(facts.get("load_per_core") or 0.0) >= CONTENDED_LOAD
    fixes.sort(
        key=lambda f: (not (busy and _is(f.fix, "answers_contention")), TURNS_FIRST and any(own for _x, own in f.costs))
    )
    return PlanCosts(
        start=c.start, baseline=c.baseline(), least=least_budget(c), fixes=tuple(fixes), steps=script_steps(facts)
    )


def two_rounds_s(start: float, budget_s: float) -> float:
    """The most a round may plan for its second to fit too: round 2 repeats round 1's cases in a
    child that imported its framework beside round 1 (or in round 1's own child), so both rounds
    after the child's ``start`` end before the page's reserve. Planned past it, a run whose round
    1 took a second longer than the last run's got no round 2, and its pairs (one process a side)
    read "not enough samples" where the last run claimed them."""
    return max(budget_s - page_reserve(budget_s) - start, 0.0) / 2


# How far a fix's cost may move before the plan decides it otherwise than the last run of the same
# command did: the set-up and the step vary by up to 15-18 % between back-to-back runs (set-up
# 6.0, 6.2 and 6.9 s; step 2.8, 3.3 and 3.2 ms: keras_fit_dict_inputs, three runs at load 0.6),
# and a fix whose cost sat that near the plan's edge was measured in one run and cut in the next.
KEEP_PLAN = 1.15


@dataclasses.dataclass(frozen=True)
class PriorPlan:
    """What the last run of the same command (the same script, arguments and budget on this
    machine) planned: the fixes it measured and cut, its rounds, and when it ran."""

    planned: frozenset[str]
    cut: frozenset[str]
    rounds: int
    created_at: str
    # the seconds a round each case of a measured fix took in that run, by ``case_key``: its
    # warm-up and its longest round's steps, as timed
    measured: Mapping[str, float] = dataclasses.field(default_factory=dict)
    # how far the costs may move before a decision is made afresh: KEEP_PLAN, wider on a busy
    # machine (:func:`keep_band`)
    band: float = KEEP_PLAN

    def slack(self, fix: str) -> float:
        """The factor on the plan's seconds for ``fix``: its last decision holds until its cost
        moves past ``band``."""
        return self.band if fix in self.planned else 1.0 / self.band if fix in self.cut else 1.0

    def repriced(self, f: FixCost) -> FixCost:
        """``f`` with each case that takes turns priced at no more than that run measured it.
        The pre-flight prices a case from one step scaled by its batch; on a machine busier than
        its cores that step lands in one of two modes (0.47 or 23.9 ms at batch 8:
        torch_sliced_batches at load 4-5), and a larger batch's step did not grow with the batch
        there (23.9 ms at 8 and at 128), so a priced 7 s took 0.5 s, and one run measured the batch
        and the next cut it. What was measured prices the case better than the scaled step."""
        if f.fix not in self.planned or not self.measured:
            return f
        costs = tuple(
            (min(x, self.measured.get(case_key(p.get("variant") or {}), x)) if not own else x, own)
            for (x, own), p in zip(f.costs, f.params)
        )
        return f if costs == f.costs else dataclasses.replace(f, costs=costs)


def keep_band(facts: dict[str, Any]) -> float:
    """How far the costs may move before the plan decides otherwise than the last run of the same
    command: ``KEEP_PLAN``, widened on a machine busier than its cores as a refusal's figure is
    (:func:`headroom`). There the set-up moved 3.6, 2.6 and 2.4 s in three runs (load 1.4-2 per
    core: torch_sliced_batches), and the one-thread fix, planned first, sat at the round's edge:
    cut, kept cut, then measured."""
    return KEEP_PLAN * headroom(facts) / HEADROOM


def case_key(variant: Mapping[str, Any]) -> str:
    """A case's name across two runs: its variant's fix and value (the variant as a record or a
    plan holds it, ``Variant.model_dump``)."""
    return f"{variant.get('fix')}={variant.get('value')}"


def _measured_cases(record: records.RunRecord) -> dict[str, float]:
    """The seconds a round each measured variant's case took in ``record`` (:class:`PriorPlan`)."""
    out: dict[str, float] = {}
    for r in record.results:
        if r.status != "ok" or r.timing is None or r.spec.variant is None:
            continue
        t = r.timing
        steps = max((sum(x) for x in t.rounds_s), default=0.0) if t.rounds_s else sum(t.samples_s)
        out[case_key(r.spec.variant.model_dump())] = sum(t.warmup_s) + steps * t.number_per_sample
    return out


def prior_plan(record: records.RunRecord, job: dict[str, Any], budget_s: float) -> PriorPlan | None:
    """``record``'s plan when it is a diagnose of the same script (the same file, arguments and
    budget) whose cases were measured, else None."""
    o = record.options
    same = (
        record.experiment == "diagnose"
        and o.get("script")
        and Path(str(o["script"])).resolve() == Path(job["script"]).resolve()
        and _strings(o.get("script_args")) == [str(a) for a in job.get("args") or []]
        and o.get("budget_s") == budget_s
        and not o.get("preflight_only")
    )
    if not same or not record.results:
        return None
    planned = {r.spec.variant.fix for r in record.results if r.spec.variant is not None}
    rounds = o.get("rounds_planned")
    return PriorPlan(
        frozenset(planned),
        frozenset(_strings(o.get("fixes_cut"))),
        rounds if isinstance(rounds, int) else 2,
        record.created_at,
        _measured_cases(record),
    )


def _strings(value: object) -> list[str]:
    """A record option's list of strings (none where it holds something else)."""
    return [str(v) for v in value] if isinstance(value, list) else []


def plan(costs: PlanCosts, budget_s: float, prior: PriorPlan | None = None) -> Plan:
    """The one planning rule: round 1 gets ``ROUND1_SHARE`` of what the budget leaves after the
    measuring child's start (at least half the budget) and no more than lets round 2 fit too
    (:func:`two_rounds_s`), or ``ROUND1_ONLY_SHARE`` in one round when
    the baseline alone is larger than that share; each fix whole, in order, where it still fits;
    a budget below the least one holds the baseline alone. Where the script's loop takes a known
    number of steps (``costs.steps``), a fix whose turns it could not feed beside those planned
    before it (:func:`turns_fed`) has its cases each in a process of their own (``FixCost.alone``),
    where the budget holds them so. With ``prior`` (the last run of the same command), each of
    its decisions (two rounds or one, a fix measured or cut) holds while the costs stay within
    ``KEEP_PLAN`` of what decides it, so a few per cent of set-up time do not change the answer's
    question between two runs."""
    avail = max(budget_s - costs.start, 0.5 * budget_s)
    shared = costs.baseline
    rounds, plan_s = 2, min(ROUND1_SHARE * avail, two_rounds_s(costs.start, budget_s))
    keep = 1.0 if prior is None else prior.band if prior.rounds == 2 else 1.0 / prior.band
    if shared > plan_s * keep:
        rounds, plan_s = 1, ROUND1_ONLY_SHARE * avail
    alone = budget_s < costs.least  # the baseline does not fit what the budget leaves (avail)
    if alone:  # the baseline alone, in one round: nothing else is started
        rounds, plan_s = 1, 0.0
    used = longest = in_turns = shared
    planned: list[FixCost] = []
    cut: list[FixCost] = []
    draws, warmup = 1, WARMUP  # the baseline's turns: the script's own batches
    for f in costs.fixes:
        f = prior.repriced(f) if prior is not None else f
        more, warm = f.turns()
        if costs.steps is not None and more and not turns_fed(costs.steps, draws + more, max(warmup, warm)):
            f, more, warm = f.alone(), 0, 0
        if used + f.cost <= plan_s * (prior.slack(f.fix) if prior is not None else 1.0):
            used += f.cost
            in_turns += sum(x for x, own in f.costs if not own)
            draws, warmup = draws + more, max(warmup, warm)
            planned.append(f)
            longest = max([longest, *(x for x, own in f.costs if own)])
        else:
            cut.append(f)
    return Plan(rounds, alone, tuple(planned), tuple(cut), used, longest, in_turns)


def size(
    facts: dict[str, Any], budget_s: float, *, gpu: bool = False, prior: PriorPlan | None = None
) -> dict[str, Any]:
    """The variants that fit the budget (by fix, both sides of a pair or none), rounds, limits;
    ``prior``: the last run of the same command's plan, whose decisions hold (:func:`plan`)."""
    if not facts.get("framework"):  # stopped before its capture said which entry it timed: nothing to plan
        raise UsageError(
            "SCRIPT",
            f"{measured_words(facts)} and the set-up {float(facts['setup_s']):.1f} s, but the pre-flight was "
            "stopped before its capture had read which training entry it was",
            f"Pass --budget {budget_that_holds(facts)} or more (it allows {times(headroom(facts))}× the set-up and "
            "step times measured here)",
        )
    costs = plan_costs(facts, gpu)
    keras = facts["entry"] in script.KERAS_ENTRIES
    prior = dataclasses.replace(prior, band=keep_band(facts)) if prior is not None else None
    chosen = plan(costs, budget_s, prior)
    alone, rounds, used, longest, in_turns = chosen.alone, chosen.rounds, chosen.used, chosen.longest, chosen.in_turns
    # the baseline past the budget even alone: answered from the pre-flight's own steps where it timed one
    only = alone and not baseline_fits_overrun(facts, budget_s)
    if only and not facts.get("preflight_result"):
        raise too_short(facts, budget_s)
    planned = [params for f in chosen.planned for params in f.params]
    cut = [
        f"{f.fix} not measured{' on a GPU' if fixes.entry(f.fix).gpu_only else ''}: {_too_few_steps(costs.steps) if f.moved else ''}"
        f"its {len(f.params)} case(s){' in processes of their own' if f.moved else ''} need about "
        f"{f.cost:.0f} s, more than the budget leaves"
        for f in chosen.cut
    ]
    one_run = keras or facts["entry"] in script.STEP_ENTRIES  # every variant in the round's one process
    # a torch loop's shared process takes its members in turns: its limit holds all of them
    turns = 1.5 * in_turns + 10.0 if facts["entry"] in script.TURN_ENTRIES else 0.0
    limit = max(30.0, 1.5 * longest + 10.0, 1.5 * used + 10.0 if one_run else 0.0, turns)
    if cut:
        cut.append(f"a larger --budget measures what was cut (this plan: {budget_s:g} s per device)")
    # the --budget whose plan holds every fix, where this one cut some (the screen names it)
    whole = budget_for_all(facts, gpu) if alone or chosen.cut else 0
    said = baseline_only_words(facts, budget_s, whole) if alone and not only else ""
    if alone and not only:
        cut.insert(0, f"the baseline alone was measured: {said}")
    told = preflight_only_words(facts, budget_s, whole) if only else ""
    if only:
        cut.insert(0, f"the baseline was timed in the pre-flight alone: {told}")
    sweep = sorted({facts[BATCH], *planned_batches(planned)} - {0})
    return {
        "rounds": rounds,
        "planned": planned,
        "cut": cut,
        "step_s": facts["step_s"],
        "sweep_batches": sweep,
        # the baseline alone past the budget: its child may take what the baseline needs
        "child_limit_s": round(limit if alone else min(limit, max(budget_s, 60.0)), 1),
        "case_timeout_s": round(costs.start + limit, 1) if alone else None,
        "baseline_only": said,  # what a budget too short for more than the baseline measured, or ""
        # what a budget too short for even the baseline answered from (the pre-flight's steps), or ""
        "preflight_only": told,
        # the pre-flight's timed steps: the baseline case's timing where the plan answers from them
        # (``preflight_only``), and the baseline's answer where the budget ran out before its process
        **({"preflight_result": facts["preflight_result"]} if facts.get("preflight_result") else {}),
        "budget_for_all": whole if chosen.cut or only else None,
        "planned_s": used,
        # the decisions the last run of the same command made and this plan kept (a fresh plan would
        # have decided them otherwise, the costs having moved less than KEEP_PLAN): the notes say so
        "plan_kept": _kept(costs, budget_s, chosen, prior),
        "point_cap_s": None,
        "fixes_cut": sorted({line.split(" ", 1)[0] for line in cut if " not measured" in line}),
        # the fixes whose turns the script's loop could not feed: each case in a process of its own
        "fixes_apart": [f.fix for f in chosen.planned if f.moved],
        "script_steps": costs.steps,
        "preflight_s": facts.get("preflight_s"),
        # the machine's load per core as the pre-flight ended: the record keeps it, so the analysis can
        # tell threads contending for busy cores from a script that is slow on idle ones
        "load_per_core": facts.get("load_per_core"),
        "step_trace": facts.get("step_trace"),  # the record keeps it (RunRecord.step_trace)
        "setup_s": facts["setup_s"],
        "import_s": facts.get("import_s"),
        "data_s": facts.get("data_s"),
        # which training call is measured and the others the script makes (a record's notes say it)
        **({"entry_facts": {k: facts.get(k) for k in ENTRY_FACTS}} if len(facts.get("entries") or []) > 1 else {}),
    }


def _kept(costs: PlanCosts, budget_s: float, chosen: Plan, prior: PriorPlan | None) -> str | None:
    """The note of what ``chosen`` kept of ``prior`` where a fresh plan would differ, or None."""
    if prior is None:
        return None
    fresh = plan(costs, budget_s)
    names = lambda p: {f.fix for f in p.planned}  # noqa: E731 (two plans, one question)
    kept = sorted(names(chosen) ^ names(fresh))
    if not kept and fresh.rounds == chosen.rounds:
        return None
    when = prior.created_at[:16].replace("T", " ")
    by_name = {f.fix: f for f in costs.fixes}
    # measured only because that run's cases cost less than this pre-flight's step priced them
    cheaper = {f: prior.repriced(by_name[f]) for f in kept if f in names(chosen)}
    repriced = [f for f, c in cheaper.items() if c != by_name[f]]
    took = [seconds(cheaper[f].cost) for f in repriced]
    priced = [seconds(by_name[f].cost) for f in repriced]
    said = (
        [
            f"{listed(repriced)} measured as in the last run of this command ({when}): "
            f"{'its' if len(repriced) == 1 else 'their'} cases took {listed(took)} a round there, where this "
            f"pre-flight's step priced them at {listed(priced)}"
        ]
        if repriced
        else []
    )
    what = [f"{f} {'measured' if f in names(chosen) else 'left out'}" for f in kept if f not in repriced]
    if fresh.rounds != chosen.rounds:
        what.insert(0, f"{chosen.rounds} round{'s' if chosen.rounds > 1 else ''}")
    if what:
        said.append(
            f"planned as the last run of this command ({when}): "
            f"{', '.join(what)}, its cost within {prior.band:.2f}× of the budget's edge, so the two runs "
            "answer the same question"
        )
    return "; ".join(said)


def _too_few_steps(steps: int | None) -> str:
    """Why a fix's cases could not take turns: the script's loop is too short for them."""
    return (
        f"your script's loop takes {steps} steps, too few for its turns beside the others' "
        f"(each variant takes {WARMUP} warm-up and {STEPS} timed steps of it), and "
    )


def baseline_fits_overrun(facts: dict[str, Any], budget_s: float) -> bool:
    """Whether the pre-flight and the baseline alone in the measuring child (its start, the
    script's loading, its steps) end within ``OVERRUN`` x the budget + ``OVERRUN_S``."""
    c = _Costs(facts)
    wall = float(facts.get("preflight_s") or 0.0) + c.start + c.baseline()
    return wall <= OVERRUN * budget_s + OVERRUN_S


def baseline_only_words(facts: dict[str, Any], budget_s: float, whole: int) -> str:
    """What a budget too short for more than the baseline measured, what the pre-flight
    measured, and the budget that measures every fix beside it."""
    return (
        f"{budget_s:g} s holds no fix beside it ({measured_words(facts)} and the set-up "
        f"{float(facts['setup_s']):.1f} s); "
        f"--budget {whole} or more measures the fixes too"
    )


def preflight_only_words(facts: dict[str, Any], budget_s: float, whole: int) -> str:
    """What a budget too short for even the baseline answers from: the steps the pre-flight timed,
    in its one process, and the budget that measures the baseline in its own processes and every fix."""
    return (
        f"{budget_s:g} s is too short to run the script again ({measured_words(facts)} and the set-up "
        f"{float(facts['setup_s']):.1f} s; the baseline in processes of its own needs about "
        f"{least_budget(_Costs(facts)):.0f} s), so the step times are the pre-flight's alone, one process; "
        f"--budget {whole} or more measures the baseline in its own processes and every fix"
    )


def measured_words(facts: dict[str, Any]) -> str:
    """The step the pre-flight timed, in words: "in the pre-flight, stopped at its 84 s limit 2 steps
    in, a training step took 18.2 s on this CPU (the first 41 s, with its tracing and start-up)"."""
    step, first = float(facts["step_s"]), float(facts.get("first_step_s") or facts["step_s"])
    part = facts.get("partial") or {}
    where = "in the pre-flight"
    if part:
        n = int(part["steps"])
        where += f", stopped at its {float(part['stopped_s']):.0f} s limit {n} step{'s' if n != 1 else ''} in,"
    if part and int(part["steps"]) == 1:
        return (
            f"{where} its first training step took {seconds(first, 'ms')} on this CPU and the next ran "
            f"{seconds(step, 'ms')} or more"
        )
    also = f" (the first {seconds(first, 'ms')}, with its tracing and start-up)" if first > 1.5 * step else ""
    return f"{where} a training step took {seconds(step, 'ms')} on this CPU{also}"


def budget_for_all(facts: dict[str, Any], gpu: bool = False) -> int:
    """The --budget whose plan measures every fix: the least one, in 10 s steps from
    :func:`budget_that_holds`, at which :func:`plan` (the rule :func:`size` plans by) cuts none,
    nor does any step above it, at the pre-flight's times and at those times up to
    :func:`headroom` longer (the re-run's own pre-flight sizes its plan from its own times).

    Each budget is tried at the times measured, at the headroom's, midway, and at the slowest times
    that still plan two rounds: a baseline that outgrows round 1's share switches to one round with
    a larger share, so slower times can hold every fix where somewhat faster ones cut some.
    The search starts at a budget that holds by the rule's own terms (everything, at the slowest
    times, within round 1's share of two rounds) and steps down while the plan still holds."""
    h = headroom(facts)
    variants = _variants(facts, gpu)
    at: dict[float, PlanCosts] = {}

    def costs(slower: float) -> PlanCosts:
        if slower not in at:
            at[slower] = plan_costs(facts, gpu, slower, variants)
        return at[slower]

    def holds(budget: float) -> bool:
        def ok(slower: float) -> bool:
            p = plan(costs(slower), budget)
            return not p.alone and not p.cut

        if not (ok(1.0) and ok(h) and ok((1.0 + h) / 2)):
            return False
        if plan(costs(1.0), budget).rounds == 1 or plan(costs(h), budget).rounds == 2:
            return True  # one kind of round across the times: the slowest is the costliest
        lo, hi = 1.0, h  # the slowest times that still plan two rounds (the rounds switch once)
        while hi - lo > 1e-4:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if plan(plan_costs(facts, gpu, mid, variants), budget).rounds == 2 else (lo, mid)
        return ok(lo)

    slowest = costs(h)
    whole = slowest.baseline + sum(f.most for f in slowest.fixes)
    # the least budget whose round holds every fix, by both rules of ``plan``'s round
    top = math.ceil((max(whole / ROUND1_SHARE, 2 * whole + PAGE_RESERVE_S) + slowest.start) / 10) * 10
    floor, budget = budget_that_holds(facts), max(top, budget_that_holds(facts))
    while not holds(budget) and budget < 10 * top:  # the rule changed beneath the bound: keep looking above
        budget += 10
    while budget - 10 >= floor and holds(budget - 10):
        budget -= 10
    return budget


def too_short(facts: dict[str, Any], budget_s: float) -> UsageError:
    """The refusal of a budget too short for even the baseline where the pre-flight has no step to
    answer from (stopped at its limit with its first step alone ended: no step after its tracing):
    what it measured on this machine, what the baseline needs, and a figure that holds when the
    script's times vary on the re-run."""
    c, h = _Costs(facts), headroom(facts)
    return UsageError(
        "--budget",
        f"{budget_s:g} s is too short for this script: {measured_words(facts)} and the set-up (imports and "
        f"data loading) {float(facts['setup_s']):.1f} s, so measuring even its baseline (the set-up, {WARMUP} "
        f"warm-up and {STEPS} timed steps) needs about {least_budget(c):.0f} s",
        f"Pass --budget {budget_that_holds(facts)} or more (it allows {times(h)}× the set-up and step times "
        "measured here: they vary from run to run)",
    )


# ------------------------------------------------------------------ cases and the record


def user_params(job: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    """The parameters every case of the script carries (the plan's ``user``); ``trainer`` where a
    trainer's loop runs the step (each fix is then worded in that trainer's own settings)."""
    out = {
        "script": str(Path(job["script"]).absolute()),
        "script_args": json.dumps(list(job.get("args") or [])),
        "entry": facts["entry"],
        "model": facts.get("model") or "script",
        "user_batch": facts[BATCH],
        "steps": STEPS,
        "warmup": WARMUP,
        # a torch loop's batch variants tile its step (they take turns with the baseline's steps)
        **({"rebatch": "step"} if facts.get("rebatch") == "step" and facts.get("entry") in script.TURN_ENTRIES else {}),
        # which call of the entry each case measures, where the script makes more than one
        **({"entry_call": int(facts.get("entry_call") or 1)} if len(facts.get("entries") or []) > 1 else {}),
    }
    if facts.get("trainer"):
        out["trainer"] = str(facts["trainer"])
    if job.get("model_file"):  # the script --model wrote: the user's function and files (--resume checks them)
        out["model_function"], out["model_file"] = str(job.get("name")), str(job["model_file"])
        if job.get("data_file"):
            out["data_file"] = str(job["data_file"])
    return out


def trainer_name(trainer: object) -> str | None:
    """What the screen calls the trainer whose loop ran the script's step (declared by the
    framework whose capture records it), or None."""
    for fw in frameworks.FRAMEWORKS if trainer else ():
        known: dict[str, Any] = frameworks.declared(fw, "TRAINERS", {})
        t = known.get(str(trainer))
        if t:
            return str(t["name"])
    return None


def cases(framework: str, device: str, user: dict[str, Any], sizing: dict[str, Any]) -> list[CaseSpec]:
    """One device's cases: the baseline (the user's batch, as the script runs), then each planned
    variant (both sides of its pair), in the plan's order: the user's batch and the plan's case
    parameters, and its variant (a fix measured on a GPU only left out on a CPU, one measured on
    the CPU only left out on a GPU)."""
    gpu = device.startswith("GPU")
    common = {**user, "child_limit_s": sizing["child_limit_s"]}
    b = user["user_batch"]
    base: dict[str, Any] = {**common, "kind": "steady", BATCH: b, _SYNC: "none"}
    if sizing.get("preflight_only") and sizing.get("preflight_result"):  # the CPU only (script.PREFLIGHT)
        base[script.PREFLIGHT] = "" if gpu else json.dumps(sizing["preflight_result"], sort_keys=True)
    out = [CaseSpec(workload="train", framework=framework, device=device, params=base)]
    for planned in sizing["planned"]:
        params, variant = _planned_case(common, b, planned)
        e = fixes.entry(variant.fix) if variant is not None else None
        if e is not None and ((e.gpu_only and not gpu) or (e.cpu_only and gpu)):
            continue
        spec = CaseSpec(workload="train", framework=framework, device=device, params=params, variant=variant)
        if spec.key not in {s.key for s in out}:
            out.append(spec)
    return out


def _planned_case(common: dict[str, Any], b: int, planned: dict[str, Any]) -> tuple[dict[str, Any], Variant | None]:
    """A planned case's parameters (the user's and the plan's, at the user's batch) and its variant.
    A plan journaled before cases carried their variant (its fix among the parameters, resumed with
    ``--resume``) is split as its record's results are read (records.v4_script_split)."""
    if "variant" in planned:
        rest, variant = _split(planned)
        return {**common, BATCH: b, **rest}, variant
    flat = {**common, BATCH: planned.get(BATCH, b), **planned}
    split = records.v4_script_split(flat)
    if split is None:
        return flat, None
    return split[0], Variant.model_validate(split[1])


def options(user: dict[str, Any], facts_sizing: dict[str, Any] | None, budget_s: float | None = None) -> dict[str, Any]:
    """The record's options naming the script, its arguments and the entry point captured, and why
    its steps are the pre-flight's where the plan answers from them (``preflight_only``)."""
    s = facts_sizing or {}
    out = {
        "script": user["script"],
        "script_args": json.loads(user.get("script_args") or "[]"),
        "entry": user["entry"],
        "script_setup_s": s.get("setup_s"),
        **({"entry_call": user["entry_call"]} if "entry_call" in user else {}),
    }
    if user.get("trainer"):
        out["trainer"] = user["trainer"]
    if s.get("budget_for_all"):
        out["budget_for_all"] = s["budget_for_all"]
    if s.get("preflight_only"):  # the baseline's steps are the pre-flight's: the screens say so, and why
        out["preflight_only"] = rerun_too_short_words(budget_s)
    if rebatched(user, s):  # the batch sweep tiled the step's own inputs: the screen says so
        out["rebatched"] = "step"
    return out


def notes(user: dict[str, Any], sizing: dict[str, Any] | None) -> list[str]:
    s = sizing or {}
    setup = s.get("setup_s")
    trainer = trainer_name(user.get("trainer"))
    under = f" inside {trainer}" if trainer else ""
    which, others = entry_words(s.get("entry_facts") or {})
    if which and int(user.get("entry_call") or 1) > 1:
        loops = any(e.get("kind") == "loop" for e in (s.get("entry_facts") or {}).get("entries") or [])
        # a torch loop cannot be skipped: the loops before it train as the script wrote them, untimed
        which += "; the loops before it ran untimed first" if loops else "; the calls before it passed over untrained"
    which = f" ({which})" if which else ""
    measured = f"your script {Path(user['script']).name}"
    if user.get("model_function"):  # --model: the script whichdevice wrote, named so the user can read it
        measured = f"your model {user['model_function']}, trained by the script whichdevice wrote ({user['script']}),"
    how = f"each case ran the script in a fresh process until {user['steps']} steady steps were timed (then it stopped the script)"
    if s.get("preflight_only"):  # no case ran the script: the baseline's steps are the pre-flight's
        how = (
            f"its {preflight_steps(kept=s.get('preflight_result') or {})} steps were timed in the pre-flight alone, "
            "in one process on the CPU (the budget was too short to run the script again)"
        )
    out = [f"Measured on {measured} through {user['entry']}{under}{which}: {how}."]
    if others:
        out.append(f"The script {others}.")
    if setup is not None:
        split = ""
        if s.get("data_s") is not None and s.get("import_s") is not None:
            split = f" (the frameworks' imports {s['import_s']:.1f} s, the script's own loading {s['data_s']:.1f} s)"
        out.append(
            f"The script's set-up before its first step took {setup:.1f} s in the pre-flight{split}: counted once "
            "per process, shown apart (each case's setup_s), in no step time."
        )
    if s.get("fixes_apart"):  # the loop too short for every variant's turns in one process
        out.append(
            f"Your script's loop takes {s.get('script_steps')} steps, too few for every variant's turns in one "
            f"process (each takes {WARMUP} warm-up and {STEPS} timed steps of it): "
            f"{', '.join(s['fixes_apart'])} ran each case in a process of its own."
        )
    if rebatched(user, s):  # the step re-batched, not the script
        fw = "jax" if user.get("entry") in script.STEP_ENTRIES else "torch"
        out.append(frameworks.declared(fw, "STEP_REBATCHED", ""))
    return out


def rebatched(user: dict[str, Any], sizing: dict[str, Any]) -> bool:
    """Whether the plan sweeps batches by tiling the script's step (not by changing the script)."""
    tiles = user.get("entry") in script.STEP_ENTRIES or user.get("rebatch") == "step"
    return bool(tiles and len(sizing.get("sweep_batches") or []) > 1)


def recorded_results(
    record: Any, user: dict[str, Any] | None = None, sizing: dict[str, Any] | None = None
) -> list[Any]:
    """The record's results with each case's parameters as the record keeps them: a baseline
    answered from the pre-flight's steps without that result among them (``script.without_preflight``).
    A CPU baseline the time budget skipped or stopped (the pre-flight and the set-up took what the plan had
    given it, on a machine slower than when it was timed) is answered from the pre-flight's steps,
    as a budget too short for the baseline is: a timed step is always an answer."""
    out = [r.model_copy(update={"spec": script.without_preflight(r.spec)}) for r in record.results]
    kept = (sizing or {}).get("preflight_result")
    if not kept or user is None or sizing is None or sizing.get("preflight_only"):
        return out
    bases: dict[tuple[str, str], str] = {}  # each device's baseline case key, built once
    for i, r in enumerate(out):
        if not failures.budget_ran_out(r.status, r.failure, r.error) or not r.spec.device.startswith("CPU"):
            continue
        where = (r.spec.framework, r.spec.device)
        if where not in bases:
            bases[where] = cases(*where, user, sizing)[0].key
        if r.spec.key != bases[where]:
            continue  # not the baseline
        got = script.preflight_timing(kept, float(sizing.get("child_limit_s") or 60.0))
        if isinstance(got, BaseException):
            continue
        timing, metrics = got
        out[i] = r.model_copy(
            update={"status": "ok", "error": None, "failure": None, "timing": timing, "metrics": metrics}
        )
    return out


def rerun_too_short_words(budget_s: float | None) -> str:
    """Why the plan answered from the pre-flight's steps (the record's ``preflight_only``)."""
    given = f"--budget {budget_s:g}" if budget_s is not None else "the budget"
    return f"{given} was too short to run your script again"


def skipped_baseline_words(budget_s: float) -> str:
    """Why a baseline's steps are the pre-flight's where the budget ran out before its own process
    (the record's ``preflight_only``)."""
    return f"--budget {budget_s:g} ran out before the baseline's own process timed its steps"


def preflight_steps(results: Iterable[Any] = (), *, kept: dict[str, Any] | None = None) -> int:
    """The steps an answer from the pre-flight holds: the samples of its one case (the first measured
    among ``results``) or, before any case ran, of the case the pre-flight's ``kept`` result makes."""
    if kept is not None:
        got = script.preflight_timing(kept, 60.0)  # the limit words a failure only: none is counted
        return 0 if isinstance(got, BaseException) else len(got[0].samples_s)
    return next((len(r.timing.samples_s) for r in results if r.status == "ok" and r.timing is not None), 0)


def skipped_baseline_note(results: list[Any]) -> str:
    """The record's note for a CPU baseline answered from the pre-flight's steps at run time."""
    n = preflight_steps(results)
    return (
        f"The time budget ran out before the baseline's own process timed its steps (the pre-flight and the set-up took "
        f"longer than planned), so its {n} steps are the pre-flight's, timed in one process on the CPU."
    )


def record_notes(record: Any) -> list[str]:
    """The record's notes for a script: without the framework's note on how a ``--model`` is
    trained (the script trained itself), with what the script did per step (:func:`step_notes`)."""
    model_path = set(frameworks.record_notes(str(record.options.get("framework") or "tensorflow"), "diagnose"))
    return [n for n in record.notes if n not in model_path] + step_notes(record)


def step_notes(record: Any) -> list[str]:
    """What the script did per step at its own settings, per device, from the baseline case's
    measured metrics: its wait for data, host-to-device copies and host reads (syncs) and their cost."""
    out = []
    for r in record.results:
        p = params_of(r.spec)
        if r.status != "ok" or p.get("kind") != "steady" or p.get(_SYNC) != "none" or "fix" in p:
            continue
        if p.get(BATCH) != p.get("user_batch"):
            continue
        m = r.metrics
        parts = []
        if "data_wait_s" in m:
            parts.append(f"waited {m['data_wait_s'] * 1e3:.3g} ms for its next batch (median)")
        if m.get("h2d_count"):
            parts.append(
                f"{m['h2d_count']:.0f} host-to-device copies ({m.get('h2d_bytes', 0) / 1e6:.3g} MB) in its timed steps"
            )
        if m.get("syncs"):
            parts.append(
                f"{m['syncs']:.0f} host reads (.item(), .numpy(), ...) in its timed steps, costing {m.get('sync_s', 0) * 1e3:.3g} ms"
            )
        if m.get("recompiles"):
            parts.append(f"its jitted step compiled {m['recompiles']:.0f} more time(s) in its timed steps")
        if parts:
            out.append(f"Your script per step on {r.spec.device} (measured): " + "; ".join(parts) + ".")
    return out
