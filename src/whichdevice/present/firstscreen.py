"""The first screen of ``run`` and ``diagnose``: the answer, the top causes with their measured
share, the top changes with their measured gain and the line of code to change, and where the
details are — at most 25 lines at 100 columns. Everything else is below it (``--verbose``) or
in the HTML report.

It selects and formats what analysis decided (``analysis/suite.SuiteVerdict``): the changes
are the fixes whose deciding pair helps, each with the claim the fix table shows (the same
``Fix`` object, present/fixes.py writes both); the others are listed as *slower here*
(significantly slower), *no clear change*, or *not measured* and why. Nothing here pairs cases,
computes a ratio or decides a threshold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import TYPE_CHECKING

from whichdevice import frameworks
from whichdevice.frameworks.common import nvidia
from whichdevice.present import notes
from whichdevice.core.records import CaseResult, RunRecord
from whichdevice.core.units import nbytes, percent, seconds
from whichdevice.present import fixes as fixwords
from whichdevice.present import names
from whichdevice.present.claims import (
    batch_figure,
    cpu_varied_words,
    crossover_text,
    gpu_decide_words,
    gpu_decision_words,
    modes_text,
    ratio_text,
    times,
)
from whichdevice.workloads.fixes import BATCH, params_of
from whichdevice.workloads.scriptplan import preflight_steps, rerun_too_short_words

if TYPE_CHECKING:  # rich is imported when the screen is printed, not when it is composed
    from whichdevice.analysis.quality import TimingWarning
    from whichdevice.analysis.crossover import Crossover
    from whichdevice.analysis.scriptsteps import BatchGain, BusyLoad, QuietStep, ScriptStep
    from whichdevice.analysis.fixes import Fix, NotMeasured
    from whichdevice.analysis.significance import Claim
    from whichdevice.analysis.suite import Cause, Remeasured, SuiteVerdict
    from rich.console import Console

    from whichdevice.analysis.deviceprofile import DeviceProfile
    from whichdevice.analysis.prediction import PredictReport

NO_PREDICTION = "Would a GPU help? `whichdevice predict --quick` models it (run traces no ops to model)."
MAX_LINES = 25  # the first screen's budget at 100 columns
SHOWN_CHANGES = 3  # changes with their code line; the others that help are named on one line
SHOWN_CAUSES = 3
CAUSES_HEAD = "Why it is slow (measured share of the time)"  # the heading every form gives the causes
_BATCH = BATCH.param  # a case's batch (and a script's, in the record's options), as the catalogue names it


@dataclass(frozen=True)
class Change:
    kind: str  # the catalogue key (workloads/fixes.py)
    title: str
    claim: Claim
    where: str  # the workload it was measured on, in people's words
    code: str  # the line to write
    caveat: str = ""
    source: str | None = None  # the article, for the footnote
    fix: Fix | None = None  # the measured pair it shows

    @property
    def gain_text(self) -> str:
        return ratio_text(self.claim)

    @property
    def short_gain_text(self) -> str:
        """The fix table's claim, its note shortened to a tag: one line each."""
        return fixwords.short_claim_text(self.claim)


@dataclass(frozen=True)
class WarningGroup:
    kind: str
    count: int
    text: str  # what it means and what to do
    items: list[str] = field(default_factory=list)  # the full warnings, for the HTML list


@dataclass(frozen=True)
class FirstScreen:
    title: str
    answer: list[str]
    causes: list[Cause]
    changes: list[Change]
    more: list[Change]  # further changes that help, beyond the first three
    slower: list[Change]  # measured significantly slower here
    unclear: list[str]  # measured, no clear change (the fixes' short names)
    not_measured: list[tuple[str, str]]  # (short name, why) of fixes with no claim
    warnings: list[WarningGroup]
    failures: list[str]
    footnotes: list[str]
    skipped: int = 0  # cases the time budget did not reach (counted apart from failures)
    confirmed: str = ""  # round 2 against the provisional answer shown after round 1
    rebatched: str = ""  # how a script's larger batches were measured, where its step was re-batched
    quiet: list[QuietStep] = field(default_factory=list)  # a script's measured step where no cause is named
    reads: list[ScriptStep] = field(default_factory=list)  # a CPU step's host reads every step, under no cause
    skip_reasons: tuple[str, ...] = ()  # each skipped case's own reason, "" for the budget (skip_reasons)
    busy: BusyLoad | None = None  # the steps were timed on a busy machine (analysis/scriptsteps.busy_load)


# ------------------------------------------------------------------ the changes


def _change(f: Fix, several: bool) -> Change:
    return Change(
        f.kind,
        fixwords.change_title(f, several=several),
        f.claim,
        f"{f.device}, {fixwords.where_words(f)}",
        fixwords.change_code(f),
        fixwords.change_caveat(f),
        f.entry.source if f.where.get("example") != "user" else None,
        f,
    )


def _changes(v: SuiteVerdict) -> tuple[list[Change], list[Change], list[str], list[tuple[str, str]]]:
    """The fixes with a ratio by what they came to: (helps, best first; slower here; no clear
    change; not measured and why). Checks (placement, warm-up) measure no ratio: not listed."""
    # a run of several frameworks names each change's, even when only one framework's fixes were measured
    several = fixwords.several_frameworks(v.fixes) or _several_frameworks(v)
    helped, slower, unclear, missing = [], [], [], []
    for fv in v.fixes:
        if fv.entry.method == "check":
            continue
        if fv.outcome == "helps" and fv.best is not None:
            helped.append(_change(fv.best, several))
        elif fv.outcome == "slower" and fv.best is not None:
            slower.append(_change(fv.best, several))
        elif fv.outcome == "no_change":
            unclear.append(fv.entry.short)
        elif fv.not_measured is not None and fv.not_measured.reason != "not_in_suite":
            missing.append((fv.entry.short, fixwords.short_reason(fv.not_measured)))
    return sorted(helped, key=lambda ch: -ch.claim.ratio), slower, unclear, missing


# ------------------------------------------------------------------ the causes


_CAUSE_TITLES = {
    "fixed_cost": "Fixed cost per step",
    "call_overhead": "Keras call overhead",
    "input_wait": "Waiting for input",
    "python_pipeline": "Python in the input pipeline",
    "sync": "Syncing every step",
    "host_reads": "Host reads every step",
    "warmup": "Warm-up",
    "compute_bound": "Compute-bound",
    "threads": "More CPU threads than cores",
    "contention": "Threads contending for busy cores",
}
# What a script's measured wait for the next batch is, in the framework's words (its env.py's
# INPUT_WAIT): torch's capture times the DataLoader's __next__; the others' time the loop's
# own work between two steps.
_INPUT_WAIT = "is the loop's own work between steps (fetching the next batch)"


