"""The default suite behind ``whichdevice run``: every seed's experiment, small enough for a
time budget, plus the A/B runs that prove (or disprove) each automatic fix.

All cases of one device run in one child (one framework import per device), in priority
order: when the budget runs out, the child records the rest as skipped — the seed cases
and the crossovers come first, the fixes after them, the large seed-002/ex3 runs last.
"""

from __future__ import annotations

import math
import time

from whichdevice import frameworks
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import parse_positive_float
from whichdevice.core.records import CaseSpec
from whichdevice.workloads import matmul as matmul_workload

DEFAULT_BUDGET_S = 90.0  # seconds per device
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
# Seed 003's pipeline rungs the suite measures: serial map (the seed's first example), the
# prefetched parallel pipeline, and the same work in Python (tf.py_function).
PIPELINE_VARIANTS = ("serial", "prefetch", "pyfunc")
# steps_per_execution tried as a fix, a grid on ex2 (100 steps per epoch): 1 (the baseline),
# 5 and 20; the recommendation is the smallest that reaches 90 % of the best (analysis/suite.py).
# (100, one call per epoch, gave one sample per steady epoch: never a claim, so not measured.)
FIX_STEPS_PER_EXECUTION = (5, 20)
# The fixes' fits, timed interleaved epoch by epoch (workloads.interleave_groups) over FIX_EPOCHS
# epochs (the first warms up: tracing, XLA; the two others are steady, one in each half
# A B C D E | E D C B A): steps_per_execution 1, 5, 20 at the framework's own jit_compile default
# ("auto": no XLA for TensorFlow on a CPU, XLA for Keras/JAX), and jit_compile False against True.
# As (param, value) pairs: each case names only the setting it varies.
FIX_FITS = (
    *(("steps_per_execution", k) for k in (1, *FIX_STEPS_PER_EXECUTION)),
    ("jit_compile", False),
    ("jit_compile", True),
)
FIX_EPOCHS = 3

# The fixes this suite measures, by the parameter each changes: (param, baseline value).
MEASURED_FIXES = (
    ("batch", SEED_BATCH),
    ("data", "tfdata_noprefetch"),
    ("steps_per_execution", 1),
    ("jit_compile", False),
    ("sync", "each"),
)


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
    t(kind="steady", model="seed001", batch=SEED_BATCH, sync="each")
    # 4b. Seed 003's input pipeline (tf.data: TensorFlow only), quick size: is the step waiting
    #     for input, what prefetch buys, and Python-side preprocessing vs the same work in TF ops.
    if framework == "tensorflow":
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
    #     (with a string op that has no GPU kernel) the fallback path. TensorFlow only.
    if framework == "tensorflow":
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
# Sizing the user's cases from the pre-flight's measured step (issue 32): round 1 of a device is
# planned to ROUND1_SHARE of what its budget leaves after the framework's start-up
# (START_UP_S, an estimate: 5 s idle, up to 20 s on the loaded 2-core VM), so the second round
# of the deciding cases fits in the rest and the wall time stays near the budget.
ROUND1_SHARE = 0.42
START_UP_S = 8.0
SWEEP_SHARE = 0.30  # of round 1: the batch sweep and the sync cost (they decide the main answer)
STEADY_CALLS = 8  # a steady point: its first call, ~2 warm-up calls, at least 5 samples
STEADY_MIN_S = 0.3  # a fast point samples to its time cap (0.25 s) anyway
FIT_OVERHEAD = 1.2  # a fit step against the custom step (callbacks, StepTimer's sync)
CLONE_SHARE = 0.1  # clone_model is timed when its 5+ calls take at most this share of round 1
MIN_EPOCH_STEPS = 6  # the loop's first step apart, 5 steady samples
XLA_TRACE_FACTOR = 8.0  # jit_compile=True's first epoch against a plain trace (XLA compiles)


def _steady_cost(step_s: float, trace_s: float) -> float:
    return trace_s + max(STEADY_CALLS * step_s, STEADY_MIN_S)


