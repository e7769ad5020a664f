"""`whichdevice placement`: which ops of a training step ran on which device, their time, and
the copies between host and device."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from whichdevice.measure import experiment, session
from whichdevice import frameworks
from whichdevice.core import records
from whichdevice.workloads import userfile
from whichdevice.analysis import quality
from whichdevice.analysis.placement import DevicePlacement, device_placement, explain_cpu_op
from whichdevice.cli.common import (
    find_devices,
    REPORTERS,
    app,
    command_line,
    console,
    err_console,
    measure_with_progress,
    open_journal,
    stamp,
    page_after_record,
    write_record,
)
from whichdevice.cli import options as opt
from whichdevice.core.errors import UsageError
from whichdevice.measure.journal import JournalState
from whichdevice.present import html, terminal
from whichdevice.present.tables import Grid, GridCell
from whichdevice.core.units import nbytes, seconds
from whichdevice.core.records import CaseSpec
from whichdevice.core.validate import (
    check_output_dir,
    check_output_file,
    parse_choice,
    parse_memory_limit,
    parse_positive_float,
    parse_positive_int,
    parse_shape,
)
from whichdevice.workloads import placement as placement_workload

MAX_OPS_SHOWN = 25  # per device in the terminal; the HTML report has them all
DEFAULT_MODEL = "seed001 + string op (no GPU kernel)"


@dataclass
class PlacementPlan:
    """A checked `placement` run: everything its cases and its record need (JSON values only),
    journaled in the header so that ``--resume`` runs the same thing."""

    framework: str
    batch: int
    steps: int
    quick: bool
    user: dict | None  # the user's model, as the pre-flight found it (None: seed 001 + string op)
    model: str | None  # --model as typed, for the record
    devices_wanted: list[str] | None
    case_timeout_s: float
    json_file: str
    command: list[str]
    memory_limit_bytes: int | None = None  # None: the runner's default (90 % of RAM)


@app.command()
def placement(
    ctx: typer.Context,
    model: Optional[str] = typer.Option(
        None,
        "--model",
        help="Your model: FILE.py:FUNCTION returning a Keras model. Default: seed 001's model with a string op in the step (no GPU kernel).",
    ),
    input_shape: Optional[str] = opt.input_shape(),
    classes: Optional[str] = opt.classes(),
    batch: Optional[str] = typer.Option(None, "--batch", help="Batch size of the step (default 32)."),
    steps: Optional[str] = typer.Option(
        None,
        "--steps",
        help=f"Steps profiled after warm-up (default {placement_workload.DEFAULT_STEPS}; {placement_workload.QUICK_STEPS} with --quick).",
    ),
    device: Optional[str] = opt.device(),
    quick: bool = opt.quick(f"Profile {placement_workload.QUICK_STEPS} steps: < 60 s on 2 cores."),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(300, "device's run"),
    framework: str = opt.framework(),
    out: Path = opt.out("the HTML report"),
    json_path: Optional[Path] = opt.json("placement"),
    resume: Optional[Path] = opt.resume(),
) -> None:
    """Per device: the ops of one training step by type (count, time), the host<->device copies, and on a GPU the ops that ran on the CPU, with why."""  # noqa: E501
    if opt.resume_if_asked(ctx, resume, "placement", PlacementPlan, run_placement):
        return
    fw = parse_choice(framework, "--framework", ("tensorflow",))
    shape = parse_shape(input_shape)
    n_classes = parse_positive_int(classes, "--classes", "10", maximum=1_000_000)
    b = parse_positive_int(batch, "--batch", "32", maximum=65536) or 32
    n_steps = parse_positive_int(steps, "--steps", "20", maximum=10_000) or (
        placement_workload.QUICK_STEPS if quick else placement_workload.DEFAULT_STEPS
    )
    if model is None:
        for arg, value in (("--input-shape", input_shape), ("--classes", classes)):
            if value is not None:
                raise UsageError(arg, "only applies to --model", f"Add --model FILE.py:FUNCTION, or drop {arg}.")
    model_fn = userfile.parse_spec(model, "--model") if model else None
    wanted = experiment.parse_device_filter(device)
    timeout_s = parse_positive_float(case_timeout, "--case-timeout", "300")
    memory_bytes = parse_memory_limit(memory_limit)
    out_dir = check_output_dir(out, "--out")
    ts = stamp()
    json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"placement-{ts}.json"
    experiment.require_installed(fw)

    user = None
    if model_fn is not None:
        err_console.print(f"Checking {escape(model_fn.text)} (imports {escape(fw)})…")
        found_user = userfile.user_model_params(
            model_fn, shape, n_classes, None, frameworks.env_module(fw).child_env("cpu")
        )
        # No --data here: the data keys (both None) stay out of the case's parameters.
        user = {k: v for k, v in found_user.items() if not k.startswith("data_")}
    plan = PlacementPlan(
        framework=fw,
        batch=b,
        steps=n_steps,
        quick=quick,
        user=user,
        model=model_fn.text if model_fn else None,
        devices_wanted=wanted,
        case_timeout_s=timeout_s,
        json_file=str(json_file.absolute()),
        command=command_line(),
        memory_limit_bytes=memory_bytes,
    )
    run_placement(plan, None)


def case_params(plan: PlacementPlan) -> dict:
    """The one case's parameters (the same on every device)."""
    params: dict = {
        "kind": "placement",
        "model": "seed001",
        "batch": plan.batch,
        "steps": plan.steps,
        "string_op": True,
    }
    if plan.user is not None:
        params.update(plan.user, string_op=False)
    return params


