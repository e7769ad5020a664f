"""Terminal tables for a reference GPU run imported as a record (analysis/reference.py):
one table per section, CPU and GPU side by side where the file measured both."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from whichdevice.core.records import RunRecord, Scalar
from whichdevice.present.claims import times
from whichdevice.present.tables import Align
from whichdevice.present.terminal import print_table
from whichdevice.workloads.fixes import params_of


def _time(s: float | None) -> str:
    if s is None:
        return "—"
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} µs"


def render_reference(console: Console, record: RunRecord) -> None:
    o = record.options
    console.print(
        f"[bold]Reference run[/bold] — {escape(str(o.get('frameworks', '')))} on {escape(str(o.get('gpu', '')))} "
        f"({escape(str(o.get('source', '')))}, {escape(record.created_at)})"
    )
    sections: dict[str, dict[tuple[str, tuple[tuple[str, Scalar], ...]], dict[str, float]]] = {}
    for r in record.results:
        if r.status != "ok" or r.timing is None:
            continue
        what = tuple((k, v) for k, v in params_of(r.spec).items())
        row = sections.setdefault(r.spec.workload, {}).setdefault((r.spec.framework, what), {})
        row[r.spec.device] = r.timing.median_s
    for section, rows in sections.items():
        t = Table(title=section, title_justify="left")
        columns: tuple[tuple[str, Align], ...] = (
            ("framework", "left"),
            ("what", "left"),
            ("CPU", "right"),
            ("GPU", "right"),
            ("GPU / CPU", "right"),
        )
        for col, j in columns:
            t.add_column(col, justify=j)
        for (fw, what), by_dev in rows.items():
            cpu, gpu = by_dev.get("CPU:0"), by_dev.get("GPU:0")
            ratio = f"{times(gpu / cpu)}×" if cpu and gpu else "—"
            label = ", ".join(f"{k}={v}" for k, v in what)
            t.add_row(escape(fw), escape(label), _time(cpu), _time(gpu), ratio)
        print_table(console, t)
    for n in record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")
