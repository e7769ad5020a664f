"""``whichdevice diagnose --framework torch``: the suite on the user's nn.Module.

The same train cases as the Keras diagnose (creation, the user's loop at their batch, the
batch sweep, the loss read back every step) on the user's module, loss and optimizer
(``frameworks/torch/usercase.py`` builds them in each child), then the PyTorch fixes, each an
A/B pair on the user's model that differs in one parameter (``analysis/fixes.ab_fixes`` pairs
them; their entries are in the catalogue, ``workloads/fixes.TORCH_FIXES``):

- steady train steps at the user's batch, timed interleaved block by block as the batch sweep
  (``workloads._VARYING``; each pair is its own group, named by its ``fix`` parameter, with
  blocks of as many calls on both sides: ``workloads/train.same_block_size``), before the sweep:
  ``set_to_none``, ``autocast`` (bfloat16), ``channels_last`` (a model with Conv2d on 4-d
  input), ``cudnn_benchmark`` (GPU), ``torch_compile`` (last: compiling takes 20 s or more on
  2 cores, measured in benchmarks/diagnose_torch.md; bounded by :func:`compile_limit_s`);
- the user's loop over a DataLoader (theirs with ``--data``, else one over a TensorDataset of
  the synthetic inputs): ``num_workers`` 0 -> 2, and on a GPU ``pin_memory`` (with
  ``non_blocking`` copies); the two sides' passes interleaved A B | B A (:class:`LoaderPasses`).

Reading the loss every step (``.item()``) is the suite's sync each/none pair, as for Keras.
The parent never imports torch: the pre-flight runs in a child (``frameworks/torch/usermodel.py``).
"""

from __future__ import annotations

import time

from whichdevice.core.records import CaseSpec, scalar_int
from whichdevice.core.steps import time_loop
from whichdevice.frameworks.common.usermodel import user_case_params
from whichdevice.workloads import fixes, userfile
from whichdevice.workloads.epochturns import EpochTurns
from whichdevice.workloads.fixes import FixEntry
from whichdevice.workloads.suite import USER_SWEEP_BATCHES

FRAMEWORK = "torch"
PREFLIGHT = "whichdevice.frameworks.torch.usermodel"
# The steady-step fixes, each a pair at the user's batch (the catalogue's torch entries timed in
# steady groups). Order: the catalogue's, the priority under the time budget; a compiling fix last.
STEADY_FIXES: tuple[FixEntry, ...] = fixes.for_framework(FRAMEWORK, "steady")
# The DataLoader pairs: num_workers 0 -> its variant, and on a GPU pin_memory (with non_blocking copies).
LOADERS: tuple[FixEntry, ...] = fixes.for_framework(FRAMEWORK, "loop")
# The loops (the user's, the loaders') run at most this many steps: the first step against the
# steady ones needs tens of steps, not an epoch (10 000 samples of a small CNN at batch 32 were
# 313 steps, 18 s a round on the 2-core machine; 64 steps of the mnist Net took 46 s there).
LOOP_STEPS = 32
# A point's sampling cap (measure.session.Request.point_cap_s; run's own is 0.25 s): a fix pair
# is one interleaved group capped at 2 x this, and needs 5 samples a side for a claim. The mnist
# Net's step took 145 ms at batch 32 with one thread on the loaded 2-core machine: at 0.25 s its
# pairs got 2-3 samples a side ("not enough samples"), at 1 s about 6.
POINT_CAP_S = 1.0
# Whether the DataLoader pairs are measured (tests leave them out to save time). With persistent
# workers the second pass hung inside the measuring child ("DataLoader timed out after 30.0
# seconds", forked or spawned, every run after the last merges); the workers now start afresh
# each pass, and a pass's first step is left out of the steady samples (LoaderPasses.epoch).
LOADER_PAIRS = True
# The DataLoader pairs' passes: this many steps each, three passes a side (LoaderPasses).
LOADER_STEPS = 16
# torch.compile's bound: compiling a small MLP's training step took 21-52 s on the loaded 2-core
# machine (benchmarks/diagnose_torch.md). At most this, and at most this share of the budget: a
# compile that ran 60 s of a 120 s budget left round 2 time for 1 of 10 verdict cases (the
# other claims then rest on one process), so a quarter, and `--budget 240` or more to compile.
COMPILE_LIMIT_S = 90.0
COMPILE_SHARE = 0.25


