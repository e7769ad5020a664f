"""The placement page's sections for torch and JAX (a traced step: ``analysis.placement.
traced_placement``): which ops ran where with their times, the copies between host and device
(pageable or pinned) and the syncs, in the words of the framework that ran them. TensorFlow's
placement log has its own sections (``placement.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from whichdevice import frameworks
from whichdevice.core.units import nbytes, seconds
from whichdevice.present.tables import Grid, GridCell

if TYPE_CHECKING:
    from whichdevice.analysis.placement import TracedPlacement

NO_GPU = "not measured here (no GPU)"


def _jax(framework: str) -> bool:
    """XLA's words (jax, keras-jax: their env.py's WORDS_FAMILY), else torch's."""
    return frameworks.declared(framework, "WORDS_FAMILY", frameworks.DEFAULT) == "jax"


def _time(us: float | None) -> str:
    return "—" if us is None else seconds(us * 1e-6)


def ops_grid(framework: str, p: TracedPlacement, limit: int | None) -> Grid:
    real = [o for o in p.ops if not o.view]
    rows: list[list[GridCell]] = []
    for o in real[:limit] if limit else real:
        bad = p.device.startswith("GPU") and o in p.on_cpu_in_gpu_run
        rows.append(
            [
                GridCell(o.op_type),
                GridCell(o.ran_on, "bad" if bad else ("dim" if o.nested else "")),
                GridCell(f"{o.calls:.3g}"),
                GridCell(_time(o.host_us)),
                GridCell(_time(o.gpu_us)),
            ]
        )
    footer: list[str] = []
    if limit and len(real) > limit:
        footer.append(f"…{len(real) - limit} more op types in the HTML report")
    views = [o for o in p.ops if o.view]
    if views:
        footer.append(
            "Views and markers not shown (no kernel, no data moved): "
            + ", ".join(f"{o.op_type} x{o.calls:.3g}" for o in views)
        )
    what = "XLA ops of the compiled step" if _jax(framework) else "ATen ops of one training step"
    return Grid(
        f"{p.device}: {what} by type (times per step from {p.profiled_steps} profiled steps)",
        ["op type", "ran on", "calls / step", "host time / step", "GPU time / step"],
        rows,
        footer,
        align=("left", "left", "right", "right", "right"),
    )


def _where_lines(framework: str, p: TracedPlacement) -> list[str]:
    if p.device.startswith("GPU"):
        cpu_ops = p.on_cpu_in_gpu_run
        if not cpu_ops:
            return [f"{p.device}: every op that does work ran on the GPU."]
        why = (
            "an op of the compiled program run on the host (a host callback)"
            if _jax(framework)
            else "their tensors are on the CPU (torch runs an op where its tensors are: the optimizer's step "
            "counters, data never moved)"
        )
        return [f"{p.device}: {len(cpu_ops)} op types ran on the CPU in this GPU run ({why}):"] + [
            f"  {o.op_type} ({o.calls:.3g} a step)" for o in cpu_ops
        ]
    out = [
        f"{p.device}: everything ran on the CPU (this is a CPU run). A GPU run is needed to see which ops run on "
        "the CPU there."
    ]
    if _jax(framework):
        out.append("XLA compiles the step into one program for one device: on a GPU all of it runs there.")
    else:
        out.append(
            "torch has no CPU fallback on CUDA (an op without a CUDA kernel raises an error); on a GPU an op runs "
            "on the CPU when its tensors are there."
        )
    return out


def _copy_lines(framework: str, p: TracedPlacement) -> list[str]:
    if not p.copies:
        if p.device.startswith("GPU"):
            return [f"{p.device}: no copies between host and device in the step."]
        feed = f"{p.feed_tensors} tensors, {nbytes(p.feed_bytes)}"
        source = frameworks.declared(framework, "NUMPY_FEED", "NumPy memory")
        return [
            f"{p.device}: no copies between host and device (one device). On a GPU the batch fed from NumPy "
            f"({feed} a step, pageable: {source}) is copied to the device every step: {NO_GPU}."
        ]
    if _jax(framework) and not p.device.startswith("GPU") and set(p.copies) == {"H2D"}:
        size = nbytes(p.copy_bytes["H2D"]) if "H2D" in p.copy_bytes else "size unknown"
        return [
            f"{p.device}: JAX put {p.copies['H2D']:.3g} NumPy arrays on the device a step (DevicePut, {size}, "
            "pageable host memory): on the CPU backend they stay in host memory; on a GPU each is a host-to-device "
            f"copy: {NO_GPU}."
        ]
    parts = []
    for kind in ("H2D", "D2H", "D2D"):
        if p.copies.get(kind):
            size = nbytes(p.copy_bytes[kind]) if kind in p.copy_bytes else "size unknown"
            parts.append(f"{kind} {p.copies[kind]:.3g} ({size})")
    memory = f"host side pageable {p.pageable}, pinned {p.pinned}"
    out = [
        f"{p.device}: {sum(p.copies.values()):.3g} copies between host and device a step: {', '.join(parts)}; {memory}."
    ]
    if p.memcpy:
        out.append(f"{p.device}: copy kernels a step: " + ", ".join(f"{k} x{v}" for k, v in sorted(p.memcpy.items())))
    return out


def _sync_lines(framework: str, p: TracedPlacement) -> list[str]:
    words = {
        "item": ".item() / float() of a GPU tensor",
        "copy_to_host": "a blocking copy to the host",
        "read_back": "a result read back to the host",
    }
    if p.syncs:
        listed = ", ".join(f"{words.get(k, k)}: {v}" for k, v in sorted(p.syncs.items()))
        return [f"{p.device}: {sum(p.syncs.values())} syncs a step (the host waits for the device): {listed}."]
    if p.device.startswith("GPU"):
        return [f"{p.device}: no sync inside the step."]
    read = "float(loss)" if _jax(framework) else ".item()"
    if p.host_reads:
        reads = f"{p.host_reads} scalar reads to Python a step, {p.read_backs} of them the loss the loop reads"
    else:
        reads = f"{p.read_backs} read of the loss a step"
    return [f"{p.device}: {reads} ({read}); on a GPU a read of a GPU value waits for the device (a sync): {NO_GPU}."]


def lines(framework: str, p: TracedPlacement) -> list[str]:
    out = _where_lines(framework, p) + _copy_lines(framework, p) + _sync_lines(framework, p)
    if not p.profiled:
        out.append(f"{p.device}: op times unavailable (the profiler's trace had no op events).")
    out.append(
        f"{p.device}: median step with the profiler on: {seconds(p.step_s)} (profiler overhead included; "
        "`whichdevice train` compares devices)."
    )
    return out
