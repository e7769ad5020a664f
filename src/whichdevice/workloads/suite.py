"""The default suite behind ``whichdevice run``: every seed's experiment, small enough for a
time budget, plus the A/B runs that prove (or disprove) each automatic fix.

All cases of one device run in one child (one framework import per device), in priority
order: when the budget runs out, the child records the rest as skipped — the seed cases
and the crossovers come first, the fixes after them, the large seed-002/ex3 runs last.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from whichdevice import frameworks
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import parse_positive_float
from whichdevice.core.units import seconds
from whichdevice.core.records import CaseSpec
from whichdevice.workloads import fixes
from whichdevice.workloads import matmul as matmul_workload
from whichdevice.workloads.defaults import DEFAULT_BUDGET_S  # noqa: F401  (the suite's, stated by --help)

MIN_BUDGET_S = 20.0  # below this not even the framework import and one experiment fit


def parse_budget(text: str | None, argument: str = "--budget") -> float:
    """``--budget`` (CLI) / ``budget_s`` (API): seconds per device, at least MIN_BUDGET_S."""
    budget_s = parse_positive_float(text, argument, "90") or DEFAULT_BUDGET_S
    if budget_s < MIN_BUDGET_S:
        raise UsageError(
            argument,
            f"{budget_s:g} s is too short to measure anything",
            f"Pass at least {MIN_BUDGET_S:g} seconds, e.g. {argument} 90.",
        )
    return budget_s


# Matmul sizes: seed 000's list, cut where a 2-core CPU needs more than ~0.1 s a call.
CPU_ONLY_SIZES = (1, 10, 100, 500, 1000)
GPU_SIZES = (1, 10, 100, 500, 1000, 2000, 4000)
# Batch sweep: powers of 4 plus the seed's batch 10 (so the batch fix has its baseline).
SWEEP_BATCHES = (8, 10, 32, 128, 512, 2048, 8192)
SEED_BATCH = 10  # seed 001 ex2
# Without a GPU, `run` traces the sweep's step at these batches (a trace costs 1-3 s on 2 cores),
# and predicts the reference GPU's step from them (analysis/prediction.run_prediction).
TRACED_BATCHES = (8, 8192)
# Seed 003's pipeline rungs the suite measures: serial map (the seed's first example), the
# prefetched parallel pipeline, and the same work in Python (tf.py_function).
PIPELINE_VARIANTS = ("serial", "prefetch", "pyfunc")
# The fixes measured as fits of ex2 (the catalogue's Keras entries timed in fit groups), each
# case naming only the setting it varies, as (param, value) pairs: the baseline then each value
# (steps_per_execution 1, 5, 20 at the framework's own jit_compile default, "auto": no XLA for
# TensorFlow on a CPU, XLA for Keras/JAX; jit_compile False against True). Timed interleaved epoch
# by epoch (workloads.interleave_groups) over FIX_EPOCHS epochs (the first warms up: tracing, XLA;
# the two others are steady, one in each half A B C D E | E D C B A). A grid's recommendation is
# the smallest value that reaches 90 % of the best (analysis/suite.py).
FIT_FIXES = fixes.for_framework("keras", "fit")
FIX_FITS = tuple((e.param, v) for e in FIT_FIXES for v in (e.baseline, *e.values))
# The grid among them whose values are steps per call (steps_per_execution 5 and 20; 100, one call
# per epoch, gave one sample per steady epoch: never a claim, so not measured): the diagnose plan
# tries a value when an epoch gives it at least 3 calls.
_PER_CALL = next(e for e in FIT_FIXES if e.method == "grid")
FIX_STEPS_PER_EXECUTION: tuple[int, ...] = tuple(int(v) for v in _PER_CALL.values)  # type: ignore[call-overload]
# The A/B of a loop with and without prefetch (the catalogue's entry that varies the loop's data).
_PREFETCH = next(e for e in fixes.FIXES if e.param == "data")
FIX_EPOCHS = 3


def _train(framework: str, device: str, **params) -> CaseSpec:
    return CaseSpec(workload="train", framework=framework, device=device, params=params)


def suite_cases(framework: str, device: str, *, gpu_present: bool) -> list[CaseSpec]:
    cases: list[CaseSpec] = []
    t = lambda **p: cases.append(_train(framework, device, **p))  # noqa: E731
    # 1. Seed 001 ex1 first: its first call carries the device's start-up.
    for op in ("create", "clone"):
        t(kind="create", model="seed001", example="ex1", op=op)
    # 2. Seed 000: matmul crossover.
    sizes = GPU_SIZES if gpu_present else CPU_ONLY_SIZES
    cases += matmul_workload.build_cases(framework, device, sizes, ["steady", "seed"], "float32")
    # 3. Seed 001 ex2 as written (custom loop, .numpy() each step) and through model.fit.
    ex2 = dict(model="seed001", example="ex2", samples=1000, batch=SEED_BATCH)
    t(kind="loop", data="numpy", epochs=1, **ex2)
    t(kind="fit", data="numpy", epochs=2, **ex2)
    # 4. Batch sweep (steady steps, no sync) and the cost of syncing every step at the seed's batch.
    for b in SWEEP_BATCHES:
        t(kind="steady", model="seed001", batch=b, sync="none")
    if not gpu_present:  # would a GPU help? its step is predicted from these traces of the sweep's
        from whichdevice.workloads import calibrate as calibrate_workload

        cases += calibrate_workload.describe_cases(framework, device, {"model": "seed001"}, TRACED_BATCHES)
    t(kind="steady", model="seed001", batch=SEED_BATCH, sync="each")
    # 4b. Seed 003's input pipeline (tf.data: for the catalogue's pipeline fixes of this framework), quick size: is the step waiting
    #     for input, what prefetch buys, and Python-side preprocessing vs the same work in TF ops.
    if any(e.pipeline for e in fixes.FIXES if e.framework == framework):
        from whichdevice.workloads import pipeline as pipeline_workload

        cases += pipeline_workload.build_cases(
            framework,
            device,
            images=pipeline_workload.QUICK_IMAGES,
            size=pipeline_workload.QUICK_SIZE,
            batch=32,
            net="tiny",
            variants=PIPELINE_VARIANTS,
            stages=False,
        )
    # 4c. Placement (recommendation 4): which ops of seed 001's step ran where, the copies, and
    #     (with a string op that has no GPU kernel) the fallback path: a framework with a placement log.
    if "placement_log" in frameworks.PARTS[framework]:
        from whichdevice.workloads import placement as placement_workload

        t(kind="placement", model="seed001", batch=32, steps=placement_workload.QUICK_STEPS, string_op=True)
    # 5. Fixes on ex2's fit: steps_per_execution and XLA, each against an explicit baseline.
    for name, value in FIX_FITS:
        t(kind="fit", data="numpy", epochs=FIX_EPOCHS, **{name: value}, **ex2)
    # 6. Seed 001 ex3's tf.data loop with and without prefetch (10 000 of its 100 000 samples).
    for data in ("tfdata", "tfdata_noprefetch"):
        t(kind="loop", model="seed001", example="ex3", samples=10_000, batch=32, data=data, epochs=1)
    # 7. Seed 002: model.fit, batch 512, shuffle + prefetch.
    t(kind="fit", model="seed002", example="seed002", samples=10_000, batch=512, data="tfdata_shuffle", epochs=3)
    # 8. Mixed precision A/B (recommendation 9): seed 002's fit in float32 and mixed_float16, reduced size.
    from whichdevice.workloads import precision_cases

    cases += precision_cases.cases(
        framework, device, ["mixed_float16"], user=None, quick=True, samples=None, user_batch=32
    )
    # Cases that do not apply to this framework are left out (the record's notes say so).
    return [c for c in cases if c.workload != "train" or frameworks.unsupported(framework, c.params) is None]


# `diagnose`: the user's model instead of the seeds'.
USER_SWEEP_BATCHES = (8, 32, 128, 512, 2048)
# Sizing the user's cases from the pre-flight's measured step. Round 1 of a device
# is planned to ROUND1_SHARE of what its budget leaves after the framework's start-up (the
# pre-flight child's own import time, at least START_UP_MIN_S), so the second round of the
# deciding cases fits in the rest and the wall time stays within the budget. Each case's cost
# is estimated from the pre-flight's facts (building the model, tracing the step and fit's
# train function, a steady step): every member of a case builds and traces its own model.
ROUND1_SHARE = 0.45
ROUND1_ONLY_SHARE = 0.85  # when one round is all that fits
START_UP_MIN_S = 5.0
SWEEP_SHARE = 0.35  # of round 1: the sweep's other batches (the user's batch is always measured)
STEADY_CALLS = 9  # a steady point: its first call, a warm-up call, ~6 samples, a margin
STEADY_MIN_S = 0.3  # a fast point samples to its time cap (0.25 s) anyway
POINT_SAMPLES = 6  # a point's sampling cap is set so a slow step still gets this many samples
FIT_OVERHEAD = 1.2  # a fit step against the custom step (callbacks, StepTimer's sync)
MIN_EPOCH_STEPS = 6  # the loop's first step apart, 5 steady samples
XLA_TRACE_FACTOR = 8.0  # jit_compile=True's first epoch against a plain fit trace (XLA compiles it)
# A later case's first call against the pre-flight's (the first in its process): 0.75-1.0 measured
# on the loaded 2-core VM (a conv1d model 1.53-1.75 s against 2.04 s, an MLP 0.54-0.60 s against 0.58 s).
LATER_TRACE = 0.85
CLONE_SHARE = 0.1  # clone_model is timed when its 5+ calls take at most this share of round 1


def _ms(x: float) -> str:
    return seconds(x, smallest="ms")


@dataclass(frozen=True)
class _Costs:
    """The pre-flight's facts as the cost model of the plan (:func:`size_user_cases`)."""

    batch: int
    step: float
    first_s: float  # as measured, for the messages
    fit_first_s: float
    trace: float  # a case's own tracing, after the pre-flight's first in its process paid one-time costs
    fit_trace: float
    build: float
    start_up: float

    @classmethod
    def of(cls, facts: dict, batch: int) -> _Costs:
        step = max(float(facts.get("step_s") or 0.0), 1e-5)
        first_s = max(float(facts.get("first_step_s") or 0.0), step)
        fit_first_s = max(float(facts.get("fit_first_s") or 0.0), 2 * step)
        return cls(
            batch=batch,
            step=step,
            first_s=first_s,
            fit_first_s=fit_first_s,
            trace=LATER_TRACE * (first_s - step),
            fit_trace=LATER_TRACE * (fit_first_s - 2 * step),
            build=float(facts.get("build_s") or 0.0),
            start_up=max(START_UP_MIN_S, float(facts.get("import_s") or 0.0)),
        )

    def t(self, k: int) -> float:
        """A step at batch ``k``."""
        return self.step * max(1.0, k / self.batch)

    def steady(self, k: int) -> float:
        """A steady point at batch ``k``: building, tracing, its calls."""
        return self.build + self.trace + max(STEADY_CALLS * self.t(k), STEADY_MIN_S)

    def epoch_s(self, steps: int) -> float:
        return steps * self.step

    def create_s(self) -> float:
        """The creation case (and clone_model's): its calls, each building the model."""
        return max(STEADY_CALLS * self.build, STEADY_MIN_S)


