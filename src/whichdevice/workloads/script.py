"""``whichdevice diagnose SCRIPT.py``: the user's own training script measured.

Its cases are ordinary ``train`` cases: ``kind`` steady/fit/loop/precision, the user's ``batch``,
and the fix each measures as its typed variant (``CaseSpec.variant``, from the catalogue), which
``fixes.params_of`` lays out among the parameters as the Keras and torch diagnose name them, so
the analysis, the first screen, the history and ``compare`` read them as they read any diagnose;
``script`` (with ``script_args``, ``entry``) marks them as measured on the script. In the measuring child
(``workloads/train.run_case`` sends such a case here) each case, or each group of cases whose
variants can share a process (:func:`group_key`), runs the script once more in a fresh process,
``measure/scriptchild.py``, with the environment set before import and the framework's capture
installed, which times the script's own steps and ends the script there.

- :func:`variant_of`: a case's variant (``CaseSpec.variant``) -> the capture's member (``"batch:64"``),
  as its framework's adapter names it (``frameworks/<framework>/scriptfixes.py``);
- :func:`group_key`: Keras fits share one process per round (every variant but mixed precision
  differs only at run time and is timed in turns there); a JAX step's batch variants and a torch
  loop's autocast, DataLoader (batch size, workers, pinning), memory-format and compile variants
  take turns with the baseline's cases in one process (a member the capture hands back, ``alone``,
  runs in a process of its own); a loop's baseline cases (the baseline side of each pair) share
  one process, their steps dealt out in turn; every other variant (a thread count) has its own;
- :func:`run_child`: one script process, its results and how it ended;
- :func:`notebook_source`: a notebook's code cells as one script.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whichdevice.core import failures
from whichdevice import frameworks
from whichdevice.core.process import Finished, run_module
from whichdevice.core.records import OWN_PROCESS, CaseSpec
from whichdevice.core.steps import raw_from_steps
from whichdevice.frameworks.contracts import CaptureSpec, ScriptFix
from whichdevice.workloads import fixes, userfolder

SCRIPT_CHILD = "whichdevice.measure.scriptchild"
KERAS_ENTRIES = ("keras.Model.fit",)
# A jitted JAX step (frameworks/jax/capture.py): its batch variants tile the step's own inputs, so
# they differ only in what the capture applies and share the round's process with the baseline.
STEP_ENTRIES = ("jax.jit train step",)
# A torch loop's step (frameworks/torch/capture.py): the members its capture can switch in for a
# member's steps and back out take turns in the round's process with the baseline (which ones is
# the torch adapter's: frameworks/torch/scriptfixes.shares).
TURN_ENTRIES: tuple[str, ...] = ("torch.optim.Optimizer.step", "torch.Tensor.backward")
STDERR_TAIL = 4000


class NotApplicable(Exception):
    """A variant that does not apply to this script (the capture said why): recorded as skipped."""


# A baseline case answered from the pre-flight's own timed steps (a budget too short to measure the
# baseline in processes of its own: ``scriptplan.size``'s ``preflight_only``): this parameter holds
# the pre-flight's result as JSON on the CPU ("" on any other device: not measured there). How the
# case ran, not what it measured: the record keeps it out of the case's parameters (``without_preflight``).
PREFLIGHT = "preflight"
# What a capture reports of the fixes a claim reads, as the catalogue names them: the CPU threads
# the steps ran with (the thread-count fix's parameter, analysis/scriptsteps.py) and what a fit's
# framework default resolved to (``FixEntry.default_metric``: jit_compile="auto", analysis/fixes.jit_by_default).
THREADS_RAN = tuple(f.param for f in fixes.FIXES if f.thread_count)
DEFAULTS_RAN = tuple(f.default_metric for f in fixes.FIXES if f.default_metric)
# What :func:`_timed` and :func:`metrics_of` read of a capture's result: all a case needs of it.
TIMED_KEYS = (
    "status",
    "why_not",
    "error",
    "step_s",
    "warmup_s",
    "setup_s",
    "samples_per_step",
    *THREADS_RAN,
    *DEFAULTS_RAN,
    "data_wait_s",
    "h2d",
    "syncs",
    "counted_steps",
    "recompiles",
)


def timed_part(r: dict[str, Any]) -> dict[str, Any]:
    """The part of a capture's result a case's timing and metrics are made from (:data:`TIMED_KEYS`)."""
    return {k: r[k] for k in TIMED_KEYS if r.get(k) is not None}


def from_preflight(spec: CaseSpec, overhead_s: float):
    """A baseline case answered from the pre-flight's steps (:data:`PREFLIGHT`), the script not run
    again: its (Timing, metrics) on the CPU; on another device, not measured (the time budget)."""
    text = str(spec.params.get(PREFLIGHT) or "")
    if not text or not spec.device.startswith("CPU"):
        raise NotApplicable(
            f"{failures.SKIPPED_PREFIX} the time budget (--budget) left no time to run the script on this device "
            "(its steps were timed in the CPU pre-flight only)"
        )
    got = _timed(json.loads(text), ChildRun(), float(spec.params.get("child_limit_s") or 60), overhead_s)
    if isinstance(got, BaseException):
        raise got
    return got


def preflight_timing(result: dict[str, Any], limit_s: float):
    """The (Timing, metrics) of the pre-flight's kept result (:func:`timed_part`), or the exception
    that says why it holds none."""
    return _timed(result, ChildRun(), limit_s, 0.0)


def without_preflight(spec: CaseSpec) -> CaseSpec:
    """``spec`` as the record keeps it: without the pre-flight's result among its parameters."""
    if PREFLIGHT not in spec.params:
        return spec
    return spec.model_copy(update={"params": {k: v for k, v in spec.params.items() if k != PREFLIGHT}})


