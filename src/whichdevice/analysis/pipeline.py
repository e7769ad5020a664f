"""Input-pipeline analysis of a ``pipeline`` record: pure functions, records in, tables out.

Per device, from the three measurements of every variant (workloads/pipeline.py):

- **waiting for input**: the share of each training-loop step spent before the batch was on
  the device (``input_wait_s / loop_s`` over the steady steps), classified with XProf's
  thresholds (:func:`classify_input_bound`);
- **speedups** of every variant over the first one (serial ``map``), for the pipeline alone
  (seconds per batch) and for the whole loop (seconds per step), with their spread
  (analysis/compare.py: a ratio of medians, its range from the quartiles, "no significant
  difference" when the interquartile ranges overlap);
- **stage costs**: seconds per example of each stage measured in isolation, minus the
  consumer's own floor; the slowest stage is named (:func:`slowest_stage`);
- **where the input work runs and whether the device idles**, from the loop's telemetry.

Step picture (one training step, as ``both`` times it)::

    |<- waiting for input ->|<------ computing (train step) ------>|
    t0: next(iterator)      t1: batch on the device                t2: step done, synced
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from whichdevice.analysis.compare import Comparison, compare, process_sd
from whichdevice.analysis.values import as_int
from whichdevice.core.records import known
from whichdevice.core.records import CaseResult, RunRecord, Scalar, Timing
from whichdevice.core.telemetry import TelemetrySummary
from whichdevice.analysis.utilization import gpu_underfed, summarize
from whichdevice.frameworks.common.ladders import TF_DATA, Ladder
from whichdevice.workloads.fixes import BATCH

# XProf's input-pipeline thresholds, openxla/xprof
# xprof/convert/op_stats_to_input_pipeline_analysis.cc: input >= 20 % of the step time is
# "HIGHLY input-bound", >= 5 % "MODERATELY input-bound", below that not input-bound.
HIGHLY_INPUT_BOUND_PERCENT = 20.0
MODERATELY_INPUT_BOUND_PERCENT = 5.0

HIGHLY, MODERATELY, NOT = "HIGHLY", "MODERATELY", "NOT"


def input_wait_percent(input_wait_s: float, step_s: float) -> float:
    """Share of the steps' time spent waiting for input, in percent (0 when nothing ran)."""
    if step_s <= 0:
        return 0.0
    return 100.0 * min(max(input_wait_s, 0.0), step_s) / step_s


def classify_input_bound(wait_percent: float) -> str:
    """XProf's classification of a step-time share spent waiting for input:
    ``HIGHLY`` (>= 20 %), ``MODERATELY`` (>= 5 %) or ``NOT`` input-bound."""
    if wait_percent >= HIGHLY_INPUT_BOUND_PERCENT:
        return HIGHLY
    if wait_percent >= MODERATELY_INPUT_BOUND_PERCENT:
        return MODERATELY
    return NOT


def borderline(rounds: list[float]) -> bool:
    """True when the share in each round (fresh process) falls on both sides of an XProf class
    boundary: the class is then borderline."""
    return len(rounds) >= 2 and len({classify_input_bound(r) for r in rounds}) > 1


def round_values(metrics: dict[str, float], key: str) -> list[float]:
    """A metric's value in each round: ``key`` (round 1), then ``round2:key``, ``round3:key``...
    (measure/session.py keeps later rounds' metrics under these names)."""
    out = [metrics[key]] if key in metrics else []
    i = 2
    while f"round{i}:{key}" in metrics:
        out.append(metrics[f"round{i}:{key}"])
        i += 1
    return out


@dataclass(frozen=True)
class StageCost:
    """One stage in isolation: seconds of its own work per example (the consumer's floor
    subtracted). ``below_floor``: the stage cost less than the spread of the floor."""

    stage: str
    seconds_per_example: float
    floor_seconds_per_example: float
    below_floor: bool

    @property
    def examples_per_s(self) -> float | None:
        return 1.0 / self.seconds_per_example if self.seconds_per_example > 0 else None


def stage_cost(result: CaseResult) -> StageCost | None:
    """The isolated cost of one ``stage`` case, or None when it failed."""
    if result.timing is None:
        return None
    m = result.metrics
    n = m.get("examples_per_call", 1.0) or 1.0
    floor = m.get("floor_s", 0.0)
    spread = max(m.get("floor_q3_s", floor) - m.get("floor_q1_s", floor), 0.0)
    own = result.timing.median_s - floor
    return StageCost(str(result.spec.params.get("stage")), max(own, 0.0) / n, floor / n, below_floor=own <= spread)


