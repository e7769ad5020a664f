"""Terminal rendering (rich). Every string that came from a record is escaped, so a
device name or an error message can never inject rich markup."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from whichdevice.analysis.sweep import Table
from whichdevice.present.units import nbytes, rate, seconds
from whichdevice.records import RunRecord, Timing
from whichdevice.telemetry import summarize


def machine_line(record: RunRecord) -> str:
    m = record.machine
    return (f"{m.cpu_model} — {m.cpu_cores_logical} logical cores"
            f"{f' ({m.cpu_cores_physical} physical)' if m.cpu_cores_physical else ''}, RAM {nbytes(m.ram_bytes)}")


def render_header(console: Console, record: RunRecord) -> None:
    console.print(f"[bold]whichdevice {escape(record.experiment)}[/bold]  {escape(record.created_at)}")
    console.print(f"Machine: {escape(machine_line(record))}")
    for s in record.sessions:
        d = s.device
        extra = ""
        if d.kind == "cpu":
            onednn = "" if s.onednn is None else f", oneDNN {'on' if s.onednn else 'off'}"
            extra = (f", {s.cpu_threads_intra} intra-op / {s.cpu_threads_inter} inter-op threads "
                     f"[{s.cpu_threads_source}]{onednn}")
        else:
            mem = f", {nbytes(d.memory_bytes)}" if d.memory_bytes else ""
            cc = f", compute capability {d.compute_capability}" if d.compute_capability else ""
            drv = f", driver {d.driver}" if d.driver else ""
            extra = f"{mem}{cc}{drv}"
        console.print(
            f"  {escape(d.name)}: {escape(d.description)}{escape(extra)} — {escape(s.framework.name)} "
            f"{escape(s.framework.version)}, import {s.import_s:.1f} s, timer+sync {seconds(s.overhead_s)}"
        )


def _timing_text(cell) -> str:
    if cell is None:
        return "—"
    if not cell.ok:
        return "[red]failed[/red]"
    t = cell.timing
    return f"{seconds(t.median_s)} ± {seconds(t.iqr_s / 2)}"


def busy_text(timing: Timing | None) -> str:
    """Utilization during the steady window, compact: 'GPU 23 %', or for the CPU the mean
    busy share of all cores and (saturated cores / cores): '97% (2/2)'."""
    if timing is None or timing.telemetry is None:
        return "—"
    s = summarize(timing.telemetry)
    if s.gpu_util_mean_percent is not None:
        return f"GPU {s.gpu_util_mean_percent:.0f} %"
    if s.cpu_mean_percent is None:
        return "—"
    return f"{s.cpu_mean_percent:.0f}% ({s.cores_saturated}/{s.n_cores})"


def render_sweep_table(console: Console, table: Table, x_label: str, rate_unit: str | None) -> None:
    rt = RichTable(title=escape(table.title), title_justify="left", header_style="bold")
    rt.add_column(x_label, justify="right")
    for d in table.devices:
        rt.add_column(f"{escape(d)} 1st call", justify="right", style="dim")
        rt.add_column(f"{escape(d)} median ± IQR/2", justify="right")
        if rate_unit:
            rt.add_column(f"{escape(d)} {rate_unit}", justify="right")
        rt.add_column(f"{escape(d)} busy (sat.)", justify="right", style="dim")
    others = [d for d in table.devices if d != table.baseline]
    for d in others:
        rt.add_column(f"{escape(d)} vs {escape(table.baseline or '?')}", justify="left")
    for row in table.rows:
        cols = [f"{row.x:g}"]
        for d in table.devices:
            c = row.cells.get(d)
            cols.append(seconds(c.timing.first_call_s) if c and c.ok else "—")
            cols.append(_timing_text(c))
            if rate_unit:
                cols.append(rate(c.work_per_s, rate_unit) if c and c.ok else "—")
            cols.append(busy_text(c.timing) if c and c.ok else "—")
        for d in others:
            comp = row.comparisons.get(d)
            if comp is None:
                cols.append("—")
            elif comp.winner is None:
                cols.append("[yellow]" + escape(comp.describe()) + "[/yellow]")
            else:
                color = "green" if comp.winner == d else "red"
                cols.append(f"[{color}]{escape(comp.describe())}[/{color}]")
        rt.add_row(*cols)
    console.print(rt)
    for d, cross in table.crossovers.items():
        console.print(f"  Crossover {escape(d)} vs {escape(table.baseline or '')}: {escape(cross.describe(x_label))}")


def render_notes(console: Console, record: RunRecord, warnings: list[str], failures: list[str]) -> None:
    for n in record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")
    for f in failures:
        console.print(f"[red]Failed:[/red] {escape(f)}")
    for w in warnings:
        console.print(f"[yellow]Warning:[/yellow] {escape(w)}")