# ------------------------------------------------------------------ variants -> the capture's members


@functools.cache
def adapters(framework: str) -> dict[str, ScriptFix]:
    """The fixes ``framework``'s script capture applies, by catalogue key, in the order a plan
    tries them (``frameworks/<framework>/scriptfixes.py``; none for a framework without one)."""
    if "scriptfixes" not in frameworks.PARTS.get(framework, ()):
        return {}
    return {a.fix: a for a in frameworks.part(framework, "scriptfixes").ADAPTERS}


def variant_of(spec: CaseSpec) -> str:
    """The capture's member for a case: its variant as its framework's adapter names it
    (``"batch:64"``, ``"workers:2"``), or ``baseline`` (no variant, or the baseline side of a pair
    that the capture runs as the script does)."""
    v = spec.variant
    if v is None:
        return "baseline"
    adapter = adapters(spec.framework).get(v.fix)
    if adapter is None:  # a member the capture does not know: it says so (not applicable)
        return f"{v.fix}:{v.value}"
    return adapter.member(v.value, spec.params)


def loader_member(spec: CaseSpec) -> bool:
    """Whether a case's member changes the script's DataLoader (its adapter's applier says so:
    torch's ``scriptfixes.Apply.loader``), so that the capture's own DataLoader feeds its turns."""
    adapter = adapters(spec.framework).get(spec.variant.fix) if spec.variant is not None else None
    return adapter is not None and variant_of(spec) != "baseline" and bool(getattr(adapter.apply, "loader", False))


def shares_child(spec: CaseSpec) -> bool:
    """Whether this case runs in the round's shared process (:func:`group_key`): its framework's
    adapter says which members take turns there (``frameworks/<framework>/scriptfixes.shares``);
    a framework without one shares the baseline alone."""
    if spec.params.get(OWN_PROCESS):  # the plan found the script's loop too short for its turn beside the others'
        return False
    member = variant_of(spec)
    if "scriptfixes" not in frameworks.PARTS.get(spec.framework, ()):
        return member == "baseline"
    return frameworks.part(spec.framework, "scriptfixes").shares(member, spec.params)


def group_key(spec: CaseSpec) -> tuple[Any, ...] | None:
    """``workloads.interleave_key`` for a script case: the shared process's group, or None."""
    if not shares_child(spec):
        return None
    return ("script", spec.framework, spec.device, str(spec.params.get("script")))


# ------------------------------------------------------------------ one script process


@dataclass
class ChildRun:
    """One script process: the capture's results and how the script ended."""

    results: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] = field(default_factory=dict)
    seen: dict[str, Any] = field(default_factory=dict)  # what the script did (scriptwatch), also if it never ended
    entries: list[dict[str, Any]] = field(default_factory=list)  # each training call seen, as it was seen
    ticks: list[tuple[int, float]] = field(default_factory=list)  # step boundaries said (capturekit.tick)
    timing: dict[str, Any] = field(default_factory=dict)  # the entry the ticks time (capturekit.timing)
    stderr_tail: str = ""
    finished: Finished | None = None

    def by_variant(self) -> dict[str, dict[str, Any]]:
        return {str(r.get("variant")): r for r in self.results}


