"""`whichdevice audit SCRIPT.py [-- ARGS]`: run the user's own benchmark once, instrumented,
and say what it measured versus what actually happened, block by block, with corrections."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape

from whichdevice.cli.options import DEFAULT_OUT
from whichdevice.cli.base import app, console, err_console
from whichdevice.core.validate import check_output_dir, check_output_file, parse_positive_float

if TYPE_CHECKING:
    from whichdevice.audit import record as audit_mod


@app.command()
def audit(
    script: str = typer.Argument(..., help="Your benchmark script (.py); it runs once, unmodified."),
    script_args: Optional[list[str]] = typer.Argument(None, help="Arguments for the script, after `--`."),
    timeout: str = typer.Option(
        "600", "--timeout", help="Seconds the script may run; a hanging script is audited up to then."
    ),
    no_rerun: bool = typer.Option(
        False,
        "--no-rerun",
        help="Skip the steady re-measurement of the script's timed blocks (tf.function, nn.Module and jax.jit "
        "calls; a plain-tensor PyTorch block's ops).",
    ),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the JSON record (and the HTML with --html)."),
    json_path: Optional[Path] = typer.Option(
        None, "--json", help="Write the JSON record here instead of OUT/audit-<time>.json."
    ),
    html: bool = typer.Option(False, "--html", help="Also write a self-contained HTML report beside the record."),
) -> None:
    """Audit your own CPU-vs-GPU benchmark script: what it timed vs what ran where."""
    from whichdevice.audit import record as audit_mod, notebook
    from whichdevice.cli.common import stamp
    from whichdevice.jobs.running import output as jobs_output
    from whichdevice.present import output

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
    cells = nb["cell_first_lines"] if nb else None
    state, rc, wall_s, killed = audit_mod.run_child(
        path, args, timeout_s, rerun=not no_rerun, source=source, cells=cells
    )
    record = make_record(path, args, timeout_s, state, rc, wall_s, killed, notebook=nb)
    page = json_file.with_suffix(".html")

    def draw() -> None:
        render(record)
        if html:
            output.write_html(page, render_html(record))

    def announce() -> None:
        console.print(f"Record: {escape(str(json_file))}")
        if html:
            console.print(f"HTML:   {escape(str(page))}")

    jobs_output(functools.partial(audit_mod.save, record, json_file), draw, json_file, announce)


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
    from whichdevice.audit import causes, rules, static
    from whichdevice.audit import record as audit_mod
    from whichdevice.cli.common import command_line
    from whichdevice.core.machine import describe_machine
    from whichdevice.present import auditwords

    notes: list[str] = []
    if state is None or "blocks" not in state:
        notes.append(
            "the instrumented child left no state (it crashed or was killed before writing it): "
            "nothing could be audited" + (f"; exit code {rc}" if rc is not None else "")
        )
        state = {"blocks": [], "reads": [], "intervals": [], "totals": {}}
    blocks, measurements, found, corrections = rules.analyze(state)
    findings = auditwords.findings(found)
    watched = bool(state.get("tf_installed") or state.get("torch_installed") or state.get("jax_installed"))
    source = causes.script_source(state) or ""
    modules = static.imported(source)
    unsupported = sorted({name for mod, name in audit_mod.UNSUPPORTED.items() if mod in modules})
    if not watched and not unsupported:
        notes.append("the script imported neither TensorFlow, PyTorch nor JAX: no device work to audit")
    if not watched and unsupported:
        # no framework the audit follows ran: a finding or a timing would be said in another library's terms
        findings = []
        measurements = [m.model_copy(update={"framework": ""}) for m in measurements]
    timed_out = bool(state.get("timed_out")) or killed
    exit_code = state.get("exit_code") if state.get("exit_code") is not None else (None if timed_out else rc)
    more, op_cost, overhead = _run_notes(state, findings, corrections)
    notes += more
    return audit_mod.AuditRecord(
        command=command_line(),
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
        framework=(state.get("framework") or "tensorflow") if watched else "",  # none watched it: none named
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
        gpu_costs=state.get("gpu_costs"),
        overhead=overhead,
        notebook=_notebook(notebook, state),
        unsupported=unsupported,
        steady=rules.steady_times(state, measurements, corrections),
        next_step=_next_step(path, measurements, source, modules),
    )


def _notebook(notebook: dict | None, state: dict) -> dict | None:
    """The notebook's translation, with the cells after one that stopped on a missing device and
    what became of each when run here (``cells_after_stop``)."""
    if notebook is None:
        return None
    after = state.get("cells_after_stop") or []
    return {**notebook, "cells_after_stop": after} if after else notebook


def _run_notes(state: dict, findings: list, corrections: list) -> tuple[list[str], dict, float | None]:
    """What the run itself tells the reader (file descriptors, clock reads, the devices, GPU costs,
    the hooks' own cost), the op cost measured after the script and the hooks' slowdown."""
    from whichdevice.core.units import seconds
    from whichdevice.present.claims import times

    notes: list[str] = []
    if state.get("fd_limit_reached"):
        notes.append(
            f"the script ran out of file descriptors (it held all {state['fd_limit_reached']} that "
            "`ulimit -n` allows when it ended); the audit went on from a few it had kept back"
        )
    notes += _device_notes(state)
    if state.get("n_reads", 0) > len(state.get("reads", [])):
        notes.append(
            f"the script read the clock {state['n_reads']} times; only the first "
            f"{len(state.get('reads', []))} were followed"
        )
    notes += _gpu_cost_notes(state.get("gpu_costs"))
    notes += _no_gpu_ratio_notes(state, findings, corrections)
    op_cost = state.get("op_cost") or {}
    overhead = _overhead(state, op_cost)
    if overhead is not None and overhead > OVERHEAD_ANNOUNCE:
        extra = (overhead - 1) / overhead * (state.get("script_s") or 0.0)
        notes.append(
            f"the audit's per-op hooks slowed this script ≈ {times(overhead)}×: "
            f"{state['totals'].get('eager_ops', 0):,} ops × ≈ {seconds(op_cost['hooked_s'] - op_cost['plain_s'])} per op "
            f"(measured after the script: {op_cost.get('op')}, {seconds(op_cost['plain_s'])} plain, "
            f"{seconds(op_cost['hooked_s'])} hooked) ≈ {seconds(extra)} of its {seconds(state.get('script_s'))}; "
            "the times it printed include that, the findings' per-op figures say how much"
        )
    return notes, op_cost, overhead


# Methods that train a Keras model with its own loop (and time it in its own log): a script timing one of
# them has no end - start of its own to audit; ``whichdevice diagnose`` times the steps of that loop.
FIT_METHODS = {"fit", "train_on_batch", "fit_generator"}


def _next_step(path: Path, measurements: list, source: str, modules: set[str]) -> str:
    """Where the script timed nothing the audit follows but trains with Keras' ``fit``, in its own
    code or in a module of its own folder that it imports (a project's training helper, whose clock
    reads the audit does not follow): the command that measures its steps."""
    if any(not m.tracing for m in measurements):
        return ""
    from whichdevice.audit import static

    helpers = static.local_sources(source, path.parent)
    keras = {"keras", "tensorflow"}
    own = bool(keras & modules) and static.calls_method(source, FIT_METHODS)
    elsewhere = [
        name
        for name, text in helpers.items()
        if keras & (modules | static.imported(text)) and static.calls_method(text, FIT_METHODS)
    ]
    if not own and not elsewhere:
        return ""
    where = "" if own else f" (in {', '.join(f'{n}.py' for n in elsewhere)})"
    return (
        f"it trains with Keras' fit{where}, which times its epochs in its own log: `whichdevice diagnose "
        f"{path.name}` times its training steps, says what slows them, and measures the fixes"
    )


def _device_notes(state: dict) -> list[str]:
    """What no GPU here means for the record: PyTorch's kernels all ran on the CPU, TensorFlow needed no
    placement log."""
    notes = []
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
    return notes


def _no_gpu_ratio_notes(state: dict, findings: list, corrections: list) -> list[str]:
    """PyTorch / JAX with no GPU here: the GPU side of the script's CPU/GPU ratio cannot be
    measured on this machine, said in words — whether its GPU timing ran on the CPU or did not run."""
    from whichdevice.frameworks.common.audit import terms

    part = terms(state.get("framework") or "tensorflow")  # PyTorch and JAX: series compared in order
    if not part.SERIES_IN_ORDER or (state.get("physical_devices") or {}).get("GPU", 0):
        return []
    rerun = part.WORDS["rerun"]
    if corrections:
        return [
            "the corrected ratios compare the script's blocks as they ran here, all on the CPU: the GPU side cannot "
            "be measured on this machine (no GPU)"
        ]
    if any(f.rule in ("missing_device_failure", "latent_from_source") for f in findings):
        return [
            "no corrected CPU/GPU ratio: the script's GPU timing did not run here (no GPU on this machine), so its "
            f"GPU side cannot be measured; where a GPU is present the audit re-runs each timed block ({rerun}), "
            "synchronized and warmed up, and gives the real ratio"
        ]
    return []


def _gpu_cost_notes(gpu_costs: dict | None) -> list[str]:
    """What the findings' GPU launch costs are: this GPU's, measured after the script, or why not."""
    from whichdevice.core.units import seconds

    if not gpu_costs:
        return []
    if gpu_costs.get("error"):
        return [
            f"measuring this GPU's launch cost failed ({gpu_costs['error']}): the findings quote the H100's "
            "recorded figure, labelled so"
        ]
    return [
        f"launch costs measured on this GPU ({gpu_costs.get('device')}, {gpu_costs.get('framework')}) after the "
        f"script: a tiny kernel launch ≈ {seconds(gpu_costs.get('launch_s'))}, a launch plus a host read "
        f"≈ {seconds(gpu_costs.get('item_roundtrip_s'))} (median of {gpu_costs.get('blocks')} blocks of "
        f"{gpu_costs.get('launches')} and {gpu_costs.get('roundtrips')}); the findings quote these"
    ]


# The audit says how much it slowed the script when its hooks cost more than this factor.
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
# The page itself is present/pages/audit.py (registered in present/registry.py, drawn by
# `report` too); these two keep the command's own calls short.


def render(record: audit_mod.AuditRecord) -> None:
    """Draw the record on the command's console."""
    from whichdevice.present.pages import audit as audit_page

    audit_page.render(console, record)


def render_html(record: audit_mod.AuditRecord) -> str:
    """The record's self-contained HTML page."""
    from whichdevice.present.pages import audit as audit_page

    return audit_page.render_html(record)
