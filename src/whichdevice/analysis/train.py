"""Training records -> warm-up vs steady per run, GPU vs CPU, break-even, sync cost, batch sweep.

Layout follows the record's parameters (STYLE.md principle 3): results are grouped by every
parameter except the device; ``kind`` says which part of the report a group belongs to
(``create``; ``loop`` / ``fit`` / ``callback`` runs; ``steady`` sync-cost pairs and the batch
sweep, which reuses ``analysis.sweep.analyze_sweep`` with ``x = batch``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from whichdevice.analysis.compare import Comparison, compare, process_sd
from whichdevice.analysis.sweep import DeviceCell, Table, analyze_sweep, device_order, several_frameworks
from whichdevice.analysis.warmup import BreakEven, EpochSummary, break_even, summarize_epochs
from whichdevice.core.records import CaseResult, RunRecord, Scalar, Timing
from whichdevice.workloads.fixes import BATCH, SYNC, params_of

# The steady cases' parameters a sync pair and the batch sweep vary, as the catalogue names them.
_BATCH, _SYNC = BATCH.param, SYNC.param

RUN_KINDS = ("loop", "fit", "callback")


@dataclass(frozen=True)
class RunCell(DeviceCell):
    samples_per_s: float | None = None  # steady: batch / median step
    epochs: EpochSummary | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    failure: str | None = None  # the failure kind (failures.py) of a failed run


@dataclass(frozen=True)
class RunRow:
    params: dict[str, object]  # every parameter but the device
    cells: dict[str, RunCell]
    comparisons: dict[str, Comparison]  # per GPU device, steady step vs the CPU's
    break_even: dict[str, BreakEven]  # per GPU device; {"GPU": no_gpu} when none was measured
    framework: str | None = None  # the framework the row's cases ran in


@dataclass(frozen=True)
class SyncCost:
    """The same steady step with the loss read back every step (``each``) and without."""

    device: str
    params: dict[str, object]  # batch, model
    each: Timing
    none: Timing
    spread: float | None = None  # the record's between-process spread (compare.process_sd)

    @property
    def cost_s(self) -> float:
        """Extra seconds per step that syncing every step costs (median difference)."""
        return self.each.median_s - self.none.median_s

    @property
    def fraction(self) -> float:
        return self.cost_s / self.none.median_s if self.none.median_s > 0 else 0.0

    @property
    def comparison(self) -> Comparison:
        """Syncing every step vs not, by significance.py's rule (ratio > 1: not syncing is faster)."""
        return compare("each", self.each, "none", self.none, process_sd=self.spread)

    @property
    def significant(self) -> bool:
        """The cost counts by significance.py's rule (≥ 5 samples, the whole CI beyond the noise)."""
        return self.comparison.significant


@dataclass(frozen=True)
class TrainReport:
    devices: list[str]
    baseline: str | None
    creation: list[RunRow]
    runs: list[RunRow]
    sync_costs: list[SyncCost]
    sweep: list[Table]


def _cell(r: CaseResult) -> RunCell:
    if r.status != "ok" or r.timing is None:
        return RunCell(r.spec.device, None, r.error, failure=r.failure)
    batch = r.metrics.get("samples_per_step")
    rate = batch / r.timing.median_s if batch and r.timing.median_s > 0 else None
    epochs = [r.metrics[f"epoch_{i}_s"] for i in range(1, 1000) if f"epoch_{i}_s" in r.metrics]
    spe = r.metrics.get("steps_per_epoch")
    summary = summarize_epochs(epochs, int(spe) if spe else None) if len(epochs) >= 2 else None
    return RunCell(r.spec.device, r.timing, None, rate, summary, dict(r.metrics))


def _rows(
    results: list[CaseResult],
    devices: list[str],
    baseline: str | None,
    with_break_even: bool,
    by_framework: bool = False,
    spread: float | None = None,
) -> list[RunRow]:
    groups: dict[tuple[tuple[str, Scalar], ...], list[CaseResult]] = defaultdict(list)
    for r in results:
        fw = (("framework", r.spec.framework),) if by_framework else ()
        groups[fw + tuple(params_of(r.spec).items())].append(r)
    gpus = [d for d in devices if d.startswith("GPU")]
    rows = []
    for key, rs in groups.items():
        cells = {r.spec.device: _cell(r) for r in rs}
        base = cells.get(baseline) if baseline else None
        comps: dict[str, Comparison] = {}
        bes: dict[str, BreakEven] = {}
        for d in gpus:
            c = cells.get(d)
            base_t = base.timing if base is not None else None
            c_t = c.timing if c is not None else None
            if baseline is None or base_t is None or c_t is None:
                if with_break_even:
                    bes[d] = BreakEven("no_data")
                continue
            comp = compare(baseline, base_t, d, c_t, process_sd=spread)
            comps[d] = comp
            if with_break_even:
                bes[d] = break_even(
                    base_t.first_call_s,
                    base_t.median_s,
                    c_t.first_call_s,
                    c_t.median_s,
                    significant=comp.significant,
                )
        if with_break_even and not gpus:
            bes["GPU"] = BreakEven("no_gpu")
        rows.append(RunRow(dict(key), cells, comps, bes, framework=rs[0].spec.framework))
    return rows


def analyze_training(record: RunRecord) -> TrainReport:
    results = [r for r in record.results if r.spec.workload == "train"]
    devices = device_order(r.spec.device for r in results)
    baseline = next((d for d in devices if d.startswith("CPU")), None)
    by_kind: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_kind[str(params_of(r.spec).get("kind"))].append(r)
    several = several_frameworks(record)
    spread = process_sd(record)
    creation = _rows(by_kind["create"], devices, baseline, with_break_even=False, by_framework=several, spread=spread)
    runs = _rows(
        [r for k in RUN_KINDS for r in by_kind[k]],
        devices,
        baseline,
        with_break_even=True,
        by_framework=several,
        spread=spread,
    )

    steady = by_kind["steady"]
    pairs: dict[tuple[str, tuple[tuple[str, Scalar], ...]], dict[str, Timing]] = defaultdict(dict)
    for r in steady:
        if r.status == "ok" and r.timing is not None:
            rest = tuple((k, v) for k, v in params_of(r.spec).items() if k not in (_SYNC, "kind"))
            rest = (("framework", r.spec.framework),) + rest if several else rest
            pairs[(r.spec.device, rest)][str(params_of(r.spec)[_SYNC])] = r.timing
    sync_costs = [
        SyncCost(dev, dict(rest), t["each"], t["none"], spread)
        for (dev, rest), t in pairs.items()
        if "each" in t and "none" in t
    ]
    sync_costs.sort(key=lambda s: (devices.index(s.device), s.params.get(_BATCH, 0)))

    sweep_record = record.model_copy(update={"results": steady})
    sweep = [t for t in analyze_sweep(sweep_record, _BATCH, work_metric="samples_per_step") if len(t.rows) >= 2]
    return TrainReport(devices, baseline, creation, runs, sync_costs, sweep)