@dataclass
class _Plan:
    """The plan as it is filled, case group by case group, in priority order."""

    plan_s: float  # round 1's share of the budget
    used: float  # what the cases planned so far take
    rounds: int = 2
    with_sync: bool = True
    cut: list[str] = field(default_factory=list)  # left out for the budget: one line each
    unable: list[str] = field(default_factory=list)  # left out for another reason than the budget

    def fits(self, cost: float) -> bool:
        """Whether ``cost`` fits what round 1 has left; if it does, it is planned."""
        if self.used + cost <= self.plan_s:
            self.used += cost
            return True
        return False


def _essentials(c: _Costs, budget_s: float) -> _Plan:
    """1. Always: create, the user's batch (sync none and each), the loop and the fit. Two
    rounds (a second process for the deciding cases) when round 1's essentials fit its share;
    else one round (:func:`one_round`)."""
    n = MIN_EPOCH_STEPS
    used = c.create_s() + 2 * c.steady(c.batch)
    used += c.build + c.trace + c.epoch_s(n) + c.build + c.fit_trace + 2 * FIT_OVERHEAD * c.epoch_s(n)
    plan = _Plan(plan_s=ROUND1_SHARE * max(budget_s - c.start_up, 0.5 * budget_s), used=used)
    if plan.used > plan.plan_s:
        essentials = f"creating it, a steady step, the loop and one fit at batch {c.batch}"
        costs = f"a step's first call took {_ms(c.first_s)}, fit's first epoch {_ms(c.fit_first_s)}"
        took = f"{_ms(c.step)} and its first call {_ms(c.first_s)}"
        one_round(c, plan, budget_s, c.steady(c.batch), essentials, costs, took)
    return plan


