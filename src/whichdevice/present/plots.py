"""PNG plots (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from whichdevice.analysis.sweep import Table  # noqa: E402

_COLORS = {"CPU": "#1f77b4", "GPU": "#d62728"}


def _color(device: str, i: int) -> str:
    kind = device.split(":")[0]
    if kind == "GPU" and device != "GPU:0":
        return plt.get_cmap("Reds")(0.5 + 0.1 * i)
    return _COLORS.get(kind, f"C{i}")


def plot_sweep(tables: list[Table], path: Path, *, x_label: str, title: str, loglog: bool = True) -> Path:
    """One panel per table (e.g. per matmul mode): median time vs x per device, the
    interquartile band shaded, first calls as crosses, crossovers as dotted lines."""
    n = max(1, len(tables))
    fig, axes = plt.subplots(1, n, figsize=(6.5 * n, 5), squeeze=False)
    for ax, table in zip(axes[0], tables):
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
        ax.set_xlabel(x_label)
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