def cause_title(c: Cause) -> str:
    return _CAUSE_TITLES[c.kind]


def cause_share(c: Cause) -> str:
    """The cause's measured share as every form writes it: '98%'."""
    return f"{c.share:.0%}"


def causes_folded(causes: list[Cause]) -> str:
    """Every cause on one line, in the same order, title and share, for a screen too short to
    give each its own line: '1. Fixed cost per step 98% · 2. Waiting for input 23%'. No cause is
    left out to save a line (the report and the Markdown list the same ones)."""
    return " · ".join(f"{i}. {cause_title(c)} {cause_share(c)}{_folded_gain(c)}" for i, c in enumerate(causes, 1))


def _folded_gain(c: Cause) -> str:
    """A script's fixed cost's larger batch, compared per sample, as the folded line says it: ': the
    batch is too small: per-sample time falls 13× from batch 8 to 128 (95 % CI 13–14×, 3 rounds;
    your step re-batched)'."""
    g = c.larger
    return f": {batch_gain_text(g, brief=True)}" if g is not None else ""


def batch_gain_text(g: BatchGain, *, brief: bool = False) -> str:
    """A larger batch against the script's own, per sample: 'the batch is too small: per-sample time
    falls 13× from batch 8 to 128 (95 % CI 13–14×, 3 rounds, 30 steps a side, each round by its
    fastest tenth), on your step re-batched to 128 (its own batch tiled), not your script'. From
    the batch sweep (analysis/scriptsteps.batch_gain: its rounds' fastest tenths, ``steps`` a
    side), or with ``steps`` 0 the batch change's pair (its rounds' medians, as the fix table says
    it). A claim that is not a significant gain is said as ratio_text words it (not enough samples,
    no clear change, slower), never as a gain."""
    c = g.claim
    span = f"from batch {g.batch} to {g.larger}"
    how = f", {g.steps} steps a side, each round by its fastest tenth" if g.steps else ""
    if c.status == "faster":
        said = (
            f"the batch is too small: per-sample time falls {times(c.ratio)}× {span} "
            f"({percent(c.confidence)} CI {times(c.lo)}–{times(c.hi)}×, {c.n} {c.unit if c.n != 1 else c.unit[:-1]}"
        )
        said += "" if brief else how
    else:  # the folded line leaves the claim's note out (the report has it)
        words = ratio_text(c).split("; ")[0] if brief else ratio_text(c)
        by = ", each round by its fastest tenth" if g.steps and not brief else ""
        said = f"per-sample time {span}{by}: {words.removesuffix(')')}"
    if not g.tiled:
        return said + ")"
    if brief:
        return said + "; your step re-batched)"
    return said + f"), on your step re-batched to {g.larger} (its own batch tiled), not your script"


def cause_text(c: Cause) -> str:
    """'99% of a batch-10 step (Python, dispatch, launches; not per sample)' and the like."""
    share = cause_share(c)
    if c.step is not None:
        return _script_cause_text(c, share)
    if c.kind == "fixed_cost" and c.fix is not None:
        said = f"{share} of a batch-{c.fix.baseline} step (Python, dispatch, launches; not per sample)"
        g = c.larger  # a script's batch pair: the gain the share is from, in the words of the sweep's
        return said + (f"; {batch_gain_text(g)}" if g is not None else "")
    if c.kind == "call_overhead":
        return f"{share} of a model.fit step is Keras's per-call overhead"
    if c.kind == "input_wait":
        variant = names.PIPELINE_VARIANTS.get(c.variant, c.variant)
        return f"{share} of each step waits for the next batch (image pipeline, {variant})"
    if c.kind == "python_pipeline" and c.fix is not None:
        if c.fix.part == "both":
            return f"{share} of each training step is the tf.py_function"
        return f"{share} of the pipeline's time is the tf.py_function"
    if c.kind == "sync" and c.fix is not None:
        read = frameworks.declared(c.fix.framework, "READ_BACK", ".numpy()")
        return f"{share} of a batch-{c.fix.where.get(_BATCH)} step is reading the loss back ({read})"
    return (
        f"{share} of the first epoch ({c.steps} steps) is the first step: {seconds(c.first_s)} "
        f"vs {seconds(c.steady_s)} steady"
    )


def _script_cause_text(c: Cause, share: str) -> str:
    """A script's own step, measured by the capture: '33% of each step waits for the next batch
    from its DataLoader (median 2.1 ms of 6.4 ms, 20 steps)'."""
    st = c.step
    assert st is not None
    of = f"{seconds(st.step_s)}, {st.steps} steps" + (f" in {st.rounds} processes" if st.rounds > 1 else "")
    if c.kind == "input_wait":
        words = frameworks.declared(st.framework, "INPUT_WAIT", _INPUT_WAIT)
        return f"{share} of each step {words} (median {seconds(st.data_wait_s)} of {of})"
    if c.kind in ("compute_bound", "fixed_cost"):
        line = (
            f"on a line through the fastest tenth of the steps at batches {', '.join(str(b) for b in st.batches)}: "
            f"{seconds(st.line_step_s)} a step, {st.steps} steps at batch {st.batch}"
        )
        if c.kind == "compute_bound":
            return (
                f"{share} of a batch-{st.batch} step is work per sample: the step scales with the batch "
                f"({seconds(st.per_sample_s)} per sample {line})"
            )
        said = f"{share} of a batch-{st.batch} step costs the same at any batch (Python, dispatch: {seconds(st.fixed_s)} {line})"
        g = c.larger
        return said + (f"; {batch_gain_text(g)}" if g is not None else "")
    if c.kind == "contention":
        return _contention_text(c, share, of)
    if c.kind == "threads":
        return (
            f"the steps ran with {st.threads} CPU threads on {st.cores} cores: {share} of the median step is "
            f"above its fastest tenth ({seconds(st.fast_s)} of {of}), time its threads can have spent waiting"
        )
    read = frameworks.declared(st.framework, "READ_BACK", ".numpy()")
    return (
        f"{share} of each step is reading results back to the host ({st.reads:.2g} a step: {read} and the like; "
        f"{seconds(st.read_s)} of {of})" + (f"; {_ON_A_GPU}" if st.on_cpu else "")
    )