def slowest_stage(costs: list[StageCost]) -> StageCost | None:
    """The stage with the most seconds per example (the pipeline's throughput limit when the
    stages run one after the other); None without stages."""
    return max(costs, key=lambda c: c.seconds_per_example, default=None)


def speedup(
    baseline_name: str,
    baseline: Timing | None,
    other_name: str,
    other: Timing | None,
    spread: float | None = None,
) -> Comparison | None:
    """``other`` against ``baseline`` (same unit: seconds per batch or per step); > 1 faster.
    ``spread``: the record's between-process spread (compare.process_sd)."""
    if baseline is None or other is None:
        return None
    return compare(baseline_name, baseline, other_name, other, process_sd=spread)


@dataclass(frozen=True)
class VariantRow:
    variant: str
    batch: int
    pipeline: Timing | None  # seconds per batch, pipeline alone
    loop: Timing | None  # seconds per step, pipeline + model
    wait_percent: float | None  # THE input-bound figure: share of the loop step waiting for the batch
    input_bound: str | None
    wait_median_s: float | None
    pipeline_speedup: Comparison | None  # vs the first variant
    loop_speedup: Comparison | None
    failed: list[str] = field(default_factory=list)
    wait_percent_rounds: list[float] = field(default_factory=list)  # the share in each round
    not_measured: str | None = None  # why this variant was not measured on this device (GPU only)

    @property
    def examples_per_s(self) -> float | None:
        return self.batch / self.pipeline.median_s if self.pipeline and self.pipeline.median_s > 0 else None

    @property
    def borderline(self) -> bool:
        """The share in each round falls on both sides of a class boundary (:func:`borderline`)."""
        return borderline(self.wait_percent_rounds)

    @property
    def wait_s(self) -> float | None:
        """Median step's waiting part: the step median times the wait share."""
        if self.loop is None or self.wait_percent is None:
            return None
        return self.loop.median_s * self.wait_percent / 100.0

    @property
    def compute_s(self) -> float | None:
        return None if self.loop is None or self.wait_s is None else self.loop.median_s - self.wait_s


GpuState = Literal["waits_for_input", "underused", "busy", "unavailable"]


@dataclass(frozen=True)
class WorkPlace:
    """Where the input work and the train step ran on a device, with the utilization sampled
    during the first measured loop (None: no telemetry). ``gpu_state`` (GPU devices with
    telemetry): the GPU waited for input (under-used while the loop is input-bound), was
    under-used although input was not the limit, was kept busy, or its utilization was not
    available. ``loop``: the variant whose loop was sampled."""

    kind: str  # cpu | gpu
    loop: str | None
    telemetry: TelemetrySummary | None
    gpu_state: GpuState | None
    n_cores: int | None


@dataclass(frozen=True)
class Overlap:
    """The model step alone and the first variant's pipeline alone, per batch, against the
    measured loop step: perfect overlap cannot beat the slower of the two, no overlap is their sum."""

    model_s: float
    pipeline_s: float
    loop_s: float

    @property
    def best_s(self) -> float:
        return max(self.model_s, self.pipeline_s)

    @property
    def serial_s(self) -> float:
        return self.model_s + self.pipeline_s


@dataclass(frozen=True)
class DeviceReport:
    """A device's pipeline analysis. ``first``: the first variant with a measured loop and wait
    share; ``fastest``: the variant with the fastest loop when it is not ``first``, and
    ``fastest_waits_more`` when its wait share is nevertheless higher (its steps are shorter);
    ``pyfunc_vs_tfops``: the same preprocessing in TF ops against tf.py_function (pipeline alone)."""

    device: str
    kind: str  # cpu | gpu
    baseline: str | None  # the first variant
    model: Timing | None
    rows: list[VariantRow]
    stages: list[StageCost]
    slowest: StageCost | None
    first: VariantRow | None = None
    fastest: VariantRow | None = None
    fastest_waits_more: bool = False
    overlap: Overlap | None = None
    pyfunc_vs_tfops: Comparison | None = None
    work: WorkPlace | None = None
    ladder: Ladder = TF_DATA  # the loader's variants and words (frameworks/common/ladders.py)


def _ok(results: list[CaseResult], **params: Scalar) -> CaseResult | None:
    for r in results:
        if all(r.spec.params.get(k) == v for k, v in params.items()):
            return r
    return None


