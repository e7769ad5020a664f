"""The page of an ``audit`` record (``whichdevice audit``, ``whichdevice report`` on its JSON):
the status line, the device blocks as they ran, what the script timed, the corrected A/B
comparisons, the findings and the notes; the HTML report. No plot: ``png`` and ``loglog``
are taken so the registry draws it like every other record, and are not used."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from whichdevice.audit import clocks as clocks_mod
from whichdevice.audit.record import AuditRecord, Block, Correction, Measurement, mentions_missing_device
from whichdevice.core.units import seconds
from whichdevice.present import html as html_mod
from whichdevice.present.auditwords import recorded, said
from whichdevice.present.claims import times
from whichdevice.present.tables import Grid, GridCell
from whichdevice.present.terminal import render_grid


def _ran(d: dict[str, int]) -> str:
    return ", ".join(f"{k} ({v})" for k, v in sorted(d.items())) or "—"


def _one_time(x: Block | Measurement) -> str:
    bits = [
        f"{x.traces} tr" if x.traces else "",
        f"{x.instantiations} inst" if x.instantiations else "",
        f"{x.xla_compiles} xla" if x.xla_compiles else "",
        f"{x.sessions} sess" if x.sessions else "",
    ]
    return ", ".join(b for b in bits if b) or "—"


def grids(record: AuditRecord) -> list[Grid]:
    """The page's tables, each drawn only when the record has rows for it: the device blocks, what
    the script timed, the corrected comparisons."""
    out = [
        _blocks_grid(record) if record.blocks else None,
        _measurements_grid(record) if record.measurements else None,
        _corrections_grid(record) if record.corrections else None,
        _steady_grid(record) if record.steady else None,
    ]
    return [g for g in out if g is not None]


def _times(ratio: float | None) -> str:
    """The real time as a multiple of the script's: "1,538×" above 1, "1/1,202" below."""
    if ratio is None or ratio <= 0:
        return "—"
    return f"1/{1 / ratio:,.0f}" if ratio <= 0.01 else f"{times(ratio)}×"


def _steady_grid(record: AuditRecord) -> Grid:
    """The timings measured wrong that no pair re-ran: their real time here, or why there is none."""
    rows, notes = [], []
    for t in record.steady:
        m = record.measurements[t.m]
        where = f"{m.line}" if m.line else "—"
        if t.steady_s is None:
            rows.append([GridCell(where), GridCell(seconds(t.script_s)), GridCell("—"), GridCell("—", "neutral")])
        else:
            rng = f" ({seconds(t.low_s)}-{seconds(t.high_s)})" if t.low_s is not None and t.high_s is not None else ""
            ratio = _times(t.ratio)
            rows.append(
                [
                    GridCell(where),
                    GridCell(seconds(t.script_s), "bad"),
                    GridCell(seconds(t.steady_s) + rng, "good"),
                    GridCell(ratio),
                ]
            )
        notes.append(f"line {where}: {t.note}")
    return Grid(
        "Real time on this machine of the timings measured wrong (their work re-run after the script, warmed up and "
        "synchronized)",
        ["line", "script's time", "real time (95% interval)", "real / script's"],
        rows,
        list(dict.fromkeys(notes)),
    )


def _blocks_grid(record: AuditRecord) -> Grid:
    rows = []
    for b in record.blocks:
        exists = {True: "", False: " (does not exist)", None: ""}[b.device_exists]
        rows.append(
            [
                GridCell(str(b.line)),
                GridCell(f"{b.requested}{exists}", "bad" if exists else ""),
                GridCell(_ran(b.ran_on), "bad" if b.device_exists is False or b.cpu_ops_in_gpu_block else ""),
                GridCell(seconds(b.wall_s)),
                GridCell(str(b.fn_calls + b.session_runs)),
                GridCell(_one_time(b), "dim"),
                GridCell(f"{b.h2d}/{b.d2h}"),
                GridCell("failed" if b.error else "", "bad" if b.error else ""),
            ]
        )
    return Grid(
        "Device blocks as they ran",
        ["line", "requested", "ran on (ops)", "wall", "calls", "one-time", "H→D/D→H", "status"],
        rows,
        [
            "ops: eager ops (and placed graph ops) per device; calls: tf.function calls + Session.run; "
            "one-time: tr = traces, inst = graph instantiations (first call of a signature on a device), "
            "xla = XLA compiles, sess = new Sessions"
        ],
    )


