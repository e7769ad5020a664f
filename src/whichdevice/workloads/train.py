"""Seeds 001 and 002 as training measurements, and the same for the user's own model.

One workload (``train``), four kinds of case (the ``kind`` parameter):

- ``create`` (seed 001 ex1): building the model (``op=create``) or ``clone_model`` of it
  (``op=clone``) inside the device scope, timed by ``timing.measure``: the first call
  includes Keras/TensorFlow start-up on that device, the samples are the steady cost.
- ``loop`` (seed 001 ex2/ex3, seed 002 with a custom loop): the seed's loop as written —
  ``tf.function`` + ``GradientTape`` step, ``.numpy()`` after every step, over numpy slices
  (ex2) or a ``tf.data`` pipeline (ex3, seed 002) — every step timed on its own
  (``steps.time_loop``): first step apart, the other steps the steady samples.
- ``fit``: the same models and data through ``model.fit``, every batch timed by
  ``whichdevice.keras.StepTimer(sync=True)``; the first epoch is the warm-up, later
  epochs the steady samples; epoch wall times go into the metrics.
- ``steady``: one train step on a batch already on the device, timed in synchronized
  blocks by ``timing.measure`` — with ``sync=each`` the loss is read back (``.numpy()``)
  after every step as the seeds do, with ``sync=none`` only at the end of a block. Run
  over batch sizes it is the batch sweep; each vs none is the cost of syncing every step.

Metric ``samples_per_step`` (= the batch) turns step times into samples/s.

**Interleaved**: in one child the ``steady`` cases of the same model and settings
(the batch sweep and sync each/none: what the batch fix and the sync claim compare) are one
group (``workloads.interleave_groups``): :func:`prepare` builds each member's step and warms
it up (tracing in its first call, ``first_call_s`` per member as before), :func:`time_group`
times their blocks in turns (``core.timing.interleave_blocks``), so a machine slowing down
during the sweep slows every batch size alike. Metrics ``interleaved_with`` (the other
members) and ``interleave_rounds`` (turns taken) say so. The fit cases (steps_per_execution,
jit_compile) are not interleaved: a sample there is an epoch of ``model.fit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from whichdevice.frameworks.contracts import Framework, Training

import dataclasses
import importlib
import math

from whichdevice.core.records import CaseSpec, scalar_int
from whichdevice.core.steps import raw_from_steps, time_loop
from whichdevice.core.timing import (
    RawTiming,
    TimingPolicy,
    abba_turns,
    interleave_blocks,
    measure,
    take_turns,
    turns_timing,
    warm_up,
)
from whichdevice.frameworks.common.casemodel import CaseModel
from whichdevice.workloads import dispatch
from whichdevice.workloads.epochturns import EpochTurns
from whichdevice.workloads.fixes import BATCH, JIT_COMPILE, PRECISION_KIND, STEPS_PER_EXECUTION, SYNC

# Kinds beyond create, loop, fit and steady, each in its own module with the same run_case signature.
_OTHER_KINDS = {
    "placement": "whichdevice.workloads.placement",
    "nosync": "whichdevice.workloads.pitfalls",
    "pitfall": "whichdevice.workloads.pitfalls",  # a framework's own pitfall kinds
    PRECISION_KIND: "whichdevice.workloads.precision",
}
SYNC_MODES = ("each", "none")
DEFAULT_BATCHES: tuple[int, ...] = tuple(2**k for k in range(3, 14))  # 8 ... 8192
QUICK_BATCHES: tuple[int, ...] = (8, 32, 128, 512, 2048, 8192)
MAX_BATCH = 65536

# The seeds' runs: (example, model, samples, batch, data, epochs). ``data``: numpy slices
# (ex2), tf.data batch+prefetch (ex3), tf.data shuffle+batch+prefetch (seed 002).
SEED_RUNS = (
    ("ex2", "seed001", 1000, 10, "numpy", 1),
    ("ex3", "seed001", 100_000, 32, "tfdata", 1),
    ("seed002", "seed002", 10_000, 512, "tfdata_shuffle", 3),
)
# --quick: ex3 on 10 000 samples instead of 100 000 (same batch, same pipeline).
QUICK_SAMPLES = {"ex3": 10_000}
FIT_EPOCHS = {"ex2": 2, "ex3": 2, "seed002": 3}  # seed 002 fits 3 epochs; 2 = one warm, one steady

# The case parameters a seed case reads that catalogue fixes vary, as the catalogue names them.
_BATCH, _SPE, _SYNC = BATCH.param, STEPS_PER_EXECUTION.param, SYNC.param
# The metric a fit records of what jit_compile="auto" resolved to (the catalogue's default_metric).
_JIT_RAN = JIT_COMPILE.default_metric


def _steps(samples: int, batch: int) -> int:
    return math.ceil(samples / batch)


def build_cases(
    framework: str,
    device: str,
    *,
    quick: bool,
    batches,
    parts,
    user: dict | None = None,
    samples: int | None = None,
    user_batch: int = 32,
) -> list[CaseSpec]:
    """Cases for one device, cheapest first (creation must be the first thing the child does,
    so its first call carries the device's start-up). ``parts``: subset of create, loop,
    fit, sweep, sync. ``user``: the user's model parameters (replaces the seeds' models)."""

    def spec(**params) -> CaseSpec:
        return CaseSpec(workload="train", framework=framework, device=device, params={**(user or {}), **params})

    cases: list[CaseSpec] = []
    sweep_model = "user" if user else "seed001"
    if "create" in parts:
        for op in ("create", "clone"):
            cases.append(spec(kind="create", model=sweep_model, example="ex1" if not user else "user", op=op))
    runs = (
        [("user", "user", samples or 10_000, user_batch, "tfdata", 2)]
        if user
        else [(ex, m, QUICK_SAMPLES.get(ex, n) if quick else n, b, d, e) for ex, m, n, b, d, e in SEED_RUNS]
    )
    cases += _run_cases(spec, runs, parts, user is not None)
    sync_batches = sorted({10, 512} if not user else {user_batch})
    return cases + _steady_cases(spec, parts, sweep_model, sorted(batches), sync_batches)


def _run_cases(spec: Callable[..., CaseSpec], runs: list, parts, user: bool) -> list[CaseSpec]:
    """The whole runs: the custom loop's (``loop``), then ``model.fit``'s (``fit``)."""
    cases: list[CaseSpec] = []
    if "loop" in parts:
        for ex, m, n, b, d, e in runs:
            cases.append(spec(kind="loop", model=m, example=ex, samples=n, batch=b, data=d, epochs=e))
    if "fit" in parts:
        for ex, m, n, b, d, e in runs:
            epochs = 2 if user else FIT_EPOCHS[ex]
            cases.append(spec(kind="fit", model=m, example=ex, samples=n, batch=b, data=d, epochs=epochs))
    return cases


def _steady_cases(
    spec: Callable[..., CaseSpec], parts, model: str, batches: list, sync_batches: list
) -> list[CaseSpec]:
    """The steady steps: the sync modes at ``sync_batches`` (``sync`` without ``sweep``), or
    the batch sweep (in every sync mode with ``sync``)."""
    cases: list[CaseSpec] = []
    if "sync" in parts and "sweep" not in parts:
        for b in sync_batches:
            for s in SYNC_MODES:
                cases.append(spec(kind="steady", model=model, batch=b, sync=s))
    if "sweep" in parts:
        for s in SYNC_MODES if "sync" in parts else ("none",):
            for b in batches:
                cases.append(spec(kind="steady", model=model, batch=b, sync=s))
    return cases


# ---------------- inside the child ----------------


def _training(fw: Framework) -> Training:
    from whichdevice import frameworks

    return frameworks.part(fw.name, "training")


# The user's script is sampled over its whole process (imports, set-up and the timed steps: its
# steps are timed inside it, out of this process's reach), tens of seconds: a coarser period keeps
# the record small while the window's mean, which says whether other programs were busy, stays.
SCRIPT_TELEMETRY_PERIOD_S = 0.5


def _with_telemetry(policy: TimingPolicy, measure: Callable[[], list[Any]]) -> list[Any]:
    """``measure``'s (Timing, metrics) results, each with the utilization window of the script
    process that gave it, as any other case has its steady window's: without one, the first
    screen cannot tell a spread caused by other programs from the script's own (an exception in
    the list, a member that failed, stays as it is)."""
    sampler = _script_sampler(policy)
    if sampler is not None:
        sampler.start()
    try:
        got = measure()
    finally:
        telemetry = sampler.stop() if sampler is not None else None
    if telemetry is None:
        return got
    return [(g[0].model_copy(update={"telemetry": telemetry}), *g[1:]) if isinstance(g, tuple) else g for g in got]


def _script_sampler(policy: TimingPolicy) -> Any:
    if policy.window is None:
        return None
    try:
        return policy.window(period_s=SCRIPT_TELEMETRY_PERIOD_S)
    except TypeError:  # a window factory that takes no period: its own
        return policy.window()


def run_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[RawTiming, dict]:
    if spec.params.get("script"):  # the user's own script (diagnose SCRIPT.py)
        from whichdevice.workloads import script

        return _with_telemetry(policy, lambda: [script.run_case(spec, fw, policy, overhead_s)])[0]
    kind = spec.params["kind"]
    if kind in _OTHER_KINDS:  # kinds measured by their own modules (placement, pitfalls, precision)
        return importlib.import_module(_OTHER_KINDS[kind]).run_case(spec, fw, policy, overhead_s)
    runners = {"create": _run_create, "loop": _run_loop, "fit": _run_fit, "steady": _run_steady}
    return dispatch(runners, kind, "train case kind")(spec, fw, policy, overhead_s)


def _run_create(spec, fw, policy, overhead_s):
    training = _training(fw)
    m = CaseModel(spec.params, training)
    scope = lambda: fw.placement.scope(spec.device)  # noqa: E731
    if spec.params["op"] == "create":

        def fn():
            with scope():
                return m.build()
    else:
        with scope():
            model = m.build()

        if hasattr(training, "clone_model"):
            clone = training.clone_model
        else:  # a Keras backend: Keras's own clone
            from whichdevice.frameworks.common import keras as keras_common

            clone = keras_common.clone_model

        def fn():
            with scope():
                return clone(model)

    raw = measure(fn, sync=fw.sync.sync, policy=policy, overhead_s=overhead_s)
    return raw, {}


def _run_loop(spec, fw, policy, overhead_s):
    training = _training(fw)
    m = CaseModel(spec.params, training)
    n, b, epochs = int(spec.params["samples"]), int(spec.params[_BATCH]), int(spec.params["epochs"])
    data = str(spec.params["data"])
    times: list[float] = []
    epoch_s: list[float] = []
    with fw.placement.scope(spec.device):
        model = m.build()
        step = m.train_step(training, model)
        inputs = m.dataset(training, n, b, data)
        if data == "numpy":
            x, y = inputs
            # Seed 001 ex2: for i in range(100): batch_index = (i*10) % 1000; slice; step; .numpy()
            batches = [
                (x[(i * b) % n : (i * b) % n + b], y[(i * b) % n : (i * b) % n + b]) for i in range(_steps(n, b))
            ]
        else:
            batches = inputs
        for _ in range(epochs):
            t = time_loop(batches, lambda xy: training.read_back(step(xy[0], xy[1])), sync=fw.sync.sync)
            times.extend(t)
            epoch_s.append(sum(t))
    raw = raw_from_steps(times, warmup_steps=1, overhead_s=overhead_s)
    metrics = {
        "samples_per_step": float(b),
        "steps": float(len(times)),
        "loop_s": float(sum(times)),
        "epochs": float(epochs),
    }
    metrics.update({f"epoch_{i + 1}_s": s for i, s in enumerate(epoch_s)})
    return raw, metrics


def _run_fit(spec, fw, policy, overhead_s):
    from whichdevice.frameworks.common.steptimer import StepTimer

    n, b, epochs = int(spec.params["samples"]), int(spec.params[_BATCH]), int(spec.params["epochs"])
    with fw.placement.scope(spec.device):
        model, inputs = _built_for_fit(spec, fw)
        # Warm-up = the whole first epoch (tracing in its first batch, pipeline start-up).
        timer = StepTimer(None, warmup_batches=_steps(n, b), sync=True, batch_size=b, verbose=0, mark_steps=False)
        _fit(model, inputs, spec, epochs, [timer, *_trace_callbacks(spec, fw)])
    spe = timer.batch_epochs.count(0)
    raw = raw_from_steps(timer.batch_times_s, warmup_steps=spe, overhead_s=overhead_s)
    metrics = timer.metrics()
    # What jit_compile="auto" resolved to on this backend and device (fair-comparison fact).
    metrics[_JIT_RAN] = float(bool(getattr(model, "jit_compile", False)))
    k = int(spec.params.get(_SPE, 1))
    if k > 1:
        # Keras calls batch callbacks once per execution of k steps: each timed "batch" carries k batches.
        metrics["samples_per_step"] = float(b * k)
    return raw, metrics


def _built_for_fit(spec: CaseSpec, fw: Framework):
    """The case's model, built and compiled for ``model.fit``, and its inputs (``data``: numpy
    arrays or a dataset); call inside the device's scope."""
    training = _training(fw)
    m = CaseModel(spec.params, training)
    model = m.build()
    m.compile_for_fit(model)
    return model, m.dataset(
        training, scalar_int(spec.params["samples"]), scalar_int(spec.params[_BATCH]), str(spec.params["data"])
    )