def _contention_text(c: Cause, share: str, of: str) -> str:
    """'98% of the median step is waiting for a core: 2 threads on 2 cores at load 3.1 (the
    pre-flight's 1-minute average); the median step is 41× its fastest tenth (550 µs of 22.9 ms, 30
    steps in 3 processes); 1 thread: not enough samples (14×, CI 0.96–212×, 3 rounds; ...)'."""
    st = c.step
    assert st is not None
    if st.load is not None and st.busy_by_load:
        busy = f" at load {st.load:.1f} (the pre-flight's 1-minute average)"
    elif st.others_cores is not None:
        busy = f", other programs using {st.others_cores:.1f} of the cores while it ran"
    else:
        busy = ""
    said = (
        f"{share} of the median step is waiting for a core: {st.threads} thread{'s' if st.threads != 1 else ''} "
        f"on {st.cores} cores{busy}; the median step is {times(st.spread or 1.0)}× its fastest tenth "
        f"({seconds(st.fast_s)} of {of})"
    )
    if st.modes is not None:
        said += f"; its processes in two modes ({modes_text(st.modes)})"
    if c.one_thread is not None:
        return said + f"; 1 thread: {ratio_text(c.one_thread.claim)}"
    why = fixwords.short_reason(c.one_thread_missing) if c.one_thread_missing is not None else "not planned"
    return said + f"; one thread not measured ({why})"


# What a host read becomes on a GPU, where a CPU run measured it (analysis/scriptsteps.GPU_READS_PER_STEP).
_ON_A_GPU = (
    "on a GPU each read waits for the work queued before it (a sync per read), which a run on a CPU does not time"
)


def reads_text(st: ScriptStep) -> str:
    """A CPU step's host reads every step, under no cause (their share is below one): 'Host reads:
    2 a step (.item() and the like), 0% of the step on this CPU (9.68 µs of 22.9 ms, 30 steps in 3
    processes), not why it is slow here; on a GPU each read waits ...'. The cost measured here and
    what the read is on a GPU; no GPU cost is claimed."""
    read = frameworks.declared(st.framework, "READ_BACK", ".numpy()")
    of = f"{seconds(st.step_s)}, {st.steps} steps" + (f" in {st.rounds} processes" if st.rounds > 1 else "")
    return (
        f"Host reads: {st.reads:.2g} a step ({read} and the like), {st.read_share:.0%} of the step on this CPU "
        f"({seconds(st.read_s)} of {of}), not why it is slow here; {_ON_A_GPU}."
    )


def reads_folded(st: ScriptStep) -> str:
    """The same on the heading's line: 'host reads 2 a step, 0% of the step on this CPU; on a GPU a sync per read'."""
    return f"host reads {st.reads:.2g} a step, {st.read_share:.0%} of the step on this CPU; on a GPU a sync per read"


# A script's step's parts as the line saying none stands out names them (analysis/scriptsteps.StepPart).
_PART_WORDS = {
    "input_wait": "waiting for input",
    "host_reads": "host reads",
    "compute_bound": "work per sample",
    "fixed_cost": "fixed cost per step",
    "threads": "threads over cores",
}
QUIET = "no part the capture times stands out"  # the words every form opens a quiet step's line with


def quiet_parts(q: QuietStep) -> str:
    """The measured parts and their shares: 'waiting for input 0%, host reads 1%'."""
    return ", ".join(f"{_PART_WORDS[part]} {share:.0%}" for part, share in q.parts)


def quiet_folded(quiet: list[QuietStep]) -> str:
    """Every quiet step's parts on the heading's line: 'no part ... stands out: host reads 1%'."""
    return " · ".join(f"{QUIET}: {quiet_parts(q) or 'none timed apart'}" for q in quiet)


def quiet_text(q: QuietStep) -> str:
    """'No part the capture times stands out: waiting for input 0%, host reads 0% of a 563 ms step
    (batch 32, 60 steps); the remaining 100% is the step's own work on this CPU.'"""
    st = q.step
    of = f"{seconds(st.step_s)} step (" + (f"batch {st.batch}, " if st.batch else "") + f"{st.steps} steps"
    of += f" in {st.rounds} processes)" if st.rounds > 1 else ")"
    where = "this GPU" if st.device.upper().startswith("GPU") else "this CPU"
    unseen = ""
    if not q.wait_measured:
        why = frameworks.declared(st.framework, "INPUT_WAIT_UNSEEN", "")
        unseen = f" (the wait for input was not measured{': ' + why if why else ''})"
    if not q.parts:
        return f"{QUIET.capitalize()}: it timed the whole {of} and none of its parts apart{unseen}."
    rest = f"the remaining {q.rest_share:.0%} is the step's own work on {where}"
    return f"{QUIET.capitalize()}: {quiet_parts(q)} of a {of}; {rest}{unseen}."


def untold_lines(causes: list[Cause]) -> list[str]:
    """Per cause whose targeting fix has no claim yet (``Cause.untold``): the cause, the fix, its
    line of code and why it has no claim, never as a recommendation."""
    out, seen = [], set()
    for c in causes:
        v = c.untold
        if v is None or v.not_measured is None or (c.kind, v.kind) in seen:
            continue
        seen.add((c.kind, v.kind))
        e = v.entry
        if v.fixes:
            code = fixwords.change_code(v.fixes[0])
        else:  # no pair measured: the line in the words of the framework (and trainer) whose step it is
            fw, trainer = (c.step.framework, c.step.trainer) if c.step is not None else ("", "")
            code = fixwords.entry_code(e, fw, trainer).format(v=e.values[0] if e.values else "N")
        if v.not_measured.reason == "too_few_samples":
            why = "was not yet measured precisely enough to tell whether it helps here"
        else:
            why = f"was not measured ({fixwords.short_reason(v.not_measured)}; a larger --budget measures it)"
        out.append(
            f"{cause_title(c)} ({c.share:.0%} of each step): the change that targets it, {v.entry.short} "
            f"(`{code}`), {why} — not a recommendation."
        )
    return out


# ------------------------------------------------------------------ the busy machine


BUSY_INDENT = " " * len("Answer: ")  # under the answer's words: it says what the answer's numbers are
BUSY_WIDTH = 80  # the busy machine's lines on the terminal, their indent included


def busy_text(b: BusyLoad) -> str:
    """The steps timed on a busy machine, as every form says it: 'Measured on a busy machine: load
    13.2 on 2 cores (the pre-flight's 1-minute average), so the times here and the GPU prediction's
    CPU side can be slower than on this machine idle. Run it again when it is quiet.' The prediction
    is named only where one was made from these CPU steps."""
    load = f"load {b.load:.1f} on {b.cores} cores" if b.load is not None else f"load {b.load_per_core:.1f} per core"
    side = " and the GPU prediction's CPU side" if b.predicted else ""
    return (
        f"Measured on a busy machine: {load} (the pre-flight's 1-minute average), so the times here{side} "
        "can be slower than on this machine idle. Run it again when it is quiet."
    )


