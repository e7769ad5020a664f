"""Text grids for the ``pipeline`` report (shared by the terminal and the HTML presenters).

Pure formatting of what analysis/pipeline.py computed: no verdict is decided here.
"""

from __future__ import annotations

from whichdevice.analysis.compare import Comparison
from whichdevice.present.claims import ratio_text
from whichdevice.analysis.pipeline import HIGHLY, MODERATELY, NOT, DeviceReport
from whichdevice.present.tables import Grid, GridCell, busy_text
from whichdevice.core.units import rate, seconds
from whichdevice.core.records import Timing

_BOUND_TONE = {HIGHLY: "bad", MODERATELY: "neutral", NOT: "good"}


def _median(t: Timing | None) -> GridCell:
    return GridCell(f"{seconds(t.median_s)} ± {seconds(t.iqr_s / 2)}") if t is not None else GridCell("—")


def _vs(c: Comparison | None) -> GridCell:
    """The claim with its interval and n (present/claims.py): '4× faster (95 % CI 3.5–4.6×, 8
    samples)', 'no clear change (1.1×, CI 0.8–1.5×, n=8)' or 'not enough samples (...)'."""
    if c is None:
        return GridCell("—", "dim")
    if c.winner is None:
        return GridCell(ratio_text(c), "neutral")
    return GridCell(ratio_text(c), "good" if c.winner == c.other else "bad")


def variant_grid(rep: DeviceReport) -> Grid:
    base = rep.baseline or "first"
    headers = [
        "variant",
        "pipeline alone (throughput)",
        "1st batch",
        f"pipeline alone vs {base}",
        "loop step ± IQR/2 (loop speed)",
        f"loop speed vs {base}",
        "input wait",
        "XProf",
        "busy (sat.)",
    ]
    rows = []
    for r in rep.rows:
        cells = [GridCell(r.variant)]
        cells.append(
            GridCell(
                rate(r.examples_per_s, "ex/s") if r.examples_per_s else ("failed" if r.failed else "—"),
                "bad" if r.failed and not r.pipeline else "",
            )
        )
        cells.append(GridCell(seconds(r.pipeline.first_call_s) if r.pipeline else "—", "dim"))
        cells.append(_vs(r.pipeline_speedup))
        cells.append(_median(r.loop) if r.loop else GridCell("failed" if r.failed else "—", "bad" if r.failed else ""))
        cells.append(_vs(r.loop_speedup))
        cells.append(GridCell(f"{r.wait_percent:.1f} %" if r.wait_percent is not None else "—"))
        cells.append(
            GridCell(r.input_bound.lower() if r.input_bound else "—", _BOUND_TONE.get(r.input_bound or "", ""))
        )
        cells.append(GridCell(busy_text(r.loop), "dim"))
        rows.append(cells)
    model = (
        f"model step alone (batch on the device): {seconds(rep.model.median_s)} ± {seconds(rep.model.iqr_s / 2)}"
        if rep.model
        else "model step alone: not measured"
    )
    footer = [
        model,
        "alone: the pipeline without a model (examples/s); loop: next() + copy to the device + train "
        "step; input wait: share of the loop step before the batch was on the device — the one input-bound "
        "figure (XProf: ≥ 20 % HIGHLY, ≥ 5 % MODERATELY input-bound); vs: median ratio with its 95 % "
        "interval and n (analysis/significance.py).",
    ]
    footer += [f"{r.variant} failed — {f}" for r in rep.rows for f in r.failed]
    return Grid(f"{rep.device}: pipeline variants (pipeline alone; pipeline + model step)", headers, rows, footer)


def stage_grid(rep: DeviceReport) -> Grid | None:
    if not rep.stages:
        return None
    rows = []
    for c in rep.stages:
        slowest = rep.slowest is not None and c.stage == rep.slowest.stage
        note = "slowest" if slowest else ("below the consumer's floor" if c.below_floor else "")
        rows.append(
            [
                GridCell(c.stage),
                GridCell(seconds(c.seconds_per_example), "bad" if slowest else ""),
                GridCell(rate(c.examples_per_s, "ex/s") if c.examples_per_s else "—"),
                GridCell(seconds(c.floor_seconds_per_example), "dim"),
                GridCell(note, "bad" if slowest else "dim"),
            ]
        )
    return Grid(
        f"{rep.device}: stages of the TFRecord pipeline in isolation (one thread)",
        ["stage", "own time/example", "throughput", "floor/example", "note"],
        rows,
        [
            "Each stage's input is the output of the stages before it, cached in memory; the floor (counting "
            "that input alone) is subtracted."
        ],
    )


def wait_bars(rep: DeviceReport) -> list[tuple[str, float, float, str]]:
    """(variant, wait_s, compute_s, label) of every variant whose loop was measured."""
    out = []
    for r in rep.rows:
        if r.wait_s is None or r.compute_s is None:
            continue
        out.append((r.variant, r.wait_s, r.compute_s, f"{r.wait_percent:.0f} % {(r.input_bound or '').lower()}"))
    return out
