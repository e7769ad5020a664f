"""Sweep tables as plain text grids, shared by the terminal and the HTML presenters.

A cell is its text plus a tone ("good", "bad", "neutral", "dim" or ""), which each
presenter maps to its own styling. No markup is produced here; escaping is the
presenter's job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TYPE_CHECKING

from whichdevice.core.units import rate, seconds
from whichdevice.core.records import CHILD_LIMIT_PARAMS, Timing
from whichdevice.core.telemetry import GPU_NOT_REQUESTED, TelemetrySummary
from whichdevice.core.telemetry import summarize
from whichdevice.present import names
from whichdevice.present.claims import comparison_text, crossover_text
from whichdevice.workloads.fixes import BATCH, SYNC

if TYPE_CHECKING:
    from whichdevice.analysis.compare import Comparison
    from whichdevice.analysis.sweep import Cell, Table
    from whichdevice.analysis.train import RunCell, RunRow, TrainReport
    from whichdevice.analysis.warmup import BreakEven


@dataclass(frozen=True)
class GridCell:
    text: str
    tone: str = ""


@dataclass(frozen=True)
class Grid:
    title: str
    headers: list[str]
    rows: list[list[GridCell]]
    footer: list[str]
    align: tuple[str, ...] = ()  # per column "left"/"right"; default: numbers right, labels left


_LABEL_HEADERS = ("run", "what", "device", "fix", "recommendation", "variant", "stage")


Align = Literal["left", "right"]


def column_align(grid: Grid, i: int) -> Align:
    """'left' or 'right' for column ``i``: the grid's own choice, else labels and
    comparisons left, numbers right."""
    if i < len(grid.align):
        return "right" if grid.align[i] == "right" else "left"
    h = grid.headers[i]
    return "left" if (i == 0 and h in _LABEL_HEADERS) or " vs " in h else "right"


def busy_text(timing: Timing | None) -> str:
    """Utilization during the steady window, compact: 'GPU 23 %', or for the CPU the mean
    busy share of all cores and (saturated cores / cores): '97% (2/2)'."""
    if timing is None or timing.telemetry is None:
        return "—"
    s = summarize(timing.telemetry)
    if s.gpu_util_mean_percent is not None:
        return f"GPU {s.gpu_util_mean_percent:.0f} %"
    if s.cpu_mean_percent is None:
        return "—"
    return f"{s.cpu_mean_percent:.0f}% ({s.cores_saturated}/{s.n_cores})"


SKIPPED_CELL = "not measured (time budget)"  # a case the time budget skipped: no failure


def _median_text(cell: Cell | RunCell | None) -> GridCell:
    if cell is None:
        return GridCell("—")
    if cell.failure == "skipped":  # not measured: it did not fail
        return GridCell(SKIPPED_CELL)
    if not cell.ok:  # the kind in short; the full reason is in the failures list
        return GridCell(f"failed: {cell.failure.replace('_', ' ')}" if cell.failure else "failed", "bad")
    t = cell.timing
    if t is None:
        return GridCell("—")
    return GridCell(f"{seconds(t.median_s)} ± {seconds(t.iqr_s / 2)}")


def sweep_grid(table: Table, x_label: str, rate_unit: str | None) -> Grid:
    headers = [x_label]
    for d in table.devices:
        headers += [f"{d} 1st call", f"{d} median ± IQR/2"]
        if rate_unit:
            headers.append(f"{d} {rate_unit}")
        headers.append(f"{d} busy (sat.)")
    others = [d for d in table.devices if d != table.baseline]
    headers += [f"{d} vs {table.baseline or '?'}" for d in others]
    rows = []
    for row in table.rows:
        cells = [GridCell(f"{row.x:g}")]
        for d in table.devices:
            c = row.cells.get(d)
            t = c.timing if c is not None and c.ok else None
            cells.append(GridCell(seconds(t.first_call_s) if t is not None else "—", "dim"))
            cells.append(_median_text(c))
            if rate_unit:
                cells.append(GridCell(rate(c.work_per_s, rate_unit) if c is not None and t is not None else "—"))
            cells.append(GridCell(busy_text(t) if t is not None else "—", "dim"))
        cells += [_comp_cell(row.comparisons.get(d)) for d in others]  # each keyed by its ``other``
        rows.append(cells)
    footer = [
        f"Crossover {d} vs {table.baseline}: {crossover_text(cross, x_label)}" for d, cross in table.crossovers.items()
    ]
    return Grid(table_title(table.group, table.title), headers, rows, footer)


def table_title(group: Mapping[str, object], fallback: str) -> str:
    """A sweep table's title in people's words: 'matrix multiply, float32, back-to-back ...'."""
    if "mode" in group:
        mode = names.MATMUL_MODES.get(str(group["mode"]), str(group["mode"]))
        fw = f"{group['framework']}: " if group.get("framework") else ""
        return f"{fw}Matrix multiply ({group.get('dtype', '')}, {mode})".replace("(, ", "(")
    if group.get("kind") == "steady":
        sync = ", loss read back every step" if group.get(SYNC.param) == "each" else ""
        fw = f"{group['framework']}: " if group.get("framework") else ""
        return f"{fw}{names.model_name(group)} training step vs batch size{sync}"
    return names.plain(fallback)


# Parameters that steer a measuring child rather than name the experiment (a script's path, its
# arguments as JSON, the entry point, the child's time limit, a baseline's pre-flight steps): the
# progress line leaves them out, as it does a batch of 0 (a loop whose batch the pre-flight could not read).
_PLUMBING = CHILD_LIMIT_PARAMS | {"script", "script_args", "entry", "user_batch", "preflight"}
_PARAM_START = re.compile(r",(?=[A-Za-z_]\w*=)")  # a comma that starts the next name=value


def describe_key(key: str) -> str:
    """A case key ``workload|framework|device|params`` in words: 'CPU:0 small MLP, 1,000 samples,
    batch 10, custom training loop' where the presenters have a name for the workload, else
    'CPU:0 calibrate n=100 probe=matmul' (device, workload, the params that name the experiment),
    with the project's own model and example ids in words."""
    parts = key.split("|", 3)
    if len(parts) < 4:
        return key
    workload, _, device, params = parts
    shown = [p for p in key_items(params) if p.split("=", 1)[0] not in _PLUMBING and p != "batch=0"]
    values = {k: _key_value(v) for k, _, v in (p.partition("=") for p in shown)}
    if _has_name(workload, values):
        return f"{device} {names.workload_name(values, workload)}"
    words = [
        f"model={names.SHORT_MODELS[str(values['model'])]}" if p.startswith("model=") and _seed_model(values) else p
        for p in shown
        if not p.startswith("example=")  # the seed's example id: the model, size and batch say it
    ]
    return names.plain(" ".join([device, workload, *words]))