def busy_lines(b: BusyLoad) -> list[str]:
    """:func:`busy_text` on the terminal: lines of at most BUSY_WIDTH columns, each under the answer's words."""
    import textwrap

    return [BUSY_INDENT + line for line in textwrap.wrap(busy_text(b), BUSY_WIDTH - len(BUSY_INDENT))]


# ------------------------------------------------------------------ the answer


def _failure_words(cases: list[CaseResult], others: list[CaseResult] | None = None) -> str:
    """'the time budget ran out before them (raise --budget)' or 'they failed (out of memory)';
    skipped after a case of ``others`` (the record's) on their device hung: that case, not the budget."""
    failed = [r for r in cases if r.status == "failed"]
    if not failed and any(r.status == "skipped" for r in cases):
        devices = {r.spec.device for r in cases}
        hung = [r for r in others or [] if r.failure == "timeout" and r.spec.device in devices]
        if hung:  # a hang spent the budget, and the answer said "raise --budget"
            return f"a case before them did not end ({_people_name(hung[0])}: {hung[0].error}); see the report"
        return "the time budget ran out before them (raise --budget)"
    kinds = ", ".join(dict.fromkeys(str(r.failure or "error").replace("_", " ") for r in failed))
    return f"they failed ({kinds}; see the report)" if failed else "they are not in this record"


def not_measured_answer(v: SuiteVerdict, record: RunRecord | None = None) -> str:
    """The answer when no case that decides it was measured: 'not measured' and why."""
    others = record.results if record is not None else None
    return f"Not measured: no case that decides it ran to the end — {_failure_words(v.answer_cases, others)}."


def _answer(record: RunRecord, v: SuiteVerdict, prediction: list[str] | None) -> list[str]:
    if not v.answer_measured:  # never a verdict over failed cases
        return [not_measured_answer(v, record)]
    if not v.gpus:
        return _no_gpu_answer(record, v, prediction)
    return (_unmeasured_gpu_lines(v, record) + _crossover_answer_lines(v))[:2]


def _no_gpu_answer(record: RunRecord, v: SuiteVerdict, prediction: list[str] | None) -> list[str]:
    """'No GPU here (why): ...', then the prediction, or how to ask for one."""
    # the reason that decides, as its fact alone (the note has each reason whole)
    reason = nvidia.no_gpu_gist(v.no_gpu_reasons[0]) if v.no_gpu_reasons else ""
    out = ["No GPU here" + (f" ({reason})" if reason else "") + ": everything below was measured on this CPU."]
    return out + (prediction or [_predict_hint(record)])


DIAGNOSE_HINT = "For your own model: `whichdevice diagnose --model FILE.py:FUNCTION`."


def prediction_lines(
    report: PredictReport | None, profile: DeviceProfile | None, below: str = DIAGNOSE_HINT
) -> list[str] | None:
    """A run without a GPU: would the reference GPU win, from what batch, and what
    its step would be made of — labelled a prediction, from which profile — then where to ask
    about one's own model (``below``; a script's diagnose: where its prediction comes from).
    None: the record traced no ops (the hint to `predict` instead)."""
    if report is None or profile is None or profile.gpu is None:
        return None
    gpu = profile.gpu.description
    source = f"Predicted from costs measured on {names.profile_words(profile, gpu)}, not measured here."
    if report.cannot_predict:
        return [f"Would a GPU help? Cannot predict it: {names.CANNOT_PREDICT[report.cannot_predict]}.", below]
    d = report.decision
    if d.kind == "none":
        return [f"Would a GPU help? {gpu_decision_words(d, gpu)}.", below]
    at = d.gpu_from if d.gpu_from is not None else d.measured[-1]
    decide = gpu_decide_words(d, command=False, brief=True)  # within the 25 lines: the command on the next line
    hint = below
    if d.command:
        hint = f"To decide it: `{d.command}` on the GPU. {below}"
    varied = cpu_varied_words(report.cpu_varied)
    return [
        f"Would a GPU help? {gpu_decision_words(d, gpu)}{_dominant_words(report, at)}. "
        + (f"{decide} " if decide else "")
        + source
        + (f" {varied}" if varied else ""),
        hint,
    ]


def _dominant_words(report: PredictReport, batch: float) -> str:
    """'; its step there mostly dispatch/launch (85 %)': the predicted part that dominates the
    GPU's step at the first batch from ``batch`` (the largest predicted, if none is)."""
    rows = [r for r in report.rows if r.gpu.step is not None and r.gpu.step.mid and r.gpu.dominant is not None]
    if not rows:
        return ""
    r = next((x for x in rows if x.batch >= batch), rows[-1])
    step, part = r.gpu.step, r.gpu.dominant
    assert step is not None and part is not None
    at = f"batch {r.batch}" if r.batch else "the script's own batch"
    return f"; at {at} its step would be mostly {part} ({r.gpu.parts_s[part] / step.mid:.0%})"


def _predict_hint(record: RunRecord) -> str:
    """How to ask `whichdevice predict` whether a GPU would help: for the user's own model
    (diagnose, Keras), or the seeds' workloads."""
    model = record.options.get("model") if record.experiment == "diagnose" else None
    fw = str(record.options.get("framework") or frameworks.DEFAULT)
    if model and record.options.get("script"):  # diagnose SCRIPT: predict takes a model function, not a script
        trace = record.step_trace
        why = ""
        if trace is not None:  # traced in the pre-flight, yet no prediction: why not, in one line
            why = (
                f"Not predicted: {trace.why_not or 'no CPU step of the script was measured to set beside its trace'}. "
            )
        return (
            f"Would a GPU help? {why}Run the same `whichdevice diagnose` on the machine with the GPU: it measures "
            "your script on both devices."
        )
    if model and fw not in frameworks.KERAS:  # predict takes Keras models only: an nn.Module is not modelled
        return (
            "Would a GPU help? `whichdevice predict --framework torch --quick` models the seeds' MLP "
            "(not your nn.Module)."
        )
    if model:  # predict models the user's own model too
        on = f" --framework {fw}" if fw != frameworks.DEFAULT else ""
        return f"Would a GPU help? Ask `whichdevice predict --model {model}{on} --quick`."
    return NO_PREDICTION


def _several_frameworks(v: SuiteVerdict) -> bool:
    return len({t.group.get("framework") for t in [*v.training.sweep, *v.matmul]}) > 1


def _crossover_answer_lines(v: SuiteVerdict) -> list[str]:
    """Where each GPU overtakes the CPU: in the training sweep (by batch), then the steady matmul
    (by n). When the run measured more than one framework, each line names its own."""
    out = []
    several = _several_frameworks(v)
    for t in v.training.sweep:
        what = names.model_name(t.group, short=True) + (f", {t.group.get('framework')}" if several else "")
        for d, c in t.crossovers.items():
            out.append(f"Training ({what}): {_crossover_words(c, 'batch', d)}")
    for t in v.matmul:
        if t.group.get("mode") == "steady":
            what = f" ({t.group.get('framework')})" if several else ""
            out += [f"Matrix multiply{what}: {_crossover_words(c, 'n', d)}" for d, c in t.crossovers.items()]
    return out


