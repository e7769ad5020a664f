"""The verdict of ``whichdevice run`` and ``diagnose``, as data: per fix of the catalogue
(``workloads/fixes.py``) every measured pair with its claim, the pair a recommendation rests
on and its outcome (helps, slower, no clear change, not measured and why); the causes of the
slowness with their measured share; the sweeps, the training and pipeline reports.

Pure: a record in, typed data out; no sentence is written here (``present/`` writes them).
Each claim is computed once, here, and every presenter (first screen, fix table, HTML,
settings advice) formats the same :class:`~whichdevice.analysis.fixes.Fix`, so a claim reads
the same everywhere. The rules it applies live in ``analysis/verdict.py`` (shape of the
curves), ``analysis/fixes.py`` (A/B pairs), ``analysis/significance.py`` (what counts as a
change) and ``analysis/pipeline.py`` (input-bound); their thresholds and sources are there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from whichdevice.analysis import deviceprofile, errormodel, prediction, scriptpredict
from whichdevice.analysis.compare import compare, process_sd
from whichdevice.analysis.deviceprofile import DeviceProfile
from whichdevice.analysis.prediction import PredictReport
from whichdevice.analysis.quality import TimingWarning, measurement_warnings
from whichdevice.analysis.fixes import (
    Fix,
    FixEntry,
    FixResult,
    GridResult,
    NotMeasured,
    Outcome,
    PlacementCheck,
    WarmupCheck,
    CompileCost,
    ab_fixes,
    jit_by_default,
    towards,
)
from whichdevice.analysis.pipeline import MODERATELY_INPUT_BOUND_PERCENT, DeviceReport, analyze_pipeline
from whichdevice.analysis.placement import device_placement
from whichdevice.analysis.precision import Cpu16Bit, cpu_16bit
from whichdevice.analysis.scriptsteps import (
    BatchGain,
    BusyLoad,
    QuietStep,
    ScriptStep,
    busy_load,
    quiet_step,
    script_steps,
)
from whichdevice.analysis.significance import MIN_SAMPLES
from whichdevice.analysis.sweep import Table, analyze_sweep
from whichdevice import frameworks
from whichdevice.frameworks.common import nvidia
from whichdevice.analysis.train import RunRow, TrainReport, analyze_training
from whichdevice.analysis.verdict import Finding, sweep_findings
from whichdevice.analysis.warmup import break_even
from whichdevice.core import failures
from whichdevice.core.records import OWN_PROCESS, CaseResult, CaseSpec, RunRecord
from whichdevice.workloads import fixes as catalogue
from whichdevice.workloads.script import threads_env
from whichdevice.workloads.suite import USER_SWEEP_BATCHES
from whichdevice.workloads.fixes import params_of

# A recommended setting (batch, steps_per_execution) must reach this share of the best
# throughput found in its grid; the smallest such value is recommended (a smaller batch costs
# less memory and trains as the seeds' models were tuned; fewer steps per call keep callbacks
# and logging fine-grained). The 90 % is the bar the suite was accepted against.
GOOD_ENOUGH = 0.90
# A pipeline's wait for input is a cause of the slowness from XProf's "MODERATELY input-bound"
# share of the step (analysis/pipeline.py, xprof op_stats_to_input_pipeline_analysis.cc).
INPUT_WAIT_CAUSE_PERCENT = MODERATELY_INPUT_BOUND_PERCENT
# The first step is a cause when it takes at least this share of the first epoch: a fifth of an
# epoch's time spent once is what a one-epoch benchmark would mistake for the training speed.
WARMUP_CAUSE_SHARE = 0.2
# The image pipeline's parts a pipeline fix is measured on, in the order one decides: the whole
# training step (what the user waits for) when measured, else the pipeline alone (per batch).
PIPELINE_PARTS = ("both", "pipeline")
# A case's batch (and the user's, in a record's options), as the catalogue names its parameter.
_BATCH = catalogue.BATCH.param

CauseKind = Literal[
    "fixed_cost",
    "call_overhead",
    "input_wait",
    "python_pipeline",
    "sync",
    "host_reads",
    "warmup",
    "compute_bound",
    "threads",
    "contention",
]


@dataclass(frozen=True)
class FixVerdict:
    """One catalogue fix on one record: every measured pair, and what it comes to."""

    entry: FixEntry
    fixes: list[Fix]  # every measured pair (the fix table lists them all)
    deciding: list[Fix]  # the pairs a recommendation rests on (a grid's pick; a pipeline's training step)
    outcome: Outcome
    best: Fix | None  # helps: the largest gain; slower: the largest loss; else None
    not_measured: NotMeasured | None = None  # outcome "not_measured": why
    grids: list[GridResult] = field(default_factory=list)
    checks: list[PlacementCheck | WarmupCheck | CompileCost] = field(
        default_factory=list
    )  # "check"; torch.compile's cost
    default_on: list[Fix] = field(default_factory=list)  # pairs where the framework's default already applies it
    cpu_16bit: Cpu16Bit | None = None  # precision: what the record says about this CPU's 16-bit math

    @property
    def kind(self) -> str:
        return self.entry.key

    @property
    def measured(self) -> bool:
        return bool(self.fixes or self.checks)

    def gains(self, device: str) -> list[Fix]:
        """The deciding pairs that help significantly on ``device``."""
        return [f for f in self.deciding if f.device == device and f.outcome == "helps"]


@dataclass(frozen=True)
class Cause:
    """Why it is slow: a share of the step (or epoch), measured."""

    kind: CauseKind
    share: float  # 0..1 of the step (or first epoch) it is measured against
    device: str
    fix: Fix | None = None  # the change whose gain measures it (fixed cost, call overhead, python, sync)
    variant: str = ""  # input_wait: the pipeline variant measured
    steps: int = 0  # warmup: steps in the epoch; a script's step (analysis/scriptsteps.py): the timed steps
    first_s: float = 0.0  # warmup: the first step
    steady_s: float = 0.0  # warmup: a steady step
    # A script's step: what the share is of, measured by the capture in the script's own steps
    step: ScriptStep | None = None
    # The fix that acts on this cause (FixEntry.targets) where it has no claim for a reason more
    # measuring would remove (its pairs too noisy to tell, or the time budget left it out):
    # named beside the cause, never recommended
    untold: FixVerdict | None = None
    # A script's fixed cost: its larger batch against its own, per sample (the batch sweep's, or the
    # batch change's pair where that pair measured the cause): what the screen says the cause means
    larger: BatchGain | None = None
    # Threads contending for busy cores: the record's one-thread pair on the device (its claim as
    # measured, whatever it came to), or why there is none
    one_thread: Fix | None = None
    one_thread_missing: NotMeasured | None = None


@dataclass(frozen=True)
class SweepFinding:
    """A rule that fired on one of the suite's sweeps (analysis/verdict.py), and which sweep."""

    sweep: Literal["matmul", "training"]
    group: dict[str, Any]  # the sweep table's group: framework, mode, model ...
    finding: Finding
    framework: str | None = None  # the framework the sweep ran in (its advice is in that framework's words)

    @property
    def rule(self) -> str:
        return self.finding.rule

    @property
    def device(self) -> str:
        return self.finding.device


