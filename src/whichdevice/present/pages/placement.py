"""The page of a ``placement`` record: per device which ops ran where and why, the copies
between devices, the op tables (the terminal shows the first MAX_OPS_SHOWN) and the HTML report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections.abc import Mapping
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from whichdevice.core.units import nbytes, seconds
from whichdevice.present import html, terminal
from whichdevice.present.pages import write_page
from whichdevice.present.tables import Grid, GridCell
from whichdevice.present import notes
from whichdevice.present.pages import placement_traced

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Placement
    from whichdevice.analysis.placement import DevicePlacement

MAX_OPS_SHOWN = 25  # per device in the terminal; the HTML report has them all


# analysis/placement.cpu_op_cause -> why an op ran on the CPU in a GPU run, in words
CPU_OP_WORDS = {
    "python": (
        "Python code inside the step (tf.numpy_function / tf.py_function): it always runs on the host, "
        "and its inputs and outputs are copied across"
    ),
    "no_gpu_kernel": (
        "no GPU kernel in this TensorFlow build: soft placement put it on the CPU, and every tensor it "
        "reads or writes crosses between host and device"
    ),
    "plumbing": "graph plumbing (argument, return, constant): placed with the tensor it carries, no work",
    "variable": (
        "a variable's op: it runs where the variable was created (a variable made outside the GPU scope stays on "
        "the CPU)"
    ),
    "dtype_or_host_memory": (
        "has a GPU kernel, but not for this dtype or with host-memory inputs (int32 shapes and indices "
        "are kept on the host), or it was colocated with a CPU-only neighbour"
    ),
    "unknown": "reason unknown (kernel registry not available)",
}


def _ops_grid(p: DevicePlacement, limit: int | None) -> Grid:
    rows: list[list[GridCell]] = []
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
    footer: list[str] = []
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


def _lines(p: DevicePlacement, causes: Mapping[tuple[str, str], str]) -> list[str]:
    out: list[str] = []
    if p.device.startswith("GPU"):
        cpu_ops = p.on_cpu_in_gpu_run
        if cpu_ops:
            out.append(f"{p.device}: {len(cpu_ops)} op types ran on the CPU in this GPU run:")
            out += [f"  {o.op_type} (x{o.nodes}): {CPU_OP_WORDS[causes[p.device, o.op_type]]}" for o in cpu_ops]
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
                + "; ".join(f"{o.op_type} ({CPU_OP_WORDS[causes[p.device, o.op_type]]})" for o in p.would_fall_back)
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


def render(console: Console, result: Placement, png: Path, *, loglog: bool) -> None:
    """The placement lines and op tables per device (GPU runs first) and the HTML report."""
    record = result.record
    terminal.render_header(console, record)
    warnings, failures = notes.timing_warnings(result.warnings), notes.failures(record)
    sections: list[html.Section] = []
    # GPU runs first: their CPU fallbacks are the finding.
    for p in sorted(result.placements, key=lambda p: not p.device.startswith("GPU")):
        lines = _lines(p, result.causes)
        for line in lines:
            console.print(escape(line))
        terminal.render_grid(console, _ops_grid(p, MAX_OPS_SHOWN))
        sections.append(html.Section(f"Placement on {p.device}", [_ops_grid(p, None)], lines=lines))
    for fw, t in sorted(result.traced, key=lambda ft: not ft[1].device.startswith("GPU")):
        for line in placement_traced.lines(fw, t):
            console.print(escape(line))
        terminal.render_grid(console, placement_traced.ops_grid(fw, t, MAX_OPS_SHOWN))
        sections.append(
            html.Section(
                f"Placement on {t.device}",
                [placement_traced.ops_grid(fw, t, None)],
                lines=placement_traced.lines(fw, t),
            )
        )
    terminal.render_notes(console, record, [], failures, skipped=result.skipped)
    png.parent.mkdir(parents=True, exist_ok=True)
    page = html.render_html(
        record, sections, warnings=warnings, failures=failures, measured=result.warnings, skipped=result.skipped
    )
    write_page(console, png, page)
