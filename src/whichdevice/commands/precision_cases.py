"""`whichdevice train --precision`: the cases (one ``precision`` case per policy and device)
and their table. Kept apart from commands/train.py so train's own code stays as it was."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape

from whichdevice.analysis.precision import cpu_16bit_note, precision_rows
from whichdevice.present import terminal
from whichdevice.present.tables import Grid, GridCell
from whichdevice.present.units import rate, seconds
from whichdevice.records import CaseSpec, RunRecord

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# Seed 002 (Dense 256-128-1, batch 512) is the seeds' most compute-heavy model: where 16-bit math could pay.
SEED_RUN = dict(model="seed002", example="seed002", samples=10_000, batch=512, data="tfdata_shuffle")
QUICK_SAMPLES = 5_120


def cases(framework: str, device: str, policies: list[str], *, user: dict | None, quick: bool,
          samples: int | None, user_batch: int, epochs: int | None = None) -> list[CaseSpec]:
    if not policies:
        return []
    if user:
        run = {**user, "example": "user", "samples": samples or 10_000, "batch": user_batch, "data": "tfdata"}
    else:
        run = {**SEED_RUN, "samples": QUICK_SAMPLES if quick else SEED_RUN["samples"]}
    order = sorted(set(policies) | {"float32"}, key=POLICIES.index)  # float32 is always the reference
    n_epochs = epochs or (2 if quick else 3)
    return [CaseSpec(workload="train", framework=framework, device=device,
                     params={**run, "kind": "precision", "precision": p, "epochs": n_epochs}) for p in order]


def grid(record: RunRecord) -> Grid | None:
    rows = precision_rows(record)
    if not rows:
        return None
    out = []
    for r in rows:
        comp = r.vs_float32
        if comp is None:
            vs = GridCell("reference" if r.precision == "float32" else "—", "dim")
        elif comp.winner is None:
            vs = GridCell(f"within noise ({comp.ratio:.3g}x)", "neutral")
        else:
            vs = GridCell(f"{comp.ratio:.3g}x faster" if comp.ratio > 1 else f"{1 / comp.ratio:.3g}x slower",
                          "good" if comp.ratio > 1 else "bad")
        loss = "—" if math.isnan(r.final_loss) else f"{r.final_loss:.4g}"
        out.append([GridCell(r.device), GridCell(r.precision), GridCell(f"{seconds(r.timing.median_s)} ± "
                                                                         f"{seconds(r.timing.iqr_s / 2)}"),
                    GridCell(rate(r.samples_per_s, "") if r.samples_per_s else "—"), vs, GridCell(loss)])
    note = cpu_16bit_note(record)
    return Grid("Precision: steady step (model.fit, epochs 2..) and the final training loss",
                ["device", "policy", "step ± IQR/2", "samples/s", "vs float32", "final loss"], out,
                [note] if note else [], align=("left", "left", "right", "right", "left", "right"))


def render(console: Console, record: RunRecord) -> None:
    g = grid(record)
    if g is not None:
        terminal.render_grid(console, g)
    if record.options.get("trace"):
        console.print(f"Trace: {escape(str(record.options['trace']))} — open with: tensorboard --logdir "
                      f"{escape(str(record.options['trace']))} (Profile tab)")