@dataclass(frozen=True)
class Remeasured:
    """The cases the answer rests on, as the rounds after the provisional answer measured them
    again: the line that confirms that answer, or says it changed, counts them (present/firstscreen)."""

    behind: int  # the cases the answer rests on (without a GPU: the CPU steps its prediction read)
    measured: int  # of them, measured to the end
    again: int  # of those, measured in every round
    # none measured again, and each had too few samples for another round to reach a claim's
    # (MIN_SAMPLES): another round would not have helped; else the budget or a failure stopped it
    too_few_samples: bool


@dataclass(frozen=True)
class SuiteVerdict:
    findings: list[SweepFinding]
    fixes: list[FixVerdict]  # the catalogue's order
    causes: list[Cause]  # largest share first
    matmul: list[Table]
    training: TrainReport
    pipelines: list[DeviceReport] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)  # the GPUs measured
    seed_batch: int = 10
    answer_cases: list[CaseResult] = field(default_factory=list)  # the cases the answer rests on
    no_gpu_reasons: list[str] = field(default_factory=list)  # why no GPU was seen (RunRecord.no_gpu_reasons)
    warnings: list[TimingWarning] = field(default_factory=list)  # analysis/quality.measurement_warnings
    # No GPU measured and ops traced: the reference GPU modelled (prediction.run_prediction), its profile
    gpu_prediction: PredictReport | None = None
    gpu_profile: DeviceProfile | None = None
    # A script whose baseline step was measured and no cause is named: per device, what its parts
    # measured (analysis/scriptsteps.QuietStep), so a report says none stands out and with what figures
    quiet: list[QuietStep] = field(default_factory=list)
    # A script measured on a CPU alone whose step reads to the host every step below its cause's
    # share: said under the causes with its cost here, since on a GPU each read is a sync
    # (analysis/scriptsteps.GPU_READS_PER_STEP); never a cause, never a GPU cost
    gpu_reads: list[ScriptStep] = field(default_factory=list)
    # With a provisional answer: how far the later rounds measured the cases the answer rests on again
    remeasured: Remeasured | None = None
    # Each skipped case's own reason, in the record's order (:func:`skip_reasons`; None: the budget)
    skipped: list[NotMeasured | None] = field(default_factory=list)
    # The machine was busy as the steps were timed (the pre-flight's load per core at the contention
    # threshold or more): said beside the answer, since every time here is slower for it
    busy: BusyLoad | None = None

    def fix(self, key: str) -> FixVerdict:
        return next(v for v in self.fixes if v.kind == key)

    @property
    def answer_measured(self) -> bool:
        """Whether any case that decides the answer (which device, from which size) was measured."""
        return any(r.status == "ok" for r in self.answer_cases)


def _subset(record: RunRecord, workload: str) -> RunRecord:
    return record.model_copy(update={"results": [r for r in record.results if r.spec.workload == workload]})


# ------------------------------------------------------------------ pairs


def grid_pick(cells: list[Fix]) -> tuple[Fix, Fix] | None:
    """One grid (sorted by value) -> (the recommended value, the best), or None when no value's
    gain is significant: the smallest value whose gain reaches ``GOOD_ENOUGH`` of the best gain
    (smaller is the cheaper change). Only gains that count by significance.py's rule compete: a
    value with fewer than 5 samples, or whose interval reaches into the noise, is never "best"."""
    gains = [f for f in cells if f.outcome == "helps"]
    if not gains:
        return None
    best = max(gains, key=lambda f: f.claim.ratio)
    return next(f for f in gains if f.claim.ratio >= GOOD_ENOUGH * best.claim.ratio), best


def _fix(kind: str, r: FixResult) -> Fix:
    where = {k: v for k, v in r.context.items() if k != "framework"}
    return Fix(kind, r.device, r.framework, r.baseline_value, r.variant_value, r.comparison.claim, where)


def _ab_pairs(record: RunRecord, e: FixEntry, baseline: object) -> list[Fix]:
    """Every A/B pair of ``e`` in the record's training cases, whose baseline case is one of
    the entry's cases (``FixEntry.cases``), with the whole record's between-process spread."""
    return [
        _fix(e.key, r)
        for r in ab_fixes(record, e.param, baseline)
        if e.cases("train", {**r.context, e.param: baseline})
    ]