def one_round(c: Any, plan: Any, budget_s: float, sync_s: float, essentials: str, costs: str, took: str) -> None:
    """Round 1's essentials do not fit its share: one round, given the whole budget, said in
    the cuts (without the sync cost ``sync_s`` if need be); a UsageError when not even that fits,
    naming the ``essentials`` and what they cost here (``costs``). ``took``: what a step at the
    user's batch took, in the cut's line (also ``diagnose --framework torch``'s)."""
    plan.rounds = 1
    avail = max(budget_s - c.start_up, 0.5 * budget_s)
    plan.plan_s = ROUND1_ONLY_SHARE * avail
    if plan.used > avail:  # the sync cost (the loss read every step) is the essential a verdict needs least
        plan.used -= sync_s
        plan.with_sync = False
        plan.cut.append("the cost of reading the loss every step not measured")
    if plan.used > avail:
        need = math.ceil((plan.used / ROUND1_ONLY_SHARE + c.start_up) / 10) * 10
        raise UsageError(
            "--budget",
            f"{budget_s:g} s is too short for this model: its essential cases ({essentials}) need about "
            f"{plan.used:.0f} s here ({costs})",
            f"Pass --budget {need} or more.",
        )
    plan.cut.append(
        f"the deciding cases measured in one process, not two: at batch {c.batch} a step took {took} here, so two "
        "rounds would take more than the budget (intervals then rest on one process)"
    )


