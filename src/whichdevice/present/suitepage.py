"""The page of ``run`` and ``diagnose``: the first screen at the top, then the fix table,
the plots and every table (HTML), from a record. The terminal gets the first screen
(present/firstscreen.py) and, with ``--verbose``, the rest.

Moved from api.py so that every sentence of the page is written in present/.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import dataclass
from pathlib import Path

from whichdevice import frameworks
from whichdevice.core.records import RunRecord
from whichdevice.present import fixes as fixwords
from whichdevice.present import html, names, plots
from whichdevice.present.firstscreen import FirstScreen, first_screen
from whichdevice.workloads.fixes import JIT_COMPILE, STEPS_PER_EXECUTION
from whichdevice.present.pipeline import device_verdict
from whichdevice.present import notes
from whichdevice.present.claims import comparison_text, crossover_text, ratio_text
from whichdevice.present.tables import (
    Grid,
    GridCell,
    break_even_text,
    creation_grid,
    runs_grid,
    sweep_grid,
    sync_cost_grid,
)

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Suite
    from whichdevice.analysis.suite import SuiteVerdict, SweepFinding
    from whichdevice.analysis.verdict import Finding


def fix_grid(v: SuiteVerdict, *, with_how: bool = True, record: RunRecord | None = None) -> Grid:
    """Every fix of the catalogue (the articles' list, then steps_per_execution, XLA, syncing
    and mixed precision), each with every measured pair, what it came to, or why not measured."""
    several = fixwords.several_frameworks(v.fixes)
    experiment = record.experiment if record is not None else "run"
    on_page = {r.spec.framework for r in record.results} if record is not None else set()
    rows = []
    for i, fv in enumerate(v.fixes, 1):
        e = fv.entry
        if fv.measured and e.method == "check":
            status = GridCell("checked", "good")
        elif fv.not_measured is not None and fv.not_measured.reason == "default":
            status = GridCell(fixwords.DEFAULT_ON, "neutral")  # measured, but the framework already does it
        elif fv.measured and (fv.not_measured is None or fv.not_measured.reason == "too_few_samples"):
            tone = {"helps": "good", "slower": "bad"}.get(fv.outcome, "neutral")
            status = GridCell(fixwords.OUTCOME_WORDS[fv.outcome], tone)
        else:
            status = GridCell("not measured", "neutral")
        # The terminal gets the measured lines; the report (with_how) also the grid each was chosen from.
        lines = fixwords.verdict_lines(fv, several=several, with_grid=with_how)
        if not lines and fv.not_measured is not None:
            lines = [fixwords.not_measured_text(fv.not_measured, experiment)]
        row = [GridCell(f"{i}. {e.title}"), status, GridCell("\n".join(lines))]
        how = fixwords.entry_how(e, on_page) + (f"\nCaveat: {fixwords.general_caveat(e)}" if e.caveat else "")
        rows.append(row + [GridCell(how, "dim")] if with_how else row)
    headers = ["fix", "status", "measured effect"] + (["how"] if with_how else [])
    return Grid(
        "Every fix, measured on the same workload",
        headers,
        rows,
        [],
        align=("left",) * len(headers),
    )


def settings_advice(v: SuiteVerdict, batch: int) -> list[str]:
    """diagnose: the device and settings to use, from measurements only: the device that won
    the user's own fit at their batch (or 'not measured' and why when a side failed), and every
    fix that helped significantly on that device (the fix table's words)."""
    out = []
    fit_rows = [
        r
        for r in v.training.runs
        if r.params.get("kind") == "fit"
        and r.params.get("example") == "user"
        and STEPS_PER_EXECUTION.param not in r.params
        and JIT_COMPILE.param not in r.params
    ]
    if not fit_rows:  # plain torch has no model.fit: the user's own loop at their batch decides
        fit_rows = [
            r
            for r in v.training.runs
            if r.params.get("kind") == "loop" and r.params.get("example") == "user" and r.params.get("data") == "tfdata"
        ]
    device = v.training.baseline or "CPU:0"
    for row in fit_rows:
        for d, comp in row.comparisons.items():
            if comp.winner == d:
                device = d
                out.append(
                    f"Device: {d} — it trains your model {comparison_text(comp).split(' ', 1)[1]} than "
                    f"{v.training.baseline} at batch {batch}"
                )
            elif comp.winner is None:
                out.append(f"Device: either — {comparison_text(comp)} at batch {batch}; a larger batch may tip it")
            else:
                out.append(f"Device: {v.training.baseline} — {comparison_text(comp)} at batch {batch}")
        failed = [d for d, cell in row.cells.items() if not cell.ok]
        if failed and not row.comparisons:
            kinds = ", ".join(str(row.cells[d].failure or "error").replace("_", " ") for d in failed)
            out.append(f"Device: not measured — your model.fit on {', '.join(failed)} did not run ({kinds})")
    if not out:
        out.append(f"Device: {device} (the only device measured here)")
    several = fixwords.several_frameworks(v.fixes)
    for fv in v.fixes:  # the measured gains on that device (FixVerdict.gains), in the fix table's words
        out += [f"Setting: {fv.entry.title}: {fixwords.fix_line(f, several=several)}" for f in fv.gains(device)]
    return out


def _more_work(x: str, framework: str | None) -> str:
    more = frameworks.declared(framework or "", "MORE_WORK", _KERAS_MORE_WORK)
    return f"give each step more work: a larger {x}" + (f", {more}" if more else "")


def finding_text(f: SweepFinding, arrow: str = " → ") -> str:
    """'matrix multiply (back-to-back, operands on the device): CPU:0: time grows with n ...'."""
    g = f.group
    fw = f"{g['framework']}: " if g.get("framework") else ""
    if f.sweep == "matmul":
        mode = names.MATMUL_MODES.get(str(g.get("mode")), str(g.get("mode")))
        where = f"{fw}matrix multiply ({mode})"
    else:
        where = f"{fw}{names.model_name(g, short=True)} training step"
    text, advice = _finding_words(f.finding, f.framework)
    return names.plain(f"{where}: {text}{f'{arrow}{advice}' if advice else ''}")


# More work per step in Keras' words; other frameworks declare their own (env.py's MORE_WORK).
_KERAS_MORE_WORK = "steps_per_execution, or jit_compile to fuse ops"


def _finding_words(f: Finding, framework: str | None = None) -> tuple[str, str]:
    """A sweep finding (analysis/verdict.py) as its sentence and its advice ('' for none)."""
    d, x = f.device, f.x_label
    if f.rule == "launch_bound":
        floor = f"≈{f.floor_s * 1e3:.3g} ms" if f.floor_s is not None else "a fixed time"
        return (
            f"{d}: time flat in {x} (flat: a fixed cost per call): it sits at a per-step floor of "
            f"{floor} of kernel launches, dispatch and synchronization, not computing",
            _more_work(x, framework),
        )
    if f.rule == "compute_bound":
        return (
            f"{d}: time grows with {x} (at least as fast as the square root of the work): compute-bound at the "
            "top of the range",
            "",
        )
    at = f"at {x}={f.x:g}: " if f.x is not None else ""
    said = comparison_text(f.comparison) if f.comparison is not None else ""
    advice = "for work this small the CPU is the right device" if f.rule == "cpu_wins" else ""
    return f"{at}{said}", advice


_ONLY_CPU = (
    "Only the CPU was measured: no GPU is visible to the framework here (see the note). "
    "Below: where this CPU spends its time, and which fixes help on it."
)


def _crossover_lines(v: SuiteVerdict) -> list[str]:
    """Where the GPU overtakes the CPU: in the matmul sweep (by n) and the training sweep (by batch)."""
    out = []
    for t in v.matmul:
        for c in t.crossovers.values():
            fw = f"{t.group['framework']}, " if "framework" in t.group else ""
            out.append(f"Matmul ({fw}{t.group.get('mode')}): {crossover_text(c, 'n')}")
    for t in v.training.sweep:
        fw = f", {t.group['framework']}" if "framework" in t.group else ""
        what = names.model_name(t.group, short=True) + fw
        out += [f"Training step ({what}): {crossover_text(c, 'batch')}" for c in t.crossovers.values()]
    return out


def _run_lines(v: SuiteVerdict) -> list[str]:
    """Device against device in the seeds' runs, and the break-even of each (but no-GPU ones)."""
    out = []
    for row in v.training.runs:
        label = names.workload_name(row.params, framework=row.framework)
        out += [f"{label}: {comparison_text(comp)}" for comp in row.comparisons.values()]
        out += [f"{label}, {d}: {break_even_text(be)}" for d, be in row.break_even.items() if be.kind != "no_gpu"]
    return out


def _gains_lines(v: SuiteVerdict) -> list[str]:
    """Per device, the measured gains of the fixes (the fix table's claims), each fix once at its
    largest gain, largest first."""
    out = []
    several = fixwords.several_frameworks(v.fixes)
    devices = sorted({f.device for fv in v.fixes for f in fv.deciding})
    for device in devices:
        gains = sorted((f for fv in v.fixes for f in fv.gains(device)), key=lambda f: -f.claim.ratio)
        best = {f.kind: f for f in reversed(gains)}  # one per fix: its largest gain
        if best:
            ranked = sorted(best.values(), key=lambda f: -f.claim.ratio)
            out.append(
                f"Measured gains on {device}: "
                + "; ".join(f"{fixwords.change_title(f, several=several)}: {ratio_text(f.claim)}" for f in ranked)
            )
    return out


def headline(v: SuiteVerdict) -> list[str]:
    """The verdict line by line (``--verbose`` and the report): crossovers, device against
    device in the seeds' runs, break-even, the input pipeline, and the measured gains per
    device (the fix table's claims)."""
    out = [] if v.gpus else [_ONLY_CPU]
    out += _crossover_lines(v)
    out += _run_lines(v)
    for rep in v.pipelines:
        out += [f"Image input pipeline: {line}" for line in device_verdict(rep)[:2]]
    out += _gains_lines(v)
    return out


@dataclass(frozen=True)
class SuiteReport:
    verdict: SuiteVerdict
    advice: list[str]  # diagnose: the device and settings to use
    page: str  # the HTML report
    pngs: list[Path]
    warnings: list[str]
    failures: list[str]
    first: FirstScreen  # the first screen (terminal and the top of the page)


@dataclass(frozen=True)
class SuitePlots:
    matmul: Path | None  # time vs matrix size, per mode
    batch: Path | None  # training step time and samples/s vs batch

    @property
    def paths(self) -> list[Path]:
        return [p for p in (self.matmul, self.batch) if p is not None]


def draw_plots(v: SuiteVerdict, png: Path, *, loglog: bool = True) -> SuitePlots:
    """The plotting step: the suite's PNGs (``png`` stem + -matmul/-batch), apart from the text."""
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    mm_png, sweep_png = png.with_name(png.stem + "-matmul.png"), png.with_name(png.stem + "-batch.png")
    if v.matmul:
        plots.plot_sweep(
            v.matmul,
            mm_png,
            x_label="matrix size n (n x n)",
            loglog=loglog,
            title="Matrix multiplication time vs size — whichdevice",
        )
    if v.training.sweep:
        plots.plot_batch_sweep(
            v.training.sweep,
            sweep_png,
            loglog=loglog,
            title="Training step time and samples/s vs batch size — whichdevice",
        )
    return SuitePlots(mm_png if v.matmul else None, sweep_png if v.training.sweep else None)


def _sections(record: RunRecord, v: SuiteVerdict, drawn: SuitePlots) -> list[html.Section]:
    """The report's sections, fixes first, each with its tables and the plots already drawn."""
    sections = [
        html.Section(
            "Fixes, each measured on the same workload",
            [fix_grid(v, record=record)],
            lines=[finding_text(f, " — ") for f in v.findings],
        )
    ]
    if v.matmul:
        sections.append(
            html.Section(
                "Matrix multiply: where the GPU starts to pay",
                [sweep_grid(t, "n", "FLOP/s") for t in v.matmul],
                pngs=[drawn.matmul] if drawn.matmul else [],
                source="seed000",
            )
        )
    train_grids = []
    if v.training.creation:
        train_grids.append(creation_grid(v.training))
    if v.training.runs:
        train_grids.append(runs_grid(v.training))
    if v.training.sync_costs:
        train_grids.append(sync_cost_grid(v.training))
    train_grids += [sweep_grid(t, "batch", "samples/s") for t in v.training.sweep]
    if train_grids:
        diag = record.experiment == "diagnose"
        title = "Your model: training" if diag else "Training: the small MLP and the 3-layer MLP"
        pngs = [drawn.batch] if drawn.batch else []
        sections.append(html.Section(title, train_grids, pngs=pngs, source=None if diag else "seed001"))
    if v.pipelines:
        from whichdevice.present.pipeline import variant_grid

        sections.append(
            html.Section(
                "Image input pipeline: is the step waiting for data?",
                [variant_grid(rep) for rep in v.pipelines],
                lines=[names.plain(line) for rep in v.pipelines for line in device_verdict(rep)],
                source="seed003",
            )
        )
    return sections


def suite_report(result: Suite, png: Path, *, loglog: bool = True) -> SuiteReport:
    """Plots (``png`` stem + -matmul/-batch) and the HTML page of a run/diagnose record's
    analysis (analysis/facade.suite): the plotting step, then the text (first screen, sections, page)."""
    record, v = result.record, result.verdict
    drawn = draw_plots(v, png, loglog=loglog)
    advice = settings_advice(v, v.seed_batch) if record.experiment == "diagnose" else []
    warnings, failures = notes.timing_warnings(v.warnings), notes.failures(record)
    first = first_screen(record, v, advice=advice)
    page = html.render_html(
        record,
        _sections(record, v, drawn),
        verdict=[names.plain(line) for line in headline(v) + advice],
        warnings=warnings,
        failures=failures,
        first=first,
        measured=v.warnings,
        skipped=v.skipped,
    )
    return SuiteReport(v, advice, page, drawn.paths, warnings, failures, first)