def _pipeline_pairs(record: RunRecord, e: FixEntry, pipelines: list[DeviceReport]) -> tuple[list[Fix], list[Fix]]:
    """The image pipeline's pair for ``e`` per device, per part: (all, the deciding ones)."""
    if e.pipeline is None:
        return [], []
    base, var = e.pipeline
    spread = process_sd(record)
    every: list[Fix] = []
    deciding: list[Fix] = []
    for rep in pipelines:
        rows = {r.variant: r for r in rep.rows}
        a, b = rows.get(base), rows.get(var)
        if a is None or b is None:
            continue
        fw = next(
            (r.spec.framework for r in record.results if r.spec.workload == "pipeline" and r.spec.device == rep.device),
            "tensorflow",
        )
        mine = []
        for part in PIPELINE_PARTS:
            ta, tb = (a.loop, b.loop) if part == "both" else (a.pipeline, b.pipeline)
            if ta is None or tb is None:
                continue
            claim = compare(base, ta, var, tb, process_sd=spread).claim
            mine.append(Fix(e.key, rep.device, fw, base, var, claim, {_BATCH: a.batch}, "pipeline", part))
        every += mine
        deciding += mine[:1]
    return every, deciding


def _grids(record: RunRecord, e: FixEntry, fixes: list[Fix]) -> list[GridResult]:
    """The grid of each (device, framework, workload): its values sorted, its pick and best, and
    the values of the same grid that were not measured (skipped by the time budget, or failed)."""
    keys = dict.fromkeys((f.device, f.framework, tuple(sorted(f.where.items()))) for f in fixes)
    out = []
    for device, fw, where in keys:
        cells = sorted(
            (f for f in fixes if (f.device, f.framework, tuple(sorted(f.where.items()))) == (device, fw, where)),
            key=lambda f: f.variant,  # type: ignore[arg-type, return-value]
        )
        picked = grid_pick([c for c in cells if towards(e, c.variant, c.baseline)])
        missing = _unmeasured_values(record, e.param, device, fw, dict(where))
        out.append(
            GridResult(
                device,
                fw,
                cells[0].baseline,
                cells,
                picked[0] if picked else None,
                picked[1] if picked else None,
                skipped=[v for v, r in missing if r.status == "skipped"],
                failed=[v for v, r in missing if r.status == "failed"],
            )
        )
    return out


def _unmeasured_values(
    record: RunRecord, param: str, device: str, framework: str, where: dict[str, Any]
) -> list[tuple[object, CaseResult]]:
    """The grid's values whose case did not run to the end, by value, with the case."""
    out = []
    for r in record.results:
        p = params_of(r.spec)
        if r.status == "ok" or r.spec.device != device or r.spec.framework != framework or param not in p:
            continue
        if r.spec.workload == "train" and {k: v for k, v in p.items() if k not in (param, OWN_PROCESS)} == where:
            out.append((p[param], r))
    return sorted(out, key=lambda vr: float(vr[0]) if isinstance(vr[0], int | float) else 0.0)


# ------------------------------------------------------------------ outcome and why not


def _decide(deciding: list[Fix]) -> tuple[Outcome, Fix | None]:
    """helps (the largest gain), else slower (the largest loss), else no clear change, else not
    measured (no pair has a claim)."""
    helps = [f for f in deciding if f.outcome == "helps"]
    if helps:
        return "helps", max(helps, key=lambda f: f.claim.ratio)
    slower = [f for f in deciding if f.outcome == "slower"]
    if slower:
        return "slower", min(slower, key=lambda f: f.claim.ratio)
    if any(f.outcome == "no_change" for f in deciding):
        return "no_change", None
    return "not_measured", None


def _baseline_side(e: FixEntry, baseline: object, workload: str, p: dict[str, Any]) -> bool:
    """Whether a case of ``e`` is its baseline (every case of a check)."""
    if not e.cases(workload, p):
        return False
    if e.method == "check":
        return True
    return p.get(e.param) == baseline or (e.pipeline is not None and p.get("variant") == e.pipeline[0])


def _applies(record: RunRecord, e: FixEntry) -> bool:
    """Whether the fix belongs to this record's frameworks (frameworks.fix_applies: a
    torch diagnose listed "Use tf.data with prefetch")."""
    if e.planned_only and not _planned(record, e):
        return False
    return frameworks.fix_applies(e.framework, {r.spec.framework for r in record.results})


def _planned(record: RunRecord, e: FixEntry) -> bool:
    """Whether the record's plan had the fix: its cases are in the record, or the plan cut them."""
    cut = record.options.get("fixes_cut")
    return (isinstance(cut, list) and e.key in cut) or any(
        e.cases(r.spec.workload, params_of(r.spec)) for r in record.results
    )


def _has_gpu(record: RunRecord) -> bool:
    return any(s.device.kind == "gpu" for s in record.sessions) or any(
        r.spec.device.startswith("GPU") for r in record.results
    )


def _sweep_cut(record: RunRecord, e: FixEntry) -> bool:
    """Whether the diagnose's plan cut its batch sweep to no batch above the user's (its options'
    ``sweep_batches``, ``batch`` and ``budget_cut``) though the grid has larger ones: a larger
    batch was left out for the budget, not "one side did not run" (keras-io's weather
    LSTM, a CIFAR ResNet18 in torch). Not for a script: a sweep its plan never had (a batch it
    cannot change, or read as 0) is no budget cut (pytorch/examples' regression/main.py said
    "a larger batch (left out: time budget)")."""
    o = record.options
    sweep, batch = o.get("sweep_batches"), o.get(_BATCH)
    if not (e.larger and e.param == catalogue.BATCH.param and o.get("budget_cut") and isinstance(sweep, list)):
        return False
    if "script" in o or not isinstance(batch, int) or batch <= 0:
        return False  # a script's plan names a sweep it cut in its fixes_cut (workloads/scriptplan.size)
    return any(k > batch for k in USER_SWEEP_BATCHES) and not _swept_larger(record)


