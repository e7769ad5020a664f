"""The verdict of ``whichdevice run``: per experiment who wins and why, and the fixes in
seed 002's order, each with its measured effect or a plain "not measured".

Pure: a record in, sentences and numbers out. The rules it applies live in
``analysis/verdict.py`` (shape of the curves), ``analysis/fixes.py`` (A/B pairs) and
``analysis/warmup.py`` (break-even); the thresholds and their sources are there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whichdevice.analysis import torch_fixes
from whichdevice.analysis.compare import compare, process_sd
from whichdevice.analysis.fixes import FixResult, ab_fixes, jit_by_default
from whichdevice.analysis.pipeline import DeviceReport, analyze_pipeline
from whichdevice.analysis.placement import device_placement
from whichdevice.analysis.precision import cpu_16bit_note
from whichdevice.analysis.sweep import Table, analyze_sweep
from whichdevice.analysis.train import TrainReport, analyze_training
from whichdevice.analysis.verdict import Finding, sweep_findings
from whichdevice.core.records import RunRecord

# A recommended setting (batch, steps_per_execution) must reach this share of the best
# throughput found in its grid; the smallest such value is recommended (a smaller batch costs
# less memory and trains as the seeds' models were tuned; fewer steps per call keep callbacks
# and logging fine-grained). The 90 % is issue 6's acceptance bar.
GOOD_ENOUGH = 0.90
_GRID_FIXES = {"batch", "steps_per_execution"}  # tried at several values: recommended by _grid_pick


@dataclass(frozen=True)
class Recommendation:
    order: int
    name: str
    advice: str
    measured: bool
    results: list[str] = field(default_factory=list)  # one line per device, measured
    note: str = ""  # why it was not measured, or what the grid showed
    # The lines of ``results`` whose measurement is a significant gain, by device, decided from
    # the comparisons where the lines are built (settings_advice reads this, not the words).
    gains: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteVerdict:
    headline: list[str]
    findings: list[Finding]
    recommendations: list[Recommendation]
    matmul: list[Table]
    training: TrainReport
    pipelines: list[DeviceReport] = field(default_factory=list)


def _subset(record: RunRecord, workload: str) -> RunRecord:
    return record.model_copy(update={"results": [r for r in record.results if r.spec.workload == workload]})


def _helps(f: FixResult) -> bool:
    return f.comparison.significant and f.speedup > 1


def _fix_gains(fixes: list[FixResult]) -> dict[str, list[str]]:
    """Per device, the lines of ``_fix_lines`` whose fix helps significantly."""
    out: dict[str, list[str]] = {}
    for f in fixes:
        if _helps(f):
            out.setdefault(f.device, []).append(f.describe())
    return out


def _fix_lines(fixes: list[FixResult]) -> list[str]:
    return [f.describe() for f in fixes]


def _grid_pick(mine: list[FixResult]) -> tuple[FixResult, FixResult] | None:
    """One device's grid (sorted by value) -> (the recommended value, the best), or None when no
    value's gain is significant: the smallest value whose gain reaches ``GOOD_ENOUGH`` of the
    best gain (smaller is the cheaper change). Only gains that count by significance.py's rule
    compete: a value with fewer than 5 samples, or whose interval includes 1, is never "best"."""
    gains = [f for f in mine if f.comparison.significant and f.speedup > 1]
    if not gains:
        return None
    best = max(gains, key=lambda f: f.speedup)
    return next(f for f in gains if f.speedup >= GOOD_ENOUGH * best.speedup), best


def _grid_cell(f: FixResult) -> str:
    c = f.comparison
    if not c.enough:
        return f"{f.variant_value}: not enough samples (n={c.n})"
    mark = "" if c.significant else ", no clear change"
    return f"{f.variant_value}: {f.speedup:.3g}x (CI {c.ratio_lo:.3g}–{c.ratio_hi:.3g}, n={c.n}{mark})"


def _grid_gains(fixes: list[FixResult], lines: list[str]) -> dict[str, list[str]]:
    """Per device, its grid line when the grid recommends a value (``_grid_pick``)."""
    out: dict[str, list[str]] = {}
    for device in sorted({f.device for f in fixes}):
        mine = sorted((f for f in fixes if f.device == device), key=lambda f: f.variant_value)
        if _grid_pick(mine) is not None:
            out[device] = [line for line in lines if line.startswith(f"{device}: ")]
    return out


def _grid_lines(fixes: list[FixResult], what: str, unit: str) -> tuple[list[str], list[str]]:
    """A setting tried at several values against one baseline, per device: the recommended
    value (``_grid_pick``) and the whole grid; the line says so when no value beats the baseline,
    and names the values left out for too few samples."""
    lines, notes = [], []
    for device in sorted({f.device for f in fixes}):
        mine = sorted((f for f in fixes if f.device == device), key=lambda f: f.variant_value)
        base = mine[0].baseline_value
        grid = "; ".join(_grid_cell(f) for f in mine)
        notes.append(f"{device} grid ({unit} vs {what} {base}): {grid}")
        thin = [f for f in mine if not f.comparison.enough]
        left_out = (
            f"; {what} {', '.join(str(f.variant_value) for f in thin)}: not enough samples "
            f"({', '.join(f'n={f.comparison.n}' for f in thin)}), not considered"
            if thin
            else ""
        )
        picked = _grid_pick(mine)
        if picked is None:
            lines.append(
                f"{device}: none of {what} {', '.join(str(f.variant_value) for f in mine)} beats {base} "
                f"significantly{left_out}"
            )
            continue
        pick, best = picked
        lines.append(
            f"{device}: {what} {base} -> {pick.variant_value}: {pick.comparison.claim.text()} in {unit}; "
            f"best in the grid: {what} {best.variant_value} at {best.speedup:.3g}x, so the recommended {what} "
            f"reaches {pick.speedup / best.speedup:.0%} of the best{left_out}"
        )
    return lines, notes


def _batch_recommendation(train: RunRecord, seed_batch: int) -> Recommendation:
    fixes = ab_fixes(train, "batch", seed_batch, ignore=())
    fixes = [f for f in fixes if f.context.get("kind") == "steady" and f.context.get("sync") == "none"]
    lines, notes = _grid_lines(fixes, "batch", "samples/s")
    return Recommendation(
        1,
        "Increase the batch size",
        f"raise the batch until samples/s stops growing (measured from batch {seed_batch})",
        bool(lines),
        lines,
        "; ".join(notes) or "the batch sweep did not complete",
        _grid_gains(fixes, lines),
    )


def _spe_recommendation(train: RunRecord) -> Recommendation:
    fixes = ab_fixes(train, "steps_per_execution", 1)
    lines, notes = _grid_lines(fixes, "steps_per_execution", "samples/s")
    return Recommendation(
        6,
        "steps_per_execution",
        "model.compile(..., steps_per_execution=N) runs N steps per call, amortizing Python and dispatch overhead",
        bool(fixes),
        lines,
        "; ".join(notes) or "the steps_per_execution cases did not run (time budget)",
        _grid_gains(fixes, lines),
    )


def _placement_recommendation(train: RunRecord) -> Recommendation:
    """Recommendation 4 from the suite's placement case (analysis/placement.py)."""
    lines = []
    for r in train.results:
        if r.status != "ok" or r.spec.params.get("kind") != "placement" or r.timing is None:
            continue
        p = device_placement(r.spec.device, r.metrics, r.timing.median_s)
        if p.device.startswith("GPU"):
            cpu_ops = p.on_cpu_in_gpu_run
            lines.append(
                f"{p.device}: "
                + (
                    f"{len(cpu_ops)} op types ran on the CPU in the GPU step: " + ", ".join(o.op_type for o in cpu_ops)
                    if cpu_ops
                    else "every op that does work ran on the GPU"
                )
            )
        else:
            fall = ", ".join(o.op_type for o in p.would_fall_back)
            lines.append(
                f"{p.device}: everything ran on the CPU (a CPU run); this build has no GPU kernel for "
                f"{fall or 'none of the step ops'}, which would run on the CPU in a GPU run"
            )
        if p.copies.count:
            lines.append(f"{p.device}: {p.copies.count} copies between devices per step")
    return Recommendation(
        4,
        "Check that the important ops run on the GPU",
        "tf.debugging.set_log_device_placement(True); `whichdevice placement` for the full table",
        bool(lines),
        lines,
        "" if lines else "not measured: the placement case did not run (TensorFlow only, or the time budget ran out)",
    )


