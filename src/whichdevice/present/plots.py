"""PNG plots (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from whichdevice.core.telemetry import summarize
from whichdevice.core.units import figure, seconds
from whichdevice.present.output import save_figure as save_figure
from whichdevice.present.tables import table_title
from whichdevice.workloads.fixes import SYNC

if TYPE_CHECKING:  # matplotlib is imported on first use (pyplot())
    from whichdevice.analysis.sweep import Table
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis


@functools.cache
def _crossover_note(ax: Axes, x: float) -> None:
    """The crossover's label, written up its dotted line."""
    ax.annotate(
        f"crossover ≈ {figure(x)}",
        (x, 0.97),
        xycoords=("data", "axes fraction"),
        rotation=90,
        va="top",
        ha="right",
        fontsize=8,
        color="gray",
    )


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend (no display), imported on first use: ≈ 0.5 s the
    command does not pay before its measuring child starts; the API calls this while the child
    imports its framework, before the child may take a sample."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ticker() -> ModuleType:
    pyplot()
    from matplotlib import ticker

    return ticker


_COLORS = {"CPU": "#1f77b4", "GPU": "#d62728"}
# A figure's width in inches: at save_figure's 110 dpi 715 px, which a report 800 px wide shows
# unscaled, so a legend's 8 pt is 12 px there; panels are stacked, never side by side.
PANEL_WIDTH_IN = 6.5
LEGEND_MIN_PT = 7  # the smallest text on a plot (bar labels; legends are 8 pt)


def _color(device: str, i: int) -> str | tuple[float, float, float, float]:
    kind = device.split(":")[0]
    if kind == "GPU" and device != "GPU:0":
        rgba: tuple[float, float, float, float] = pyplot().get_cmap("Reds")(0.5 + 0.1 * i)
        return rgba
    return _COLORS.get(kind, f"C{i}")


def _legend(ax: Axes, **kw: Any) -> None:
    """A legend only when something is labelled (a panel whose cases all failed or were skipped
    has none, and matplotlib would warn)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)


def plain_numbers(axis: Axis, base: int = 10) -> None:
    """Log-axis ticks as plain numbers (8, 32, ..., 8192; 10, 100, 1000), not 2^3 or 10^3."""
    ticker = _ticker()
    axis.set_major_locator(ticker.LogLocator(base=base))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def seconds_axis(axis: Axis) -> None:
    """A log time axis in people's units (10 µs, 1 ms, 1 s), not 10^-5."""
    ticker = _ticker()
    axis.set_major_locator(ticker.LogLocator(base=10))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: seconds(v)))
    axis.set_minor_formatter(ticker.NullFormatter())


def _no_gpu_note(ax: Axes, tables: list[Table]) -> None:
    """With only CPUs measured, say so on the plot: the GPU curve is missing, not hidden."""
    if not any(d.startswith("GPU") for t in tables for d in t.devices):
        ax.text(
            0.98,
            0.02,
            "no GPU on this machine: CPU only",
            transform=ax.transAxes,
            fontsize=8,
            color="#8a6d00",
            va="bottom",
            ha="right",
            bbox={"facecolor": "#fff8e1", "edgecolor": "#f0b400", "boxstyle": "round,pad=0.3"},
        )


def _utilization_strip(ax: Axes, table: Table, x_label: str) -> None:
    """Under each timing panel: mean CPU busy % (and GPU busy %) during each steady window."""
    for i, d in enumerate(table.devices):
        pts = []
        for r in table.rows:
            c = r.cells.get(d)
            if c is None or c.timing is None or c.timing.telemetry is None:
                continue
            s = summarize(c.timing.telemetry)
            value = s.gpu_util_mean_percent if d.startswith("GPU") else s.cpu_mean_percent
            if value is not None:
                pts.append((r.x, value))
        if pts:
            what = "GPU busy" if d.startswith("GPU") else "CPU busy (all cores)"
            ax.plot([x for x, _ in pts], [v for _, v in pts], ".-", color=_color(d, i), label=f"{d} {what}")
    ax.set_ylim(0, 105)
    ax.set_ylabel("busy %")
    ax.set_xlabel(x_label)
    ax.grid(True, alpha=0.3)
    if ax.lines:
        _legend(ax, fontsize=7, loc="lower right")
    else:
        ax.text(
            0.5,
            0.5,
            "no utilization telemetry",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=8,
            color="gray",
        )


