"""`whichdevice audit SCRIPT.py [-- ARGS]`: run the user's own benchmark once, instrumented,
and say what it measured versus what actually happened, block by block, with corrections."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from whichdevice.audit import record as audit_mod
from whichdevice.audit import clocks as clocks_mod
from whichdevice.audit import notebook, rules
from whichdevice.cli.common import DEFAULT_OUT, app, console, err_console, stamp
from whichdevice.core.errors import UsageError
from whichdevice.core.machine import describe_machine
from whichdevice.present import html as html_mod
from whichdevice.present.tables import Grid, GridCell
from whichdevice.present.terminal import render_grid
from whichdevice.core.units import seconds
from whichdevice.core.validate import check_output_dir, check_output_file, parse_positive_float


@app.command()
def audit(
    script: str = typer.Argument(..., help="Your benchmark script (.py); it runs once, unmodified."),
    script_args: Optional[list[str]] = typer.Argument(None, help="Arguments for the script, after `--`."),
    timeout: str = typer.Option(
        "600", "--timeout", help="Seconds the script may run; a hanging script is audited up to then."
    ),
    no_rerun: bool = typer.Option(
        False, "--no-rerun", help="Skip the steady re-measurement of the script's tf.functions."
    ),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the JSON record (and the HTML with --html)."),
    json_path: Optional[Path] = typer.Option(
        None, "--json", help="Write the JSON record here instead of OUT/audit-<time>.json."
    ),
    html: bool = typer.Option(False, "--html", help="Also write a self-contained HTML report beside the record."),
) -> None:
    """Audit your own CPU-vs-GPU benchmark script: what it timed vs what ran where."""
    timeout_s = parse_positive_float(timeout, "--timeout", "120")
    path = audit_mod.check_script(script)
    out_dir = check_output_dir(out, "--out")
    json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"audit-{stamp()}.json"
    args = list(script_args or [])
    err_console.print(
        f"[dim]whichdevice audit: running {escape(str(path))} once, instrumented "
        f"(timeout {timeout_s:g} s); its own output follows.[/dim]"
    )
    source, nb = None, None
    if path.suffix.lower() == ".ipynb":
        source, nb = notebook.translate(path)
    state, rc, wall_s, killed = audit_mod.run_child(path, args, timeout_s, rerun=not no_rerun, source=source)
    record = make_record(path, args, timeout_s, state, rc, wall_s, killed, notebook=nb)
    render(record)
    try:
        json_file.parent.mkdir(parents=True, exist_ok=True)
        audit_mod.save(record, json_file)
    except OSError as e:
        raise UsageError("--json", f"cannot write '{json_file}' ({e.strerror})", "Pass a writable path.") from None
    console.print(f"Record: {escape(str(json_file))}")
    if html:
        page = json_file.with_suffix(".html")
        html_mod.write_html(page, render_html(record))
        console.print(f"HTML:   {escape(str(page))}")


def make_record(
    path: Path,
    args: list[str],
    timeout_s: float,
    state: dict | None,
    rc: int | None,
    wall_s: float,
    killed: bool,
    notebook: dict | None = None,
) -> audit_mod.AuditRecord:
    notes: list[str] = []
    if state is None or "blocks" not in state:
        notes.append(
            "the instrumented child left no state (it crashed or was killed before writing it): "
            "nothing could be audited" + (f"; exit code {rc}" if rc is not None else "")
        )
        state = {"blocks": [], "reads": [], "intervals": [], "totals": {}}
    blocks, measurements, findings, corrections = rules.analyze(state)
    if not (state.get("tf_installed") or state.get("torch_installed") or state.get("jax_installed")):
        notes.append("the script imported neither TensorFlow, PyTorch nor JAX: no device work to audit")
    timed_out = bool(state.get("timed_out")) or killed
    exit_code = state.get("exit_code") if state.get("exit_code") is not None else (None if timed_out else rc)
    if state.get("torch_installed") and not (state.get("physical_devices") or {}).get("GPU", 0):
        notes.append(
            "no CUDA device here: every PyTorch kernel ran on the CPU; what the script would do on a GPU is said as "
            "'on a GPU this would …', never as a cost measured here"
        )
    if (
        state.get("placement_log") is False
        and (state.get("physical_devices") or {}).get("GPU", 0) == 0
        and state.get("tf_installed")
    ):
        notes.append("no GPU here: every op could only run on the CPU (placement logging was not needed)")
    if state.get("n_reads", 0) > len(state.get("reads", [])):
        notes.append(
            f"the script read the clock {state['n_reads']} times; only the first "
            f"{len(state.get('reads', []))} were followed"
        )
    op_cost = state.get("op_cost") or {}
    overhead = _overhead(state, op_cost)
    if overhead is not None and overhead > OVERHEAD_ANNOUNCE:
        extra = (overhead - 1) / overhead * (state.get("script_s") or 0.0)
        notes.append(
            f"the audit's per-op hooks slowed this script ≈ {overhead:.1f}x: "
            f"{state['totals'].get('eager_ops', 0):,} ops × ≈ {seconds(op_cost['hooked_s'] - op_cost['plain_s'])} per op "
            f"(measured after the script: {op_cost.get('op')}, {seconds(op_cost['plain_s'])} plain, "
            f"{seconds(op_cost['hooked_s'])} hooked) ≈ {seconds(extra)} of its {seconds(state.get('script_s'))}; "
            "the times it printed include that, the findings' per-op figures say how much"
        )
    return audit_mod.AuditRecord(
        command=["whichdevice", *sys.argv[1:]],
        created_at=audit_mod.now(),
        machine=describe_machine(),
        script=str(path),
        args=args,
        exit_code=exit_code,
        timed_out=timed_out,
        timeout_s=timeout_s,
        hang_line=state.get("hang_line"),
        exception=state.get("exception"),
        wall_s=wall_s,
        script_s=state.get("script_s"),
        tensorflow_seen=bool(state.get("tf_installed")),
        framework=state.get("framework") or "tensorflow",
        loaders=state.get("loaders") or [],
        cuda_probe=state.get("cuda_probe"),
        physical_devices=state.get("physical_devices") or {},
        soft_placement=state.get("soft_placement"),
        placement_log=bool(state.get("placement_log")),
        blocks=blocks,
        measurements=measurements,
        findings=findings,
        corrections=corrections,
        rerun_skipped=state.get("rerun_skipped") or [],
        notes=notes,
        clocks_read=sorted({r["fn"] for r in state.get("reads", [])}),
        op_cost=op_cost,
        overhead=overhead,
        notebook=notebook,
    )


# The audit says how much it slowed the script when its hooks cost more than this factor (issue #33).
OVERHEAD_ANNOUNCE = 2.0


def _overhead(state: dict, op_cost: dict) -> float | None:
    """Script time under the audit / the same without the per-op hooks' extra cost (estimated from
    the ops the script dispatched × the measured hooked − plain cost of one op)."""
    plain, hooked = op_cost.get("plain_s"), op_cost.get("hooked_s")
    script_s = state.get("script_s")
    ops = int((state.get("totals") or {}).get("eager_ops", 0))
    if not (plain and hooked and script_s) or hooked <= plain or ops <= 0:
        return None
    extra = ops * (hooked - plain)
    return script_s / max(script_s - extra, 1e-3 * script_s)


# ---------------------------------------------------------------- presenting


def _ran(d: dict[str, int]) -> str:
    return ", ".join(f"{k} ({v})" for k, v in sorted(d.items())) or "—"


def _one_time(x) -> str:
    bits = [
        f"{x.traces} tr" if x.traces else "",
        f"{x.instantiations} inst" if x.instantiations else "",
        f"{x.xla_compiles} xla" if x.xla_compiles else "",
        f"{x.sessions} sess" if x.sessions else "",
    ]
    return ", ".join(b for b in bits if b) or "—"


def grids(record: audit_mod.AuditRecord) -> list[Grid]:
    out = []
    if record.blocks:
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
        out.append(
            Grid(
                "Device blocks as they ran",
                ["line", "requested", "ran on (ops)", "wall", "calls", "one-time", "H→D/D→H", "status"],
                rows,
                [
                    "ops: eager ops (and placed graph ops) per device; calls: tf.function calls + Session.run; "
                    "one-time: tr = traces, inst = graph instantiations (first call of a signature on a device), "
                    "xla = XLA compiles, sess = new Sessions"
                ],
            )
        )
    if record.measurements:
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
                    GridCell("no" if m.unsynced_gpu_end else "yes", "bad" if m.unsynced_gpu_end else "dim"),
                ]
            )
        out.append(
            Grid(
                "What the script timed (each end - start it computed)",
                ["line", "#", "asked", "ran on (ops)", "script's time", "calls", "one-time", "synced"],
                rows,
                [f"line {n}: {t}" for n, t in dict.fromkeys((m.line, m.text) for m in record.measurements)],
            )
        )
    if record.corrections:
        rows, notes = [], []
        for c in record.corrections:
            a, b = record.measurements[c.a], record.measurements[c.b]
            if c.rerun_ok:
                rng = (
                    f" ({c.real_ratio_low:.2f}-{c.real_ratio_high:.2f})"
                    if c.real_ratio_low is not None and c.real_ratio_high is not None
                    else ""
                )
                verdict = {True: " significant", False: " not significant", None: ""}[c.significant]
                real = f"{c.real_ratio:.2f}{rng}{verdict}"
                rows.append(
                    [
                        GridCell(f"{a.line} vs {b.line}"),
                        GridCell(f"{c.script_ratio:.2f}", "bad"),
                        GridCell(seconds(c.a_steady_s)),
                        GridCell(seconds(c.b_steady_s)),
                        GridCell(real, "good"),
                    ]
                )
            else:
                rows.append(
                    [
                        GridCell(f"{a.line} vs {b.line}"),
                        GridCell(f"{c.script_ratio:.2f}"),
                        GridCell("—"),
                        GridCell("—"),
                        GridCell("not re-run", "neutral"),
                    ]
                )
            notes.append(f"lines {a.line} vs {b.line}: {c.note}")
        out.append(
            Grid(
                "Corrected comparison: A / B, above 1 = B faster (A = CPU-asked, B = GPU-asked; PyTorch / JAX without a GPU: the "
                "A = the script's first series, B = its second)",
                ["lines", "script's ratio", "A steady", "B steady", "real ratio (95% interval)"],
                rows,
                list(dict.fromkeys(notes)),
            )
        )
    return out


def _status_line(record: audit_mod.AuditRecord) -> str:
    if record.timed_out:
        where = f" (it was at line {record.hang_line['line']}: {record.hang_line['text']})" if record.hang_line else ""
        return f"Script timed out after {record.timeout_s:g} s (--timeout) and was stopped{where}; audited up to then."
    if record.exit_code is None:
        return "Script was killed before it reported an exit code."
    exc = ""
    if record.exception:
        lines = [ln.strip() for ln in (record.exception.get("message") or "").strip().splitlines() if ln.strip()]
        key = next((ln for ln in lines if rules.mentions_missing_device(ln)), lines[0] if lines else "")
        exc = f" — {record.exception['type']}: {key[:300]}"
    return f"Script exit code {record.exit_code}{exc}; script {seconds(record.script_s)}, audit child {seconds(record.wall_s)}."


def render(record: audit_mod.AuditRecord) -> None:
    console.print()
    console.print(f"[bold]whichdevice audit[/bold]  {escape(record.script)} {escape(' '.join(record.args))}")
    console.print(escape(_status_line(record)))
    if record.physical_devices and record.framework in ("torch", "jax"):
        p = record.physical_devices
        name = {"torch": "PyTorch", "jax": "JAX"}[record.framework]
        console.print(escape(f"{name} sees {p.get('GPU', 0)} GPU device(s)"))
    elif record.physical_devices:
        p = record.physical_devices
        console.print(
            escape(
                f"TensorFlow sees {p.get('CPU', 0)} CPU, {p.get('GPU', 0)} GPU; soft placement "
                f"{'on' if record.soft_placement else 'off'} at import"
            )
        )
    for g in grids(record):
        render_grid(console, g)
    if record.findings:
        console.print(f"[bold]Findings ({len(record.findings)})[/bold]")
        for i, f in enumerate(record.findings, 1):
            console.print(f"[red]{i}. {escape(f.title)}[/red] [dim]\\[{escape(f.rule)}][/dim] — {escape(f.where)}")
            console.print(f"   {escape(f.explanation)}")
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
    for n in record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")


def verdict_lines(record: audit_mod.AuditRecord) -> list[str]:
    """What was timed, said honestly: no timing seen (naming the clocks looked for) is not "timings
    seen, none misleading"; the latter is said only with timings and no finding about them."""
    timed = [m for m in record.measurements if not m.tracing]
    if not timed:
        traced = len(record.measurements) - len(timed)
        why = (
            f" (its only clock reads ran while a function was being traced: {traced} difference(s) of trace time)"
            if traced
            else ""
        )
        return [
            "No timing seen: the script computed no end - start of the device work" + why + ". Clocks followed: "
            + ", ".join(clocks_mod.CLOCKS_FOLLOWED)
            + ". Its own printed times (if any) came from elsewhere (a library's log, a clock the audit does not follow)."
        ]
    about = {i for f in record.findings for i in f.measurements}
    seen = f"Timings seen: {len(timed)} (clocks: {', '.join(record.clocks_read) or '—'})"
    if not about & {m.id for m in timed}:
        return [seen + "; none misleading by the audit's rules."]
    return [seen + "; what they measured is in the findings above."]


def render_html(record: audit_mod.AuditRecord) -> str:
    sections = [
        html_mod.Section(
            "What the script measured", grids=grids(record), lines=[_status_line(record), *verdict_lines(record)]
        )
    ]
    if record.findings:
        sections.append(
            html_mod.Section(
                "Findings",
                lines=[
                    f"{i}. {f.title} [{f.rule}] — {f.where}. {f.explanation} Instead: {f.fix}"
                    for i, f in enumerate(record.findings, 1)
                ],
            )
        )
    return html_mod.render_html(record, sections, failures=[], warnings=[])