def run_placement(plan: PlacementPlan, resumed: JournalState | None) -> None:
    """Measure ``plan`` (continuing ``resumed``'s journal), render it, write the record."""
    fw = plan.framework
    experiment.require_installed(fw)
    found = find_devices(fw)
    experiment.select_devices(found, plan.devices_wanted)  # a --device this machine lacks: before any journal
    journal = open_journal("placement", plan, resumed)
    params = case_params(plan)

    def cases_for(_found, d):
        return [CaseSpec(workload="train", framework=fw, device=d.name, params=params)]

    options = {"quick": plan.quick, "batch": plan.batch, "steps": plan.steps, "model": plan.model or DEFAULT_MODEL}
    request = session.Request(
        "placement",
        fw,
        cases_for,
        options,
        plan.command,
        devices=plan.devices_wanted,
        case_timeout_s=plan.case_timeout_s,
        memory_limit_bytes=plan.memory_limit_bytes,
    )
    record = measure_with_progress(request, journal=journal, resumed=resumed, found=found)
    json_file = Path(plan.json_file)
    with page_after_record():
        render_placement(record, json_file.with_suffix(".png"), loglog=True)
        write_record(record, json_file, None)
        journal.finish()  # the record is complete: the journal has done its job


def placements(record: records.RunRecord) -> list[DevicePlacement]:
    return [
        device_placement(r.spec.device, r.metrics, r.timing.median_s)
        for r in record.results
        if r.status == "ok" and r.spec.params.get("kind") == "placement" and r.timing is not None
    ]


def _ops_grid(p: DevicePlacement, limit: int | None) -> Grid:
    rows = []
    real = [o for o in p.ops if not o.plumbing]
    for o in real[:limit] if limit else real:
        cpu_in_gpu = p.device.startswith("GPU") and o.placed_on.startswith("CPU")
        rows.append(
            [
                GridCell(o.op_type),
                GridCell(o.placed_on, "bad" if cpu_in_gpu else ""),
                GridCell(str(o.nodes)),
                GridCell("—" if o.executions is None else str(o.executions)),
                GridCell("—" if o.self_us is None else seconds(o.self_us * 1e-6 / max(1, p.profiled_steps))),
                GridCell(
                    {True: "yes", False: "no", None: "?"}[o.has_gpu_kernel],
                    "bad" if o.has_gpu_kernel is False else "dim",
                ),
            ]
        )
    plumbing = [o for o in p.ops if o.plumbing]
    footer = []
    if limit and len(real) > limit:
        footer.append(f"…{len(real) - limit} more op types in the HTML report")
    if plumbing:
        footer.append(
            "Graph plumbing not shown (no work): "
            + ", ".join(f"{o.op_type} x{o.nodes} on {o.placed_on}" for o in plumbing)
        )
    return Grid(
        f"{p.device}: ops of one training step by type (time per step from {p.profiled_steps} profiled steps)",
        ["op type", "placed on", "nodes", "executions", "self time / step", "GPU kernel"],
        rows,
        footer,
        align=("left", "left", "right", "right", "right", "left"),
    )