def _sweep(c: _Costs, plan: _Plan) -> list[int]:
    """2. The sweep's other batches, nearest to the user's first (in log distance), within its share."""
    return plan_sweep(c, plan, c.steady, f"{_ms(c.step)} and its first call {_ms(c.first_s)}")


def plan_sweep(c: Any, plan: Any, cost: Callable[[int], float], took: str) -> list[int]:
    """The sweep's batches: the user's, then the others nearest to it (in log distance) while their
    ``cost(batch)`` fits the sweep's share of the plan; ``took`` says what a step at the user's batch
    took, in the line that names the batches left out (also ``diagnose --framework torch``'s)."""
    batch = c.batch
    others = sorted((k for k in USER_SWEEP_BATCHES if k != batch), key=lambda k: (abs(math.log(k / batch)), k))
    sweep, dropped = [batch], []
    sweep_room = min(SWEEP_SHARE * plan.plan_s, max(0.0, plan.plan_s - plan.used))
    for k in others:
        need = cost(k)
        if need <= sweep_room:
            sweep.append(k)
            sweep_room -= need
            plan.used += need
        else:
            dropped.append(k)
    if dropped:
        plan.cut.append(
            f"batch sweep without batch {', '.join(map(str, sorted(dropped)))}: a step at batch {batch} took "
            f"{took} here, more than the budget's share for the sweep"
        )
    return sweep


