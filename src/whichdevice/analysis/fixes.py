"""Recommendations proven by measurement: A/B pairs of the same workload with one setting
changed, compared with their spread, and the typed results analysis returns for them.

The catalogue of fixes (what each changes, its title, code line, caveat, source, repeat flag)
is ``workloads/fixes.py`` (re-exported here as :data:`FIXES`): ``measure`` reads it too, and
the layers contract lets ``measure`` import ``workloads`` but not ``analysis``.

A "fix" is a parameter of a case (``steps_per_execution``, ``jit_compile``, ``batch``,
``data``, ``sync`` ...). Two ok results form a pair when their specs are equal except for
that one parameter; the speedup is per *sample* (``samples_per_step`` metric when the
batch changes), so a larger batch is credited with the throughput it buys, not the
longer step it takes.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from whichdevice.analysis.compare import Comparison, compare, process_sd
from whichdevice.analysis.significance import (
    MIN_ROUNDS_NO_CHANGE,
    MIN_ROUNDS_RANK,
    Claim,
    ClaimNote,
    process_spread,
    rounds_bimodal,
)
from whichdevice.analysis.warmup import BreakEven
from whichdevice.core.records import OWN_PROCESS, CaseResult, RunRecord, Timing
from whichdevice.workloads.fixes import BY_KEY, CPU_THREADS, FIXES, JIT_COMPILE, FixEntry, entry
from whichdevice.workloads.fixes import params_of

__all__ = ["BY_KEY", "FIXES", "FixEntry", "entry"]  # the catalogue, re-exported for analysis and present

# What a measured change did, by significance.py's rule: a gain, a significant loss, no change
# beyond the noise, or no claim at all (too few samples, or no pair measured).
Outcome = Literal["helps", "slower", "no_change", "not_measured"]
# Why a fix has no measurement, read from the record (never guessed): the suite does not
# schedule it, the time budget skipped its cases, they failed, fewer than 5 samples, the only
# pair was not formed (one side missing), the framework's default already applies it, or it
# is measured on a GPU only and none was here (FixEntry.gpu_only).
# A fix that is a larger value (FixEntry.larger) with only smaller values measured: none_larger; a fix the torch
# diagnose plan left out to keep the budget: cut. A larger batch for a script whose batches diagnose cannot
# change (it re-batches a torch DataLoader, or the arrays or tf.data given to Keras' fit): fixed_batch.
# A pair whose processes disagree by as much as its change (:func:`processes_disagree`): contended.
# A script's variant whose turn in the shared process its loop never reached (its data ran out): script_ended.
NotMeasuredReason = Literal[
    "not_in_suite",
    "skipped",
    "failed",
    "too_few_samples",
    "no_pair",
    "default",
    "no_gpu",
    "none_larger",
    "cut",
    "fixed_batch",
    "not_applicable",
    "contended",
    "script_ended",
]


@dataclass(frozen=True)
class FixResult:
    fix: str  # the parameter changed
    device: str
    baseline_value: object
    variant_value: object
    context: dict[str, Any]  # the parameters both cases share
    comparison: Comparison  # baseline vs variant, per sample: ratio > 1 means the fix helps
    framework: str = ""  # the framework both cases ran in

    @property
    def speedup(self) -> float:
        return self.comparison.ratio


def per_sample(r: CaseResult) -> Timing:
    """The timing scaled to seconds per sample (when the case says how many per step)."""
    n = r.metrics.get("samples_per_step")
    t = r.timing
    if t is None:
        raise ValueError(f"{r.spec.key}: a failed case has no timing to scale")
    if not n or n == 1:
        return t
    scale = 1.0 / n
    return Timing(
        first_call_s=t.first_call_s * scale,
        warmup_s=[w * scale for w in t.warmup_s],
        samples_s=[s * scale for s in t.samples_s],
        number_per_sample=t.number_per_sample,
        overhead_s=t.overhead_s * scale,
        rounds_s=[[s * scale for s in r] for r in t.rounds_s] if t.rounds_s else None,
    )


def ab_fixes(record: RunRecord, fix: str, baseline_value: object) -> list[FixResult]:
    """Every pair (baseline, variant) that differs only in ``fix``."""
    ok = [r for r in record.results if r.status == "ok" and fix in params_of(r.spec)]
    out = []
    spread = process_sd(record)  # every claim no surer than two processes agree

    def rest(r: CaseResult) -> tuple[object, ...]:
        return (
            r.spec.workload,
            r.spec.framework,
            r.spec.device,
            tuple(sorted((k, v) for k, v in params_of(r.spec).items() if k != fix and k != OWN_PROCESS)),
        )

    for base in ok:
        if params_of(base.spec)[fix] != baseline_value:
            continue
        for var in ok:
            if var is base or params_of(var.spec)[fix] == baseline_value or rest(var) != rest(base):
                continue
            comp = compare("before", per_sample(base), "after", per_sample(var), process_sd=spread)
            if base.timing is not None and var.timing is not None:
                untold = processes_disagree(comp.claim, base.timing, var.timing, own_draws=own_draws(base, var))
                comp = dataclasses.replace(comp, claim=untold)
            ctx = {k: v for k, v in params_of(base.spec).items() if k != fix}
            if len({r.spec.framework for r in ok}) > 1:  # name it when frameworks sit side by side
                ctx = {"framework": base.spec.framework, **ctx}
            out.append(
                FixResult(
                    fix, base.spec.device, baseline_value, params_of(var.spec)[fix], ctx, comp, base.spec.framework
                )
            )
    return out


def processes_disagree(claim: Claim, before: Timing, after: Timing, *, own_draws: bool = True) -> Claim:
    """No claim where a side's processes fell in two modes (each tight on its own, far apart:
    threads contending for busy cores put a whole process in the slow mode or the fast one):

    - from fewer than ``MIN_ROUNDS_NO_CHANGE`` (3) rounds, whatever the change, where each side's
      mode was its own draw (``own_draws``: a script's cases, each its own run of the script):
      two processes a side, one in each mode, decide nothing (a batch pair read 5.8x in one run,
      8.2x in the next and "not enough" in a third, its baseline's steps 60 ms in one process, 8 ms
      in another). Where one process measured both sides of each round (a suite's measuring
      child: ``own_draws`` False), a process's mode is both sides' and the round's ratio holds it
      out, so the rule below applies from 2 rounds too;
    - while the rounds are too few for the distribution-free interval
      (``significance.MIN_ROUNDS_RANK``), where the modes lie as far apart as the change is large:
      the change's near end of its interval within the gap between the modes could be one side
      landing in the slow mode and the other in the fast one, so a second run of the same
      command may claim the opposite. From ``MIN_ROUNDS_RANK`` rounds on, the interval itself
      holds whatever the modes (significance.median_interval) and the claim stands as judged.

    The claim becomes not enough with the per-step modes (``before``/``after``: the cases' own
    timings, not per sample).

    A claim (a change or none) from one process a side (its samples, no rounds) where each side's mode is its
    own draw is not enough either: one process lands in one mode of a contended machine, so a
    second run of the same command may land in the other (the corpus's torch_cnn.py: "one CPU
    thread 3.8× faster (10 samples)" in one run, "not enough samples" in the next two, at load
    2.8-3.5). pyperf spreads its samples over processes for this reason."""
    if own_draws and claim.unit == "samples" and claim.enough:
        return dataclasses.replace(claim, status="not_enough", note=ClaimNote("one_process"))
    if claim.unit != "rounds" or not claim.enough or claim.n >= MIN_ROUNDS_RANK:
        return claim
    change = claim.lo if claim.ratio > 1 else 1.0 / claim.hi
    for t in (before, after):
        modes = rounds_bimodal(t.rounds)
        if modes is None or modes.low <= 0:
            continue
        if (own_draws and claim.n < MIN_ROUNDS_NO_CHANGE) or (claim.significant and change <= modes.high / modes.low):
            return dataclasses.replace(claim, status="not_enough", note=ClaimNote("disagree", modes=modes))
    return claim


def undecided(results: list[CaseResult]) -> set[str]:
    """The keys of the cases whose fix pairs a further round could still decide: both sides of
    every A/B pair (two ok cases differing in one catalogue fix's parameter alone, one side at its
    baseline: the entry's, or the user's batch) whose claim, judged as the report judges it
    (per sample, the cases' between-process spread, :func:`processes_disagree`), is

    - not enough (too few rounds, too wide, its processes disagree), or
    - no clear change with an interval that reaches beyond the noise band (it straddles the
      threshold: another round may put it on one side), or
    - a change whose rounds fell in two modes.

    A change whose whole interval lies beyond the band, or a no-change wholly inside it, is
    decided: its cases need no further round. pyperf spreads its samples over many processes for
    the same reason: one process lands in one mode of a contended machine, and only more of them
    show how often."""
    ok = [r for r in results if r.status == "ok" and r.timing is not None and r.spec.workload == "train"]
    spread = process_spread([r.timing.rounds for r in ok if r.timing is not None])
    contended = contention_seen(ok)
    out: set[str] = set()
    for e in FIXES:
        if e.method not in ("ab", "grid") or not e.param:
            continue
        has = [r for r in ok if e.param in params_of(r.spec)]
        for base in has:
            if not _baseline_of(e, params_of(base.spec)):
                continue
            for var in has:
                if (
                    var is base
                    or params_of(var.spec)[e.param] == params_of(base.spec)[e.param]
                    or not _one_apart(base, var, e.param)
                ):
                    continue
                claim = _pair_claim(base, var, spread)
                if not _decided(claim) or (contended and claim.unit == "rounds" and claim.n < MIN_ROUNDS_RANK):
                    out |= {base.spec.key, var.spec.key}
    return out


# How much faster one thread must run a step than the default's threads, in the same round, to show
# threads contending for busy cores: arithmetic split over two threads is at most about twice as fast
# as on one, never several times slower, so a one-thread step 3x faster is time spent waiting for a core.
CONTENTION_FACTOR = 3.0


def contention_seen(results: list[CaseResult]) -> bool:
    """Whether the rounds so far show threads contending for busy cores: a case's rounds in two
    modes ``CONTENTION_FACTOR`` or more apart (:func:`significance.rounds_bimodal`), or a one-thread
    step that many times faster than its default-thread pair's in some round. Then a process's mode
    can hold for all its steps, and for every case in it (a script's turns share the process): two
    rounds that both landed in the slow mode claim a change that another run, meeting the fast mode
    too, does not see (the one-thread pair of one script read 94x from 2 rounds in one run and
    "too wide" from 4 in another, at load 10 on 2 cores). :func:`undecided` then gives every pair
    further rounds, within the budget, up to the distribution-free interval's ``MIN_ROUNDS_RANK``,
    which holds across the modes."""
    for r in results:
        modes = rounds_bimodal(r.timing.rounds) if r.timing is not None else None
        if modes is not None and modes.low > 0 and modes.high >= CONTENTION_FACTOR * modes.low:
            return True
    param = CPU_THREADS.param
    threaded = [r for r in results if r.timing is not None and param in params_of(r.spec)]
    for one in threaded:
        if params_of(one.spec)[param] != 1:
            continue
        for default in threaded:
            if params_of(default.spec)[param] != CPU_THREADS.baseline or not _one_apart(one, default, param):
                continue
            assert one.timing is not None and default.timing is not None  # the filter above
            for a, b in zip(one.timing.rounds, default.timing.rounds):
                if a and b and statistics.median(b) >= CONTENTION_FACTOR * statistics.median(a):
                    return True
    return False


def _baseline_of(e: FixEntry, params: dict[str, Any]) -> bool:
    """Whether a case is at ``e``'s baseline: the entry's value, or (a batch) the user's own."""
    value = params[e.param]
    if e.baseline is not None:
        return bool(value == e.baseline)
    return "user_batch" in params and value == params["user_batch"]


def _one_apart(a: CaseResult, b: CaseResult, param: str) -> bool:
    sa, sb = a.spec, b.spec
    rest_a = {k: v for k, v in params_of(sa).items() if k != param}
    rest_b = {k: v for k, v in params_of(sb).items() if k != param}
    return (sa.workload, sa.framework, sa.device) == (sb.workload, sb.framework, sb.device) and rest_a == rest_b


def _pair_claim(base: CaseResult, var: CaseResult, spread: float | None) -> Claim:
    claim = compare("before", per_sample(base), "after", per_sample(var), process_sd=spread).claim
    assert base.timing is not None and var.timing is not None  # ok cases (undecided's filter)
    return processes_disagree(claim, base.timing, var.timing, own_draws=own_draws(base, var))


def own_draws(*cases: CaseResult) -> bool:
    """Whether each case's mode on a contended machine was its own draw: a script's cases (each
    side its own run of the script, or its own turns in a shared one while its threads contend),
    not a suite's, whose measuring child times every case of a round in one process."""
    return any("script" in params_of(c.spec) for c in cases)


def _decided(claim: Claim) -> bool:
    """A claim another round would not change: a change wholly beyond the noise band from rounds in
    one mode (or from enough rounds for the distribution-free interval, which holds across modes),
    or no clear change wholly inside the band."""
    modes = claim.note is not None and claim.note.kind in ("bimodal", "disagree") and claim.n < MIN_ROUNDS_RANK
    if claim.significant:
        return not modes
    band = 1.0 / (1.0 + claim.threshold) <= claim.lo and claim.hi <= 1.0 + claim.threshold
    return claim.status == "no_change" and band


def jit_by_default(record: RunRecord, device: str, framework: str | None = None) -> bool:
    """Whether the framework's own ``jit_compile`` default ("auto") already compiled with XLA on
    ``device``: a fit case that does not set jit_compile recorded what it resolved to (Keras/JAX:
    yes; TensorFlow on a CPU: no). Then jit_compile=True is no change for the user."""
    return any(
        r.status == "ok"
        and r.spec.device == device
        and (framework is None or r.spec.framework == framework)
        and params_of(r.spec).get("kind") == "fit"
        and JIT_COMPILE.param not in params_of(r.spec)
        and r.metrics.get(JIT_COMPILE.default_metric) == 1.0
        for r in record.results
    )


def outcome(claim: Claim) -> Outcome:
    """A claim's outcome for a fix (ratio > 1: the fix is faster)."""
    if not claim.enough:
        return "not_measured"
    if not claim.significant:
        return "no_change"
    return "helps" if claim.ratio > 1 else "slower"


@dataclass(frozen=True)
class Fix:
    """One measured change: a catalogue fix's baseline against its variant on one workload."""

    kind: str  # the catalogue key (workloads/fixes.py)
    device: str
    framework: str  # the framework both sides ran in
    baseline: object  # the parameter's value before ...
    variant: object  # ... and after
    claim: Claim  # per sample, baseline / variant: > 1 means the fix is faster
    where: dict[str, Any]  # the parameters both cases share: the workload, for present/names.workload_name
    workload: str = "train"  # "pipeline": the image input pipeline
    part: str = ""  # pipeline: "both" (per training step) or "pipeline" (the pipeline alone, per batch)

    @property
    def outcome(self) -> Outcome:
        return outcome(self.claim)

    @property
    def entry(self) -> FixEntry:
        return entry(self.kind)

    @property
    def recommended(self) -> bool:
        """Whether baseline -> variant is the change the catalogue recommends (:func:`towards`)."""
        return towards(self.entry, self.variant, self.baseline)


@dataclass(frozen=True)
class GridResult:
    """A setting tried at several values against one baseline, on one device and framework."""

    device: str
    framework: str
    baseline: object
    cells: list[Fix]  # by value
    pick: Fix | None  # the recommended value (analysis/suite.grid_pick), None when none helps
    best: Fix | None  # the largest significant gain
    skipped: list[object] = field(default_factory=list)  # values of the grid the time budget skipped
    failed: list[object] = field(default_factory=list)  # values of the grid whose cases failed

    @property
    def largest(self) -> object:
        """The largest value measured (the grid's edge when values above it were not)."""
        return self.cells[-1].variant

    @property
    def cut(self) -> bool:
        """Whether values above the largest measured one were not measured (skipped or failed)."""
        top = self.largest
        return any(_above(v, top) for v in [*self.skipped, *self.failed])

    @property
    def best_at_cut_edge(self) -> bool:
        """Whether the best gain is at the largest value measured of a grid cut above it: then
        it is only the edge of what was measured, not the best of the grid."""
        return self.cut and self.best is not None and self.best.variant == self.largest

    @property
    def pick_share(self) -> float | None:
        """The recommended value's gain as a share of the best gain (at least GOOD_ENOUGH)."""
        if self.pick is None or self.best is None:
            return None
        return self.pick.claim.ratio / self.best.claim.ratio

    @property
    def thin(self) -> list[Fix]:
        """Values left out for too few samples."""
        return [f for f in self.cells if not f.claim.enough]


def towards(e: FixEntry, variant: object, baseline: object) -> bool:
    """Whether ``baseline`` -> ``variant`` is the change ``e`` recommends: any value, or for a
    fix that is a larger value (``FixEntry.larger``) only one above the baseline."""
    return not e.larger or _above(variant, baseline)


def _above(value: object, top: object) -> bool:
    try:
        return float(value) > float(top)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class NotMeasured:
    reason: NotMeasuredReason
    elsewhere: str = ""  # the command that measures it (not_in_suite)
    failures: list[str] = field(default_factory=list)  # failed: the failure kinds
    n: int = 0  # too_few_samples: the most samples (or rounds) a pair had; script_ended: the loop's steps
    unit: str = "samples"  # too_few_samples: what n counts ("rounds": too few rounds to tell)
    needed: int = 0  # too_few_samples: how many a claim needs
    wide: bool = False  # too_few_samples: enough of them, but their interval too wide to tell a 2x change
    one_process: bool = False  # too_few_samples: enough samples, but one process a side (one round)
    devices: list[str] = field(default_factory=list)  # default: where the framework already does it
    default: str = ""  # default: what the framework's default does there (FixEntry.default_words)
    param: str = ""  # none_larger: the parameter ...
    above: object = None  # ... and the baseline value nothing above which was measured
    rebatches: str = ""  # fixed_batch: what diagnose re-batches for the framework ("DataLoader"; "": fit's data)
    budget: int = 0  # cut: the --budget whose plan holds every fix (a script's plan), 0: not known
    # contended: the pair whose processes disagreed (its claim's note holds the per-step modes), and the
    # record's own CPU thread-count pair where it has one: the measured alternative to contending threads
    untold: Claim | None = None
    threads: Fix | None = None
    # contended: the threads each of the pair's processes computed with and the cores they shared
    # (the session's), which say whether its own threads could contend (more than one) or not
    threads_used: int = 0
    cores: int = 0


@dataclass(frozen=True)
class PlacementCheck:
    check: ClassVar[Literal["placement"]] = "placement"  # which check (FixVerdict.checks holds three)
    device: str
    cpu_ops: list[str]  # a GPU run: op types that ran on the CPU in the GPU step
    fallbacks: list[str]  # a CPU run: op types with no GPU kernel in this build
    copies: int  # copies between devices per step


@dataclass(frozen=True)
class CompileCost:
    """torch.compile's compile on one device: a measured one-time cost, with the step count after
    which the compiled run's total is the lower (analysis/warmup.break_even: the eager run as the
    baseline, the compile as the extra warm-up). ``finished`` False: compiling was stopped at its
    bound ``compile_s`` (a lower bound), and ``min_steps`` the fewest steps it could pay back in
    even if it made every step free (bound / the eager step)."""

    check: ClassVar[Literal["compile"]] = "compile"
    device: str
    compile_s: float
    finished: bool
    eager_step_s: float | None
    break_even: BreakEven | None = None  # finished: from the pair's steady steps
    min_steps: float | None = None  # not finished: a lower bound on the break-even


@dataclass(frozen=True)
class WarmupCheck:
    check: ClassVar[Literal["warmup"]] = "warmup"
    device: str
    first_s: float  # the first step
    steady_s: float  # the steady step's median

    @property
    def ratio(self) -> float:
        return self.first_s / self.steady_s