def _key_value(text: str) -> object:
    """A key's value as the case held it: 1000, True, None, else the text."""
    if text.isdigit():
        return int(text)
    return {"True": True, "False": False, "None": None}.get(text, text)


def _seed_model(values: dict[str, object]) -> bool:
    return str(values.get("model")) in names.SHORT_MODELS


def _has_name(workload: str, values: dict[str, object]) -> bool:
    """Whether :func:`names.workload_name` words this case: the suite's matmul modes, pipeline
    variants, and the training kinds of its own models or the user's."""
    if workload == "matmul":
        return "mode" in values and "n" in values
    if workload == "pipeline":
        return "variant" in values
    ours = _seed_model(values) or "user" in (values.get("model"), values.get("example"))
    return workload == "train" and ours and "kind" in values


def key_items(params: str) -> list[str]:
    """A case key's params ('batch=8,script_args=["a", "b,c"]') as their 'name=value' items, split
    only at commas that start the next name=value (a script's arguments hold commas of their own)."""
    return [p for p in _PARAM_START.split(params) if p]


def _comp_cell(comp: Comparison | None) -> GridCell:
    if comp is None:
        return GridCell("—")
    if comp.winner is None:
        return GridCell(comparison_text(comp), "neutral")
    return GridCell(comparison_text(comp), "good" if comp.winner == comp.other else "bad")


def creation_grid(report: TrainReport) -> Grid:
    """Seed 001 ex1: model creation and clone_model per device (analysis.train.TrainReport)."""

    def cells_of(c: RunCell | None) -> list[GridCell]:
        return [GridCell(seconds(c.timing.first_call_s) if c and c.timing else "—", "dim"), _median_text(c)]

    headers, rows = _device_columns(report, report.creation, "what", ["1st", "median ± IQR/2"], cells_of)
    return Grid("Building the model: first call (start-up) and steady", headers, rows, [])


def _device_columns(
    report: TrainReport,
    runs: list[RunRow],
    first: str,
    columns: list[str],
    cells_of: Callable[[RunCell | None], list[GridCell]],
) -> tuple[list[str], list[list[GridCell]]]:
    """The headers and rows of a grid of ``runs``: the workload's name, then ``columns`` for each
    device (``cells_of`` its cell, None where it has none), then each GPU against the baseline."""
    gpus = [d for d in report.devices if d != report.baseline]
    headers = [first]
    for d in report.devices:
        headers += [f"{d} {col}" for col in columns]
    headers += [f"{d} vs {report.baseline or '?'}" for d in gpus]
    rows = []
    for row in runs:
        cells = [GridCell(names.workload_name(row.params, framework=row.framework))]
        for d in report.devices:
            cells += cells_of(row.cells.get(d))
        cells += [_comp_cell(row.comparisons.get(d)) for d in gpus]
        rows.append(cells)
    return headers, rows