def _lines(p: DevicePlacement) -> list[str]:
    out = []
    if p.device.startswith("GPU"):
        cpu_ops = p.on_cpu_in_gpu_run
        if cpu_ops:
            out.append(f"{p.device}: {len(cpu_ops)} op types ran on the CPU in this GPU run:")
            out += [f"  {o.op_type} (x{o.nodes}): {explain_cpu_op(o.op_type, _kd(o))}" for o in cpu_ops]
        else:
            out.append(f"{p.device}: every op that does work ran on the GPU.")
    else:
        out.append(
            f"{p.device}: everything ran on the CPU (this is a CPU run). A GPU run is needed to see "
            "which ops fall back to the CPU there."
        )
        if p.would_fall_back:
            out.append(
                "From this TensorFlow build's kernel registry, on a GPU these would run on the CPU: "
                + "; ".join(f"{o.op_type} ({explain_cpu_op(o.op_type, _kd(o))})" for o in p.would_fall_back)
            )
    c = p.copies
    if c.count:
        size = f"{nbytes(c.nbytes)}" + (f" + {c.unknown_size} of unknown size" if c.unknown_size else "")
        dirs = ", ".join(f"{k}: {v}" for k, v in sorted(c.by_direction.items()))
        out.append(f"{p.device}: {c.count} copies between devices per step inside the step ({dirs}), {size}.")
    else:
        out.append(f"{p.device}: no copies between devices inside the step (every placed node on one device).")
    if p.device.startswith("GPU"):
        out.append(
            f"{p.device}: plus {p.feed_tensors} host-to-device copies of the batch fed from NumPy "
            f"({nbytes(p.feed_bytes)} per step)."
        )
    if not p.profiled:
        out.append("Op times unavailable: xprof is not installed (pip install 'whichdevice[profile]').")
    profiler = "with the profiler on" if p.profiler_on else "(profiler off)"
    overhead = "profiler overhead included; " if p.profiler_on else ""
    out.append(
        f"{p.device}: median step {profiler}: {seconds(p.step_s)} ({overhead}`whichdevice train` compares devices)."
    )
    return out


def _kd(o) -> set[str] | None:
    return None if o.has_gpu_kernel is None else ({"GPU"} if o.has_gpu_kernel else {"CPU"})


def render_placement(record: records.RunRecord, png: Path, *, loglog: bool) -> None:
    terminal.render_header(console, record)
    warnings, failures = quality.timing_warnings(record), quality.failures(record)
    sections = []
    # GPU runs first: their CPU fallbacks are the finding.
    for p in sorted(placements(record), key=lambda p: not p.device.startswith("GPU")):
        for line in _lines(p):
            console.print(escape(line))
        terminal.render_grid(console, _ops_grid(p, MAX_OPS_SHOWN))
        sections.append(html.Section(f"Placement on {p.device}", [_ops_grid(p, None)], lines=_lines(p)))
    terminal.render_notes(console, record, [], failures)
    png.parent.mkdir(parents=True, exist_ok=True)
    page = html.render_html(record, sections, warnings=warnings, failures=failures)
    html.write_html(png.with_suffix(".html"), page)
    console.print(f"Report: {escape(str(png.with_suffix('.html')))}")


REPORTERS["placement"] = render_placement