def size_user_cases(facts: dict, *, batch: int, samples: int, budget_s: float, samples_given: bool) -> dict:
    """The user's cases sized to the budget from the pre-flight's measured step (``facts``:
    ``step_s`` at ``batch``, ``first_step_s``, ``fit_first_s``, ``build_s``): the epoch length
    (samples), the sweep's batches, the steps_per_execution values tried and whether the clone
    case fits, with what the budget cut (``cut``: one line each, for the record's notes).
    A step at batch k is taken as ``step_s * max(1, k / batch)`` (linear in the batch above
    the user's: an upper bound where a step has a fixed cost)."""
    step = max(float(facts.get("step_s") or 0.0), 1e-5)
    trace = max(0.0, float(facts.get("first_step_s") or 0.0) - step)
    fit_trace = max(0.0, float(facts.get("fit_first_s") or 0.0) - 2 * step)
    build = float(facts.get("build_s") or 0.0)
    plan_s = ROUND1_SHARE * max(budget_s - START_UP_S, 0.5 * budget_s)
    cut: list[str] = []
    t = lambda k: step * max(1.0, k / batch)  # noqa: E731

    def ms(x: float) -> str:
        return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"

    # 1. The sweep and the sync cost: the user's batch always; the others while they fit.
    sweep = sorted(set(USER_SWEEP_BATCHES) | {batch})
    cost = lambda ks: sum(_steady_cost(t(k), trace) for k in ks) + _steady_cost(t(batch), trace)  # noqa: E731
    dropped = []
    while len(sweep) > 2 and cost(sweep) > SWEEP_SHARE * plan_s:
        far = max((k for k in sweep if k != batch), key=lambda k: (k > batch, abs(k - batch)))
        sweep.remove(far)
        dropped.append(far)
    if dropped:
        cut.append(
            f"batch sweep without batch {', '.join(map(str, sorted(dropped)))}: a step at batch {batch} took "
            f"{ms(step)} here, so {'they' if len(dropped) > 1 else 'it'} would take more than the budget's share "
            "for the sweep (a larger --budget measures them)"
        )
    fixed = cost(sweep)
    # 2. Creating the model (and its clone), 5+ times each.
    create_s = max(STEADY_CALLS * build, STEADY_MIN_S)
    with_clone = create_s <= CLONE_SHARE * plan_s
    fixed += create_s * (2 if with_clone else 1)
    if not with_clone:
        cut.append(f"clone_model not timed: building the model took {ms(build)}, too long for the budget")
    # 3. The epochs: loop, fit (2), the fixes' fits (5 variants x 3), loop without prefetch.
    variants = 5
    fixed += 2 * trace + (1 + variants) * fit_trace + (XLA_TRACE_FACTOR - 1) * fit_trace
    per_step = step * (2 + FIT_OVERHEAD * (2 + 3 * variants))
    asked_steps = max(1, math.ceil(samples / batch))
    steps = int(max(0.0, plan_s - fixed) / per_step)
    steps = max(MIN_EPOCH_STEPS, min(asked_steps, steps))
    if steps < asked_steps:
        cut.append(
            f"each epoch {steps * batch} samples ({steps} steps of {batch}), not "
            f"{'--samples ' if samples_given else 'the default '}{samples}: a step took {ms(step)} here "
            "(a larger --budget runs longer epochs)"
        )
    # steps_per_execution k gives ceil(steps / k) timed executions per epoch: at least 3 (2 steady
    # epochs -> 6 samples, a claim needs 5).
    spe = tuple(k for k in FIX_STEPS_PER_EXECUTION if math.ceil(steps / k) >= 3)
    left = [k for k in FIX_STEPS_PER_EXECUTION if k not in spe]
    if left:
        cut.append(
            f"steps_per_execution {', '.join(map(str, left))} not tried: an epoch of {steps} steps gives it "
            "fewer than 3 timed executions per epoch (a larger --budget runs longer epochs)"
        )
    return {
        "samples": steps * batch,
        "sweep_batches": sweep,
        "steps_per_execution": list(spe),
        "clone": with_clone,
        "step_s": step,
        "cut": cut,
    }


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
    t(kind="steady", batch=batch, sync="each")
    run = dict(example="user", samples=n, batch=batch)
    t(kind="loop", data="tfdata", epochs=1, **run)
    t(kind="fit", data="tfdata", epochs=2, **run)
    fits = [(k, v) for k, v in FIX_FITS if k != "steps_per_execution" or (spe and (v == 1 or v in spe))]
    for name, value in fits:
        t(kind="fit", data="tfdata", epochs=FIX_EPOCHS, **{name: value}, **run)
    if not user.get("data_file"):
        t(kind="loop", data="tfdata_noprefetch", epochs=1, **run)
    return cases


def plan_user_suite(
    model_fn,
    input_shape,
    classes,
    data_fn,
    framework: str,
    *,
    batch: int,
    samples: int,
    budget_s: float,
    samples_given: bool,
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
    sizing.update(
        {k: facts[k] for k in ("first_step_s", "fit_first_s", "build_s", "losses", "preflight_s") if k in facts}
    )
    return user, sizing


def sizing_options(sizing: dict | None) -> dict:
    """The sizing as record options (flat: the record keeps scalars and lists of them), so a
    reader knows what ran and what the budget cut (``budget_cut``: one line each)."""
    if not sizing:
        return {}
    return {
        "samples_measured": sizing["samples"],
        "preflight_step_s": sizing["step_s"],
        "sweep_batches": list(sizing["sweep_batches"]),
        "steps_per_execution_tried": list(sizing["steps_per_execution"]),
        "losses": list(sizing.get("losses") or []),
        "preflight_s": sizing.get("preflight_s"),
        "budget_cut": list(sizing["cut"]),
    }


def sizing_notes(sizing: dict | None) -> list[str]:
    if not sizing:
        return []
    step = sizing["step_s"]
    head = (
        f"Sized from the pre-flight's training step ({step * 1e3:.3g} ms at the user's batch on the CPU): "
        f"epochs of {sizing['samples']} samples"
    )
    return [head] + [f"The budget cut: {c}" for c in sizing["cut"]]