def _cut_by_plan(record: RunRecord, e: FixEntry) -> bool:
    """Whether the diagnose's plan left this fix out for the budget, not the suite: the plan's
    ``fixes_cut`` (a script's, and the Keras ``--model`` plan of older records), the older torch
    ``--model`` plan's ``fixes_planned`` and ``budget_cut``."""
    if _sweep_cut(record, e):
        return True
    cut = record.options.get("fixes_cut")
    if isinstance(cut, list):  # the plan named the fixes it cut
        return e.key in cut
    planned = record.options.get("fixes_planned")
    if e.framework == "any" or not isinstance(planned, list) or not record.options.get("budget_cut"):
        return False
    if e.applies is not None and not e.applies(_facts(record, e.framework)):
        return False  # the fix does not apply to this model, whatever the plan (channels_last on an LSTM)
    if e.group == "loop":  # the loader pairs: planned when their cases are in the record
        return (_has_gpu(record) or not e.gpu_only) and not any(
            e.cases(r.spec.workload, params_of(r.spec)) for r in record.results
        )
    return e.key not in planned


def _facts(record: RunRecord, framework: str) -> dict[str, Any]:
    """The pre-flight's facts of the user's model, from the record's ``<framework>_<fact>`` options."""
    prefix = f"{framework}_"
    return {k.removeprefix(prefix): v for k, v in record.options.items() if k.startswith(prefix)}


def _too_few(fixes: list[Fix]) -> NotMeasured:
    most = max(fixes, key=lambda f: (f.claim.unit == "rounds", f.claim.n))
    note = most.claim.note
    needed = note.needed if note is not None and note.needed else MIN_SAMPLES
    wide = note is not None and note.kind == "too_wide"
    one = note is not None and note.kind == "one_process"
    return NotMeasured(
        "too_few_samples", n=most.claim.n, unit=most.claim.unit, needed=needed, wide=wide, one_process=one
    )


def _contended(record: RunRecord, e: FixEntry, fixes: list[Fix]) -> NotMeasured | None:
    """A change its processes' two modes could explain (fixes.processes_disagree): why it is not
    told, with the record's CPU thread-count pair, the measured alternative to contending threads."""
    disagree = [f for f in fixes if f.claim.note is not None and f.claim.note.kind == "disagree"]
    if not disagree:
        return None
    threads = [f for f in _ab_pairs(record, catalogue.CPU_THREADS, "default") if f.kind != e.key]
    best = max(threads, key=lambda f: f.claim.ratio) if threads else None
    worst = max(disagree, key=lambda f: f.claim.ratio)
    used = next((x.cpu_threads_intra for x in record.sessions if x.device.name == worst.device), 0)
    return NotMeasured(
        "contended", untold=worst.claim, threads=best, threads_used=used, cores=record.machine.cpu_cores_logical
    )


def _budget_for_all(record: RunRecord) -> int:
    """The --budget a script's plan named as holding every fix (0: none named)."""
    value = record.options.get("budget_for_all")
    return int(value) if isinstance(value, (int, float)) else 0


def why_not_measured(record: RunRecord, e: FixEntry, fixes: list[Fix], baseline: object = None) -> NotMeasured:
    """The true reason a fix has no claim, read from the record: its baseline is not part of
    the suite, the time budget skipped its cases, they failed, a side has fewer than 5 samples,
    or only one side of the pair ran."""
    if fixes:  # pairs, none with enough samples (or rounds), or none told for their processes' disagreement
        return _contended(record, e, fixes) or _too_few(fixes)
    if e.gpu_only and not _has_gpu(record):
        return NotMeasured("no_gpu")
    if _cut_by_plan(record, e):
        return NotMeasured("cut", budget=_budget_for_all(record))
    if e.larger and e.param == catalogue.BATCH.param and "script" in record.options and not _swept_larger(record):
        return _script_batch(record, e)
    base = e.baseline if baseline is None else baseline
    if not any(_baseline_side(e, base, r.spec.workload, params_of(r.spec)) for r in record.results):
        return NotMeasured("not_in_suite", elsewhere=e.elsewhere)
    cases = [r for r in record.results if e.cases(r.spec.workload, params_of(r.spec))]
    if not cases:
        return NotMeasured("not_in_suite", elsewhere=e.elsewhere)
    failed = [r for r in cases if r.status == "failed"]
    if failed:
        return NotMeasured("failed", failures=list(dict.fromkeys(str(r.failure or "error") for r in failed)))
    if any(r.status == "skipped" for r in cases):  # the budget, or a variant the script does not fit
        return _not_applicable(cases) or NotMeasured("skipped")
    if e.method == "check":  # its cases ran, none of them one the check reads (_CHECKS): a check has no pair
        return NotMeasured("not_in_suite", elsewhere=e.elsewhere)  # (a script's DataLoader loop for the warm-up)
    return NotMeasured("no_pair")


# A script's variant its capture found not to fit the script (``workloads/script.NotApplicable``):
# the case is skipped, its failure holding this before the capture's reason.
NOT_APPLICABLE_PREFIX = "not applicable to this script: "


def _not_applicable(cases: list[CaseResult]) -> NotMeasured | None:
    """Where a script's cases were skipped as not fitting the script (a batch its step could not be
    tiled to), the capture's reasons, or as left without a turn by the script's loop ending first;
    None where none was."""
    for r in cases:
        ended = skip_reason(r) if r.status == "skipped" else None
        if ended is not None and ended.reason == "script_ended":
            return ended
    said = [str(r.error or "").partition(NOT_APPLICABLE_PREFIX) for r in cases if r.status == "skipped"]
    why = [reason for _, sep, reason in said if sep and reason]
    return NotMeasured("not_applicable", failures=list(dict.fromkeys(why))) if why else None


_AFTER_STEPS = re.compile(r" after (\d+) steps")


def skip_reason(r: CaseResult) -> NotMeasured | None:
    """A skipped case's reason of its own, where it has one (None: the time budget skipped it): a
    script's variant that does not fit the script, or one whose turn its loop never reached
    (``n``: the steps the loop took, 0 where not counted)."""
    error = str(r.error or "")
    if error.startswith(failures.SCRIPT_ENDED_PREFIX):
        m = _AFTER_STEPS.search(error)
        return NotMeasured("script_ended", n=int(m.group(1)) if m else 0)
    _, sep, reason = error.partition(NOT_APPLICABLE_PREFIX)
    return NotMeasured("not_applicable", failures=[reason]) if sep and reason else None


