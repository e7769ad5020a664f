"""`whichdevice scale` in words, a table, a plot (efficiency vs global batch per N) and an HTML
section. Every number comes from ``analysis/scale.py``; nothing is computed here but wording."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from whichdevice.core.units import rate, seconds  # noqa: E402
from whichdevice.present.html import Section  # noqa: E402
from whichdevice.present.output import save_figure  # noqa: E402
from whichdevice.present.tables import Grid, GridCell  # noqa: E402
from whichdevice import frameworks
from whichdevice.present.claims import ratio_text, times

if TYPE_CHECKING:
    from whichdevice.analysis.scale import FrameworkScale, Point, ScaleReport, Verdict
    from whichdevice.analysis.significance import Claim

_WORDS = {2: "two", 3: "three", 4: "four", 8: "eight"}
# An all-reduce share under this cannot explain a slowdown of N replicas (our own choice: a
# quarter of the step; the XProf "collective" category has no threshold of its own).
SMALL_SHARE = 0.25


METHOD_TEXT = {
    "no_sync": "step with vs without gradient sync (DDP no_sync())",
    "isolated": "all-reduce of gradient-sized tensors timed alone on the same replicas, minus its dispatch",
}


def engine(fs: FrameworkScale) -> str:
    """The framework's data-parallel engine, by name."""
    said = frameworks.declared(fs.framework, "SCALE_ENGINE", fs.framework)
    return frameworks.declared(fs.framework, "SCALE_ENGINE_WORDS", said)


def failures(report: ScaleReport) -> list[str]:
    """One line per failed case: framework, replicas, global batch, variant and the error."""
    return [
        f"{r.spec.framework} {r.spec.params.get('replicas')} replicas, global batch {r.spec.params.get('global_batch')}"
        f" ({r.spec.params.get('variant')}): {r.error}"
        for r in report.failed
    ]


def _replicas(n: int) -> str:
    return f"{n} replica" if n == 1 else f"{n} replicas"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.0f} %"


def _share_text(p: Point) -> str:
    share = p.allreduce_share
    if p.share_exceeds_step:
        return "? (alone > step)"
    if share is None:
        return "—"
    if p.share_in_noise:
        return "≈ 0 % (noise)"
    return _pct(share)


def claim_text(c: Claim | None) -> str:
    """A significance.Claim (A / B of times, > 1: B faster) in the claim's own words
    (present/claims.ratio_text: '1.8× slower (95 % CI 1.4–2.4×, 11 samples)'); '—' for none."""
    return "—" if c is None else ratio_text(c)


# Said after a slowdown the all-reduce cannot explain (its share under SMALL_SHARE, or in the noise).
_NOT_THE_ALLREDUCE = (
    " — the rest of the slowdown is not the all-reduce"
    " (what is left: per-replica dispatch, input sharding, replicas sharing the cores)"
)


def _vs_one_head(who: str, w: Point, c: Claim) -> str:
    """'2 replicas are 1.4× slower than 1 at global batch 64' (or faster, no clear change, not enough)."""
    at = f"at global batch {w.global_batch:,}"
    if c.status == "slower":
        return f"{who} are {times(1 / c.ratio)}× slower than 1 {at}"
    if c.status == "faster":
        return f"{who} are {times(c.ratio)}× faster than 1 already {at}"
    if c.status == "no_change":
        return f"{who} are not clearly faster or slower than 1 {at} ({times(c.ratio)}×)"
    return f"{who} vs 1 {at}: {ratio_text(c)}"


def _share_clause(w: Point, c: Claim) -> str:
    """': all-reduce takes 61 % of the step', and what else the replicas cost when it cannot explain
    a slowdown (SMALL_SHARE); '' when the share was not measured."""
    share = w.allreduce_share
    slower = c.status == "slower"
    if share is not None and not w.share_in_noise:
        clause = f": all-reduce takes {_pct(share)} of the step"
        return clause + _NOT_THE_ALLREDUCE if slower and share < SMALL_SHARE else clause
    if share is not None:
        return ": the all-reduce is within the noise of the step" + (_NOT_THE_ALLREDUCE if slower else "")
    if w.share_exceeds_step:
        return ": the all-reduce, timed alone, took longer than the whole step, so its share is unknown"
    return ""