def _variants(results: list[CaseResult]) -> list[str]:
    seen: dict[str, None] = {}
    for r in results:
        if r.spec.params.get("part") in ("pipeline", "both"):
            seen.setdefault(str(r.spec.params.get("variant")), None)
    return list(seen)


def variant_rows(results: list[CaseResult], spread: float | None = None) -> list[VariantRow]:
    """One row per variant (in the record's order), speedups over the first variant."""
    names = _variants(results)
    rows: list[VariantRow] = []
    base_pipe = base_loop = None
    for i, v in enumerate(names):
        pipe, loop = _ok(results, part="pipeline", variant=v), _ok(results, part="both", variant=v)
        failed = [f"{r.spec.params.get('part')}: {r.error}" for r in (pipe, loop) if r is not None and r.status != "ok"]
        pt = pipe.timing if pipe is not None else None
        lt = loop.timing if loop is not None else None
        wait = None
        per_round: list[float] = []
        if lt is not None and loop is not None and "input_wait_s" in loop.metrics:
            waits = round_values(loop.metrics, "input_wait_s")
            loops = round_values(loop.metrics, "loop_s") or [sum(lt.samples_s)]
            if len(loops) != len(waits):
                waits, loops = waits[:1], loops[:1]
            per_round = [input_wait_percent(w, t) for w, t in zip(waits, loops)]
            wait = input_wait_percent(sum(waits), sum(loops))  # pooled over the rounds
        either = pipe or loop
        batch = as_int(either.spec.params.get(BATCH.param, 0)) if either else 0
        if loop is not None and loop.metrics.get("examples_per_step"):
            batch = int(loop.metrics["examples_per_step"])
        if i == 0:
            base_pipe, base_loop = pt, lt
        rows.append(
            VariantRow(
                variant=v,
                batch=batch,
                pipeline=pt,
                loop=lt,
                wait_percent=wait,
                input_bound=classify_input_bound(wait) if wait is not None else None,
                wait_median_s=loop.metrics.get("input_wait_median_s") if loop is not None else None,
                pipeline_speedup=speedup(names[0], base_pipe, v, pt, spread) if i else None,
                loop_speedup=speedup(names[0], base_loop, v, lt, spread) if i else None,
                failed=failed,
                wait_percent_rounds=per_round if len(per_round) >= 2 else [],
            )
        )
    return rows


def _work_place(device: str, kind: str, measured: list[VariantRow], n_cores: int | None) -> WorkPlace | None:
    """Where the input work and the train step run on ``device``, with what the utilization
    sampled during the first measured loop says (None: a CPU with no telemetry)."""
    loop_t = next((r.loop.telemetry for r in measured if r.loop is not None and r.loop.telemetry is not None), None)
    where = measured[0].variant if measured else None
    s = summarize(loop_t) if loop_t is not None else None
    if kind != "gpu":
        return None if s is None else WorkPlace(kind, where, s, None, n_cores)
    state: GpuState | None = None
    if s is not None:
        under = gpu_underfed(s)
        if under is None:
            state = "unavailable"
        elif under and measured[0].input_bound != NOT:
            state = "waits_for_input"
        else:
            state = "underused" if under else "busy"
    return WorkPlace(kind, where, s, state, n_cores)


def _fastest(measured: list[VariantRow]) -> tuple[VariantRow | None, bool]:
    """The variant with the fastest loop when it is not the first, and whether its wait share
    is higher than the first's although its loop is faster."""
    if not measured:
        return None, False
    first = measured[0]
    best = min(measured, key=lambda r: known(r.loop, "loop timing").median_s)
    if best is first:
        return None, False
    waits_more = (
        best.wait_percent is not None
        and first.wait_percent is not None
        and best.wait_percent > first.wait_percent
        and best.wait_s is not None
        and first.wait_s is not None
    )
    return best, waits_more


def _pyfunc_vs_tfops(rows: list[VariantRow], ladder: Ladder = TF_DATA) -> Comparison | None:
    """The same preprocessing in Python against in the framework's ops (``ladder.python_pair``:
    TensorFlow's tf.py_function vs TF ops), pipeline alone."""
    if ladder.python_pair is None:
        return None
    by_name = {r.variant: r for r in rows}
    py, ops = by_name.get(ladder.python_pair[0]), by_name.get(ladder.python_pair[1])
    py_name, ops_name = ladder.python_names
    if py and ops and py.pipeline and ops.pipeline:
        return known(speedup(ops_name, ops.pipeline, py_name, py.pipeline), "comparison")
    return None