def user_params(model_fn, input_shape, classes, data_fn, batch: int | None, framework_env: dict[str, str]) -> dict:
    """Pre-flight the user's module (and data) in a child — one real training step on the very
    batch the run measures — then the case parameters every measuring child rebuilds it from."""
    return user_params_and_facts(model_fn, input_shape, classes, data_fn, batch, framework_env)[0]


def user_params_and_facts(
    model_fn, input_shape, classes, data_fn, batch: int | None, framework_env: dict[str, str]
) -> tuple[dict, dict]:
    """:func:`user_params` and the pre-flight's facts, with ``import_s``: the child's wall time
    but its check (a measuring child pays the same start-up: Python, torch, the user's file)."""
    t0 = time.perf_counter()
    facts = userfile.preflight(model_fn, input_shape, classes, data_fn, framework_env, module=PREFLIGHT, batch=batch)
    wall = time.perf_counter() - t0
    facts["preflight_s"] = wall
    facts["import_s"] = max(0.0, wall - float(facts.get("check_s") or 0.0))
    return params_from_facts(facts, model_fn, classes, data_fn), facts


def plan(
    model_fn, input_shape, classes, data_fn, batch: int | None, framework_env: dict[str, str], *, budget_s, samples
) -> tuple[dict, int, dict]:
    """``diagnose --framework torch``'s plan (CLI and API): the pre-flight (a failure is a
    UsageError, exit 2, before any measuring), then the cases sized to the budget from its
    measured steps. Returns the case parameters, the batch (given, else the DataLoader's own,
    else 32) and the sizing (:func:`size_cases`, plus the pre-flight's timings)."""
    user, facts = user_params_and_facts(model_fn, input_shape, classes, data_fn, batch, framework_env)
    n_batch = batch or int(user.get("data_batch") or 32)
    sizing = size_cases(facts, batch=n_batch, budget_s=budget_s, samples=samples)
    sizing.update({k: facts[k] for k in ("first_step_s", "build_s", "import_s", "preflight_s") if k in facts})
    return user, n_batch, sizing


def params_from_facts(facts: dict, model_fn, classes, data_fn) -> dict:
    """The case parameters from the pre-flight's facts (``frameworks/torch/usermodel.check``)."""
    return user_case_params(
        model_fn,
        data_fn,
        facts,
        classes,
        facts["label_classes"],
        vocab=facts.get("vocab"),
        conv2d=bool(facts.get("conv2d")),
        **{k: facts.get(k) for k in ("data_batch", "returned", "loss", "optimizer")},
    )


# Facts the pre-flight learned that the cases do not need (the record's options keep them).
_INFO_ONLY = ("conv2d", "data_batch", "returned", "loss", "optimizer")
INFO_KEYS = ("returned", "loss", "optimizer", "input_shape", "conv2d")


def fixes_for(user: dict, gpu: bool) -> list[FixEntry]:
    """The steady fixes that apply to this model on this device."""
    return [e for e in STEADY_FIXES if (gpu or not e.gpu_only) and (e.applies is None or e.applies(user))]


def compile_limit_s(budget_s: float) -> float:
    """How long torch.compile may take to compile (frameworks/torch/usercase.py): a quarter of
    the device's budget, at most COMPILE_LIMIT_S; past it the fix is "not measured" and why."""
    return round(min(COMPILE_LIMIT_S, COMPILE_SHARE * budget_s), 1)