def _extras(c: _Costs, plan: _Plan, clone_error: str | None) -> tuple[bool, bool, bool]:
    """3. The fixes' fits (steps_per_execution 1 and jit_compile False/True, interleaved), then
    the prefetch A/B, then clone_model: each while it fits. Whether each is planned."""
    n = MIN_EPOCH_STEPS
    fix_group = 3 * (c.build + c.fit_trace) + (XLA_TRACE_FACTOR - 1) * c.fit_trace + 3 * 3 * FIT_OVERHEAD * c.epoch_s(n)
    with_fixes = plan.fits(fix_group)
    if not with_fixes:
        plan.cut.append(
            "the fixes' fits (steps_per_execution, jit_compile) not measured: fit's first epoch took "
            f"{_ms(c.fit_first_s)} here (jit_compile's XLA build more), more than the budget leaves"
        )
    with_prefetch = plan.fits(c.build + c.trace + c.epoch_s(n))
    if not with_prefetch:
        plan.cut.append("the prefetch A/B not measured: no time left in the budget")
    create_s = c.create_s()
    with_clone = create_s <= CLONE_SHARE * plan.plan_s and not clone_error and plan.fits(create_s)
    if clone_error:
        plan.unable.append(f"clone_model not timed: Keras cannot clone this model ({clone_error[:160]})")
    elif not with_clone:
        plan.cut.append(f"clone_model not timed: building the model took {_ms(c.build)} here")
    return with_fixes, with_prefetch, with_clone


def _epochs(
    c: _Costs, plan: _Plan, asked_steps: int, with_fixes: bool, with_prefetch: bool
) -> tuple[int, tuple[int, ...]]:
    """4. The epochs grown into what is left: the loop (+ the A/B), fit's 2 epochs, the fixes' 3
    each (steps_per_execution 5 and 20 are two more fits, tried when an epoch gives each at least
    3 timed executions: 2 steady epochs -> 6 samples, a claim needs 5). The steps per epoch and
    the steps_per_execution values tried."""

    def grown(fits: int, room: float) -> int:
        per_step = c.step * (1 + with_prefetch + FIT_OVERHEAD * (2 + FIX_EPOCHS * fits))
        return max(MIN_EPOCH_STEPS, min(asked_steps, MIN_EPOCH_STEPS + int(max(0.0, room) / per_step)))

    spe: tuple[int, ...] = ()
    steps = grown(3 if with_fixes else 0, plan.plan_s - plan.used)
    if with_fixes:
        for k in sorted(FIX_STEPS_PER_EXECUTION, reverse=True):  # both, else the smaller, else none
            tried = tuple(v for v in FIX_STEPS_PER_EXECUTION if v <= k)
            more = len(tried) * (c.build + c.fit_trace)
            longer = grown(3 + len(tried), plan.plan_s - plan.used - more)
            if all(math.ceil(longer / v) >= 3 for v in tried):
                spe, steps = tried, longer
                plan.used += more
                break
    return steps, spe


def _fixes_cut(with_fixes: bool, with_prefetch: bool, spe: tuple[int, ...]) -> list[str]:
    """The fixes (workloads/fixes.FIXES keys) this plan left out for the budget, for the record:
    a fix table says "left out: time budget" for them, never "not part of the suite" or "one
    side did not run"; steps_per_execution too when the fits ran but no value above 1
    was tried (epochs too short for the budget). The batch sweep's cut is read from
    ``sweep_batches`` (analysis/suite._sweep_cut)."""
    cut = [e.key for e in FIT_FIXES] if not with_fixes else ([] if spe else [_PER_CALL.key])
    return cut + ([] if with_prefetch else [_PREFETCH.key])