def _fit(model, inputs, spec: CaseSpec, epochs: int, callbacks: list) -> None:
    """``model.fit`` on the case's inputs as the seeds call it (arrays with ``batch_size``, or
    an already batched dataset); call inside the device's scope."""
    if spec.params["data"] == "numpy":
        x, y = inputs
        model.fit(x, y, batch_size=scalar_int(spec.params[_BATCH]), epochs=epochs, verbose=0, callbacks=callbacks)
    else:
        model.fit(inputs, epochs=epochs, verbose=0, callbacks=callbacks)


def _trace_callbacks(spec, fw) -> list:
    """``--trace DIR``: profile the fit's steady epochs (2..) into DIR/<device>-<run>."""
    root = spec.params.get("trace_dir")
    if not root:
        return []
    import re
    from pathlib import Path

    from whichdevice import frameworks

    profiler = frameworks.part(fw.name, "profiler")
    label = "-".join(str(spec.params.get(k)) for k in ("example", "kind", _BATCH) if spec.params.get(k) is not None)
    sub = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{spec.device}-{label}")
    return [profiler.steady_trace_callback(Path(str(root)) / sub)]


def steady_step(spec, fw):
    """The case's train step and one batch (``batch`` param) already on its device, built
    inside the device scope: ``(training module, step, xb, yb)``. Shared by the steady
    cases here and the pitfalls workload."""
    training = _training(fw)
    m = CaseModel(spec.params, training)
    with fw.placement.scope(spec.device):
        step, x, y = m.step_and_batch(training, int(spec.params[_BATCH]))
        xb, yb = training.on_device(x, y, fw.placement.scope(spec.device))
    return training, step, xb, yb