def skip_reasons(record: RunRecord) -> list[NotMeasured | None]:
    """Each skipped case's reason of its own (:func:`skip_reason`), in the record's order: None
    where the time budget skipped it. What every form words a skipped case with."""
    return [skip_reason(r) for r in record.results if r.status == "skipped"]


def _swept_larger(record: RunRecord) -> bool:
    """Whether a script's plan swept a batch above the user's: its cases then say why a larger
    batch has no claim (they failed: keras-io's GAN, whose every case raised), not "the script
    makes its own batches"."""
    sweep, batch = record.options.get("sweep_batches"), record.options.get(_BATCH)
    return isinstance(sweep, list) and isinstance(batch, int) and any(isinstance(k, int) and k > batch for k in sweep)


def _script_batch(record: RunRecord, e: FixEntry) -> NotMeasured:
    """Why a script's larger batch has no claim where its plan swept none: only smaller batches fit
    the script's data ("no larger one measured"), or the script makes its own batches."""
    if _swept_other(record):
        return _none_larger(record, e, record.options[_BATCH])
    fw = str(record.options.get("framework") or "")
    source = frameworks.declared(fw, "REBATCHES", None) if fw in frameworks.FRAMEWORKS else None
    return NotMeasured("fixed_batch", rebatches=source or "")


def _swept_other(record: RunRecord) -> bool:
    """Whether a script's plan swept a batch other than the user's (smaller ones only, where the
    script's data holds too few larger batches for a case's steps): the script's batch was then
    changed, so "the script makes its own batches" would not be true."""
    sweep, batch = record.options.get("sweep_batches"), record.options.get(_BATCH)
    return isinstance(sweep, list) and isinstance(batch, int) and any(isinstance(k, int) and k != batch for k in sweep)


def _none_larger(record: RunRecord, e: FixEntry, baseline: object) -> NotMeasured:
    """Why a larger value than the baseline has no measurement: its cases were skipped by the
    time budget, failed, or none was in the run."""
    larger = [
        r
        for r in record.results
        if r.status != "ok"
        and e.cases(r.spec.workload, params_of(r.spec))
        and towards(e, params_of(r.spec).get(e.param), baseline)
    ]
    failed = [r for r in larger if r.status == "failed"]
    if failed:
        return NotMeasured("failed", failures=list(dict.fromkeys(str(r.failure or "error") for r in failed)))
    if larger:
        return _not_applicable(larger) or NotMeasured("skipped")
    if _cut_by_plan(record, e):
        return NotMeasured("cut", budget=_budget_for_all(record))
    return NotMeasured("none_larger", param=e.param, above=baseline)


def _verdict(
    record: RunRecord,
    e: FixEntry,
    baseline: object,
    fixes: list[Fix],
    deciding: list[Fix],
    **extra: Any,
) -> FixVerdict:
    outcome, best = _decide(deciding)
    why = why_not_measured(record, e, fixes, baseline) if outcome == "not_measured" else None
    return FixVerdict(e, fixes, deciding, outcome, best, why, **extra)


def _fix_verdict(record: RunRecord, e: FixEntry, seed_batch: int, pipelines: list[DeviceReport]) -> FixVerdict:
    if e.method == "check":
        checks = _CHECKS[e.check](record)
        return FixVerdict(e, [], [], "not_measured", None, why_not_measured(record, e, []), checks=checks)
    baseline = seed_batch if e.baseline is None else e.baseline
    fixes = _ab_pairs(record, e, baseline) if e.method in ("ab", "grid") else []
    deciding = list(fixes)
    grids: list[GridResult] = []
    if e.method == "grid":
        grids = _grids(record, e, fixes)
        deciding = [g.pick for g in grids if g.pick] or [f for f in fixes if towards(e, f.variant, f.baseline)]
    piped, piped_deciding = _pipeline_pairs(record, e, pipelines)
    fixes, deciding = fixes + piped, deciding + piped_deciding
    extra: dict[str, Any] = {"grids": grids}
    if fixes and not deciding:  # only smaller values than the baseline measured: the fix itself was not
        return FixVerdict(e, fixes, [], "not_measured", None, _none_larger(record, e, baseline), **extra)
    if e.default_metric:  # where the framework's default already applies it (XLA), True is no change
        already = [f for f in fixes if jit_by_default(record, f.device, f.framework)]
        deciding = [f for f in deciding if f not in already]
        extra["default_on"] = already
        if fixes and not deciding:
            devices = sorted({f.device for f in already})
            why = NotMeasured("default", devices=devices, default=e.default_words[0])
            return FixVerdict(e, fixes, [], "not_measured", None, why, **extra)
    if e.cpu_16bit:
        extra["cpu_16bit"] = _cpu_16bit_beside(record, fixes) if fixes else None
    if e.compiles:
        extra["checks"] = compile_costs(record, e, fixes)
    return _verdict(record, e, baseline, fixes, deciding, **extra)


def _cpu_16bit_beside(record: RunRecord, fixes: list[Fix]) -> Cpu16Bit | None:
    """The CPU's 16-bit math as said beside the fix's own pairs: a policy counts as slower in
    spite of the flags only where its pair's claim (the one the fix table shows) says slower too."""
    c = cpu_16bit(record)
    if c is None:
        return None
    slower = {(f.device, str(f.variant)) for f in fixes if f.claim.significant and f.claim.ratio < 1}
    kept = tuple(r for r in c.slower_anyway if (r.device, r.precision) in slower)
    return replace(c, slower_anyway=kept)


