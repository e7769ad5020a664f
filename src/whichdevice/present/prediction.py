"""Terminal tables and plots for ``calibrate`` (a device profile) and ``predict``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from whichdevice.present import names
from whichdevice.present.names import CANNOT_PREDICT
from whichdevice.present.terminal import print_table

from whichdevice.present.tables import Align
from whichdevice.present.claims import cpu_varied_words, crossover_text, gpu_decide_words, gpu_decision_words

if TYPE_CHECKING:
    from whichdevice.analysis.costmodel import Assumption, Extrapolation
    from whichdevice.analysis.prediction import GpuAnswer, PredictReport
    from whichdevice.analysis.deviceprofile import CurvePoint, DeviceCosts, DeviceProfile


def winner_text(row: GpuAnswer) -> str:
    """'CPU', 'GPU', '—', or the overlap said as what to do."""
    return "too close: measure it" if row.too_close else row.winner


def assumption_text(a: Assumption) -> str:
    """What the prediction takes for granted, in words (analysis/costmodel.Assumption)."""
    if a.kind == "unknown_ops":
        kinds = ", ".join(f"{k} ×{v}" for k, v in a.ops)
        return (
            f"ops the cost model does not know, each costed as one kernel at the {a.floor_s * 1e6:.1f} µs floor "
            f"with the band's high edge {a.high_s * 1e6:.0f} µs wider: {kinds}"
        )
    if a.kind == "no_elementwise_curve":
        return (
            f"no elementwise curve in the profile: elementwise ops at the {a.floor_s * 1e6:.1f} µs floor, "
            "band up to the memory-bandwidth lower bound"
        )
    if a.kind == "dispatch_upper_bound":
        return (
            f"per-kernel cost is the profile's {a.mode} dispatch figure "
            "(no in-graph figure): likely an upper bound for a compiled step"
        )
    if a.kind == "batch_on_gpu":
        return (
            f"the batch is already on the GPU, as the CPU step was measured; copying it from host memory every "
            f"step would add about {a.copy_s * 1e3:.3f} ms at batch {a.batch} (prefetch it to the GPU to avoid that)"
        )
    return _ASSUMPTIONS[a.kind]


_ASSUMPTIONS = {
    "xla_kernels": (
        "XLA kernels counted from the CPU compiler's HLO (XLA's GPU compiler fuses along the same lines, "
        "not identically)"
    ),
    "conv_as_matmul": "convolutions costed as matmuls of equal FLOPs",
    "spe_eager": "steps_per_execution has no effect on an eager loop (each step still runs from Python)",
    "no_step_call": "no per-call cost of a compiled step in the profile (taken as 0)",
    "no_sync_cost": "no sync cost in the profile (taken as 0)",
    "host_from_cpu": (
        "per-step host overhead (Python, the training loop) measured on this machine's CPU at the "
        "smallest batches; the GPU machine's host is taken to be as fast"
    ),
}


def extrapolation_text(e: Extrapolation) -> str:
    """'matmul of n≈8192 beyond the largest calibrated size 4096' (the band is widened there)."""
    what = {"matmul": f"matmul of n≈{e.size:.0f}", "elementwise": f"elementwise op of {e.size:.3g} B"}.get(
        e.what, f"input copy of {e.size:.3g} B"
    )
    return f"{what} beyond the largest calibrated size {e.largest:g}"


def _ms(s: float | None) -> str:
    return "—" if s is None else f"{s * 1e3:.3f}"


def _us(s: float | None) -> str:
    return "not measured" if s is None else f"{s * 1e6:.2f} µs"


def _card(profile: DeviceProfile) -> str | None:
    """The device a profile was measured on: its GPU, else the CPU it calibrated."""
    if profile.gpu is not None:
        return profile.gpu.description
    return str(profile.machine.get("cpu_model") or "") or None


def render_profile(console: Console, profile: DeviceProfile) -> None:
    machine = str(profile.machine.get("cpu_model") or profile.machine.get("gpu") or "")
    card = _card(profile)
    console.print(
        f"[bold]Device profile of {escape(names.profile_words(profile, card))}[/bold] — "
        f"{escape(profile.framework)}" + (f", {escape(machine)}" if machine and machine != card else "")
    )
    for dev in (profile.cpu, profile.gpu):
        if dev is None:
            continue
        _render_device(console, dev)
    for n in profile.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")


def _rate(curve: Sequence[CurvePoint], work: Callable[[float], float]) -> str:
    if not curve:
        return "—"
    best = max(curve, key=lambda p: work(p.x) / p.s)
    return f"{work(best.x) / best.s:.3g} at {best.x:g}"


def _render_device(console: Console, dev: DeviceCosts) -> None:
    t = Table(title=f"{dev.kind.upper()}: {dev.description}", title_justify="left")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_row("dispatch per op, eager (s/op)", _us(dev.dispatch_eager_s))
    t.add_row("dispatch per op, compiled (s/op)", _us(dev.dispatch_graph_s))
    t.add_row("compiled step call (s)", _us(dev.step_call_s))
    t.add_row("sync: scalar read back (s)", _us(dev.sync_s))
    t.add_row("matmul best FLOP/s (at n)", _rate(dev.matmul, lambda n: 2 * n**3))
    t.add_row("elementwise best bytes/s (at bytes)", _rate(dev.elementwise, lambda b: b))
    t.add_row("host→device best bytes/s (at bytes)", _rate(dev.h2d, lambda b: b))
    t.add_row("device→host best bytes/s (at bytes)", _rate(dev.d2h, lambda b: b))
    print_table(console, t)


def plot_profile(profile: DeviceProfile, png: Path) -> None:
    from whichdevice.present.output import save_figure
    from whichdevice.present.plots import PANEL_WIDTH_IN, pyplot  # matplotlib: only when drawn

    fig, axes = pyplot().subplots(2, 1, figsize=(PANEL_WIDTH_IN, 8))
    for dev in (profile.cpu, profile.gpu):
        if dev is None:
            continue
        axes[0].loglog([p.x for p in dev.matmul], [p.s for p in dev.matmul], "o-", label=f"{dev.kind.upper()} matmul")
        for name in ("elementwise", "h2d", "d2h"):
            c = getattr(dev, name)
            if c:
                axes[1].loglog([p.x for p in c], [p.s for p in c], "o-", label=f"{dev.kind.upper()} {name}")
    axes[0].set_xlabel("n (square float32)")
    axes[1].set_xlabel("bytes")
    for ax in axes:
        ax.set_ylabel("seconds per call (median)")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.suptitle(f"Device profile of {names.profile_words(profile, _card(profile))} — whichdevice calibrate")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, png, dpi=100)


def render_predict(console: Console, report: PredictReport, profile: DeviceProfile, local_cpu: str) -> None:
    gpu = profile.gpu
    t = Table(
        title=f"Training step ({escape(report.framework)}): measured here ({escape(local_cpu)}) vs predicted on "
        f"{escape(names.profile_words(profile, gpu.description if gpu else None))}",
        title_justify="left",
    )
    band_name = "80 % band" if report.calibrated else "model band, not calibrated"
    columns: tuple[tuple[str, Align], ...] = (
        ("batch", "right"),
        ("CPU step ms (measured, band)", "right"),
        (f"GPU step ms (predicted [{band_name}])", "right"),
        ("winner", "left"),
        ("GPU time mostly", "left"),
        ("kernels", "right"),
    )
    for col, j in columns:
        t.add_column(col, justify=j)
    for r in report.rows:
        cpu = "failed" if r.cpu_s is None else f"{_ms(r.cpu_s)} ({_ms(r.cpu_q1_s)}–{_ms(r.cpu_q3_s)})"
        if r.band is None or r.gpu.step is None:
            g, dom = "cannot predict", "—"
        else:
            s = r.band
            g = f"{_ms(s.mid)} [{_ms(s.low)}, {_ms(s.high)}]"
            raw = r.gpu.step.mid
            dominant = r.gpu.dominant
            share = r.gpu.parts_s[dominant] / raw if raw and dominant is not None else 0
            dom = f"{r.gpu.dominant} {share:.0%}"
        t.add_row(str(r.batch), cpu, g, winner_text(r), dom, str(r.kernels))
    print_table(console, t)
    _print_answer(console, report, gpu.description if gpu else "the profiled GPU")
    if report.calibrated:
        console.print(
            "The band holds the measured step in about 80 % of cases: it is calibrated on the model's own "
            f"errors ({escape(report.calibrated)})."
        )
    else:
        console.print(
            "[yellow]The band is the model's own (no calibration of its errors is shipped): "
            "the truth falls outside it more often than it looks.[/yellow]"
        )
    decide = gpu_decide_words(report.decision)
    if decide:
        console.print(escape(decide))
    for a in dict.fromkeys(assumption_text(a) for a in report.assumptions):
        console.print(f"[yellow]Assumption:[/yellow] {escape(a)}")
    for e in sorted(set(extrapolation_text(e) for e in report.extrapolated)):
        console.print(f"[yellow]Extrapolated (band widened):[/yellow] {escape(e)}")
    for f in report.failures:
        console.print(f"[red]Failed:[/red] {escape(f)}")


def _print_answer(console: Console, report: PredictReport, card: str) -> None:
    """The answer under the table: the decision, how far the CPU's times varied, the crossover
    of the medians; or why there is none."""
    if report.cannot_predict:
        console.print(
            f"[red]Cannot predict:[/red] {escape(CANNOT_PREDICT[report.cannot_predict])}. "
            "Measure on a real GPU (whichdevice train) for this model."
        )
        return
    console.print(f"Answer: {escape(gpu_decision_words(report.decision, card))}.")
    varied = cpu_varied_words(report.cpu_varied)
    if varied:
        console.print(escape(varied))
    console.print(
        f"Crossover of the medians (measured CPU vs predicted GPU): {escape(crossover_text(report.crossover, 'samples'))}"
    )


def plot_predict(report: PredictReport, png: Path, loglog: bool, title: str) -> None:
    from whichdevice.present.output import save_figure
    from whichdevice.present.plots import plain_numbers, pyplot  # matplotlib: only when a plot is drawn

    fig, ax = pyplot().subplots(figsize=(7, 4.5))
    cpu = [(r.batch, s) for r in report.rows if (s := r.cpu_s) is not None]
    ax.plot([b for b, _ in cpu], [s * 1e3 for _, s in cpu], "o-", label="CPU (measured here)")
    g = [(r.batch, band) for r in report.rows if (band := r.band) is not None]
    if g:
        xs = [b for b, _ in g]
        ax.plot(xs, [band.mid * 1e3 for _, band in g], "s--", label="GPU (predicted)")
        ax.fill_between(
            xs,
            [band.low * 1e3 for _, band in g],
            [band.high * 1e3 for _, band in g],
            alpha=0.25,
            label="GPU 80 % band (calibrated)" if report.calibrated else "GPU band (model's own)",
        )
    if loglog:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        plain_numbers(ax.xaxis, base=2)  # batch 8, 32, 128 ... as numbers, not 2^3
        plain_numbers(ax.yaxis)  # 1, 10, 100 ms, not 10^0
    ax.set_xlabel("batch size")
    ax.set_ylabel("step time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)

    save_figure(fig, png, dpi=100)
