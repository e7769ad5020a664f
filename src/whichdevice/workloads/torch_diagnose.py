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

from whichdevice.core.records import CaseSpec, scalar_int
from whichdevice.core.steps import time_loop
from whichdevice.workloads import userfile
from whichdevice.workloads.epochturns import EpochTurns
from whichdevice.workloads.suite import USER_SWEEP_BATCHES

FRAMEWORK = "torch"
PREFLIGHT = "whichdevice.frameworks.torch.usermodel"
# Steady-step fixes: (parameter, baseline, variant). Order: priority under the time budget.
STEADY_FIXES: tuple[tuple[str, object, object], ...] = (
    ("set_to_none", False, True),
    ("autocast", "off", "bfloat16"),
    ("channels_last", False, True),
    ("cudnn_benchmark", False, True),
    ("torch_compile", False, True),
)
GPU_ONLY = ("cudnn_benchmark", "pin_memory")
LOADER_WORKERS = 2  # the variant's DataLoader workers (2 cores here; more rarely pay on a small machine)
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
# Every parameter a torch fix varies: the interleaved groups' varying keys (workloads._VARYING).
FIX_PARAMS: tuple[str, ...] = tuple(p for p, _, _ in STEADY_FIXES)


def user_params(model_fn, input_shape, classes, data_fn, batch: int | None, framework_env: dict[str, str]) -> dict:
    """Pre-flight the user's module (and data) in a child — one real training step on the very
    batch the run measures — then the case parameters every measuring child rebuilds it from."""
    facts = userfile.preflight(model_fn, input_shape, classes, data_fn, framework_env, module=PREFLIGHT, batch=batch)
    return params_from_facts(facts, model_fn, classes, data_fn)


def params_from_facts(facts: dict, model_fn, classes, data_fn) -> dict:
    """The case parameters from the pre-flight's facts (``frameworks/torch/usermodel.check``)."""
    return {
        "model": "user",
        "model_file": str(model_fn.path),
        "model_fn": model_fn.function,
        "input_shape": ",".join(map(str, facts["input_shape"])),
        "classes": classes,
        "label_classes": facts["label_classes"],
        "output_shape": ",".join(map(str, facts["output_shape"])),
        "vocab": facts.get("vocab"),
        "conv2d": bool(facts.get("conv2d")),
        "data_file": str(data_fn.path) if data_fn else None,
        "data_fn": data_fn.function if data_fn else None,
        "data_batch": facts.get("data_batch"),
        "returned": facts.get("returned"),
        "loss": facts.get("loss"),
        "optimizer": facts.get("optimizer"),
    }


# Facts the pre-flight learned that the cases do not need (the record's options keep them).
_INFO_ONLY = ("conv2d", "data_batch", "returned", "loss", "optimizer")
INFO_KEYS = ("returned", "loss", "optimizer", "input_shape", "conv2d")


def fixes_for(user: dict, gpu: bool) -> list[tuple[str, object, object]]:
    """The steady fixes that apply to this model on this device."""
    out = []
    for name, base, var in STEADY_FIXES:
        if name in GPU_ONLY and not gpu:
            continue
        if name == "channels_last" and not (user.get("conv2d") and len(str(user["input_shape"]).split(",")) == 3):
            continue
        out.append((name, base, var))
    return out


def compile_limit_s(budget_s: float) -> float:
    """How long torch.compile may take to compile (frameworks/torch/usercase.py): a quarter of
    the device's budget, at most COMPILE_LIMIT_S; past it the fix is "not measured" and why."""
    return round(min(COMPILE_LIMIT_S, COMPILE_SHARE * budget_s), 1)


def cases(device: str, *, user: dict, batch: int, samples: int, budget_s: float = 90.0) -> list[CaseSpec]:
    """The cases of one device, in priority order (the budget cuts the last ones)."""
    gpu = device.startswith("GPU")
    params = {k: v for k, v in user.items() if k not in _INFO_ONLY}
    out: list[CaseSpec] = []

    def t(**p) -> None:
        out.append(CaseSpec(workload="train", framework=FRAMEWORK, device=device, params={**params, **p}))

    for op in ("create", "clone"):
        t(kind="create", example="user", op=op)
    loop_samples = min(samples, LOOP_STEPS * batch)
    t(kind="loop", example="user", samples=loop_samples, batch=batch, data="tfdata", epochs=1)
    fixes = fixes_for(user, gpu)
    for name, base, var in [f for f in fixes if f[0] != "torch_compile"]:  # each a pair at the user's batch
        for value in (base, var):
            t(kind="steady", batch=batch, sync="none", fix=name, **{name: value})
    # The batch sweep after the fixes: one group whose large batches cost most (a batch-512 step of
    # pytorch/examples' mnist Net took 17 s of a 90 s budget on the loaded 2-core machine).
    for b in sorted(set(USER_SWEEP_BATCHES) | {batch}):
        t(kind="steady", batch=b, sync="none")
    t(kind="steady", batch=batch, sync="each")  # the loss read back (.item()) every step
    # The loader pairs: passes of LOADER_STEPS, one warm-up pass then one in each half, A B | B A.
    if not LOADER_PAIRS:
        return out + _compile_pair(fixes, batch, budget_s, t)
    loader = dict(example="user", samples=min(samples, LOADER_STEPS * batch), batch=batch, data="loader", epochs=3)
    for w in (0, LOADER_WORKERS):
        t(kind="loop", num_workers=w, **loader)
    if gpu:
        for pin in (False, True):
            t(kind="loop", num_workers=0, pin_memory=pin, **{**loader, "data": "loader_pin"})
    return out + _compile_pair(fixes, batch, budget_s, t)


def _compile_pair(fixes, batch: int, budget_s: float, t) -> list[CaseSpec]:
    """torch.compile's pair, last (``t`` appends to the case list; nothing is returned)."""
    for name, base, var in [f for f in fixes if f[0] == "torch_compile"]:
        limit = compile_limit_s(budget_s)  # on both sides: they differ only in torch_compile (one group, one pair)
        for value in (base, var):
            t(kind="steady", batch=batch, sync="none", fix=name, compile_limit_s=limit, **{name: value})
    return []


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