def _unmeasured_gpu_lines(v: SuiteVerdict, record: RunRecord) -> list[str]:
    """A GPU whose deciding cases all failed: said in place of its answer (the last GPU first)."""
    out = []
    for gpu in reversed(v.gpus):
        mine = [r for r in v.answer_cases if r.spec.device == gpu]
        if mine and not any(r.status == "ok" for r in mine):
            out.append(f"{gpu}: not measured — {_failure_words(mine, record.results)}.")
    return out


def _crossover_words(c: Crossover, unit: str, gpu: str) -> str:
    if c.kind == "gpu_everywhere":
        return f"use {gpu}: it is faster at every {unit} measured (from {c.high:g})"
    if c.kind == "cpu_everywhere":
        return f"use the CPU: {gpu} is slower at every {unit} measured (up to {c.low:g})"
    if c.kind == "between" and c.estimate is not None:
        sure = " (uncertain: the ranges overlap there)" if c.ranges_overlap else ""
        return f"use the CPU below {unit} ≈ {batch_figure(c.estimate)}, {gpu} above (between {c.low:g} and {c.high:g}){sure}"
    return crossover_text(c, unit)


# ------------------------------------------------------------------ warnings, one line per kind


# Per warning kind (analysis/TimingWarning.kind): the group's line, what it means
# (the cause follows: _group_cause), what to do when no other program was busy, and its short
# name on the first screen's warnings line.
_WARNING_KINDS = {
    "bimodal": (
        "point{s} bimodal between rounds (two processes disagreed by more than {t}): every ratio on it carries "
        "that spread",
        "the processes themselves differed (thread placement, memory layout, clocks)",
        "bimodal",
    ),
    "not_converged": (
        "point{s} did not settle (the median's 95 % interval stayed wider than ±{t})",
        "a spread of {its} own: raise --min-time for more samples",
        "unsettled",
    ),
    "uneven_steps": (
        "run{s} with uneven steps (single steps' spread > {t}; the median holds)",
        "the steps themselves vary (input stalls, garbage collection, a slow step per epoch)",
        "uneven",
    ),
    "noisy": (
        "point{s} noisy (spread > {t} of the median within a process)",
        "short points, or a spread of {its} own: raise --min-time and measure again",
        "noisy",
    ),
    "overhead": (
        "point{s} so short that the timer itself is > {t} of the call: an upper bound only",
        "",
        "timer-bound",
    ),
}


def _group_cause(kind: str, group: list[TimingWarning]) -> str:
    """The group's cause from its points' telemetry: other programs busy during some of them
    (analysis/utilization.others_busy), or during none, or not known."""
    quiet = _WARNING_KINDS[kind][1].format(its="their" if len(group) > 1 else "its")
    if not quiet:
        return ""
    busy = sum(w.others_busy is True for w in group)
    known = sum(w.others_busy is not None for w in group)
    if busy:
        return f" — other programs kept the machine busy during {busy} of them: close them and measure again"
    if known == len(group):
        return f" — no other program was busy while {'they' if known > 1 else 'it'} ran: {quiet}"
    if known:
        return f" — no other program was busy during the {known} of them whose CPU was sampled: {quiet}"
    return f" — if other programs were running, close them; else {quiet}"


OTHER = "other"  # a line a command adds to the warnings that is no measurement warning (never on the first screen)


def aggregate_warnings(typed: list[TimingWarning], warnings: list[str] | None = None) -> list[WarningGroup]:
    """The measurement warnings (analysis/quality.measurement_warnings, ``typed``) grouped by their
    kind, with a count; each item names its point for people. ``warnings``: the lines a command shows
    (notes.timing_warnings' text, plus any note of its own, grouped apart as 'other')."""
    if warnings is not None:
        wanted = set(warnings)
        typed = [w for w in typed if notes.warning_text(w) in wanted]
    by_kind: dict[str, list[TimingWarning]] = {}
    for w in typed:
        by_kind.setdefault(w.kind, []).append(w)
    known = {notes.warning_text(w) for w in typed}
    extra = [w for w in (warnings or []) if w not in known]
    out = []
    for kind, (text, _, _) in _WARNING_KINDS.items():
        group = by_kind.get(kind)
        if group:
            n = len(group)
            t = f"{group[0].threshold * 100:g} %"  # the threshold the warnings carry (analysis/quality.py)
            items = [
                f"{w.case.device} {names.workload_name(params_of(w.case), w.case.workload, framework=w.case.framework)}: {notes.warning_message(w)}"
                for w in group
            ]
            line = text.format(s="s" if n > 1 else "", t=t) + _group_cause(kind, group)
            out.append(WarningGroup(kind, n, line, items))
    if extra:
        out.append(WarningGroup(OTHER, len(extra), f"other warning{'s' if len(extra) > 1 else ''}", extra))
    return out


def named_failures(
    record: RunRecord, failures: list[str] | None, skipped: Sequence[NotMeasured | None]
) -> tuple[list[str], list[str]]:
    """present/notes.failures' lines with each case named for people: (the cases the time
    budget skipped — not measured, not failed — and the failed ones). ``skipped``: each skipped
    case's own reason, in the record's order (analysis/facade.Analysis.skipped)."""
    failures = notes.failures(record) if failures is None else failures
    labels = {notes.case_label(r.spec) + " — ": r for r in record.results if r.status == "failed"}
    cases = [r for r in record.results if r.status == "skipped"]
    said = [f"{_people_name(r)} — {_skip_words(why)}" for r, why in zip(cases, skipped, strict=True)]
    failed: list[str] = []
    for f in failures:
        label = next((lab for lab in labels if f.startswith(lab)), None)
        failed.append(f if label is None else f"{_people_name(labels[label])} — {f[len(label) :]}")
    return said, failed


BUDGET_SKIP = "not measured: the time budget ran out before it (raise --budget)"


def _skip_words(why: NotMeasured | None) -> str:
    """Why a skipped case was not measured: its own reason where it has one (a script's variant
    that does not fit the script, or whose turn the script's loop never reached), else the budget."""
    return fixwords.not_measured_text(why) if why is not None else BUDGET_SKIP


def skip_reasons(skipped: Sequence[NotMeasured | None]) -> list[str]:
    """Each skipped case's reason (``skipped``: analysis/facade.Analysis.skipped) in a few words
    (``fixes.short_reason``), "" where the time budget skipped it: what :func:`skipped_summary` counts."""
    return [fixwords.short_reason(why) if why is not None else "" for why in skipped]