def size_user_cases(facts: dict, *, batch: int, samples: int, budget_s: float, samples_given: bool | str) -> dict:
    """The user's cases planned to the budget from the pre-flight's facts (``step_s`` at
    ``batch``, ``first_step_s``, ``fit_first_s``, ``build_s``, ``import_s``), in priority
    order: the model's creation, its steady step at the user's batch and the sync cost, its
    loop (the warm-up) and fit — always; then the sweep's other batches (nearest first), the
    fixes' fits, the prefetch A/B and clone_model while they fit; then the epochs grown to fill
    what is left (up to ``samples``; ``samples_given``: True for --samples, False for the
    default, or the words naming where the count came from, e.g. "the data's "). What did not
    fit is left out of the plan and said
    (``cut``: one line each, for the record), rather than started and skipped at the deadline.
    A step at batch k is taken as ``step_s * max(1, k / batch)`` (linear above the user's
    batch: an upper bound where a step has a fixed cost)."""
    c = _Costs.of(facts, batch)
    plan = _essentials(c, budget_s)
    sweep = _sweep(c, plan)
    with_fixes, with_prefetch, with_clone = _extras(c, plan, facts.get("clone_error"))
    asked_steps = max(1, math.ceil(samples / batch))
    steps, spe = _epochs(c, plan, asked_steps, with_fixes, with_prefetch)
    cut = plan.cut
    if steps < asked_steps:
        cut.append(
            f"each epoch {steps * batch} samples ({steps} steps of {batch}), not "
            f"{_samples_from(samples_given)}{samples}: a step took {_ms(c.step)} here"
        )
    left = [k for k in FIX_STEPS_PER_EXECUTION if k not in spe]
    if left and with_fixes:
        cut.append(
            f"steps_per_execution {', '.join(map(str, left))} not tried: an epoch of {steps} steps gives "
            "fewer than 3 timed executions per epoch"
        )
    if cut:
        cut.append(f"a larger --budget measures what was cut (this plan: {budget_s:g} s per device)")
    cut += plan.unable
    return {
        # The samples an epoch holds: its steps' worth, but never more than asked (2,000 samples
        # in batches of 32 are 63 steps, the last one partial: 2,000, not 2,016).
        "samples": min(steps * batch, samples),
        "rounds": plan.rounds,
        "sweep_batches": sorted(sweep),
        "steps_per_execution": list(spe),
        "fixes": with_fixes,
        "fixes_cut": _fixes_cut(with_fixes, with_prefetch, spe),
        "sync": plan.with_sync,
        "prefetch": with_prefetch,
        "clone": with_clone,
        "step_s": c.step,
        # each point samples long enough for POINT_SAMPLES samples of its slowest step
        "point_cap_s": max(0.25, POINT_SAMPLES * c.t(max(sweep))),
        "planned_s": plan.used,
        "cut": cut,
    }


def _samples_from(samples_given: bool | str) -> str:
    if isinstance(samples_given, str):
        return samples_given
    return "--samples " if samples_given else "the default "


def user_cases(
    framework: str, device: str, *, user: dict, batch: int, samples: int, sizing: dict | None = None
) -> list[CaseSpec]:
    """The suite on the user's model: creation, a batch sweep and the sync cost (they decide
    the main answer: first), its loop (the warm-up) and fit at the user's batch, the same A/B
    fixes as `run` (prefetch only on synthetic data: a user's own dataset is measured as
    given). ``sizing`` (:func:`size_user_cases`): the epoch length, sweep and fixes that fit
    the budget; None: the sizes as asked (a journal written before sizing existed)."""
    cases: list[CaseSpec] = []
    t = lambda **p: cases.append(_train(framework, device, **{**user, **p}))  # noqa: E731
    sweep = sizing["sweep_batches"] if sizing else sorted(set(USER_SWEEP_BATCHES) | {batch})
    spe = tuple(sizing["steps_per_execution"]) if sizing else FIX_STEPS_PER_EXECUTION
    n = int(sizing["samples"]) if sizing else samples
    for op in ("create", "clone") if not sizing or sizing.get("clone", True) else ("create",):
        t(kind="create", example="user", op=op)
    for b in sweep:
        t(kind="steady", batch=b, sync="none")
    if not sizing or sizing.get("sync", True):
        t(kind="steady", batch=batch, sync="each")
    run = dict(example="user", samples=n, batch=batch)
    t(kind="loop", data="tfdata", epochs=1, **run)
    t(kind="fit", data="tfdata", epochs=2, **run)
    if not sizing or sizing.get("fixes", True):
        for name, value in FIX_FITS:
            if name != _PER_CALL.param or value == _PER_CALL.baseline or value in spe:
                t(kind="fit", data="tfdata", epochs=FIX_EPOCHS, **{name: value}, **run)
    if not user.get("data_file") and (not sizing or sizing.get("prefetch", True)):
        t(kind="loop", data=_PREFETCH.baseline, epochs=1, **run)
    return cases


