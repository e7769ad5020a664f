"""Sweep tables as plain text grids, shared by the terminal and the HTML presenters.

A cell is its text plus a tone ("good", "bad", "neutral", "dim" or ""), which each
presenter maps to its own styling. No markup is produced here; escaping is the
presenter's job.
"""

from __future__ import annotations

from dataclasses import dataclass

from whichdevice.analysis.sweep import Cell, Table
from whichdevice.present.units import rate, seconds
from whichdevice.records import Timing
from whichdevice.telemetry import summarize


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


def _median_text(cell: Cell | None) -> GridCell:
    if cell is None:
        return GridCell("—")
    if not cell.ok:
        return GridCell("failed", "bad")
    t = cell.timing
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
            ok = c is not None and c.ok
            cells.append(GridCell(seconds(c.timing.first_call_s) if ok else "—", "dim"))
            cells.append(_median_text(c))
            if rate_unit:
                cells.append(GridCell(rate(c.work_per_s, rate_unit) if ok else "—"))
            cells.append(GridCell(busy_text(c.timing) if ok else "—", "dim"))
        for d in others:
            comp = row.comparisons.get(d)
            if comp is None:
                cells.append(GridCell("—"))
            elif comp.winner is None:
                cells.append(GridCell(comp.describe(), "neutral"))
            else:
                cells.append(GridCell(comp.describe(), "good" if comp.winner == d else "bad"))
        rows.append(cells)
    footer = [f"Crossover {d} vs {table.baseline}: {cross.describe(x_label)}" for d, cross in table.crossovers.items()]
    return Grid(table.title, headers, rows, footer)