def _people_name(r: CaseResult) -> str:
    return f"{r.spec.device} {names.workload_name(params_of(r.spec), r.spec.workload, framework=r.spec.framework)}"


# ------------------------------------------------------------------ assembly


def machine_words(record: RunRecord) -> str:
    m = record.machine
    fw = {s.framework.name: s.framework.version for s in record.sessions}  # each framework once, in order
    fws = (" · " + ", ".join(f"{k} {v}" for k, v in fw.items())) if fw else ""
    return f"{m.cpu_model}, {m.cpu_cores_logical} cores, {nbytes(m.ram_bytes)} RAM{fws}"


# A provisional answer kept before the per-batch decision: its prediction as a crossover kind.
_LEGACY_GIST = re.compile(r"^predicted (between|gpu_everywhere|cpu_everywhere|no_data) ")
# Its words named the profile by its file's name ("predicted on profile 'h100' (NVIDIA H100 80GB
# HBM3), not measured: it would win ..."): quoted, they say the card, as the screen does now.
_LEGACY_SAID = re.compile(r"^predicted on profile '[^']*' \((?P<card>[^)]*)\), not measured: it ")
# Older script records kept the plan's words in ``preflight_only`` ("20 s is too short to run the script
# again (in the pre-flight ..."; the line said the budget was too short), a run-time reason in ``preflight_why``.
_LEGACY_PLAN_WORDS = re.compile(r"^\S+ s is too short to run the script again \(")


def first_screen(record: RunRecord, v: SuiteVerdict, *, advice: list[str] | None = None) -> FirstScreen:
    changes, slower, unclear, missing = _changes(v)
    answer, gist = provisional_answer(record, v)
    if record.provisional is not None and any(_LEGACY_GIST.match(g) for g in record.provisional.gist):
        report = v.gpu_prediction if not v.gpus else None
        gist = answer_gist(v, report, legacy=True)
    if advice and v.gpus and v.answer_measured:  # diagnose with a GPU: the device for your model
        answer = ([a for a in advice if a.startswith("Device:")][:1] + answer)[:2]
    when = record.created_at.replace("T", " ")[:16]
    title = f"whichdevice {record.experiment} · {when} UTC · {machine_words(record)}"
    keys = sorted({c.source for c in changes[:SHOWN_CHANGES] if c.source})
    footnotes = [names.SOURCES.get(k, "") for k in keys]
    timed = preflight_line(record)
    return FirstScreen(
        title,
        [*answer, timed] if timed else answer,
        v.causes[:SHOWN_CAUSES],
        changes[:SHOWN_CHANGES],
        changes[SHOWN_CHANGES:],
        slower,
        unclear,
        missing,
        aggregate_warnings(v.warnings),
        notes.failures(record),
        footnotes,
        sum(r.status == "skipped" for r in record.results),
        _confirmed(record, gist, answer, v.remeasured),
        rebatched_line(record),
        v.quiet,
        v.gpu_reads,
        tuple(skip_reasons(v.skipped)),
        v.busy,
    )


def preflight_line(record: RunRecord) -> str:
    """Where a script's steps were answered from the pre-flight (the record's ``preflight_only`` says
    why): that they were timed there alone, in one process, why, and the budget that measures the
    baseline in its own processes and every fix."""
    o = record.options
    if not o.get("preflight_only"):
        return ""
    n = preflight_steps(record.results)
    steps = f" ({n} steps)" if n else ""
    whole = o.get("budget_for_all")
    more = f"; --budget {whole} or more measures the baseline in its own processes and every fix" if whole else ""
    why = str(o.get("preflight_why") or o["preflight_only"])  # preflight_why: an older record's reason, kept apart
    if _LEGACY_PLAN_WORDS.match(why):  # an older record's plan words: the reason is the budget's
        budget = o.get("budget_s")
        why = rerun_too_short_words(float(budget) if isinstance(budget, (int, float)) else None)
    return f"Timed in the pre-flight alone, in one process{steps}: {why}{more}."


def rebatched_line(record: RunRecord) -> str:
    """Where a script's batch sweep tiled its step's own batch (the script makes its own batches),
    the batches it measured so: the screen says the step, not the script, was re-batched."""
    o = record.options
    if o.get("rebatched") != "step":
        return ""
    sizes = {
        params_of(r.spec).get(_BATCH)
        for r in record.results
        if r.status == "ok" and params_of(r.spec).get("kind") == "steady" and "fix" not in params_of(r.spec)
    }
    tiled = sorted(k for k in sizes if isinstance(k, int) and k != o.get(_BATCH))
    if not tiled:
        return ""
    return (
        f"A larger batch was measured by re-running your step on its own batch tiled to {', '.join(map(str, tiled))} "
        f"(your script makes its own batches of {o.get(_BATCH)}; it was not changed)."
    )


def answer_gist(v: SuiteVerdict, report: PredictReport | None = None, legacy: bool = False) -> list[str]:
    """What the answer decides, without its figures: per device and workload, where the GPU
    overtakes the CPU as the kind of crossover and the measured points around it (or the
    predicted GPU's, without one). Round 2 confirms the provisional answer when it is the same.
    ``legacy``: the prediction as the crossover of the medians, as records from before the
    per-batch decision kept it, so that such a record's provisional answer is compared like
    with like."""
    if not v.answer_measured:
        return ["not measured"]
    out = []
    for t in [*v.training.sweep, *(t for t in v.matmul if t.group.get("mode") == "steady")]:
        what = names.model_name(t.group, short=True) if t in v.training.sweep else "matmul"
        out += [f"{what}, {t.group.get('framework')}: {d} {c.kind} {c.low}–{c.high}" for d, c in t.crossovers.items()]
    if report is not None and legacy:
        c = report.crossover
        out.append(f"predicted {c.kind} {c.low}–{c.high}")
    elif report is not None:
        out.append(report.decision.gist)
    return out


def provisional_answer(record: RunRecord, v: SuiteVerdict) -> tuple[list[str], list[str]]:
    """The answer lines and their gist (:func:`answer_gist`): from round 1's record, the
    provisional answer; from the final record, the answer round 2 is checked against."""
    report, profile = (v.gpu_prediction, v.gpu_profile) if not v.gpus else (None, None)
    return _answer(record, v, prediction_lines(report, profile, _hint(record))), answer_gist(v, report)


