"""Terminal rendering (rich). Every string that came from a record is escaped, so a
device name or an error message can never inject rich markup."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from whichdevice.analysis.sweep import Table
from whichdevice.present.tables import Grid, busy_text, sweep_grid  # noqa: F401 (busy_text re-exported)
from whichdevice.present.units import nbytes, seconds
from whichdevice.records import RunRecord


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


_TONES = {"good": "green", "bad": "red", "neutral": "yellow", "dim": "dim"}


def render_grid(console: Console, grid: Grid) -> None:
    rt = RichTable(title=escape(grid.title), title_justify="left", header_style="bold")
    for i, h in enumerate(grid.headers):
        rt.add_column(escape(h), justify="right" if i == 0 or "vs" not in h else "left")
    for row in grid.rows:
        rt.add_row(*[f"[{_TONES[c.tone]}]{escape(c.text)}[/{_TONES[c.tone]}]" if c.tone else escape(c.text)
                     for c in row])
    console.print(rt)
    for line in grid.footer:
        console.print(f"  {escape(line)}")


def render_sweep_table(console: Console, table: Table, x_label: str, rate_unit: str | None) -> None:
    render_grid(console, sweep_grid(table, x_label, rate_unit))


def render_notes(console: Console, record: RunRecord, warnings: list[str], failures: list[str]) -> None:
    for n in record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")
    for f in failures:
        console.print(f"[red]Failed:[/red] {escape(f)}")
    for w in warnings:
        console.print(f"[yellow]Warning:[/yellow] {escape(w)}")


# ---------------- whichdevice train ----------------

def _median_text(cell) -> str:
    """'1.2 ms ± 30 µs' (median ± IQR/2) for a cell with a ``timing``."""
    if cell is None:
        return "—"
    if not cell.ok:
        return "[red]failed[/red]"
    return f"{seconds(cell.timing.median_s)} ± {seconds(cell.timing.iqr_s / 2)}"


def _per_s(value: float | None) -> str:
    from whichdevice.present.units import rate

    return rate(value, "") if value else "—"

def _run_label(params: dict) -> str:
    """A run's short name from its parameters: 'ex2 loop 1000×b10 numpy'."""
    kind = params.get("kind")
    head = f"{params.get('example') or params.get('model', '')} {kind}".strip()
    bits = []
    if "samples" in params:
        bits.append(f"{params['samples']}×b{params.get('batch', '?')}")
    elif "batch" in params:
        bits.append(f"b{params['batch']}")
    if params.get("data"):
        bits.append(str(params["data"]))
    if kind == "callback":
        bits.append(f"{params.get('model')} sync={params.get('sync')}")
    return " ".join([head, *bits])


def _comp_text(comp) -> str:
    if comp is None:
        return "—"
    if comp.winner is None:
        return "[yellow]" + escape(comp.describe()) + "[/yellow]"
    color = "green" if comp.winner == comp.other else "red"
    return f"[{color}]{escape(comp.describe())}[/{color}]"


def render_creation(console: Console, report) -> None:
    """Seed 001 ex1: model creation and clone_model per device."""
    if not report.creation:
        return
    rt = RichTable(title="Model creation (seed 001 ex1)", title_justify="left", header_style="bold")
    rt.add_column("what")
    for d in report.devices:
        rt.add_column(f"{escape(d)} 1st", justify="right", style="dim")
        rt.add_column(f"{escape(d)} median ± IQR/2", justify="right")
    gpus = [d for d in report.devices if d != report.baseline]
    for d in gpus:
        rt.add_column(f"{escape(d)} vs {escape(report.baseline or '?')}")
    for row in report.creation:
        cols = [escape(f"{row.params.get('op')} ({row.params.get('model')})")]
        for d in report.devices:
            c = row.cells.get(d)
            cols.append(seconds(c.timing.first_call_s) if c and c.ok else "—")
            cols.append(_median_text(c))
        cols += [_comp_text(row.comparisons.get(d)) for d in gpus]
        rt.add_row(*cols)
    console.print(rt)


def render_runs(console: Console, report) -> None:
    """Every training run: first step apart, steady step, samples/s, epochs, GPU vs CPU, break-even."""
    if not report.runs:
        return
    rt = RichTable(title="Training runs: first step (warm-up) apart from the steady steps", title_justify="left",
                   header_style="bold")
    rt.add_column("run", no_wrap=True)
    for d in report.devices:
        rt.add_column(f"{escape(d)} 1st step", justify="right", style="dim")
        rt.add_column(f"{escape(d)} steady step ± IQR/2", justify="right")
        rt.add_column(f"{escape(d)} samples/s", justify="right")
        rt.add_column(f"{escape(d)} 1st / steady epoch", justify="right", style="dim")
    gpus = [d for d in report.devices if d != report.baseline]
    for d in gpus:
        rt.add_column(f"{escape(d)} vs {escape(report.baseline or '?')}")
    for row in report.runs:
        cols = [escape(_run_label(row.params))]
        for d in report.devices:
            c = row.cells.get(d)
            cols.append(seconds(c.timing.first_call_s) if c and c.ok else "—")
            cols.append(_median_text(c))
            cols.append(_per_s(c.samples_per_s) if c and c.ok else "—")
            cols.append(f"{seconds(c.epochs.first_s)} / {seconds(c.epochs.steady_s)}" if c and c.epochs else "—")
        cols += [_comp_text(row.comparisons.get(d)) for d in gpus]
        rt.add_row(*cols)
    console.print(rt)
    for row in report.runs:
        for d, be in row.break_even.items():
            if be.kind == "no_gpu":
                continue
            console.print(f"  {escape(_run_label(row.params))} — {escape(d)}: {escape(be.describe())}")
    if any(be.kind == "no_gpu" for row in report.runs for be in row.break_even.values()):
        console.print("  Break-even step counts need a GPU run: no GPU was measured here; "
                      "run `whichdevice train` on a machine with a GPU.")


def render_sync_cost(console: Console, report) -> None:
    """What reading the loss back every step (.numpy()) costs against syncing once per block."""
    if not report.sync_costs:
        return
    rt = RichTable(title="Cost of syncing every step (.numpy() per step vs once per block)", title_justify="left",
                   header_style="bold")
    for name in ("device", "batch", "step, .numpy() each", "step, no sync", "cost per step", "share"):
        rt.add_column(name, justify="right" if name not in ("device",) else "left")
    for s in report.sync_costs:
        share = f"{s.fraction:+.0%}" if s.significant else f"[yellow]{s.fraction:+.0%} (within noise)[/yellow]"
        rt.add_row(escape(s.device), str(s.params.get("batch", "")), seconds(s.each.median_s),
                   seconds(s.none.median_s), seconds(s.cost_s), share)
    console.print(rt)


def render_train(console: Console, record: RunRecord, report, warnings: list[str], failures: list[str]) -> None:
    render_header(console, record)
    if record.options.get("quick"):
        console.print(f"[yellow]--quick:[/yellow] {escape(str(record.options.get('quick_sizes', 'reduced sizes')))}")
    render_creation(console, report)
    render_runs(console, report)
    render_sync_cost(console, report)
    for t in report.sweep:
        render_sweep_table(console, t, "batch", "samples/s")
    render_notes(console, record, warnings, failures)