def compile_costs(record: RunRecord, e: FixEntry, fixes: list[Fix]) -> list[PlacementCheck | WarmupCheck | CompileCost]:
    """A compiling fix's compile (``FixEntry.compiles``: torch.compile) per device, from its pair: the measured compile (the compiled
    side's ``compile_s``) and its break-even against the eager steps; or, where compiling was
    stopped at its bound (the compiled side failed with a TimeoutError), that bound as a lower
    bound and the fewest steps it could pay back in."""
    out: list[PlacementCheck | WarmupCheck | CompileCost] = []
    pairs: dict[str, dict[bool, CaseResult]] = {}
    for r in record.results:
        p = params_of(r.spec)
        if r.spec.workload == "train" and p.get("fix") == e.key:
            pairs.setdefault(r.spec.device, {})[bool(p.get(e.param))] = r
    for device, pair in pairs.items():
        base, comp = pair.get(False), pair.get(True)
        if comp is None:
            continue
        eager = base.timing.median_s if base is not None and base.status == "ok" and base.timing else None
        if comp.status == "ok" and comp.timing is not None and "compile_s" in comp.metrics:
            claim = next((f.claim for f in fixes if f.device == device), None)
            significant = claim is not None and claim.enough and claim.significant
            be = (
                break_even(0.0, eager, comp.metrics["compile_s"], comp.timing.median_s, significant=significant)
                if eager is not None
                else None
            )
            out.append(CompileCost(device, comp.metrics["compile_s"], True, eager, be))
        elif comp.status == "failed" and "TimeoutError: torch.compile" in str(comp.error or ""):
            bound = float(params_of(comp.spec).get("compile_limit_s") or 0.0)
            out.append(CompileCost(device, bound, False, eager, None, bound / eager if eager else None))
    return out


def _placement_checks(record: RunRecord) -> list[PlacementCheck | WarmupCheck | CompileCost]:
    out: list[PlacementCheck | WarmupCheck | CompileCost] = []
    for r in record.results:
        if r.status != "ok" or params_of(r.spec).get("kind") != "placement" or r.timing is None:
            continue
        p = device_placement(r.spec.device, r.metrics, r.timing.median_s)
        gpu = p.device.startswith("GPU")
        out.append(
            PlacementCheck(
                p.device,
                [o.op_type for o in p.on_cpu_in_gpu_run] if gpu else [],
                [] if gpu else [o.op_type for o in p.would_fall_back],
                p.copies.count,
            )
        )
    return out


def _warmup_checks(record: RunRecord) -> list[PlacementCheck | WarmupCheck | CompileCost]:
    """The first step against the steady one, in the seed's (or the user's) custom loop."""
    out: list[PlacementCheck | WarmupCheck | CompileCost] = []
    for r in record.results:
        p = params_of(r.spec)
        if (
            r.status == "ok"
            and r.timing is not None
            and r.spec.workload == "train"
            and p.get("example") in ("ex2", "user")
            and p.get("kind") == "loop"
            and p.get("data") != "tfdata_noprefetch"
        ):
            out.append(WarmupCheck(r.spec.device, r.timing.first_call_s, r.timing.median_s))
    return out


# What a check (``FixEntry.check``) reads from the record.
_CHECKS = {"placement": _placement_checks, "warmup": _warmup_checks}


# ------------------------------------------------------------------ causes


def _share(f: Fix) -> float:
    """The share of the baseline's time the fix removes: 1 − 1/gain."""
    return 1 - 1 / f.claim.ratio


def causes(
    v_fixes: list[FixVerdict],
    pipelines: list[DeviceReport],
    training: TrainReport,
    steps: list[ScriptStep] | None = None,
) -> list[Cause]:
    """Why it is slow, each from a measurement: the fixed cost per step (the batch change's
    gain), else Keras's per-call overhead (steps_per_execution's), the wait for input (XProf's
    input-bound share of the serial pipeline's step), the tf.py_function's share, the loss read
    back every step (each the gain of the fix that declares it, ``FixEntry.cause``), and the
    first step's share of the first epoch. A script's own step (``steps``) adds its measured
    wait for the next batch, its host reads, the batch sweep's split of the step into per-sample
    arithmetic and fixed cost, and its threads contending for fewer cores, whatever its fix pairs
    came to. Largest share first."""
    out = _step_cost_causes(v_fixes) + _input_wait_causes(pipelines) + _fix_causes(v_fixes) + _warmup_causes(training)
    script = _script_causes(steps or [], v_fixes)
    # the fixed cost from the batch sweep's line only where no batch change measured it as a gain
    fixed = {c.device for c in out if c.kind in _STEP_COSTS}
    out += [c for c in script if not (c.kind == "fixed_cost" and c.device in fixed)]
    return sorted(out, key=lambda c: -c.share)


def _helping(v: FixVerdict | None) -> Fix | None:
    """The fix's best pair when it helps, else None."""
    return v.best if v and v.outcome == "helps" and v.best else None


# The causes measured per step: the fixed cost, else (the same cost seen through model.fit) the per-call overhead.
_STEP_COSTS: tuple[CauseKind, ...] = ("fixed_cost", "call_overhead")


def _step_cost_causes(v_fixes: list[FixVerdict]) -> list[Cause]:
    """The fixed cost per step (the batch change's gain), else Keras's per-call overhead
    (steps_per_execution's: the same per-step cost, seen through model.fit)."""
    for kind in _STEP_COSTS:
        for v in v_fixes:
            best = _helping(v) if v.entry.cause == kind else None
            if best is not None:
                return [Cause(kind, _share(best), best.device, best)]
    return []


def _input_wait_causes(pipelines: list[DeviceReport]) -> list[Cause]:
    """The wait for input of the seed's own pipeline (the first variant, serial map), per device."""
    out: list[Cause] = []
    for rep in pipelines:
        seed = next((r for r in rep.rows if r.wait_percent is not None), None)
        if seed is not None and seed.wait_percent is not None and seed.wait_percent >= INPUT_WAIT_CAUSE_PERCENT:
            out.append(Cause("input_wait", seed.wait_percent / 100, rep.device, variant=seed.variant))
    return out


