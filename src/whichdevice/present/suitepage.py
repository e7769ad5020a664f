"""The page of ``run`` and ``diagnose``: the first screen at the top, then the fix table,
the plots and every table (HTML), from a record. The terminal gets the first screen
(present/firstscreen.py) and, with ``--verbose``, the rest.

Moved from api.py (issue 17) so that every sentence of the page is written in present/.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from whichdevice.analysis import quality
from whichdevice.analysis.suite import SuiteVerdict, settings_advice, suite_verdict
from whichdevice.core.records import RunRecord
from whichdevice.present import html, names, plots
from whichdevice.present.firstscreen import FirstScreen, first_screen
from whichdevice.present.tables import Grid, GridCell, creation_grid, runs_grid, sweep_grid, sync_cost_grid


# Which cases measure each recommendation (by its number in analysis/suite.py), and where a
# user gets it measured when this suite does not schedule it.
_MEASURED_BY = {
    1: (lambda w, p: p.get("kind") == "steady" and p.get("sync") == "none", ""),
    2: (lambda w, p: p.get("data") == "tfdata_noprefetch" or p.get("variant") == "serial", "`whichdevice pipeline`"),
    3: (lambda w, p: p.get("variant") == "pyfunc", "`whichdevice pipeline`"),
    4: (lambda w, p: p.get("kind") == "placement", "`whichdevice placement`"),
    5: (lambda w, p: p.get("kind") == "loop", ""),
    6: (lambda w, p: "steps_per_execution" in p, ""),
    7: (lambda w, p: "jit_compile" in p, ""),
    8: (lambda w, p: p.get("sync") == "each", ""),
    9: (lambda w, p: p.get("kind") == "precision", "`whichdevice train --precision mixed_float16`"),
}


def why_not_measured(order: int, record: RunRecord) -> str | None:
    """The true reason a recommendation has no measurement: never scheduled by this suite,
    skipped by the time budget, or failed — read from the record, not guessed."""
    rule = _MEASURED_BY.get(order)
    if rule is None:
        return None
    wanted, elsewhere = rule
    cases = [r for r in record.results if wanted(r.spec.workload, r.spec.params)]
    if not cases:
        what = "your model's suite (diagnose)" if record.experiment == "diagnose" else "this suite"
        return f"not measured: not part of {what}" + (f"; {elsewhere} measures it" if elsewhere else "")
    if all(r.status == "failed" and r.failure == "skipped" for r in cases):
        return "not measured: skipped, the time budget ran out (raise --budget)"
    if all(r.status == "failed" for r in cases):
        return "not measured: its cases failed (see Failed)"
    return None


# Where a fix changes the results, not only the speed (issue 17, item 6).
_CAVEATS = {
    1: "a larger batch changes the optimisation: scale the learning rate with the batch (linear rule, with a "
    "warm-up) and check validation accuracy; fewer updates per epoch can need more epochs",
    6: "callbacks, logging and the progress bar run once per N steps, not every step",
    7: "every new input shape compiles again; check the results match (XLA may reorder float math)",
    9: "keep the output layer float32; model.fit scales the loss, a custom loop needs "
    "keras.optimizers.LossScaleOptimizer; check accuracy",
}


def fix_grid(v: SuiteVerdict, *, with_how: bool = True, record: RunRecord | None = None) -> Grid:
    """Every fix the suite measures (the articles' list, then steps_per_execution, XLA, syncing
    and mixed precision), each measured or saying why not."""
    rows = []
    for rec in v.recommendations:
        status = GridCell("measured", "good") if rec.measured else GridCell("not measured", "neutral")
        # The terminal gets the measured lines; the report (with_how) also the grid each was chosen from.
        note = rec.note
        if not rec.measured and record is not None:
            note = why_not_measured(rec.order, record) or note
        detail = "\n".join(rec.results + ([note] if with_how and note else [])) if rec.results else note
        row = [GridCell(f"{rec.order}. {rec.name}"), status, GridCell(names.plain(detail))]
        how = rec.advice + (f"\nCaveat: {_CAVEATS[rec.order]}" if rec.order in _CAVEATS else "")
        rows.append(row + [GridCell(how, "dim")] if with_how else row)
    headers = ["fix", "status", "measured effect"] + (["how"] if with_how else [])
    return Grid(
        "Every fix, measured on the same workload",
        headers,
        rows,
        [],
        align=("left",) * len(headers),
    )


@dataclass(frozen=True)
class SuiteReport:
    verdict: SuiteVerdict
    advice: list[str]  # diagnose: the device and settings to use
    page: str  # the HTML report
    pngs: list[Path]
    warnings: list[str]
    failures: list[str]
    first: FirstScreen | None = None  # the first screen (terminal and the top of the page)


def suite_report(record: RunRecord, png: Path, *, loglog: bool = True) -> SuiteReport:
    """Verdict, plots (``png`` stem + -matmul/-batch) and the HTML page of a run/diagnose record."""
    user_batch = int(record.options.get("batch", 10)) if record.experiment == "diagnose" else 10
    v = suite_verdict(record, seed_batch=user_batch)
    advice = settings_advice(v, user_batch) if record.experiment == "diagnose" else []
    warnings, failures = quality.timing_warnings(record), quality.failures(record)
    first = first_screen(record, v, seed_batch=user_batch, advice=advice)
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    mm_png, sweep_png = png.with_name(png.stem + "-matmul.png"), png.with_name(png.stem + "-batch.png")
    sections, pngs = [], []
    if v.matmul:
        plots.plot_sweep(
            v.matmul,
            mm_png,
            x_label="matrix size n (n x n)",
            loglog=loglog,
            title="Matrix multiplication time vs size — whichdevice",
        )
        sections.append(
            html.Section(
                "Matrix multiply: where the GPU starts to pay",
                [sweep_grid(t, "n", "FLOP/s") for t in v.matmul],
                pngs=[mm_png],
                source="seed000",
            )
        )
        pngs.append(mm_png)
    train_grids = []
    if v.training.creation:
        train_grids.append(creation_grid(v.training))
    if v.training.runs:
        train_grids.append(runs_grid(v.training))
    if v.training.sync_costs:
        train_grids.append(sync_cost_grid(v.training))
    train_grids += [sweep_grid(t, "batch", "samples/s") for t in v.training.sweep]
    train_pngs = []
    if v.training.sweep:
        plots.plot_batch_sweep(
            v.training.sweep,
            sweep_png,
            loglog=loglog,
            title="Training step time and samples/s vs batch size — whichdevice",
        )
        train_pngs.append(sweep_png)
        pngs.append(sweep_png)
    if train_grids:
        diag = record.experiment == "diagnose"
        title = "Your model: training" if diag else "Training: the small MLP and the 3-layer MLP"
        sections.append(html.Section(title, train_grids, pngs=train_pngs, source=None if diag else "seed001"))
    if v.pipelines:
        from whichdevice.present.pipeline import variant_grid

        sections.append(
            html.Section(
                "Image input pipeline: is the step waiting for data?",
                [variant_grid(rep) for rep in v.pipelines],
                lines=[names.plain(line) for rep in v.pipelines for line in rep.verdict],
                source="seed003",
            )
        )
    sections.insert(
        0,
        html.Section(
            "Fixes, each measured on the same workload",
            [fix_grid(v, record=record)],
            lines=[names.plain(f"{f.text}" + (f" — {f.advice}" if f.advice else "")) for f in v.findings],
        ),
    )
    page = html.render_html(
        record,
        sections,
        verdict=[names.plain(line) for line in v.headline + advice],
        warnings=warnings,
        failures=failures,
        first=first,
    )
    return SuiteReport(v, advice, page, pngs, warnings, failures, first)