def plan_user_suite(  # noqa: PLR0913 (the user suite's facts, keyword-only)
    model_fn,
    input_shape,
    classes,
    data_fn,
    framework: str,
    *,
    batch: int,
    samples: int,
    budget_s: float,
    samples_given: bool | str,
) -> tuple[dict, dict]:
    """``diagnose``'s plan (CLI and API): the pre-flight (the model read, one real training
    step at ``batch`` in a child of ``framework``: a failure is a UsageError, exit 2, before any
    measuring), then the cases sized to the budget from its measured step. Returns the case
    parameters and the sizing (:func:`size_user_cases`, plus the pre-flight's facts)."""
    from whichdevice.workloads import userfile

    env = frameworks.env_module(framework).child_env("cpu")
    t0 = time.perf_counter()
    user, facts = userfile.user_model_checked(
        model_fn, input_shape, classes, data_fn, env, batch=batch, framework=framework
    )
    facts["preflight_s"] = time.perf_counter() - t0
    sizing = size_user_cases(facts, batch=batch, samples=samples, budget_s=budget_s, samples_given=samples_given)
    keep = ("first_step_s", "fit_first_s", "build_s", "import_s", "losses", "preflight_s")
    sizing.update({k: facts[k] for k in keep if k in facts})
    return user, sizing


def sizing_options(sizing: dict | None) -> dict:
    """The sizing as record options (flat: the record keeps scalars and lists of them), so a
    reader knows what ran and what the budget cut (``budget_cut``: one line each)."""
    if not sizing:
        return {}
    out = {
        "samples_measured": sizing.get("samples"),
        "preflight_step_s": sizing["step_s"],
        "sweep_batches": list(sizing["sweep_batches"]),
        "steps_per_execution_tried": list(sizing.get("steps_per_execution") or []),
        "rounds_planned": sizing.get("rounds", 2),
        "losses": list(sizing.get("losses") or []),
        "preflight_s": sizing.get("preflight_s"),
        "budget_cut": list(sizing["cut"]),
    }
    if "fixes_cut" in sizing:  # the Keras plan: the fixes it left out for the budget
        out["fixes_cut"] = list(sizing["fixes_cut"])
    if "fixes_planned" in sizing:  # the torch plan (workloads/torch_diagnose.size_cases): no epochs, no fit
        del out["samples_measured"], out["steps_per_execution_tried"], out["losses"]
        out |= {"fixes_planned": list(sizing["fixes_planned"]), "compile_limit_s": sizing.get("compile_limit_s")}
    return out


def sizing_notes(sizing: dict | None) -> list[str]:
    if not sizing:
        return []
    step = sizing["step_s"]
    # ms up to 999 ms, then s (a ResNet18 step on 2 cores read "1.14e+04 ms")
    head = f"Sized from the pre-flight's training step ({seconds(step, 'ms')} at the user's batch on the CPU)"
    if sizing.get("samples") is not None:  # the Keras plan's epochs (the torch plan has none)
        head += f": epochs of {sizing['samples']} samples"
    return [head] + [f"The budget cut: {c}" for c in sizing["cut"]]