def _crossover_clause(v: Verdict, w: Point) -> str:
    """'; from global batch ≈ 2048 two replicas win (1.7× at 4,096)', or why they never win; ''
    when there is no crossover to speak of."""
    x = v.crossover
    if x is None:
        return ""
    word = _WORDS.get(v.replicas, str(v.replicas))
    if x.batch is not None and x.gain is not None:
        if x.batch == w.global_batch:
            return f"; {word} replicas win at every measured batch"
        where = f"≈ {x.estimate:,.0f}" if x.estimate else f"{x.batch:,}"
        return f"; from global batch {where} {word} replicas win ({times(x.gain.ratio)}× at {x.batch:,})"
    never = (
        "not enough successful points" if x.never_at is None else f"at {x.never_at:,} one replica is as fast or faster"
    )
    if v.best is not None and v.best.vs_one is not None and v.best.vs_one.status == "faster":
        return f"; but {word} replicas do not win at every larger batch ({never})"
    return f"; {word} replicas never win in the measured range ({never})"


def verdict_line(v: Verdict) -> str:
    """'2 replicas are 1.4× slower than 1 at global batch 64: all-reduce takes 61 % of the step;
    from global batch ≈ 2048 two replicas win (1.7×)'."""
    who = _replicas(v.replicas)
    if v.worst is None or v.worst.vs_one is None:
        return f"{v.framework}: {who} vs 1 — not enough successful points to compare."
    w, c = v.worst, v.worst.vs_one
    return f"{v.framework}: {_vs_one_head(who, w, c)}{_share_clause(w, c)}{_crossover_clause(v, w)}."


def grid(fs: FrameworkScale) -> Grid:
    headers = [
        "N",
        "global batch",
        "per replica",
        "step (median)",
        "samples/s",
        "vs 1 replica",
        "efficiency",
        "all-reduce",
    ]
    rows = []
    for n in fs.replicas:
        for b in fs.batches:
            p = fs.point(n, b)
            if p is None:
                continue
            if not p.ok:
                rows.append([GridCell(str(n)), GridCell(f"{b:,}")] + [GridCell("failed", "bad")] + [GridCell("")] * 5)
                continue
            eff = p.efficiency
            ci = p.efficiency_ci
            eff_text = "baseline" if n == 1 else ("—" if eff is None else f"{_pct(eff)}")
            if n > 1 and eff is not None and ci is not None:
                eff_text += f" ({100 * ci[0]:.0f}–{_pct(ci[1])})"
            tone = ""
            if p.vs_one is not None and p.vs_one.significant:
                tone = "good" if p.vs_one.ratio > 1 else "bad"
            step_n = p.step.n_samples if p.step else 0
            rows.append(
                [
                    GridCell(str(n)),
                    GridCell(f"{b:,}"),
                    GridCell(f"{b // n:,}"),
                    GridCell(f"{seconds(p.step_s)} (n={step_n})"),
                    GridCell(rate(p.samples_per_s, "/s")),
                    GridCell(claim_text(p.vs_one) if n > 1 else "—", tone),
                    GridCell(eff_text),
                    GridCell(_share_text(p) if n > 1 else "—"),
                ]
            )
    footer = [
        f"Engine: {engine(fs)}. All-reduce share: {METHOD_TEXT[fs.method]}.",
        "N: replicas. Efficiency = throughput of N replicas / (N × throughput of 1); in brackets the 95 % "
        "interval. 'vs 1 replica' compares step times at the same global batch (≥ 5 samples a side, the "
        "whole interval must lie beyond the 5 % noise threshold). all-reduce: its share of "
        "the N-replica step.",
    ]
    if not fs.replicas_ok():
        footer.append("WARNING: an engine reported a replica count other than the one asked (see the record).")
    return Grid(f"{fs.framework}: the same training step on 1…N replicas", headers, rows, footer)