def runs_grid(report: TrainReport) -> Grid:
    """Every training run: first step apart, steady step, samples/s, epochs, GPU vs CPU, break-even."""

    def cells_of(c: RunCell | None) -> list[GridCell]:
        t = c.timing if c is not None else None
        return [
            GridCell(seconds(t.first_call_s) if t is not None else "—", "dim"),
            _median_text(c),
            GridCell(rate(c.samples_per_s, "") if c is not None and t and c.samples_per_s else "—"),
            GridCell(
                f"{seconds(c.epochs.first_s)} / {seconds(c.epochs.steady_s)}" if c is not None and c.epochs else "—",
                "dim",
            ),
        ]

    columns = ["1st step", "steady step ± IQR/2", "samples/s", "1st / steady epoch"]
    headers, rows = _device_columns(report, report.runs, "run", columns, cells_of)
    footer = [
        f"{names.workload_name(row.params, framework=row.framework)} — {d}: {break_even_text(be)}"
        for row in report.runs
        for d, be in row.break_even.items()
        if be.kind != "no_gpu"
    ]
    if any(be.kind == "no_gpu" for row in report.runs for be in row.break_even.values()):
        footer.append("Break-even step counts need a GPU run: no GPU was measured here; run on a machine with a GPU.")
    return Grid("Training runs: first step (warm-up) apart from the steady steps", headers, rows, footer)


def sync_cost_grid(report: TrainReport) -> Grid:
    """What reading the loss back every step (.numpy()) costs against syncing once per block."""
    headers = ["device", "batch", "step, .numpy() each", "step, no sync", "cost per step", "share"]
    rows = []
    for s in report.sync_costs:
        share = (
            GridCell(f"{s.fraction:+.0%}")
            if s.significant
            else GridCell(f"{s.fraction:+.0%} (within noise)", "neutral")
        )
        rows.append(
            [
                GridCell(s.device),
                GridCell(str(s.params.get(BATCH.param, ""))),
                GridCell(seconds(s.each.median_s)),
                GridCell(seconds(s.none.median_s)),
                GridCell(seconds(s.cost_s)),
                share,
            ]
        )
    return Grid("Cost of syncing every step (.numpy() per step vs once per block)", headers, rows, [])


def _neg(x: float | None) -> float | None:
    return None if x is None else -x


def break_even_text(be: BreakEven) -> str:
    """The break-even in words (analysis/warmup.py computes it), e.g. 'break-even after 1,234
    steps: the GPU's extra warm-up 1.2 s is paid back at 1 ms saved per step'."""
    u, s = be.unit, seconds
    if be.kind == "no_data":
        return "break-even: not enough successful runs on both devices"
    if be.kind == "no_gpu":
        return "break-even: needs a GPU run (no GPU was measured here); run on a machine with a GPU"
    if be.kind == "immediately":
        return (
            f"break-even: the GPU is ahead from the first {u[:-1]} "
            f"(warm-up {s(_neg(be.extra_warmup_s))} shorter, saves {s(be.saving_per_unit_s)} per {u[:-1]})"
        )
    if be.kind == "never":
        why = (
            "its steady steps are not significantly faster"
            if be.within_noise
            else f"its steady {u} are {s(_neg(be.saving_per_unit_s))} slower each"
        )
        return f"break-even: never — {why} (extra warm-up {s(be.extra_warmup_s)})"
    return (
        f"break-even after {be.n:,} {u}: the GPU's extra warm-up {s(be.extra_warmup_s)} "
        f"is paid back at {s(be.saving_per_unit_s)} saved per {u[:-1]}"
    )


def _whose(summary: TelemetrySummary) -> str:
    """Whose the busy cores were: this run's (this process and its children) and other
    programs'; a record from before the children were measured says "the rest"."""
    if summary.process_cpu_cores is None or summary.others_cpu_cores is None:
        return ""
    if summary.children_cpu_cores is None:
        return f": this process {summary.process_cpu_cores:.1f} cores, the rest {summary.others_cpu_cores:.1f}"
    own = summary.process_cpu_cores + summary.children_cpu_cores
    return f": this run {own:.1f} cores, other programs {summary.others_cpu_cores:.1f}"


def telemetry_text(summary: TelemetrySummary) -> str:
    """One terminal line, e.g. ``GPU busy 23 %, CPU 2 of 16 cores saturated (mean 41 %: this
    run 1.9 cores, other programs 4.6)``.

    When GPU telemetry was asked for but could not be had, the reason is appended; when
    it was not asked for (a CPU window) the GPU is not mentioned.
    """
    if summary.cpu_mean_percent is None:
        cpu = "CPU not sampled"
    else:
        cpu = (
            f"CPU {summary.cores_saturated} of {summary.n_cores} cores saturated"
            f" (mean {summary.cpu_mean_percent:.0f} %{_whose(summary)})"
        )
    if summary.gpu_util_mean_percent is not None:
        return f"GPU busy {summary.gpu_util_mean_percent:.0f} %, {cpu}"
    if summary.gpu_unavailable and summary.gpu_unavailable != GPU_NOT_REQUESTED:
        return f"{cpu}; {summary.gpu_unavailable}"
    return cpu