def cases(
    device: str, *, user: dict, batch: int, samples: int, budget_s: float = 90.0, sizing: dict | None = None
) -> list[CaseSpec]:
    """The cases of one device, in priority order (the budget cuts the last ones). ``sizing``
    (:func:`size_cases`): the sweep, fixes, loader pairs and compile bound that fit the budget;
    None: all of them (a journal written before sizing existed)."""
    gpu = device.startswith("GPU")
    params = {k: v for k, v in user.items() if k not in _INFO_ONLY}
    out: list[CaseSpec] = []

    def t(**p) -> None:
        out.append(CaseSpec(workload="train", framework=FRAMEWORK, device=device, params={**params, **p}))

    for op in ("create", "clone"):
        t(kind="create", example="user", op=op)
    loop_samples = min(samples, LOOP_STEPS * batch) if sizing is None else int(sizing["loop_samples"])
    t(kind="loop", example="user", samples=loop_samples, batch=batch, data="tfdata", epochs=1)
    pairs = fixes_for(user, gpu)
    if sizing is not None:
        pairs = [e for e in pairs if e.key in sizing["fixes_planned"]]
    for e in [e for e in pairs if not e.compiles]:  # each a pair at the user's batch
        for value in (e.baseline, *e.values):
            t(kind="steady", batch=batch, sync="none", fix=e.key, **{e.param: value})
    # The batch sweep after the fixes: one group whose large batches cost most (a batch-512 step of
    # pytorch/examples' mnist Net took 17 s of a 90 s budget on the loaded 2-core machine).
    sweep = sizing["sweep_batches"] if sizing is not None else sorted(set(USER_SWEEP_BATCHES) | {batch})
    for b in sweep:
        t(kind="steady", batch=b, sync="none")
    if sizing is None or sizing.get("sync", True):
        t(kind="steady", batch=batch, sync="each")  # the loss read back (.item()) every step
    _loader_pairs(gpu, batch, samples, sizing, t)
    limit = compile_limit_s(budget_s) if sizing is None else sizing.get("compile_limit_s")
    return out + _compile_pair(pairs, batch, limit, t)


def _loader_pairs(gpu: bool, batch: int, samples: int, sizing: dict | None, t) -> None:
    """The loader pairs (``t`` appends them): passes of LOADER_STEPS, one warm-up pass then one
    in each half, A B | B A; ``num_workers`` 0 -> 2, and on a GPU ``pin_memory``."""
    if not LOADER_PAIRS:
        return
    loader = dict(example="user", samples=min(samples, LOADER_STEPS * batch), batch=batch, data="loader", epochs=3)
    workers, pinned = LOADERS
    if sizing is None or sizing.get("loaders"):
        for w in (workers.baseline, *workers.values):
            t(kind="loop", **{workers.param: w}, **loader)
    if gpu and (sizing is None or sizing.get("pin_memory")):
        for pin in (pinned.baseline, *pinned.values):
            t(kind="loop", **{workers.param: workers.baseline, pinned.param: pin}, **{**loader, "data": "loader_pin"})


def _compile_pair(pairs: list[FixEntry], batch: int, limit: float | None, t) -> list[CaseSpec]:
    """A compiling fix's pair (torch.compile), last (``t`` appends to the case list; nothing is returned)."""
    for e in [e for e in pairs if e.compiles]:
        if limit is None:
            continue
        for value in (
            e.baseline,
            *e.values,
        ):  # the bound on both sides: they differ only in the fix (one group, one pair)
            t(kind="steady", batch=batch, sync="none", fix=e.key, compile_limit_s=limit, **{e.param: value})
    return []


# ------------------------------------------------------------------ the plan, sized to the budget
# As the Keras diagnose (workloads/suite.size_user_cases): from the pre-flight's facts (its
# start-up, building the module, its first and steady steps at the user's batch on this CPU),
# round 1 is planned to ROUND1_SHARE of what the budget leaves after the start-up, so that
# round 2 (a fresh process) fits in the rest; what does not fit is left out and said, one line
# each, instead of started and overrunning the budget (a DCGAN discriminator's cases took 113 s
# of a 60 s budget on the 2-core machine; the H200's two devices 122 s of 2 x 30 s).
# A spawned DataLoader worker starts a Python that imports torch: about the pre-flight child's start-up.
WORKER_START_FACTOR = 1.0
# A compile bound below this measures only that compiling takes longer: a small MLP's compile took
# 21-52 s on the loaded 2-core machine, and inductor overran a 7.1 s bound by 28 s once (its alarm
# waits for Python code), so torch.compile is planned from a 20 s bound: --budget 80 or more.
MIN_COMPILE_S = 20.0


