"""Text grids for the ``pipeline`` report (shared by the terminal and the HTML presenters).

Pure formatting of what analysis/pipeline.py computed: no verdict is decided here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from whichdevice.present.claims import comparison_text, ratio_text
from whichdevice.core.records import known
from whichdevice.present.tables import Grid, GridCell, busy_text, telemetry_text
from whichdevice.core.units import count_rate, seconds
from whichdevice.core.records import Timing

if TYPE_CHECKING:
    from whichdevice.analysis.compare import Comparison
    from whichdevice.analysis.pipeline import DeviceReport, VariantRow, WorkPlace

_BOUND_TONE = {"HIGHLY": "bad", "MODERATELY": "neutral", "NOT": "good"}  # analysis/pipeline's classes


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
        if r.not_measured is not None:  # a GPU-only variant on a CPU: said, not failed
            rows.append(cells + [GridCell(r.not_measured, "dim")] + [GridCell("—", "dim")] * (len(headers) - 2))
            continue
        cells.append(
            GridCell(
                count_rate(r.examples_per_s, "examples") if r.examples_per_s else ("failed" if r.failed else "—"),
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
    footer += [f"{r.variant}: {r.not_measured}" for r in rep.rows if r.not_measured is not None]
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
                GridCell(count_rate(c.examples_per_s, "examples") if c.examples_per_s else "—"),
                GridCell(seconds(c.floor_seconds_per_example), "dim"),
                GridCell(note, "bad" if slowest else "dim"),
            ]
        )
    return Grid(
        f"{rep.device}: {rep.ladder.stage_title}",
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


# ------------------------------------------------------------------ the verdict's sentences


def describe_input_bound(r: VariantRow) -> str | None:
    """XProf's sentence, e.g. 'HIGHLY input-bound: 41.2 % of each loop step waits for the batch'.

    THE input-bound figure (one definition): the share of the training loop's step
    time spent waiting for the batch (``input_wait_s / loop_s``, measured in the loop, pooled
    over its rounds). The pipeline-alone throughput and the loop speed are other figures and are
    named as such wherever they appear. With the share in each round (fresh process) falling on
    both sides of a class boundary, the class is said to be borderline."""
    if r.wait_percent is None:
        return None
    what = "not input-bound" if r.input_bound == "NOT" else f"{r.input_bound} input-bound"
    text = f"{what}: {r.wait_percent:.1f} % of each loop step waits for the batch"
    rounds = r.wait_percent_rounds
    if len(rounds) >= 2:
        spread = f"{min(rounds):.1f}–{max(rounds):.1f} % over {len(rounds)} rounds"
        text += f" (borderline: {spread})" if r.borderline else f" ({spread})"
    return text


_GPU_STATE = {
    "waits_for_input": "the GPU idles waiting for input",
    "underused": "the GPU is under-used although input is not the limit (too little work per step)",
    "busy": "the GPU is kept busy",
}


def _work_place_line(device: str, w: WorkPlace, host_work: str) -> str:
    s = w.telemetry
    if w.kind != "gpu":
        cores = f"{w.n_cores} cores" if w.n_cores else "the cores"
        busy = telemetry_text(s) if s is not None else ""
        return f"{device}: input work and the train step share the same {cores}; during the {w.loop} loop: {busy}."
    line = f"{device}: {host_work}"
    if s is not None and w.gpu_state == "unavailable":
        line += f" GPU utilization was not available ({s.gpu_unavailable})."
    elif s is not None and w.gpu_state is not None:
        line += f" During the {w.loop} loop: {telemetry_text(s)} — {_GPU_STATE[w.gpu_state]}."
    return line


def _fastest_line(rep: DeviceReport) -> str | None:
    first, best = rep.first, rep.fastest
    if first is None or best is None:
        return None
    sp = best.loop_speedup
    if sp is None:
        gain = best.variant
    elif sp.winner is None:
        gain = f"{best.variant} ({ratio_text(sp)} against {first.variant}: not a clear winner)"
    else:
        gain = f"{comparison_text(sp)} than {first.variant} (loop speed)"
    line = f"{rep.device}: fastest loop: {gain}; {describe_input_bound(best)}."
    if rep.fastest_waits_more and best.wait_s is not None and first.wait_s is not None:
        line += (
            f" Its share is higher although its loop is faster: its steps are shorter, so its "
            f"{best.wait_s * 1e3:.3g} ms of waiting per step (vs {first.wait_s * 1e3:.3g} ms for "
            f"{first.variant}) weighs more."
        )
    return line


def device_verdict(rep: DeviceReport) -> list[str]:
    """The device's verdict lines, from the typed report only."""
    out: list[str] = []
    d, first = rep.device, rep.first
    if first is not None:
        out.append(f"{d}, {first.variant}: {describe_input_bound(first)}.")
        fastest = _fastest_line(rep)
        if fastest is not None:
            out.append(fastest)
        o = rep.overlap
        if o is not None:
            out.append(
                f"{d}: model step alone {o.model_s * 1e3:.3g} ms, {first.variant} pipeline alone "
                f"{o.pipeline_s * 1e3:.3g} ms per batch: a loop that overlaps them perfectly "
                f"takes ≥ {o.best_s * 1e3:.3g} ms per step, one that does not ≈ "
                f"{o.serial_s * 1e3:.3g} ms "
                f"(measured {o.loop_s * 1e3:.3g} ms)."
            )
    if rep.pyfunc_vs_tfops is not None:
        out.append(
            f"{d}: {rep.ladder.python_vs_ops}: "
            f"{comparison_text(known(rep.pyfunc_vs_tfops, 'comparison'))} (pipeline alone, per batch)."
        )
    if rep.slowest is not None:
        rate_ = rep.slowest.examples_per_s
        out.append(
            f"{d}: slowest stage: {rep.slowest.stage} "
            f"({rep.slowest.seconds_per_example * 1e6:.3g} µs per example"
            f"{f', {rate_:,.0f} examples/s on one thread' if rate_ else ''})."
        )
    if rep.work is not None:
        out.append(_work_place_line(d, rep.work, rep.ladder.host_work))
    return out


def step_jitter_note(span: tuple[float, float] | None) -> str | None:
    """One line on the per-step cases' spread (analysis/pipeline.step_jitter), reported once
    instead of warned about per case."""
    if span is None:
        return None
    lo, hi = span
    return (
        f"per-batch and per-step times vary by {lo:.0%}-{hi:.0%} of their median (IQR/median): "
        "one sample is one batch, so this is step-to-step jitter; the tables use medians. Raise --min-time "
        "for more steps if the loop medians of two variants are within the noise (≈)."
    )