def _script_causes(steps: list[ScriptStep], v_fixes: list[FixVerdict]) -> list[Cause]:
    """A script's baseline step per device (analysis/scriptsteps.py): its wait for the next
    batch, its host reads, its per-sample arithmetic and fixed cost (the batch sweep's line) and
    its threads' contention, each where its share reaches that module's threshold, with the fix
    that targets it when that fix has no claim that more measuring could give (:func:`_untold`)."""
    out: list[Cause] = []
    for st in steps:
        if st.input_bound and st.wait_share is not None:
            out.append(Cause("input_wait", st.wait_share, st.device, steps=st.steps, step=st))
        if st.read_bound:
            out.append(Cause("host_reads", st.read_share, st.device, steps=st.steps, step=st))
        if st.compute_bound and st.compute_share is not None:
            out.append(Cause("compute_bound", st.compute_share, st.device, steps=st.steps, step=st))
        if st.fixed_bound and st.fixed_share is not None:
            out.append(Cause("fixed_cost", st.fixed_share, st.device, steps=st.steps, step=st))
        if st.contended:  # the busy machine's contention, more threads than cores or as many
            pair, missing = _one_thread(st, v_fixes)
            out.append(
                Cause(
                    "contention",
                    st.above_fastest,
                    st.device,
                    steps=st.steps,
                    step=st,
                    one_thread=pair,
                    one_thread_missing=missing,
                )
            )
        elif st.oversubscribed:
            out.append(Cause("threads", st.contention_share, st.device, steps=st.steps, step=st))
    return [replace(c, untold=_untold(c, v_fixes)) for c in out]


def _one_thread(st: ScriptStep, v_fixes: list[FixVerdict]) -> tuple[Fix | None, NotMeasured | None]:
    """The record's CPU thread-count pair at one thread on ``st``'s device (the most samples or
    rounds where there are several), or why there is none: the verdict's reason, or a framework
    whose thread count a process cannot be given (JAX)."""
    v = next((x for x in v_fixes if x.entry.key == catalogue.CPU_THREADS.key), None)
    pairs = [f for f in (v.fixes if v else []) if f.device == st.device and f.variant == 1]
    if pairs:
        return max(pairs, key=lambda f: (f.claim.unit == "rounds", f.claim.n)), None
    if not threads_env(st.framework, 1):  # nothing a process's environment can set
        return None, NotMeasured(
            "not_applicable", failures=[f"{st.framework} takes no thread count a process can be given"]
        )
    if v is not None and v.not_measured is not None:
        return None, v.not_measured
    return None, NotMeasured("not_in_suite")


# Why a targeting fix has no claim, where a larger budget would measure it: its pairs were too
# noisy to tell a change from none, or the budget skipped or left out its cases. (Not a fix
# that failed, needs a GPU, or is already the framework's default: more time tells nothing.)
_UNTOLD = ("too_few_samples", "cut", "skipped")


def _untold(c: Cause, v_fixes: list[FixVerdict]) -> FixVerdict | None:
    """The fix that targets ``c`` (``FixEntry.targets``) on its device, when it has no claim
    there for one of the ``_UNTOLD`` reasons."""
    for v in v_fixes:
        why = v.not_measured
        if v.entry.targets != c.kind or v.outcome != "not_measured" or why is None or why.reason not in _UNTOLD:
            continue
        if why.reason != "too_few_samples" or any(f.device == c.device for f in v.fixes):
            return v
    return None


def _fix_causes(v_fixes: list[FixVerdict]) -> list[Cause]:
    """The other causes a fix's gain measures (the tf.py_function's share, the loss read back
    every step): each fix's that declares one."""
    out: list[Cause] = []
    for v in v_fixes:
        best = _helping(v) if v.entry.cause and v.entry.cause not in _STEP_COSTS else None
        if best is not None:
            out.append(Cause(v.entry.cause, _share(best), best.device, best))  # type: ignore[arg-type]
    return out


def _warmup_causes(training: TrainReport) -> list[Cause]:
    """The first step's share of the first epoch in the seed's (or the user's) own loop."""
    out: list[Cause] = []
    for row in training.runs:
        if row.params.get("kind") != "loop" or row.params.get("example") not in ("ex2", "user"):
            continue
        cause = _warmup_cause(row)
        if cause is not None:
            out.append(cause)
    return out


def _warmup_cause(row: RunRow) -> Cause | None:
    """The loop's first measured device with steps per epoch: its first step's share of the
    first epoch, when that reaches ``WARMUP_CAUSE_SHARE``."""
    for d, cell in row.cells.items():
        steps = (cell.metrics or {}).get("steps_per_epoch") if cell.ok else None
        if not cell.ok or not steps or cell.timing is None:
            continue
        first, steady = cell.timing.first_call_s, cell.timing.median_s
        share = first / (first + steady * (int(steps) - 1))
        if share >= WARMUP_CAUSE_SHARE:
            return Cause("warmup", share, d, steps=int(steps), first_s=first, steady_s=steady)
        return None
    return None


# ------------------------------------------------------------------ the verdict


def answer_cases(record: RunRecord) -> list[CaseResult]:
    """The cases the answer (which device, from which size or batch) rests on: the matmul sweep
    as the article timed it back to back, the steady training step per batch, and the seed's
    (or the user's) own loop and fit at its batch (:func:`decides_answer`)."""
    return [r for r in record.results if decides_answer(r.spec)]


def decides_answer(spec: CaseSpec) -> bool:
    """Whether the answer rests on ``spec`` (:func:`answer_cases`)."""
    p = params_of(spec)
    if spec.workload == "matmul":
        return p.get("mode") == "steady"
    return spec.workload == "train" and (
        (p.get("kind") == "steady" and p.get(catalogue.SYNC.param) == "none")
        or (
            p.get("example") in ("ex2", "user")
            and p.get("kind") in ("loop", "fit")
            and not any(k in p for k in catalogue.grouped("fit"))  # not a fix's fit
            and p.get("data") != "tfdata_noprefetch"
        )
    )


# Records written before RunRecord.no_gpu_reasons carry the reasons only in their note
# (measure/experiment.no_gpu_note: "... Likely reasons: a; b."): read once, here.
_LEGACY_REASONS = "Likely reasons: "