def suite_verdict(record: RunRecord, *, seed_batch: int = 10) -> SuiteVerdict:
    mm = _subset(record, "matmul")
    pipe = _subset(record, "pipeline")
    pipelines = analyze_pipeline(pipe) if pipe.results else []
    train = _subset(record, "train")
    matmul_tables = analyze_sweep(mm, "n", work_metric="flops_per_call")
    training = analyze_training(train)
    findings: list[Finding] = []
    headline: list[str] = []

    for t in matmul_tables:
        fw_name = f"{t.group['framework']} " if "framework" in t.group else ""
        findings += [
            Finding(f.rule, f.device, f"{fw_name}matmul {t.group.get('mode')}: {f.text}", f.advice)
            for f in sweep_findings(t, "n")
        ]
        for d, c in t.crossovers.items():
            fw = f"{t.group['framework']}, " if "framework" in t.group else ""
            headline.append(f"Matmul ({fw}{t.group.get('mode')}): {c.describe('n')}")
    for t in training.sweep:
        findings += [
            Finding(f.rule, f.device, f"training step: {f.text}", f.advice) for f in sweep_findings(t, "batch")
        ]
        for d, c in t.crossovers.items():
            headline.append(f"Training step ({t.title}): {c.describe('batch')}")
    for row in training.runs:
        label = f"{row.params.get('example')} {row.params.get('kind')} (batch {row.params.get('batch')})"
        if "framework" in row.params:
            label = f"{row.params['framework']} {label}"
        for d, comp in row.comparisons.items():
            headline.append(f"Seed {label}: {comp.describe()}")
        for d, be in row.break_even.items():
            if be.kind != "no_gpu":
                headline.append(f"Seed {label}, {d}: {be.describe()}")

    for rep in pipelines:
        headline += [f"Input pipeline (seed 003): {line}" for line in rep.verdict[:2]]
    gpus = [d for d in training.devices + [d for t in matmul_tables for d in t.devices] if d.startswith("GPU")]
    if not gpus:
        headline.insert(
            0,
            "Only the CPU was measured: no GPU is visible to the framework here (see the note). "
            "Below: where this CPU spends its time, and which fixes help on it.",
        )

    recs = [_batch_recommendation(train, seed_batch)]
    prefetch = ab_fixes(train, "data", "tfdata_noprefetch")
    recs.append(
        Recommendation(
            2,
            "Use tf.data with prefetch",
            "dataset.batch(...).prefetch(tf.data.AUTOTUNE) so input overlaps the step",
            bool(prefetch),
            _fix_lines(prefetch),
            ""
            if prefetch
            else "not measured: no pipeline was run without prefetch (a user's own "
            "dataset is measured as given; or the time budget ran out)",
            _fix_gains(prefetch),
        )
    )
    pyfunc_lines, prefetch_pipe = [], []
    pyfunc_gains: dict[str, list[str]] = {}
    prefetch_gains: dict[str, list[str]] = {}
    spread = process_sd(pipe)
    for rep in pipelines:
        rows = {r.variant: r for r in rep.rows}
        tf_ops, py, serial = rows.get("prefetch"), rows.get("pyfunc"), rows.get("serial")
        if tf_ops and py and tf_ops.pipeline and py.pipeline:
            c = compare("py_function", py.pipeline, "TF ops", tf_ops.pipeline, process_sd=spread)
            pyfunc_lines.append(
                f"{rep.device}: seed 003's augmentation in TF ops vs in tf.py_function (pipeline "
                f"alone, per batch): {c.describe().replace('TF ops ', '', 1)}"
            )
            if c.significant and c.ratio > 1:
                pyfunc_gains.setdefault(rep.device, []).append(pyfunc_lines[-1])
        if serial and tf_ops and serial.pipeline and tf_ops.pipeline:
            c = compare("serial", serial.pipeline, "prefetch", tf_ops.pipeline, process_sd=spread)
            prefetch_pipe.append(
                f"{rep.device}: seed 003's pipeline, serial map -> parallel map + prefetch: "
                f"{c.describe().replace('prefetch ', '', 1)}"
            )
            if c.significant and c.ratio > 1:
                prefetch_gains.setdefault(rep.device, []).append(prefetch_pipe[-1])
    if prefetch_pipe:
        gains = {d: recs[-1].gains.get(d, []) + prefetch_gains.get(d, []) for d in {*recs[-1].gains, *prefetch_gains}}
        recs[-1] = Recommendation(
            2, recs[-1].name, recs[-1].advice, True, recs[-1].results + prefetch_pipe, gains=gains
        )
    recs.append(
        Recommendation(
            3,
            "Reduce Python-side preprocessing",
            "do preprocessing in TF ops inside tf.data map",
            bool(pyfunc_lines),
            pyfunc_lines,
            ""
            if pyfunc_lines
            else "not measured: the pipeline cases did not run (TensorFlow "
            "only, or the time budget ran out); `whichdevice pipeline` measures it",
            pyfunc_gains,
        )
    )
    recs.append(_placement_recommendation(train))
    warm = []
    for row in training.runs:
        for d, cell in row.cells.items():
            if (
                cell.ok
                and row.params.get("example") in ("ex2", "user")
                and row.params.get("kind") == "loop"
                and row.params.get("data") != "tfdata_noprefetch"
            ):
                t = cell.timing
                warm.append(
                    f"{d}: first step {t.first_call_s * 1e3:.3g} ms vs steady {t.median_s * 1e3:.3g} ms "
                    f"({t.first_call_s / t.median_s:.3g}x): a one-step or first-epoch timing overstates "
                    "the steady cost this much"
                )
    recs.append(
        Recommendation(
            5, "Benchmark after warm-up", "exclude the first steps / epoch from comparisons", bool(warm), warm
        )
    )
    recs.append(_spe_recommendation(train))
    jit = ab_fixes(train, "jit_compile", False)
    already = sorted({f.device for f in jit if jit_by_default(train, f.device)})
    recs.append(
        Recommendation(
            7,
            "jit_compile (XLA)",
            "model.compile(..., jit_compile=True) fuses ops into fewer kernels",
            bool(jit),
            _fix_lines(jit),
            note="; ".join(f"{d}: already the default here (jit_compile='auto' compiled with XLA)" for d in already),
            gains=_fix_gains([f for f in jit if f.device not in already]),
        )
    )
    sync = [f for f in ab_fixes(train, "sync", "each") if f.context.get("kind") == "steady"]
    recs.append(
        Recommendation(
            8,
            "Do not read the loss back every step",
            "avoid .numpy()/.item()/float(loss) per step; log every N steps",
            bool(sync),
            _fix_lines(sync),
            gains=_fix_gains(sync),
        )
    )
    prec = ab_fixes(train, "precision", "float32")
    prec_note = cpu_16bit_note(train) or ""
    recs.append(
        Recommendation(
            9,
            "Mixed precision",
            "keras.mixed_precision.set_global_policy('mixed_float16')",
            bool(prec),
            _fix_lines(prec) + ([prec_note] if prec and prec_note else []),
            note="" if prec else "the precision cases did not run (time budget)",
            gains=_fix_gains(prec),
        )
    )
    recs = torch_fixes.with_torch_fixes(record, recs)  # diagnose --framework torch: the PyTorch fixes
    gains = [
        f
        for name, base in (
            ("batch", seed_batch),
            ("data", "tfdata_noprefetch"),
            ("steps_per_execution", 1),
            ("jit_compile", False),
        )
        for f in ab_fixes(train, name, base)
        if f.comparison.significant
        and f.speedup > 1
        and (name != "batch" or f.context.get("sync") == "none")
        and not (name == "jit_compile" and jit_by_default(train, f.device))  # XLA is already the default there
    ]
    for device in sorted({f.device for f in gains}):
        best: dict[str, FixResult] = {}
        for f in gains:
            if f.device == device and (f.fix not in best or f.speedup > best[f.fix].speedup):
                best[f.fix] = f
        for fix in _GRID_FIXES & best.keys():  # a grid's gain is its recommended value's, as in the fix table
            mine = sorted(
                (f for f in gains if f.device == device and f.fix == fix and f.context == best[fix].context),
                key=lambda f: f.variant_value,
            )
            best[fix] = _grid_pick(mine)[0]
        ranked = sorted(best.values(), key=lambda f: -f.speedup)
        headline.append(
            f"Measured gains on {device}: "
            + "; ".join(
                f"{f.fix} {f.baseline_value}→{f.variant_value} {f.comparison.claim.text()} per sample ({f.where})"
                for f in ranked
            )
        )
    return SuiteVerdict(headline, findings, recs, matmul_tables, training, pipelines)