def job_for(p: dict[str, Any]) -> dict[str, Any]:
    """The script, its arguments and (a notebook) its joined code cells, from a case's parameters."""
    path = str(p["script"])
    job: dict[str, Any] = {"script": path, "args": json.loads(str(p.get("script_args") or "[]"))}
    if path.endswith(".ipynb"):
        job["source"] = notebook_source(Path(path))
    return job


def run_child(
    job: dict[str, Any],
    spec: CaptureSpec,
    captures: list[str],
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    memory_limit_bytes: int | None = None,
) -> ChildRun:
    """Run the script once in a fresh process (``env`` added to this one's) under ``spec``, its
    process group held to ``memory_limit_bytes`` (None: the default, 90 % of RAM)."""
    with tempfile.TemporaryDirectory(prefix="whichdevice-script-") as d:
        job_file, out_file, err_file = Path(d, "job.json"), Path(d, "out.jsonl"), Path(d, "err.txt")
        job_file.write_text(json.dumps({**job, "frameworks": captures, "spec": spec.to_dict()}), encoding="utf-8")
        with open(err_file, "wb") as err, userfolder.script_run():
            done = run_module(
                SCRIPT_CHILD,
                [str(job_file), str(out_file)],
                timeout_s=timeout_s,
                env={**os.environ, **(env or {})},
                stdout=subprocess.DEVNULL,
                stderr=err,
                memory_limit_bytes=memory_limit_bytes,
            )
        run = ChildRun(finished=done)
        if out_file.exists():
            for line in out_file.read_text(encoding="utf-8").splitlines():
                _read_line(run, line)
        run.stderr_tail = err_file.read_bytes()[-STDERR_TAIL:].decode("utf-8", "replace")
    userfolder.settle_here()  # what the script wrote in the user's folder, put back before the next run
    return run