def same_block_size(warms: list) -> list:
    """The two sides of one fix (the same work, one setting changed) time
    blocks of as many calls each, the larger of their warm-ups' choices: each side's block size
    follows its own last warm-up call, and on the loaded 2-core machine one preempted call gave
    one side 1 call a block and the other 6 — and the 6-call blocks, preempted more often, ran
    2.5x slower per call on identical work (an MLP's set_to_none pair, in the first PyTorch runs)."""
    number = max(w.number for w in warms)
    return [dataclasses.replace(w, number=number) for w in warms]


def _steady_fn(spec, fw):
    """The steady case's callable (one train step on its batch; with ``sync=each`` the loss
    read back as the seeds do) and its metrics."""
    b = int(spec.params[_BATCH])
    each = spec.params[_SYNC] == "each"
    training, step, xb, yb = steady_step(spec, fw)

    def fn():
        with fw.placement.scope(spec.device):
            out = step(xb, yb)
        return training.read_back(out) if each else out

    metrics = {"samples_per_step": float(b)}
    if "fix" in spec.params:  # one side of a fix pair (time_group: same_block_size)
        metrics["ab_pair"] = 1.0
    return fn, metrics


def _run_steady(spec, fw, policy, overhead_s):
    fn, metrics = _steady_fn(spec, fw)
    raw = measure(fn, sync=fw.sync.sync, policy=policy, overhead_s=overhead_s)
    return raw, metrics