def settings_advice(v: SuiteVerdict, batch: int) -> list[str]:
    """The device and settings to use, from measurements only: the device that won the
    user's own fit at their batch, the recommended batch, and every fix that helped
    significantly on that device."""
    out = []
    fit_rows = [
        r
        for r in v.training.runs
        if r.params.get("kind") == "fit"
        and r.params.get("example") == "user"
        and "steps_per_execution" not in r.params
        and "jit_compile" not in r.params
    ]
    if not fit_rows:  # plain torch has no model.fit: the user's own loop at their batch decides
        fit_rows = [
            r
            for r in v.training.runs
            if r.params.get("kind") == "loop" and r.params.get("example") == "user" and r.params.get("data") == "tfdata"
        ]
    device = v.training.baseline
    for row in fit_rows:
        for d, comp in row.comparisons.items():
            if comp.winner == d:
                device = d
                out.append(
                    f"Device: {d} — it trains your model {comp.describe().split(' ', 1)[1]} than "
                    f"{v.training.baseline} at batch {batch}"
                )
            elif comp.winner is None:
                out.append(f"Device: either — {comp.describe()} at batch {batch}; a larger batch may tip it")
            else:
                out.append(f"Device: {v.training.baseline} — {comp.describe()} at batch {batch}")
    if not out:
        out.append(f"Device: {device} (the only device measured here)")
    for rec in v.recommendations:  # the measured gains on that device, as data (Recommendation.gains)
        out += [f"Setting: {rec.name}: {line}" for line in rec.gains.get(device, [])]
    return out