def _read_line(run: ChildRun, line: str) -> None:
    """One line the script process wrote (``measure/scriptchild.py``), kept in ``run``."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return
    kind = obj.get("type")
    if kind == "result":
        run.results.append(obj["result"])
    elif kind == "end":
        run.end = obj
    elif kind == "entry":
        run.entries.append({k: v for k, v in obj.items() if k != "type"})
    elif kind == "seen":
        run.seen.update({k: v for k, v in obj.items() if k != "type"})
    elif kind == "tick" and not obj.get("n"):  # a clock timing from here on: the boundaries before were not its steps
        run.ticks.clear()
    elif kind == "tick":
        run.ticks.append((int(obj["n"]), float(obj["at"])))
    elif kind == "timing":
        run.timing.update({k: v for k, v in obj.items() if k != "type"})


def partial_steps(run: ChildRun) -> dict[str, Any] | None:
    """What a script process that handed no result over had timed before it was stopped, from the
    step boundaries it said (``capturekit.tick``): ``setup_s`` (to the first step's start) and
    ``steps`` (each ended step, the first with its tracing; a step between two boundaries said a
    second apart is their mean), or None where no step ended."""
    said = dict(run.ticks)  # by boundary number: the first, then each step's end
    if 1 not in said or len(said) < 2:
        return None
    steps: list[float] = []
    marks = sorted(said.items())
    for (n0, t0), (n1, t1) in zip(marks, marks[1:]):
        steps += [(t1 - t0) / (n1 - n0)] * (n1 - n0)
    return {"setup_s": said[1], "steps": steps, **run.timing}


def ordinal(n: int) -> str:
    """1 -> "1st", 2 -> "2nd", 11 -> "11th"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def at_step(end: dict[str, Any]) -> str:
    """Where in the training an error or an exit came: "at its 3rd training step", or "before its
    first training step" (``end["step"]``, counted by the captures: ``capturekit.step_reached``);
    "" where the end does not say."""
    if "step" not in end:
        return ""
    step = int(end.get("step") or 0)
    return f"at its {ordinal(step)} training step" if step else "before its first training step"


def child_failure(run: ChildRun, limit_s: float) -> str:
    """Why a script process gave no result, in one line."""
    end, done = run.end, run.finished
    if end.get("status") == "script_error" and end.get("exit_code") is not None:
        return f"the script exited with code {end['exit_code']} {at_step(end)} ({end.get('where')})".replace("  ", " ")
    if end.get("status") == "script_error":
        return f"the script raised {end.get('error')} at {end.get('where')} {at_step(end)}".rstrip()
    if end.get("status") == "too_short":
        return f"the script ended within its first warm-up steps ({end.get('entry')} reached): too few batches to time"
    if end.get("status") == "no_entry":
        return (
            f"the script ended without reaching a training entry point (watched: {', '.join(end.get('watched') or [])})"
        )
    if done is not None and done.stopped == "timeout":
        return f"timed out: the script process ran past its {limit_s:.0f} s limit before its steps were timed"
    if done is not None and done.stopped == "memory":
        return "out of memory: the script process went over the memory limit"
    tail = [ln for ln in run.stderr_tail.splitlines() if ln.strip()]
    rc = done.returncode if done is not None else None
    return f"child process died (exit code {rc}){': ' + tail[-1][:300] if tail else ''}"


# ------------------------------------------------------------------ the measuring child's side


def typed(spec: CaseSpec) -> dict[str, Any] | None:
    """A case's typed variant as the capture receives it, the record's own form (``{"fix": key,
    "value": v}``), or None (no variant)."""
    return spec.variant.model_dump() if spec.variant is not None else None


def _spec(
    p: dict[str, Any],
    device: str,
    variant: str,
    also: tuple[str, ...] = (),
    steps: int | None = None,
    cases: tuple[CaseSpec, ...] = (),
):
    return CaptureSpec(
        fixes=tuple(typed(c) for c in cases),
        variant=variant,
        warmup_steps=int(p.get("warmup") or 2),
        steps=int(steps or p.get("steps") or 10),
        device="gpu" if device.startswith("GPU") else "cpu",
        deadline_s=float(p.get("child_limit_s") or 60.0),
        also=also,
        entry_call=int(p.get("entry_call") or 1),
    )


# Whether this measuring child has run the script in its own process already: its first run
# does (the framework is imported there, with the environment set before import); every later one
# gets a fresh process (the first left its patches and the script's state behind).
_RAN_HERE: list[bool] = []


def run_here(job: dict[str, Any], spec: CaptureSpec, captures: list[str]) -> ChildRun:
    """Run the script in this process (a measuring child's first script run)."""
    import time

    from whichdevice.frameworks.common import capturekit
    from whichdevice.workloads import scriptrun

    _RAN_HERE.append(True)
    capturekit.T0 = time.perf_counter()
    capturekit.OWNER.clear()
    capturekit.FINISHERS.clear()
    capturekit.CLOSERS.clear()
    capturekit.PROGRESS.update(steps=0, begun=0)
    capturekit.ENTRIES.clear()
    capturekit.TICKS.update(n=0, told=float("-inf"), source=None)
    run = ChildRun()
    with userfolder.script_run():
        run.end = scriptrun.execute({**job, "frameworks": captures, "spec": spec.to_dict()}, run.results.append)
    run.entries = list(run.end.get("entries") or [])
    run.finished = Finished(0, time.perf_counter() - capturekit.T0)
    userfolder.settle_here()
    return run


def threads_env(framework: str, n: int) -> dict[str, str]:
    """The variables that set ``framework``'s CPU thread count to ``n`` in a child, read at its
    import (``frameworks/<fw>/env.child_env``; {} where it has none: JAX)."""
    from whichdevice import frameworks

    env = frameworks.env_module(framework).child_env("cpu", n)
    plain = frameworks.env_module(framework).child_env("cpu", None)
    return {k: v for k, v in env.items() if plain.get(k) != v}


def _run(p: dict[str, Any], spec: CaptureSpec, framework: str) -> ChildRun:
    limit = float(p.get("child_limit_s") or 60.0)
    captures = [framework]  # the framework's capture (frameworks/<fw>/capture.py) a measuring child installs
    typed = (spec.fixes[0] if spec.fixes else None) or {}  # the first member's: its own process's
    entry = fixes.BY_KEY.get(str(typed.get("fix")))
    sets_threads = entry is not None and entry.thread_count and spec.variant != "baseline"
    threads = threads_env(framework, int(typed.get("value") or 1)) if sets_threads else None
    if not _RAN_HERE and threads is None:  # this process's threads are the default's
        return run_here(job_for(p), spec, captures)
    return run_child(job_for(p), spec, captures, timeout_s=limit * 1.5 + 30, env=threads)


def _timed(result: dict[str, Any] | None, run: ChildRun, limit_s: float, overhead_s: float):
    """A member's (Timing, metrics) from the capture's result, or the exception to record."""
    if result is None and run.end.get("status") == "too_short":
        return NotApplicable(
            f"not measured: the script ended within its warm-up steps at this setting ({run.end.get('entry')} reached; "
            "its data holds too few batches)"
        )
    if result is None and run.end.get("status") == "ok":  # the script ended by itself with members left
        return NotApplicable(loop_ended(run))
    if result is None:
        return RuntimeError(child_failure(run, limit_s))
    status = result.get("status")
    if status == "not_applicable":
        return NotApplicable(f"not applicable to this script: {result.get('why_not') or 'the capture said so'}")
    if status != "ok":
        return RuntimeError(str(result.get("error") or result.get("why_not") or status))
    steps, warm = list(result.get("step_s") or []), list(result.get("warmup_s") or [])
    if not steps:
        return NotApplicable(f"skipped: the script process reached its {limit_s:.0f} s limit before timing a step")
    timing = raw_from_steps(warm + steps, warmup_steps=max(1, len(warm)), overhead_s=overhead_s)
    return timing, metrics_of(result)


def loop_ended(run: ChildRun) -> str:
    """Why a member of a shared process that ended normally has no result: the script's own loop
    ran out of data before its turn had its steps (the members' turns draw on the script's steps),
    with the steps the loop took where the capture counted them (``script_steps``)."""
    took = [int(r["script_steps"]) for r in run.results if r.get("script_steps")]
    after = f" after {max(took)} steps" if took else ""
    return (
        f"{failures.SCRIPT_ENDED_PREFIX}{after}, before this variant's turn "
        "(its data holds fewer steps than the turns need)"
    )


def metrics_of(r: dict[str, Any]) -> dict[str, float]:
    """The capture's facts as a case's metrics (numbers only)."""
    out: dict[str, float] = {}
    out.update({k: float(r[k]) for k in ("samples_per_step", *THREADS_RAN) if r.get(k)})
    if r.get("setup_s") is not None:
        out["setup_s"] = float(r["setup_s"])
    out.update({k: float(bool(r[k])) for k in DEFAULTS_RAN if r.get(k) is not None})
    waits = [float(w) for w in r.get("data_wait_s") or []]
    if waits:
        out["data_wait_s"] = statistics.median(waits)
    h2d, syncs = r.get("h2d") or {}, r.get("syncs") or {}
    if (h2d.get("count") or syncs.get("count") or r.get("recompiles")) and r.get("step_s"):
        # the copies and reads are counted over the process's timed steps, which a shared run
        # deals out among its members: the count per step needs the run's own number of steps
        out["counted_steps"] = float(r.get("counted_steps") or len(r["step_s"]))
    for k in ("count", "bytes", "pinned"):
        if h2d.get(k):
            out[f"h2d_{k}"] = float(h2d[k])
    if syncs.get("count"):
        out["syncs"] = float(syncs["count"])
        out["sync_s"] = float(syncs.get("s") or 0.0)
    if r.get("recompiles"):  # a jitted step compiled again in its timed steps (JAX's capture)
        out["recompiles"] = float(r["recompiles"])
    return out


def run_case(spec: CaseSpec, fw: Any, policy: Any, overhead_s: float):
    """One script case in a process of its own (a baseline answered from the pre-flight's steps: none)."""
    p = spec.params
    if PREFLIGHT in p:
        return from_preflight(spec, overhead_s)
    run = _run(p, _spec(p, spec.device, variant_of(spec), cases=(spec,)), spec.framework)
    got = _timed(run.results[0] if run.results else None, run, float(p.get("child_limit_s") or 60), overhead_s)
    if isinstance(got, BaseException):
        raise got
    return got


def prepare(spec: CaseSpec, fw: Any, policy: Any, overhead_s: float) -> CaseSpec:
    return spec


def time_group(
    prepared: list[CaseSpec],
    fw: Any,
    policy: Any,
    overhead_s: float,
    before: Callable[[int], None] | None = None,
) -> list[Any]:
    """The round's shared process: a Keras fit and a JAX step time every member's variant in
    turns (one result each); so does a torch loop whose members are not all the baseline (each
    baseline case a member of its own, with its own warm-up); a loop's baseline members alone share
    one run of the baseline, its timed steps dealt out in turn (member j gets steps j, j + n, ...),
    so each has samples of its own."""
    if before is not None:
        before(0)
    first = prepared[0]
    p, limit = first.params, float(first.params.get("child_limit_s") or 60)
    variants = [variant_of(s) for s in prepared]
    if p.get("entry") in KERAS_ENTRIES + STEP_ENTRIES and len(set(variants)) == len(variants):
        run = _run(p, _spec(p, first.device, variants[0], tuple(variants[1:]), cases=tuple(prepared)), first.framework)
        got = run.by_variant()
        return [_timed(got.get(v), run, limit, overhead_s) for v in variants]
    if p.get("entry") in TURN_ENTRIES and set(variants) - {"baseline"}:
        # a torch loop's members take turns: one result each, by place (baseline cases share a name)
        run = _run(p, _spec(p, first.device, variants[0], tuple(variants[1:]), cases=tuple(prepared)), first.framework)
        placed = {int(r["member"]): r for r in run.results if r.get("member") is not None}
        back = [j for j in range(len(prepared)) if (placed.get(j) or {}).get("alone")]
        if back and any(j not in placed for j in range(len(prepared))):
            return _without(prepared, back, fw, policy, overhead_s)
        return [
            _alone(s, overhead_s)
            if (placed.get(j) or {}).get("alone")
            else _timed(placed.get(j), run, limit, overhead_s)
            for j, s in enumerate(prepared)
        ]
    n = len(prepared)
    run = _run(p, _spec(p, first.device, "baseline", steps=n * int(p.get("steps") or 10)), first.framework)
    result = run.results[0] if run.results else None
    out = []
    for j in range(n):
        if result is None or result.get("status") != "ok":
            out.append(_timed(result, run, limit, overhead_s))
            continue
        dealt = {**result, "step_s": list(result.get("step_s") or [])[j::n]}
        dealt["counted_steps"] = len(result.get("step_s") or [])  # the copies and reads are the whole run's
        dealt["data_wait_s"] = list(result.get("data_wait_s") or [])[j::n]
        out.append(_timed(dealt, run, limit, overhead_s))
    return out


def _without(prepared: list[CaseSpec], back: list[int], fw: Any, policy: Any, overhead_s: float) -> list[Any]:
    """The script raised in a handed-back member's turn, so the run gave the others nothing: they
    take turns again without it, and it runs in a process of its own."""
    rest = [j for j in range(len(prepared)) if j not in back]
    again = dict(zip(rest, time_group([prepared[j] for j in rest], fw, policy, overhead_s) if rest else []))
    return [_alone(s, overhead_s) if j in back else again[j] for j, s in enumerate(prepared)]


def _alone(spec: CaseSpec, overhead_s: float):
    """A member the shared process handed back (its capture found it cannot take turns in this
    script's loop): timed in a process of its own, or the exception to record."""
    p = spec.params
    run = _run(p, _spec(p, spec.device, variant_of(spec), cases=(spec,)), spec.framework)
    return _timed(run.results[0] if run.results else None, run, float(p.get("child_limit_s") or 60), overhead_s)


# ------------------------------------------------------------------ notebooks


def notebook_source(path: Path) -> str:
    """A notebook's code cells joined into one script: IPython's ``!shell`` lines and line magics
    left out, ``%time``/``%timeit`` and ``%%time``/``%%timeit`` cells run once (the capture times
    the steps), other cell magics left out. ValueError: not a notebook with code."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    parts = []
    for c in nb.get("cells", []):
        if not isinstance(c, dict) or c.get("cell_type") != "code":
            continue
        src = c.get("source", "")
        text = "".join(src) if isinstance(src, list) else str(src)
        parts.append(_cell(text))
    if not parts:
        raise ValueError("it has no code cell")
    return "\n\n".join(parts) + "\n"


def _cell(text: str) -> str:
    lines = text.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        name = lines[0].strip()[2:].split(" ")[0]
        return "\n".join(lines[1:]) if name in ("time", "timeit", "capture") else ""
    out = []
    for line in lines:
        s = line.lstrip()
        indent = line[: len(line) - len(s)]
        if s.startswith(("%time ", "%timeit ")):
            out.append(indent + s.split(" ", 1)[1])
        elif s.startswith(("%", "!")):
            out.append(indent + "pass  # " + s[:60].replace("\n", " "))
        else:
            out.append(line)
    return "\n".join(out)