def prepare(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float):
    """One member of an interleaved group: a steady case built, traced and warmed up (its own
    telemetry window after the warm-up when the policy has one); or a fit case (:class:`_Fit`)
    built, compiled and fitted for its warm-up epoch; or a
    case of the user's script (``workloads/script.py``: its process is started in ``time_group``)."""
    if spec.params.get("script"):
        return spec
    kind = spec.params.get("kind")
    if kind == "fit":
        return _Fit(spec, fw)
    if kind != "steady":
        raise ValueError(f"only steady and fit train cases are timed interleaved, not {kind!r}")
    fn, metrics = _steady_fn(spec, fw)
    return warm_up(fn, sync=fw.sync.sync, policy=policy, overhead_s=overhead_s), metrics


class _Fit(EpochTurns):
    """One ``model.fit`` variant of an interleaved group (steps_per_execution, jit_compile):
    built and compiled, its first epoch fitted as the warm-up (tracing, XLA compilation, the
    pipeline's start), then one ``fit(epochs=1)`` per turn (:meth:`epoch`), each turn's batches
    timed by a fresh :class:`whichdevice.keras.StepTimer` (the train function, compiled once,
    is reused by every later ``fit`` call)."""

    def __init__(self, spec: CaseSpec, fw: Framework):
        self.spec, self.fw = spec, fw
        self.b = scalar_int(spec.params[_BATCH])
        with fw.placement.scope(spec.device):
            self.model, self.inputs = _built_for_fit(spec, fw)
        self.warmup_s = self.epoch()

    def epoch(self) -> list[float]:
        """One epoch fitted; its batches' times (one per execution of steps_per_execution steps)."""
        from whichdevice.frameworks.common.steptimer import StepTimer

        timer = StepTimer(None, warmup_batches=1, sync=True, batch_size=self.b, verbose=0, mark_steps=False)
        with self.fw.placement.scope(self.spec.device):
            _fit(self.model, self.inputs, self.spec, 1, [timer])
        return list(timer.batch_times_s)

    def metrics(self, turns: int) -> dict[str, float]:
        k = scalar_int(self.spec.params.get(_SPE, 1))
        return {
            "samples_per_step": float(self.b * k),  # each timed batch runs k batches of b
            "steps_per_epoch": float(len(self.warmup_s)),
            # What jit_compile="auto" resolved to on this backend and device (fair-comparison fact).
            _JIT_RAN: float(bool(getattr(self.model, "jit_compile", False))),
            "interleave_rounds": float(turns),
        }


