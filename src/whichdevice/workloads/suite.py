"""The default suite behind ``whichdevice run``: every seed's experiment, small enough for a
time budget, plus the A/B runs that prove (or disprove) each automatic fix.

All cases of one device run in one child (one framework import per device), in priority
order: when the budget runs out, the child records the rest as skipped — the seed cases
and the crossovers come first, the fixes after them, the large seed-002/ex3 runs last.
"""

from __future__ import annotations


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
# Seed 003's pipeline rungs the suite measures: the two sides of each catalogue fix measured on
# the pipeline alone (``FixEntry.pipeline``), in the catalogue's order: serial map (the seed's
# first example), the prefetched parallel pipeline, and the same work in Python (tf.py_function).
PIPELINE_VARIANTS = tuple(dict.fromkeys(v for e in fixes.FIXES if e.pipeline for v in e.pipeline))
# The fixes measured as fits of ex2 (the catalogue's Keras entries timed in fit groups), each
# case naming only the setting it varies, as (param, value) pairs: the baseline then each value
# (steps_per_execution 1, 5, 20 at the framework's own jit_compile default, "auto": no XLA for
# TensorFlow on a CPU, XLA for Keras/JAX; jit_compile False against True). Timed interleaved epoch
# by epoch (workloads.interleave_groups) over FIX_EPOCHS epochs (the first warms up: tracing, XLA;
# the two others are steady, one in each half A B C D E | E D C B A). A grid's recommendation is
# the smallest value that reaches 90 % of the best (analysis/suite.py).
FIT_FIXES = fixes.for_framework("keras", "fit")
FIX_FITS = tuple((e.param, v) for e in FIT_FIXES for v in (e.baseline, *e.values))
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


def sizing_options(sizing: dict | None) -> dict:
    """The sizing as record options (flat: the record keeps scalars and lists of them), so a
    reader knows what ran and what the budget cut (``budget_cut``: one line each)."""
    if not sizing:
        return {}
    out = {
        "samples_measured": sizing.get("samples"),
        "preflight_step_s": sizing["step_s"],
        "sweep_batches": list(sizing["sweep_batches"]),
        "steps_per_execution_tried": list(sizing.get(fixes.STEPS_PER_EXECUTION.param) or []),
        "rounds_planned": sizing.get("rounds", 2),
        "losses": list(sizing.get("losses") or []),
        "preflight_s": sizing.get("preflight_s"),
        "budget_cut": list(sizing["cut"]),
    }
    if sizing.get("load_per_core") is not None:  # the pre-flight's 1-minute load per core (scriptplan)
        out["preflight_load_per_core"] = round(float(sizing["load_per_core"]), 3)
    if "fixes_cut" in sizing:  # the fixes the plan left out for the budget
        out["fixes_cut"] = list(sizing["fixes_cut"])
    if sizing.get("planned_s") is not None:  # the plan's estimate of a round's wall, to check it against
        out["planned_round_s"] = round(float(sizing["planned_s"]), 2)
    return out


def sizing_notes(sizing: dict | None) -> list[str]:
    if not sizing:
        return []
    step = sizing["step_s"]
    # ms up to 999 ms, then s (a ResNet18 step on 2 cores read "1.14e+04 ms")
    head = f"Sized from the pre-flight's training step ({seconds(step, 'ms')} at the user's batch on the CPU)"
    if sizing.get("samples") is not None:  # the Keras plan's epochs (the torch plan has none)
        head += f": epochs of {sizing['samples']} samples"
    kept = [f"The plan: {sizing['plan_kept']}"] if sizing.get("plan_kept") else []
    return [head] + [f"The budget cut: {c}" for c in sizing["cut"]] + kept