def no_gpu_reasons(record: RunRecord) -> list[str]:
    """Why the frameworks saw no GPU, each reason once, the one that decides first
    (frameworks/common/nvidia.no_gpu_order: a record from before that order, or with several
    frameworks' reasons, reads the same): the record's field, or for a record written before it
    the discovery's reasons as its note lists them."""
    reasons = [r for rs in record.no_gpu_reasons.values() for r in rs]
    if not reasons:
        for note in record.notes:
            if "sees no GPU" in note and _LEGACY_REASONS in note:
                reasons += note.split(_LEGACY_REASONS, 1)[1].rstrip(".").split("; ")
    return nvidia.no_gpu_order(reasons)


def suite_verdict(record: RunRecord, *, seed_batch: int = 10) -> SuiteVerdict:
    mm = _subset(record, "matmul")
    train = _subset(record, "train")
    # the whole record: every claim is widened by the run's one between-process spread
    pipelines = analyze_pipeline(record) if any(r.spec.workload == "pipeline" for r in record.results) else []
    matmul_tables = analyze_sweep(mm, "n", work_metric="flops_per_call")
    training = analyze_training(train)
    ran = {r.spec.framework for r in record.results}
    only = next(iter(ran)) if len(ran) == 1 else None  # a table of several frameworks' run names its own
    findings = [
        SweepFinding("matmul", t.group, f, str(t.group.get("framework") or only or "") or None)
        for t in matmul_tables
        for f in sweep_findings(t, "n")
    ]
    findings += [
        SweepFinding("training", t.group, f, str(t.group.get("framework") or only or "") or None)
        for t in training.sweep
        for f in sweep_findings(t, _BATCH)
    ]
    fixes = [_fix_verdict(record, e, seed_batch, pipelines) for e in catalogue.FIXES if _applies(record, e)]
    gpus = sorted(
        {d for d in training.devices if d.startswith("GPU")}
        | {d for t in matmul_tables for d in t.devices if d.startswith("GPU")}
    )
    steps = script_steps(record)
    named = [replace(c, larger=batch_gain_of(c)) for c in causes(fixes, pipelines, training, steps)]
    predicted = gpu_prediction(record) if not gpus else (None, None)
    return SuiteVerdict(
        findings,
        fixes,
        named,
        matmul_tables,
        training,
        pipelines,
        gpus,
        seed_batch,
        answer_cases(record),
        no_gpu_reasons(record),
        measurement_warnings(record),
        *predicted,
        quiet=[] if named else [quiet_step(st) for st in steps],
        gpu_reads=reads_on_a_gpu(steps),
        remeasured=remeasured(record, _cases_behind(record, gpus, predicted[0])),
        skipped=skip_reasons(record),
        busy=busy_load(record, predicted=_predicted(*predicted)),
    )


def _predicted(report: PredictReport | None, profile: DeviceProfile | None) -> bool:
    """Whether a GPU was predicted from the record's CPU steps (a GPU profile to predict on, the
    model could predict it, and enough batches were measured to decide)."""
    if report is None or profile is None or profile.gpu is None or report.cannot_predict:
        return False
    return report.decision.kind != "none"


def batch_gain_of(c: Cause) -> BatchGain | None:
    """A script's fixed cost's larger batch against its own: the batch sweep's (its rounds' fastest
    tenths), or where the batch change's pair measured the cause (it helps), that pair's claim."""
    if c.kind != "fixed_cost":
        return None
    if c.step is not None:
        return c.step.larger
    f = c.fix
    if f is None or f.kind != catalogue.BATCH.key or "script" not in f.where:
        return None
    return BatchGain(int(str(f.baseline)), int(str(f.variant)), f.claim, 0, f.where.get("rebatch") == "step")


def _cases_behind(record: RunRecord, gpus: list[str], report: PredictReport | None) -> list[CaseResult]:
    """The measured cases the answer rests on: without a GPU, the CPU steps its prediction
    (``report``) read (none when there is no prediction: the answer then decides nothing); else
    the cases that decide it (:func:`answer_cases`)."""
    if gpus:
        return answer_cases(record)
    if report is None:
        return []
    if record.options.get("script"):  # a script's prediction reads its own step at each batch measured
        return [
            r for r in record.results if params_of(r.spec).get("kind") == "steady" and "fix" not in params_of(r.spec)
        ]
    return prediction.run_sweep(record)


def remeasured(record: RunRecord, behind: list[CaseResult]) -> Remeasured | None:
    """How far the rounds after the provisional answer measured the cases ``behind`` it again
    (None: no provisional answer). A case that did not run to the end is not counted as measured."""
    p = record.provisional
    if p is None:
        return None
    measured = [r.timing for r in behind if r.status == "ok" and r.timing is not None]
    return Remeasured(
        len(behind),
        len(measured),
        sum(len(t.rounds) >= p.rounds for t in measured),
        all(len(t.samples_s) * p.rounds < MIN_SAMPLES for t in measured),
    )


def reads_on_a_gpu(steps: list[ScriptStep]) -> list[ScriptStep]:
    """The CPU steps that read to the host every step at less than a cause's share, where no GPU
    step was measured (a GPU step's reads are timed there, sync included)."""
    if any(not st.on_cpu for st in steps):
        return []
    return [st for st in steps if st.reads_every_step and not st.read_bound]


def gpu_prediction(record: RunRecord) -> tuple[PredictReport | None, DeviceProfile | None]:
    """A run's prediction of the reference GPU (analysis/prediction.run_prediction) and the
    profile it is from; (None, None) when the record traced no ops to predict from. A
    script's diagnose predicts from the step its pre-flight traced (analysis/scriptpredict.py)."""
    if record.step_trace is not None:
        profile = deviceprofile.load(prediction.RUN_PROFILE)
        errors = errormodel.shipped(prediction.RUN_ERRORS)
        return scriptpredict.script_prediction(record, profile, errors), profile
    if not any(prediction.is_trace(r.spec) for r in record.results):
        return None, None
    profile = deviceprofile.load(prediction.RUN_PROFILE)
    return prediction.run_prediction(record, profile, errormodel.shipped(prediction.RUN_ERRORS)), profile
