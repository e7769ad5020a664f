"""PNG plots (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from whichdevice.analysis.sweep import Table  # noqa: E402
from whichdevice.telemetry import summarize  # noqa: E402

_COLORS = {"CPU": "#1f77b4", "GPU": "#d62728"}


def _color(device: str, i: int) -> str:
    kind = device.split(":")[0]
    if kind == "GPU" and device != "GPU:0":
        return plt.get_cmap("Reds")(0.5 + 0.1 * i)
    return _COLORS.get(kind, f"C{i}")


def _utilization_strip(ax, table: Table, x_label: str) -> None:
    """Under each timing panel: mean CPU busy % (and GPU busy %) during each steady window."""
    for i, d in enumerate(table.devices):
        pts = []
        for r in table.rows:
            c = r.cells.get(d)
            if c is None or not c.ok or c.timing.telemetry is None:
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
        ax.legend(fontsize=7, loc="lower right")
    else:
        ax.text(0.5, 0.5, "no utilization telemetry", ha="center", va="center", transform=ax.transAxes,
                fontsize=8, color="gray")


def plot_sweep(tables: list[Table], path: Path, *, x_label: str, title: str, loglog: bool = True) -> Path:
    """One panel per table (e.g. per matmul mode): median time vs x per device, the
    interquartile band shaded, first calls as crosses, crossovers as dotted lines."""
    n = max(1, len(tables))
    fig, axes = plt.subplots(2, n, figsize=(6.5 * n, 6.2), squeeze=False, sharex="col",
                             gridspec_kw={"height_ratios": [4, 1]})
    for ax, strip, table in zip(axes[0], axes[1], tables):
        _utilization_strip(strip, table, x_label)
        for i, d in enumerate(table.devices):
            pts = [(r.x, r.cells[d].timing) for r in table.rows if d in r.cells and r.cells[d].ok]
            if not pts:
                continue
            xs = [x for x, _ in pts]
            color = _color(d, i)
            ax.plot(xs, [t.median_s for _, t in pts], "o-", color=color, label=f"{d} steady (median)")
            ax.fill_between(xs, [t.q1_s for _, t in pts], [t.q3_s for _, t in pts], color=color, alpha=0.2)
            ax.plot(xs, [t.first_call_s for _, t in pts], "x", color=color, alpha=0.6, label=f"{d} first call")
        for d, cross in table.crossovers.items():
            if cross.kind == "between" and cross.estimate:
                ax.axvline(cross.estimate, color="gray", linestyle=":", linewidth=1.5)
                ax.annotate(f"crossover ≈ {cross.estimate:.3g}", (cross.estimate, 0.97),
                            xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                            fontsize=8, color="gray")
        if loglog:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_ylabel("time per call (s)")
        ax.set_title(table.title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)  # atomic: never a half-written PNG
    return path
