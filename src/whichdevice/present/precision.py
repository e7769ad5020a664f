"""The mixed-precision table (``train --precision`` and the suite's fix): each policy's steady
step against float32, and the final loss."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from whichdevice.core.units import rate, seconds
from whichdevice.present import terminal
from whichdevice.present.claims import ratio_text
from whichdevice.present.fixes import cpu_16bit_text
from whichdevice.present.tables import Grid, GridCell

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Train


def grid(result: Train) -> Grid | None:
    rows = result.precision_rows
    if not rows:
        return None
    out = []
    for r in rows:
        comp = r.vs_float32
        if comp is None:
            vs = GridCell("reference" if r.precision == "float32" else "—", "dim")
        else:  # the claim's own words (present/claims.ratio_text), as the fix table says this pair
            tone = "neutral" if comp.winner is None else "good" if comp.ratio > 1 else "bad"
            vs = GridCell(ratio_text(comp), tone)
        loss = "—" if math.isnan(r.final_loss) else f"{r.final_loss:.4g}"
        out.append(
            [
                GridCell(r.device),
                GridCell(r.precision),
                GridCell(f"{seconds(r.timing.median_s)} ± {seconds(r.timing.iqr_s / 2)}"),
                GridCell(rate(r.samples_per_s, "") if r.samples_per_s else "—"),
                vs,
                GridCell(loss),
            ]
        )
    note = cpu_16bit_text(result.cpu_16bit)
    return Grid(
        "Precision: steady step (model.fit, epochs 2..) and the final training loss",
        ["device", "policy", "step ± IQR/2", "samples/s", "vs float32", "final loss"],
        out,
        [note] if note else [],
        align=("left", "left", "right", "right", "left", "right"),
    )


def render(console: Console, result: Train) -> None:
    record = result.record
    g = grid(result)
    if g is not None:
        terminal.render_grid(console, g)
    if record.options.get("trace"):
        console.print(
            f"Trace: {escape(str(record.options['trace']))} — open with: tensorboard --logdir "
            f"{escape(str(record.options['trace']))} (Profile tab)"
        )