def _time_fits(prepared: list[EpochTurns], overhead_s: float, steady_epochs: int, before=None) -> list:
    """The fits' steady epochs in two halves, A B C | C B A (first order shuffled, seeded), as
    the input-pipeline loops: one epoch per turn, so slow drift over the group's time hits every
    variant alike (an epoch cannot be cut in blocks: Keras runs it whole). ``steady_epochs``
    (the case's epochs minus the warm-up one) turns per member."""
    n = len(prepared)
    samples, errors = take_turns(n, abba_turns(n, steady_epochs), lambda _k, i: prepared[i].epoch(), before)
    out: list = []
    for i, f in enumerate(prepared):
        if errors[i] is not None:
            out.append(errors[i])
            continue
        metrics = {**f.metrics(steady_epochs), "interleaved_with": float(n - 1)}
        out.append((turns_timing(f.warmup_s, samples[i], overhead_s), metrics))
    return out


def time_group(prepared, fw, policy, overhead_s, before=None) -> list:
    """The prepared members timed together: fits epoch by epoch in two halves
    (:func:`_time_fits`), steady steps block by block in turns (``interleave_blocks``); one
    ``(Timing, metrics)`` per member, or the exception its turns raised (the others go on)."""
    if prepared and isinstance(prepared[0], CaseSpec):  # the user's script: one process for the group
        from whichdevice.workloads import script

        return _with_telemetry(policy, lambda: script.time_group(prepared, fw, policy, overhead_s, before))
    if prepared and isinstance(prepared[0], EpochTurns):
        epochs = scalar_int(prepared[0].spec.params.get("epochs", 2))
        return _time_fits(prepared, overhead_s, max(1, epochs - 1), before)
    warms = [w for w, _ in prepared]
    if prepared and all("ab_pair" in m for _, m in prepared):
        warms = same_block_size(warms)
    timings = interleave_blocks(warms, sync=fw.sync.sync, policy=policy, overhead_s=overhead_s, before=before)
    out: list = []
    for (_, metrics), t in zip(prepared, timings):
        if isinstance(t, BaseException):
            out.append(t)
            continue
        out.append(
            (t, {**metrics, "interleaved_with": float(len(prepared) - 1), "interleave_rounds": float(len(t.samples_s))})
        )
    return out