def _measurements_grid(record: AuditRecord) -> Grid:
    rows = []
    for m in record.measurements:
        rows.append(
            [
                GridCell(str(m.line or "?")),
                GridCell(f"{m.index_in_series + 1}/{m.series_len}", "dim"),
                GridCell(m.kind or "—"),
                GridCell(_ran(m.ran_on)),
                GridCell(seconds(m.seconds)),
                GridCell(str(m.fn_calls + m.session_runs)),
                GridCell(_one_time(m), "dim"),
                _synced(m),
            ]
        )
    notes = [f"line {n}: {t}" for n, t in dict.fromkeys((m.line, m.text) for m in record.measurements)]
    unseen = sorted({m.line for m in record.measurements if _unseen_jax(m) and m.line is not None})
    if unseen:
        notes.append(
            f"synced —: line {', '.join(map(str, unseen))}: no JAX work and no host read seen in the interval "
            "(JAX's eager jnp ops are not recorded one by one, and JAX dispatches them asynchronously): "
            "whether the clock waited for them is not known"
        )
    return Grid(
        "What the script timed (each end - start it computed)",
        ["line", "#", "asked", "ran on (ops)", "script's time", "calls", "one-time", "synced"],
        rows,
        notes,
    )


def _unseen_jax(m: Measurement) -> bool:
    """A JAX interval in which the audit saw no work and no host read: its eager jnp ops (not
    recorded one by one) may still be running at the clock read, so "synced: yes" would be a
    guess (the JAX docs' jnp.dot timed without block_until_ready read "synced yes")."""
    return m.framework == "jax" and not m.unsynced_gpu_end and not (m.ran_on or m.fn_calls or m.syncs or m.eager_ops)


def _synced(m: Measurement) -> GridCell:
    if m.unsynced_gpu_end:
        return GridCell("no", "bad")
    return GridCell("—", "dim") if _unseen_jax(m) else GridCell("yes", "dim")


def _correction_row(c: Correction, lines: str) -> list[GridCell]:
    """One compared pair: the script's ratio, and the re-run's steady times and real ratio (or "not re-run")."""
    if not c.rerun_ok:
        return [
            GridCell(lines),
            GridCell(f"{c.script_ratio:.2f}"),
            GridCell("—"),
            GridCell("—"),
            GridCell("not re-run", "neutral"),
        ]
    rng = (
        f" ({c.real_ratio_low:.2f}-{c.real_ratio_high:.2f})"
        if c.real_ratio_low is not None and c.real_ratio_high is not None
        else ""
    )
    verdict = {True: " significant", False: " not significant", None: ""}[c.significant]
    return [
        GridCell(lines),
        GridCell(f"{c.script_ratio:.2f}", "bad"),
        GridCell(seconds(c.a_steady_s)),
        GridCell(seconds(c.b_steady_s)),
        GridCell(f"{c.real_ratio:.2f}{rng}{verdict}", "good"),
    ]


def _corrections_grid(record: AuditRecord) -> Grid:
    rows, notes = [], []
    for c in record.corrections:
        a, b_ = record.measurements[c.a], record.measurements[c.b]
        rows.append(_correction_row(c, f"{a.line} vs {b_.line}"))
        notes.append(f"lines {a.line} vs {b_.line}: {c.note}")
    return Grid(
        "Corrected comparison: A / B, above 1 = B faster (A = CPU-asked, B = GPU-asked; PyTorch / JAX without a GPU: the "
        "A = the script's first series, B = its second)",
        ["lines", "script's ratio", "A steady", "B steady", "real ratio (95% interval)"],
        rows,
        list(dict.fromkeys(notes)),
    )


def _status_line(record: AuditRecord) -> str:
    if record.timed_out:
        where = f" (it was at line {record.hang_line['line']}: {record.hang_line['text']})" if record.hang_line else ""
        return f"Script timed out after {record.timeout_s:g} s (--timeout) and was stopped{where}; audited up to then."
    if record.exit_code is None:
        return "Script was killed before it reported an exit code."
    exc = ""
    if record.exception:
        lines = [ln.strip() for ln in (record.exception.get("message") or "").strip().splitlines() if ln.strip()]
        key = next((ln for ln in lines if mentions_missing_device(ln)), lines[0] if lines else "")
        exc = f" — {record.exception['type']}: {key[:300]}"
    return f"Script exit code {record.exit_code}{exc}; script {seconds(record.script_s)}, audit child {seconds(record.wall_s)}."


def render(console: Console, record: AuditRecord, png: Path | None = None, *, loglog: bool = True) -> None:
    """Draw the audit record on ``console`` (``png``, ``loglog``: unused, the audit has no plot)."""
    console.print()
    console.print(f"[bold]whichdevice audit[/bold]  {escape(record.script)} {escape(' '.join(record.args))}")
    console.print(escape(_status_line(record)))
    if record.physical_devices:
        p, soft = record.physical_devices, "on" if record.soft_placement else "off"
        console.print(
            escape(said(record.framework, "sees").format(cpu=p.get("CPU", 0), gpu=p.get("GPU", 0), soft=soft))
        )
    for g in grids(record):
        render_grid(console, g)
    if record.findings:
        console.print(f"[bold]Findings ({len(record.findings)})[/bold]")
        for i, f in enumerate(record.findings, 1):
            console.print(f"[red]{i}. {escape(f.title)}[/red] [dim]\\[{escape(f.rule)}][/dim] — {escape(f.where)}")
            console.print(f"   {escape(recorded(f.explanation))}")
            console.print(f"   [green]Instead:[/green] {escape(f.fix)}")
    for line in verdict_lines(record):
        console.print(escape(line))
    if record.notebook:
        nb = record.notebook
        console.print(
            escape(
                f"Notebook: {nb['cells']} code cells run in order as one script ({nb['magics_translated']} magics "
                f"translated or skipped); line numbers count the joined cells (cell k starts at line "
                f"{', '.join(str(x) for x in nb['cell_first_lines'][:12])}{'…' if len(nb['cell_first_lines']) > 12 else ''})."
            )
        )
        after = notebook_after_stop(record)
        if after:
            console.print(escape(after))
    for n in record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")