def record_ladder(record: RunRecord) -> Ladder:
    """The ladder of the framework a pipeline record measured (TensorFlow's for a record
    without results or of an unknown framework)."""
    from whichdevice import frameworks

    fw = next((r.spec.framework for r in record.results if r.spec.workload == "pipeline"), "tensorflow")
    if fw not in frameworks.FRAMEWORKS:
        return TF_DATA
    return getattr(frameworks.env_module(fw), "PIPELINE", TF_DATA)


def _not_measured(record: RunRecord, device: str, rows: list[VariantRow], ladder: Ladder) -> list[VariantRow]:
    """``rows`` with a row for every GPU-only variant asked for (the record's ``variants``) that
    this CPU device did not run, in ladder order: "not measured here (no GPU)" when the run saw
    no GPU, else "not measured on the CPU (GPU only)"."""
    opt = record.options.get("variants")
    asked = [str(v) for v in opt] if isinstance(opt, list) else []
    have = {r.variant for r in rows}
    missing = [v for v in asked if v in ladder.gpu_only and v not in have]
    if not missing or device.startswith("GPU"):
        return rows
    any_gpu = any(s.device.kind == "gpu" for s in record.sessions)
    where = "on the CPU (GPU only" if any_gpu else "here (no GPU"
    extra = {
        v: VariantRow(
            v, 0, None, None, None, None, None, None, None, not_measured=f"not measured {where}: {ladder.gpu_only[v]})"
        )
        for v in missing
    }
    order = {v: i for i, v in enumerate(ladder.variants)}
    return sorted([*rows, *extra.values()], key=lambda r: order.get(r.variant, len(order)))


def analyze_device(record: RunRecord, device: str) -> DeviceReport:
    results = [r for r in record.results if r.spec.device == device and r.spec.workload == "pipeline"]
    ladder = record_ladder(record)
    rows = _not_measured(record, device, variant_rows(results, process_sd(record)), ladder)
    model_r = _ok(results, part="model")
    model = model_r.timing if model_r is not None else None
    stages = [c for c in (stage_cost(r) for r in results if r.spec.params.get("part") == "stage") if c is not None]
    slowest = slowest_stage(stages)
    kind = "gpu" if device.startswith("GPU") else "cpu"
    session = next((s for s in record.sessions if s.device.name == device), None)
    n_cores = record.machine.cpu_cores_logical if session is None or kind == "cpu" else None
    measured = [r for r in rows if r.loop is not None and r.wait_percent is not None]
    first = measured[0] if measured else None
    fastest, waits_more = _fastest(measured)
    overlap = None
    if first is not None and model is not None and first.pipeline is not None:
        overlap = Overlap(model.median_s, first.pipeline.median_s, known(first.loop, "loop timing").median_s)
    return DeviceReport(
        device=device,
        kind=kind,
        baseline=rows[0].variant if rows else None,
        model=model,
        rows=rows,
        stages=stages,
        slowest=slowest,
        first=first,
        fastest=fastest,
        fastest_waits_more=waits_more,
        overlap=overlap,
        pyfunc_vs_tfops=_pyfunc_vs_tfops(rows, ladder),
        work=_work_place(device, kind, measured, n_cores),
        ladder=ladder,
    )


PER_STEP_PARTS = ("pipeline", "both")


def block_timed(record: RunRecord) -> RunRecord:
    """The record without its per-step cases (``pipeline``, ``both``): the cases whose
    samples are block means, to which the usual noise warning (IQR/median > 10 %) applies."""
    keep = [r for r in record.results if r.spec.params.get("part") not in PER_STEP_PARTS]
    return record.model_copy(update={"results": keep})


def step_jitter(record: RunRecord) -> tuple[float, float] | None:
    """The per-step cases' spread (IQR/median, lowest and highest), which is step-to-step
    jitter (one sample = one batch, not a block mean), so it is reported once instead of
    warned about per case. None without such cases."""
    rel = [
        r.timing.rel_iqr
        for r in record.results
        if r.timing is not None and r.spec.params.get("part") in PER_STEP_PARTS and len(r.timing.samples_s) >= 2
    ]
    if not rel:
        return None
    return min(rel), max(rel)


def analyze_pipeline(record: RunRecord) -> list[DeviceReport]:
    """One report per device, in the record's order."""
    devices = list(dict.fromkeys(r.spec.device for r in record.results if r.spec.workload == "pipeline"))
    return [analyze_device(record, d) for d in devices]