def _point_s(c, k: int, cap: float) -> float:
    """One steady point at batch ``k``: building, the first call and two warm-up calls, sampling
    to the point's cap, and a last block's overrun."""
    return c.build + c.trace + 4 * c.t(k) + cap


def _loader_pair_s(c, import_s: float, with_workers: bool) -> float:
    """A DataLoader pair: each side built and passed over 3 times (LoaderPasses), the workers'
    side starting its workers afresh every pass (each a Python that imports torch: ``import_s``)."""
    passes = 2 * 3 * (LOADER_STEPS * c.step + c.trace)
    return 2 * c.build + passes + (3 * WORKER_START_FACTOR * import_s if with_workers else 0.0)


def size_cases(facts: dict, *, batch: int, budget_s: float, samples: int) -> dict:
    """The torch cases planned to the budget from the pre-flight's facts, in priority order: the
    essentials (creation, the user's loop, the steady step at their batch and the loss read
    back every step) always; then each fix pair, the sweep's other batches (nearest first, within
    their share), the DataLoader pairs and torch.compile while they fit. The GPU's own pairs
    (cudnn.benchmark, pin_memory) are planned too: the plan is one for every device."""
    from whichdevice.workloads import suite

    c = suite._Costs.of(facts, batch)
    cap = max(POINT_CAP_S, suite.POINT_SAMPLES * c.t(batch))
    asked_steps = -(-min(samples, LOOP_STEPS * batch) // batch)
    loop_steps = min(asked_steps, suite.MIN_EPOCH_STEPS)  # grown at the end into what is left
    essentials = c.create_s() + c.build + c.trace + loop_steps * c.step + 2 * _point_s(c, batch, cap)
    avail = max(budget_s - c.start_up, 0.5 * budget_s)
    plan = suite._Plan(plan_s=suite.ROUND1_SHARE * avail, used=essentials)
    if plan.used > plan.plan_s:
        _one_round(c, plan, budget_s)
    pairs = [e.key for e in STEADY_FIXES if not e.compiles and plan.fits(2 * _point_s(c, batch, cap))]
    left = [e.key for e in STEADY_FIXES if not e.compiles and e.key not in pairs]
    if left:
        plan.cut.append(
            f"{', '.join(left)} not measured: a pair of steps at batch {batch} needs about "
            f"{2 * _point_s(c, batch, cap):.0f} s here (a step {suite._ms(c.step)}), more than the budget leaves"
        )
    sweep = _torch_sweep(c, plan, cap)
    import_s = float(facts.get("import_s") or c.start_up)
    # pin_memory first: the GPU's own loader fix, and its pair starts no workers (num_workers=0), so it
    # fits budgets the workers' pair does not (the H200's --budget 45 left both out while they were one).
    pin = plan.fits(_loader_pair_s(c, import_s, False))
    loaders = plan.fits(_loader_pair_s(c, import_s, True))
    if not pin:
        plan.cut.append(
            f"the pin_memory pair (GPU) not measured: {2 * 3 * LOADER_STEPS} steps need more than the budget leaves"
        )
    if not loaders:
        plan.cut.append(
            f"the DataLoader workers pair not measured: {2 * 3 * LOADER_STEPS} steps and "
            f"workers started 3 times (a start-up took {suite._ms(import_s)} here) need more than the budget leaves"
        )
    compile_s = min(compile_limit_s(budget_s), plan.plan_s - plan.used - 2 * _point_s(c, batch, cap))
    with_compile = compile_s >= MIN_COMPILE_S and plan.fits(compile_s + 2 * _point_s(c, batch, cap))
    if not with_compile:
        plan.cut.append(
            f"torch.compile not measured: compiling needs more time than the budget leaves (at least {MIN_COMPILE_S:g} s)"
        )
    more = min(asked_steps - loop_steps, int(max(0.0, plan.plan_s - plan.used) / c.step))
    loop_steps, plan.used = loop_steps + more, plan.used + more * c.step
    if loop_steps < asked_steps:
        plan.cut.append(
            f"the user's loop {loop_steps} steps of {batch}, not {asked_steps} steps: a step took {suite._ms(c.step)} here"
        )
    if plan.cut:
        plan.cut.append(f"a larger --budget measures what was cut (this plan: {budget_s:g} s per device)")
    return {
        "loop_samples": min(samples, loop_steps * batch),
        "rounds": plan.rounds,
        "sweep_batches": sorted(sweep),
        "fixes_planned": pairs + ([e.key for e in STEADY_FIXES if e.compiles] if with_compile else []),
        "loaders": loaders,  # the workers pair (num_workers 0 -> 2)
        "pin_memory": pin,
        "compile_limit_s": round(compile_s, 1) if with_compile else None,
        "sync": plan.with_sync,
        "step_s": c.step,
        "point_cap_s": cap,
        "planned_s": plan.used,
        "cut": plan.cut,
    }


def _one_round(c, plan, budget_s: float) -> None:
    """Round 1's essentials do not fit its share (``suite.one_round``): without the loss read every
    step if need be."""
    from whichdevice.workloads import suite

    cap = max(POINT_CAP_S, suite.POINT_SAMPLES * c.t(c.batch))
    took = suite._ms(c.step)
    essentials = f"creating it, its loop and a steady step at batch {c.batch}"
    suite.one_round(c, plan, budget_s, _point_s(c, c.batch, cap), essentials, f"a step took {took}", took)


def _torch_sweep(c, plan, cap: float) -> list[int]:
    """The sweep's other batches, nearest to the user's first (in log distance), within its share."""
    from whichdevice.workloads import suite

    return suite.plan_sweep(c, plan, lambda k: _point_s(c, k, cap), suite._ms(c.step))


class LoaderPasses(EpochTurns):
    """One side of a DataLoader pair (``num_workers`` or ``pin_memory``), timed interleaved with
    the other as the fixes' ``model.fit`` variants are (``train._time_fits``): whole passes over
    the loader (a pass cannot be cut in blocks: the workers run ahead), the first the warm-up
    (workers starting, the first step), then one pass a turn, A B | B A; every step of a pass
    timed by ``core.steps.time_loop``, with the loss read back each step as the user's loop."""

    def __init__(self, spec: CaseSpec, fw) -> None:
        from whichdevice import frameworks
        from whichdevice.frameworks.common.casemodel import CaseModel

        self.spec, self.fw = spec, fw
        self.b = scalar_int(spec.params["batch"])
        self.training = frameworks.part(fw.name, "training")
        m = CaseModel(spec.params, self.training)
        with fw.placement.scope(spec.device):
            model = m.build()
            opt, loss = m.optimizer_and_loss(model)
            self.step = self.training.train_step(model, opt, loss)
            self.batches = m.dataset(
                self.training, scalar_int(spec.params["samples"]), self.b, str(spec.params["data"])
            )
        self.warmup_s = self._pass()

    def _pass(self) -> list[float]:
        read, step = self.training.read_back, self.step
        with self.fw.placement.scope(self.spec.device):
            return time_loop(self.batches, lambda xy: read(step(xy[0], xy[1])), sync=self.fw.sync.sync)

    def epoch(self) -> list[float]:
        """A steady pass's steps but its first, on both sides: the workers start afresh each pass
        (persistent ones hung across passes), so a pass's first step carries their start-up."""
        return self._pass()[1:]

    def metrics(self, turns: int) -> dict[str, float]:
        return {
            "samples_per_step": float(self.b),
            # not "steps_per_epoch": the first screen's warm-up share reads that from the user's
            # loop, and a loader pass's first step is the workers' start, not the model's
            "steps_per_pass": float(len(self.warmup_s)),
            "interleave_rounds": float(turns),
        }