def notebook_after_stop(record: AuditRecord) -> str:
    """The cells after the one that stopped on a missing device, as run here: which ran (on the
    device that is here, audited above) and which could not (read from the source: findings)."""
    cells = (record.notebook or {}).get("cells_after_stop") or []
    if not cells:
        return ""
    stop = (record.exception or {}).get("line")
    ran = [c for c in cells if c.get("error") is None]
    failed = [c for c in cells if c.get("error") is not None]
    bits = []
    if ran:
        bits.append(
            f"cell{'s' if len(ran) > 1 else ''} {', '.join(str(c['cell']) for c in ran)} ran on this machine's "
            "devices (their timings are audited above)"
        )
    if failed:
        bits.append(
            "could not run here: "
            + "; ".join(f"cell {c['cell']} (line {c['line']}: {c['error']})" for c in failed)
            + " — read from the source instead (findings above)"
        )
    at = f" at line {stop}" if stop else ""
    return (
        f"After the cell that stopped{at} on a missing device, the later cells were run all the same: "
        + "; ".join(bits)
        + "."
    )


def verdict_lines(record: AuditRecord) -> list[str]:
    """What was timed, said honestly: no timing seen (naming the clocks looked for) is not "timings
    seen, none misleading"; the latter is said only with timings and no finding about them."""
    timed = [m for m in record.measurements if not m.tracing]
    if record.unsupported:
        names = " and ".join(record.unsupported)
        line = (
            f"Not supported: the script uses {names}, which `whichdevice audit` does not follow (it watches "
            f"TensorFlow, PyTorch and JAX): its {names} work and the timings of it were not read."
        )
        return [line] if not timed else [line, *verdict_lines(record.model_copy(update={"unsupported": []}))]
    if not timed:
        traced = len(record.measurements) - len(timed)
        why = (
            f" (its only clock reads ran while a function was being traced: {traced} difference(s) of trace time)"
            if traced
            else ""
        )
        return [
            "No timing seen: the script computed no end - start of the device work"
            + why
            + ". Clocks followed: "
            + ", ".join(clocks_mod.CLOCKS_FOLLOWED)
            + ". "
            + _untimed_why(record)
            + (f" Next: {record.next_step}." if record.next_step else "")
        ]
    about = {i for f in record.findings for i in f.measurements}
    seen = f"Timings seen: {len(timed)} (clocks: {', '.join(record.clocks_read) or '—'})"
    if not about & {m.id for m in timed}:
        return [seen + "; none misleading by the audit's rules."]
    return [seen + "; what they measured is in the findings above."]


def _untimed_why(record: AuditRecord) -> str:
    """Why no timing was seen, only what is true of this run: a script that stopped (an exception,
    the timeout) stopped before any end - start of its own; one that ran to its end and printed
    times read them from a clock the audit does not follow or a library's own log."""
    stopped = record.timed_out or record.exception is not None or (record.exit_code not in (0, None))
    if not stopped:
        return (
            "If it printed times, they were read outside its own code (a module it imports, a library's own log) "
            "or from a clock the audit does not follow."
        )
    line = (record.exception or {}).get("line") or (record.hang_line or {}).get("line")
    at = f" at line {line}" if line else ""
    read = ", after reading the clock," if record.clocks_read else ""
    return f"It stopped{at}{read} before computing an end - start with any of those clocks."


def render_html(record: AuditRecord) -> str:
    sections = [
        html_mod.Section(
            "What the script measured",
            grids=grids(record),
            lines=[_status_line(record), *verdict_lines(record), *[x for x in [notebook_after_stop(record)] if x]],
        )
    ]
    if record.findings:
        sections.append(
            html_mod.Section(
                "Findings",
                lines=[
                    f"{i}. {f.title} [{f.rule}] — {f.where}. {recorded(f.explanation)} Instead: {f.fix}"
                    for i, f in enumerate(record.findings, 1)
                ],
            )
        )
    # The HTML page reads a RunRecord's machine, sessions and results: AuditRecord carries the three
    # (sessions and results empty) for it, without being one.
    return html_mod.render_html(record, sections, failures=[], warnings=[], skipped=[])  # type: ignore[arg-type]