def fix_lines(fs: FrameworkScale) -> list[str]:
    """The measured fix (DDP: gradient accumulation) at the smallest global batch measured,
    where the all-reduce weighs most."""
    out = []
    for n in fs.replicas:
        pts = [fs.points[(n, b)] for b in fs.batches if (n, b) in fs.points and fs.points[(n, b)].accum]
        if n == 1 or not pts:
            continue
        p = pts[0]
        gain, vs1 = p.accum_gain, p.accum_vs_one
        out.append(
            f"{fs.framework} fix measured — gradient accumulation over {fs.accum} micro-batches (one all-reduce "
            f"per {fs.accum}), {_replicas(n)} at global batch {p.global_batch:,} per micro-batch, samples/s vs "
            f"syncing every step: {claim_text(gain)}; vs 1 replica: {claim_text(vs1)} "
            f"(the optimizer steps once per {fs.accum} micro-batches: an effective batch {fs.accum}× larger)."
        )
    return out


def lines(report: ScaleReport) -> list[str]:
    verdict = [verdict_line(v) for fs in report.frameworks for v in fs.verdicts]
    return verdict + [line for fs in report.frameworks for line in fix_lines(fs)]


def plot(report: ScaleReport, path: Path, *, title: str) -> Path:
    """Scaling efficiency vs global batch, one line per (framework, N), with the interval as a
    band; the dashed line at 1/N is where N replicas are exactly as fast as one."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    i = 0
    ns = set()
    for fs in report.frameworks:
        for n in fs.replicas:
            if n == 1:
                continue
            pts = [(p, e) for b in fs.batches if (p := fs.points.get((n, b))) is not None and (e := p.efficiency)]
            if not pts:
                continue
            xs = [p.global_batch for p, _ in pts]
            ys = [e for _, e in pts]
            color = f"C{i}"
            ax.plot(xs, ys, "o-", color=color, label=f"{fs.framework}, {n} replicas")
            cis = [ci for p, _ in pts if (ci := p.efficiency_ci) is not None]
            if len(cis) == len(pts):  # every point has its interval
                ax.fill_between(xs, [c[0] for c in cis], [c[1] for c in cis], color=color, alpha=0.15)
            acc = [(p.global_batch, a.ratio / n) for p, _ in pts if (a := p.accum_vs_one) is not None]
            if acc:  # the measured fix, per sample against 1 replica without it
                ax.plot(
                    [x for x, _ in acc],
                    [y for _, y in acc],
                    "s--",
                    color=color,
                    alpha=0.7,
                    label=f"{fs.framework}, {n} replicas, gradient accumulation ×{fs.accum}",
                )
            ns.add(n)
            i += 1
    for n in sorted(ns):
        ax.axhline(1 / n, color="gray", linestyle="--", linewidth=0.8)
        ax.text(
            0.01,
            1 / n,
            f"1/{n}: {n} replicas as fast as 1",
            va="bottom",
            fontsize=7,
            transform=ax.get_yaxis_transform(),
        )
    ax.axhline(1.0, color="green", linestyle=":", linewidth=0.8)
    ax.text(0.01, 1.0, "perfect scaling", va="bottom", fontsize=7, transform=ax.get_yaxis_transform())
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel("global batch (samples per step, split over the replicas)")
    ax.set_ylabel("scaling efficiency  thr_N / (N × thr_1)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no successful N > 1 points", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    return save_figure(fig, Path(path))


def sections(report: ScaleReport, png: Path | None) -> list[Section]:
    out = [Section("Does the next replica pay?", lines=lines(report), pngs=[png] if png else [])]
    for fs in report.frameworks:
        out.append(Section(f"{fs.framework} ({engine(fs)})", grids=[grid(fs)]))
    return out