def plot_sweep(tables: list[Table], path: Path, *, x_label: str, title: str, loglog: bool = True) -> Path:
    """One panel per table (e.g. per matmul mode): median time vs x per device, the
    interquartile band shaded, first calls as crosses, crossovers as dotted lines."""
    n = max(1, len(tables))
    # One column, each panel above its strip: side by side, four panels made a 2860 px image
    # whose legends were 3 px tall in a report 800 px wide.
    fig, axes = pyplot().subplots(
        2 * n,
        1,
        figsize=(PANEL_WIDTH_IN, 6.2 * n),
        squeeze=False,
        gridspec_kw={"height_ratios": [4, 1] * n},
        layout="constrained",  # no tight_layout warning with the strips and the title
    )
    for ax, strip, table in zip(axes[0::2, 0], axes[1::2, 0], tables):
        strip.sharex(ax)
        _utilization_strip(strip, table, x_label)
        for i, d in enumerate(table.devices):
            pts = [(r.x, t) for r in table.rows if d in r.cells and (t := r.cells[d].timing) is not None]
            if not pts:
                continue
            xs = [x for x, _ in pts]
            color = _color(d, i)
            ax.plot(xs, [t.median_s for _, t in pts], "o-", color=color, label=f"{d} median (quartiles shaded)")
            ax.fill_between(xs, [t.q1_s for _, t in pts], [t.q3_s for _, t in pts], color=color, alpha=0.2)
            ax.plot(xs, [t.first_call_s for _, t in pts], "x", color=color, alpha=0.6, label=f"{d} first call")
        _mark_crossovers(table, ax)
        if loglog:
            ax.set_xscale("log")
            ax.set_yscale("log")
            plain_numbers(strip.xaxis)
            seconds_axis(ax.yaxis)
        ax.set_ylabel("time per call")
        ax.set_title(table_title(table.group, table.title), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        _legend(ax, fontsize=8, loc="upper left")
        _no_gpu_note(ax, tables)
    fig.suptitle(title)
    return save_figure(fig, path)


_BATCH_STYLES = ("o-", "s--", "^-.", "d:")  # one per sweep group (table), in turn


def _curve_tag(group: dict[str, object]) -> str:
    """What tells two curves of one device apart: ' torch, loss read every step', or ''."""
    tag = ", loss read every step" if group.get(SYNC.param) == "each" else ""
    return f" {group['framework']}{tag}" if group.get("framework") else tag


def _plot_batch_curves(ax_t: Axes, ax_r: Axes, table: Table, style: str) -> None:
    """One table's curves, one per device with a measured point: median step time with its
    interquartile band (``ax_t``), samples/s (``ax_r``)."""
    tag = _curve_tag(table.group)  # short labels: the device, and only what tells two curves apart
    for i, d in enumerate(table.devices):
        cells = [(r.x, c, t) for r in table.rows if (c := r.cells.get(d)) is not None and (t := c.timing) is not None]
        if not cells:
            continue
        xs = [x for x, _, _ in cells]
        color = _color(d, i)
        ax_t.plot(xs, [t.median_s for _, _, t in cells], style, color=color, label=f"{d}{tag}")
        ax_t.fill_between(xs, [t.q1_s for _, _, t in cells], [t.q3_s for _, _, t in cells], color=color, alpha=0.15)
        rates = [c.work_per_s for _, c, _ in cells]  # None (no metric): a gap in the line, as matplotlib draws it
        ax_r.plot(xs, rates, style, color=color, label=f"{d}{tag}")  # type: ignore[arg-type]  # stubs omit None


def _mark_crossovers(table: Table, *axes: Axes) -> None:
    """Each estimated crossover as a dotted line on every panel of ``axes``, its size written on the first."""
    for cross in table.crossovers.values():
        if cross.kind != "between" or not cross.estimate:
            continue
        for ax in axes:
            ax.axvline(cross.estimate, color="gray", linestyle=":", linewidth=1.5)
        _crossover_note(axes[0], cross.estimate)


def _batch_axes(ax: Axes, ylabel: str, *, loglog: bool, times: bool) -> None:
    """A batch-size panel's axes: log base 2 in batch, plain numbers (times in people's units)."""
    if loglog:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        plain_numbers(ax.xaxis, base=2)
        if times:
            seconds_axis(ax.yaxis)
        else:
            plain_numbers(ax.yaxis)
    ax.set_xlabel("batch size")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    _legend(ax, fontsize=8, loc="best")


def plot_batch_sweep(tables: list[Table], path: Path, *, title: str, loglog: bool = True) -> Path:
    """Two panels: steady step time and samples/s against batch size, one line per device
    and sweep group (e.g. sync each / none), crossovers as dotted lines."""
    fig, (ax_t, ax_r) = pyplot().subplots(2, 1, figsize=(PANEL_WIDTH_IN, 9), layout="constrained")
    for ti, table in enumerate(tables):
        _plot_batch_curves(ax_t, ax_r, table, _BATCH_STYLES[ti % len(_BATCH_STYLES)])
        _mark_crossovers(table, ax_t, ax_r)
    _batch_axes(ax_t, "steady step time", loglog=loglog, times=True)
    _batch_axes(ax_r, "samples/s", loglog=loglog, times=False)
    _no_gpu_note(ax_t, tables)
    fig.suptitle(title)
    return save_figure(fig, path)


def plot_steps(step_s: list[float], warmup: int, path: Path, *, title: str) -> Path:
    """Per-step times in order (log y), warm-up steps marked: for a single run (StepTimer)."""
    fig, ax = pyplot().subplots(figsize=(8, 4.5), layout="constrained")
    xs = list(range(1, len(step_s) + 1))
    ax.plot(xs[warmup:], step_s[warmup:], ".", color=_COLORS["CPU"], label="steady")
    ax.plot(xs[:warmup], step_s[:warmup], "x", color=_COLORS["GPU"], label=f"warm-up ({warmup})")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("step time (s)")
    ax.grid(True, which="both", alpha=0.3)
    _legend(ax, fontsize=8)
    ax.set_title(title, fontsize=10)
    return save_figure(fig, path)


def plot_input_wait(panels: list[tuple[str, list[tuple[str, float, float, str]]]], path: Path, *, title: str) -> Path:
    """Stacked bars, one panel per device, one bar per pipeline variant: the median training
    step split into waiting for input (top, hatched) and computing (bottom), in ms; each bar
    labelled with its text (the analysis's wait share and class). ``panels``: (device,
    [(variant, wait_s, compute_s, label), ...]) — every number comes from the analysis."""
    n = max(1, len(panels))
    fig, axes = pyplot().subplots(
        n,
        1,
        figsize=(max(PANEL_WIDTH_IN, 1.3 * max((len(b) for _, b in panels), default=1)), 4.8 * n),
        squeeze=False,
        layout="constrained",
    )
    for ax, (device, bars) in zip(axes[:, 0], panels):
        names = [b[0] for b in bars]
        wait_ms = [b[1] * 1e3 for b in bars]
        comp_ms = [b[2] * 1e3 for b in bars]
        xs = list(range(len(bars)))
        color = _color(device, 0)
        ax.bar(xs, comp_ms, color=color, alpha=0.85, label="computing (train step)")
        ax.bar(xs, wait_ms, bottom=comp_ms, color="#ff7f0e", alpha=0.85, hatch="//", label="waiting for input")
        for x, c, w, b in zip(xs, comp_ms, wait_ms, bars):
            ax.annotate(
                b[3], (x, c + w), ha="center", va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points"
            )
        ax.set_xticks(xs, names, rotation=20, fontsize=8)
        ax.set_ylabel("median step time (ms)")
        ax.set_title(device, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.margins(y=0.15)
        _legend(ax, fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path)