def _hint(record: RunRecord) -> str:
    """The line under the no-GPU prediction: for a script's diagnose, what it was predicted
    from and what measures it (its own command is said where a batch is too close to call)."""
    trace = record.step_trace
    if trace is None or not record.options.get("script"):
        return DIAGNOSE_HINT
    what = frameworks.declared(trace.framework, "STEP_TRACE_WORDS", "its ops")
    return f"From one step of your script traced in the pre-flight ({what}); the same diagnose on a GPU measures it."


def _confirmed(record: RunRecord, gist: list[str], answer: list[str], m: Remeasured | None) -> str:
    """Round 2 against the answer shown after round 1: the same, or changed and what it said
    (its lines that the final answer does not repeat). Said as a confirmation only for the
    cases round 2 measured again among those the answer rests on (``m``; without a GPU: the CPU
    steps its prediction read, not the matmul or the loops beside them): a case it did not
    re-measure still rests on round 1 alone. Nothing is said when neither answer decided
    anything from a measurement (a CPU-only diagnose: "run it on the GPU's machine")."""
    p = record.provisional
    if p is None or m is None or (not m.behind and not p.gist and not gist):
        return ""
    if record.options.get("preflight_only"):  # no round measured the answer: its own line says it is the pre-flight's
        return ""
    when = f"after round {p.round} of {p.rounds}, at {p.after_s:.0f} s"
    again, n = m.again, m.measured
    if not n:
        return f"Round {p.rounds} had nothing to measure again: no case behind the answer ran to the end."
    said = ""
    if p.gist != gist:
        said = ([a for a in p.answer if a not in answer] or p.answer)[0]
        said = said.removeprefix("Would a GPU help? ").split("; ")[0].rstrip(".")  # its claim, not its details
        said = _LEGACY_SAID.sub(lambda m: f"an {m['card']}, predicted, ", said)
    if not again:
        why = (
            "too few samples each for another round to help"
            if m.too_few_samples
            else "the time budget ran out, or they failed in that round"
        )
        if said:
            return (
                f"The answer changed from the provisional one ({when}), which said: {said}; round {p.rounds} "
                f"measured none of its {n} cases again ({why})."
            )
        return (
            f"Round {p.rounds} measured none of the {n} cases behind the answer again ({why}): it rests on "
            f"round 1's samples, as the provisional answer ({when}) did."
        )
    part = (
        ""
        if again == n
        else f"measuring {again} of the {n} cases behind it again ({n - again} rest on round 1's samples)"
    )
    if said:
        return f"Round {p.rounds} changed the provisional answer ({when}), which said: {said}{part and '; '}{part}."
    return f"Round {p.rounds} confirmed the provisional answer ({when}){part and ', '}{part}."


# ------------------------------------------------------------------ the terminal


def skipped_summary(reasons: list[str], failures: list[str]) -> str:
    """The skipped cases (``reasons``: :func:`skip_reasons`), as every form says them: '11 cases
    not measured (time budget; raise --budget)', and those with a reason of their own counted
    apart by it ('2 cases not measured (your script's loop ended before its turn)'). Not
    measured, never failed. After a case timed out (one of ``failures``, present/notes.failures'
    lines), that case spent the budget: more budget is not the fix, and the line says so."""
    timed_out = any(" — timed out after " in f for f in failures)
    budget = "time budget, after a case timed out" if timed_out else "time budget; raise --budget"
    counts: dict[str, int] = {budget: 0}  # the budget's first, as every form has said it
    for why in reasons:
        counts[why or budget] = counts.get(why or budget, 0) + 1
    counts = {why: n for why, n in counts.items() if n}
    return "; ".join(f"{n} case{'s' if n != 1 else ''} not measured ({why})" for why, n in counts.items())


def warnings_line(fs: FirstScreen) -> str:
    """'2 cases failed; 11 cases not measured (time budget; raise --budget); points: 19 unsettled, 4 noisy'."""
    bits = []
    if fs.failures:
        bits.append(f"{len(fs.failures)} case{'s' if len(fs.failures) > 1 else ''} failed")
    if fs.skipped:
        bits.append(skipped_summary(list(fs.skip_reasons) or [""] * fs.skipped, fs.failures))
    if fs.warnings:
        short = {k: name for k, (_, _, name) in _WARNING_KINDS.items()}
        bits.append("points: " + ", ".join(f"{g.count} {short.get(g.kind, g.kind)}" for g in fs.warnings))
    return "; ".join(bits)


def tail_lines(fs: FirstScreen) -> list[str]:
    """The changes not shown above, by what they came to: one line each."""
    out = []
    if fs.more:
        out.append("Also helps: " + ", ".join(f"{_short(c)} {times(c.claim.ratio)}×" for c in fs.more) + ".")
    if fs.slower:
        out.append(
            "Slower here: " + "; ".join(f"{_short(c)} {fixwords.short_claim_text(c.claim)}" for c in fs.slower) + "."
        )
    if fs.unclear:
        out.append("No clear change: " + ", ".join(fs.unclear) + ".")
    if fs.rebatched:
        out.append(fs.rebatched)
    default = [name for name, why in fs.not_measured if why == fixwords.DEFAULT_ON]
    if default:  # measured, but the framework's own default already makes the change
        out.append(f"Already the default here: {', '.join(default)}.")
    untold = untold_lines(fs.causes)
    out += untold
    named = {c.untold.entry.short for c in fs.causes if c.untold is not None} if untold else set()
    thin = [name for name, why in fs.not_measured if why == fixwords.NOT_ENOUGH and name not in named]
    missing = [(name, why) for name, why in fs.not_measured if name not in named]
    if thin:  # measured, from too few samples or rounds to tell a change from none
        out.append(f"Not enough samples to tell: {', '.join(thin)}.")
    by_reason: dict[str, list[str]] = {}
    for name, why in missing:  # a change named beside its cause above is not listed again
        if why not in (fixwords.DEFAULT_ON, fixwords.NOT_ENOUGH):
            by_reason.setdefault(why, []).append(name)
    if by_reason:
        out.append("Not measured: " + "; ".join(f"{', '.join(n)} ({why})" for why, n in by_reason.items()) + ".")
    return out


NO_CHANGE_HELPS = "No measured change helps significantly here."
NOTHING_MEASURED = "No change was measured here: each one is listed below with why."


def none_text(fs: FirstScreen) -> str:
    """The line under "What to change" when no change helps. "No measured change helps" only
    when some change was measured; when every one was left out, skipped or not runnable here it
    says so (a torch diagnose at --budget 30 that measured no fix read "No measured
    change helps significantly here", a verdict over nothing)."""
    measured = bool(fs.more or fs.slower or fs.unclear)
    measured = measured or any(why in (fixwords.NOT_ENOUGH, fixwords.DEFAULT_ON) for _, why in fs.not_measured)
    return NO_CHANGE_HELPS if measured or not fs.not_measured else NOTHING_MEASURED


