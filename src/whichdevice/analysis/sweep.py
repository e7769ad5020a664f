"""Turn a sweep's records into tables: one table per group, one row per x, one cell per
device, the GPU-vs-CPU comparison per row and the crossover per table.

Layout follows the records' metadata (STYLE.md principle 3): results are grouped by
every parameter except the swept one (``x_param``), so the same code lays out a matmul
sweep (x = n, groups = mode x dtype) and a batch-size sweep (x = batch).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from whichdevice.analysis.compare import Comparison, compare, process_sd
from whichdevice.analysis.crossover import Crossover, find_crossover
from whichdevice.analysis.values import as_number
from whichdevice.core.records import CaseResult, RunRecord, Scalar, Timing
from whichdevice.workloads.fixes import params_of


@dataclass(frozen=True)
class DeviceCell:
    """One device's result in a row of a table: its timing, or the error it failed with
    (a sweep's point here, a training run's in analysis/train.py)."""

    device: str
    timing: Timing | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.timing is not None


@dataclass(frozen=True)
class Cell(DeviceCell):
    work_per_s: float | None = None  # e.g. FLOP/s, from the workload's metric
    failure: str | None = None  # the failure kind (failures.py) of a failed point


@dataclass(frozen=True)
class Row:
    x: float
    cells: dict[str, Cell]
    comparisons: dict[str, Comparison]  # per non-baseline device


@dataclass(frozen=True)
class Table:
    group: dict[str, object]  # the parameters shared by every row (mode, dtype, ...)
    devices: list[str]
    baseline: str | None  # the CPU device every other is compared with
    rows: list[Row]
    crossovers: dict[str, Crossover] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.group.items())


def device_order(names: Iterable[str]) -> list[str]:
    """CPU first, then GPUs by index, then anything else."""

    def key(name: str) -> tuple[int, str, int]:
        kind, _, idx = name.partition(":")
        return (0 if kind == "CPU" else 1 if kind == "GPU" else 2, kind, int(idx) if idx.isdigit() else 0)

    return sorted(set(names), key=key)


def _cell(result: CaseResult, work_metric: str | None) -> Cell:
    if result.status != "ok" or result.timing is None:
        return Cell(result.spec.device, None, result.error, failure=result.failure)
    work = result.metrics.get(work_metric) if work_metric else None
    rate = work / result.timing.median_s if work and result.timing.median_s > 0 else None
    return Cell(result.spec.device, result.timing, None, rate)


def several_frameworks(record: RunRecord) -> bool:
    """True when the record holds more than one framework's results (``run --framework a,b``):
    then every grouping adds the framework, so one framework's CPU:0 is never compared with,
    or written over by, another's."""
    return len({r.spec.framework for r in record.results}) > 1


_GroupKey = tuple[tuple[str, Scalar], ...]


def analyze_sweep(record: RunRecord, x_param: str, work_metric: str | None = None) -> list[Table]:
    groups = _groups(record, x_param)
    spread = process_sd(record)  # devices ran in different processes: widen by their spread
    tables = []
    for key, results in groups.items():
        devices = device_order(r.spec.device for r in results)
        baseline = next((d for d in devices if d.startswith("CPU")), None)
        rows = _rows(results, x_param, work_metric, baseline, spread)
        tables.append(Table(dict(key), devices, baseline, rows, _crossovers(rows, devices, baseline)))
    # Stable order: by the group's parameters as written in the record.
    return tables


def _groups(record: RunRecord, x_param: str) -> dict[_GroupKey, list[CaseResult]]:
    """The results that vary ``x_param``, grouped by every other parameter (and by the
    framework when the record holds several), in the record's order."""
    groups: dict[_GroupKey, list[CaseResult]] = defaultdict(list)
    by_framework = several_frameworks(record)
    for r in record.results:
        if x_param not in params_of(r.spec):
            continue
        key = tuple(sorted((k, v) for k, v in params_of(r.spec).items() if k != x_param))
        if by_framework:
            key = (("framework", r.spec.framework),) + key
        groups[key].append(r)
    return groups


def _rows(
    results: list[CaseResult], x_param: str, work_metric: str | None, baseline: str | None, spread: float | None
) -> list[Row]:
    """One row per x: a cell per device and each other device compared with the baseline."""
    by_x: dict[float, dict[str, Cell]] = defaultdict(dict)
    for r in results:
        by_x[as_number(params_of(r.spec)[x_param])][r.spec.device] = _cell(r, work_metric)
    rows = []
    for x in sorted(by_x):
        cells = by_x[x]
        comps = {}
        base = cells.get(baseline) if baseline else None
        for d, c in cells.items():
            if d != baseline and baseline and base is not None and base.timing is not None and c.timing is not None:
                comps[d] = compare(baseline, base.timing, d, c.timing, process_sd=spread)
        rows.append(Row(x, cells, comps))
    return rows


def _crossovers(rows: list[Row], devices: list[str], baseline: str | None) -> dict[str, Crossover]:
    """Per device other than the baseline: where it overtakes the baseline, over the rows
    both measured."""
    crossovers = {}
    for d in devices:
        if d == baseline or baseline is None:
            continue
        both = [
            (r.x, a, b)
            for r in rows
            if (a := r.cells.get(baseline, Cell("", None)).timing) is not None
            and (b := r.cells.get(d, Cell("", None)).timing) is not None
        ]
        cpu = [a for _, a, _ in both]
        gpu = [b for _, _, b in both]
        crossovers[d] = find_crossover(
            [x for x, _, _ in both],
            [t.median_s for t in cpu],
            [t.median_s for t in gpu],
            [(t.q1_s, t.q3_s) for t in cpu],
            [(t.q1_s, t.q3_s) for t in gpu],
        )
    return crossovers