def _short(c: Change) -> str:
    return c.fix.entry.short if c.fix is not None else c.kind


WIDTH = 100  # the first screen's width: MAX_LINES are counted at it
AFTER_PAGE = 2  # lines jobs/running.announce_record prints after the page (Record:, History:)


def _packed(items: list[str], width: int) -> list[str]:
    """Consecutive short sentences on one line while they fit in ``width``."""
    out: list[str] = []
    for item in items:
        if out and len(out[-1]) + 1 + len(item) <= width:
            out[-1] += " " + item
        else:
            out.append(item)
    return out


def _height(lines: list[tuple[str, str]]) -> int:
    """Terminal lines at WIDTH columns: code and paths are never wrapped (one line each)."""
    import textwrap

    return sum(1 if style in ("code", "path") else max(1, len(textwrap.wrap(text, WIDTH))) for style, text in lines)


def screen_lines(fs: FirstScreen, *, report: str | None, budget: int = MAX_LINES - AFTER_PAGE) -> list[tuple[str, str]]:
    """The first screen as (style, text) lines; style '' is plain, 'code' a line never wrapped.
    Within ``budget`` lines at WIDTH columns: when it would not fit, the blank line before the
    warnings goes first, then the line pointing to --verbose (the warnings line points to the
    report), then the causes are folded onto the heading's line, each with its title and share
    (the report and the Markdown say what each share is of), then every blank line, then the
    lines naming the changes that did not help or were not measured (the report lists them; a
    change that helps stays), then the busy machine's lines (they say what the numbers were
    measured under, so they outrank that tail; the answer itself is never dropped). Every cause the report lists is on the screen, in the same order:
    a cause is never dropped for room."""
    for folded, gap, more in (
        (False, True, True),
        (False, False, True),
        (False, False, False),
        (True, False, False),
    ):
        lines = _screen_lines(fs, report, folded, gap, more)
        if _height(lines) <= budget:
            return lines
    # still too long (a changed provisional answer, long prediction lines): no blank lines at all
    lines = [x for x in lines if x != ("", "")]
    if _height(lines) <= budget:
        return lines
    unhelped = {("dim", f"  {t}") for t in _packed(tail_lines(fs), WIDTH - 2) if not t.startswith("Also helps: ")}
    lines = [x for x in lines if x not in unhelped]
    if _height(lines) <= budget:
        return lines
    return [x for x in lines if x[0] != "busy"]  # it explains the numbers: it goes after the unhelped tail


def _cause_lines(
    causes: list[Cause], folded: bool, quiet: list[QuietStep] | None = None, reads: list[ScriptStep] | None = None
) -> list[tuple[str, str]]:
    """Why it is slow: a line per cause, or (``folded``) every cause on the heading's line; with
    no cause, a script's measured step's line saying none stands out, folded the same way; then a
    CPU step's host reads every step (not a cause here, a sync per read on a GPU), folded alike."""
    reads = reads or []
    if folded:
        said = causes_folded(causes) if causes else quiet_folded(quiet) if quiet else ""
        said = " · ".join(x for x in (said, *(reads_folded(st) for st in reads)) if x)
        return [("", ""), ("head", f"{CAUSES_HEAD}: {said}")] if said else []
    if causes:
        lines = [("", f"  {i}. {cause_title(c)} — {cause_text(c)}") for i, c in enumerate(causes, 1)]
    else:
        lines = [("", f"  {quiet_text(q)}") for q in quiet or []]
    lines += [("", f"  {reads_text(st)}") for st in reads]
    return [("", ""), ("head", CAUSES_HEAD), *lines] if lines else []


def _screen_lines(fs: FirstScreen, report: str | None, folded: bool, gap: bool, more: bool) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = [("bold", fs.title)]
    out += [("answer", ("Answer: " if i == 0 else "        ") + a) for i, a in enumerate(fs.answer)]
    if fs.confirmed:
        out.append(("dim", f"        {fs.confirmed}"))
    if fs.busy is not None:
        out += [("busy", line) for line in busy_lines(fs.busy)]
    out += _cause_lines(fs.causes, folded, fs.quiet, fs.reads)
    out += [("", ""), ("head", "What to change (measured on this machine, best first)")]
    if not fs.changes:
        out.append(("", f"  {none_text(fs)}"))
    for i, ch in enumerate(fs.changes, 1):
        out.append(("", f"  {i}. {ch.title}: {ch.short_gain_text}"))
        out.append(("code", f"       {ch.code}"))
        if ch.caveat:
            out.append(("caveat", f"       Caveat: {ch.caveat}"))
    out += [("dim", f"  {line}") for line in _packed(tail_lines(fs), WIDTH - 2)]
    if gap:
        out.append(("", ""))
    w = warnings_line(fs)
    if w:
        out.append(("warn", f"Warnings: {w} — see the report."))
    if more:
        out.append(("", "Every table, the plots and a glossary: --verbose, or the report."))
    if report:
        out.append(("path", f"Report: {report}"))
    return out


_STYLE = {
    "bold": "bold",
    "head": "bold",
    "answer": "bold green",
    "busy": "yellow",
    "caveat": "yellow",
    "warn": "yellow",
    "dim": "dim",
}


def render_terminal(console: Console, fs: FirstScreen, *, report: str | None) -> None:
    """Print the first screen. Paths and code lines are never wrapped by rich (a terminal may
    fold them; a pipe gets them whole); other lines wrap at the terminal's width, or not at
    all when stdout is not a terminal."""
    soft = not console.is_terminal
    for style, text in screen_lines(fs, report=report):
        if soft or style in ("code", "path"):
            print_line(console, text, _STYLE.get(style))
        else:
            for part in hanging(text, console.width):
                print_line(console, part, _STYLE.get(style))


def print_line(console: Console, text: str, style: str | None) -> None:
    """One line as it is (never wrapped by rich), in ``style``."""
    from rich.markup import escape

    t = escape(text)
    console.print(f"[{style}]{t}[/{style}]" if style and text else t, soft_wrap=True)


_HANG = re.compile(r"\s*(?:Answer: |Warnings: |Caveat: |\d+\. )?")


def hanging(text: str, width: int) -> list[str]:
    """``text`` wrapped at ``width`` with each wrapped line under the first one's words: after
    its indent and its label ('  1. ', 'Answer: ', '       Caveat: '), not at column 0."""
    import textwrap

    if len(text) <= width:
        return [text]
    hang = len(_HANG.match(text).group(0))  # type: ignore[union-attr]  # the pattern matches the empty string
    hang = hang if hang < width // 2 else 0
    return textwrap.wrap(text, width=width, subsequent_indent=" " * hang, break_on_hyphens=False) or [text]
