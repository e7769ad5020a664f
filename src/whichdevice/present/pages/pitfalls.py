"""The page of a ``pitfalls`` record: the table of benchmarking mistakes (the wrong figure, the
right one, their ratio) and the HTML report; no plot."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from whichdevice.analysis.pitfalls import PitfallRow, analyze_pitfalls
from whichdevice.core import records
from whichdevice.core.units import seconds
from whichdevice.present import html, terminal
from whichdevice.present.tables import Grid, GridCell
from whichdevice.present import notes


TITLES = {
    "first_epoch": "Timing the first epoch (warm-up included)",
    "no_sync": "Reading the clock without synchronizing the device",
    "sync_each": "Synchronizing every step needlessly (.numpy() per step)",
    "one_thread": "CPU limited to one thread (torch.utils.benchmark default)",
    "xla_one_device": 'XLA on one device only (Keras jit_compile="auto")',
    "small_batch": "A batch too small (10 instead of 512)",
}

SHORT = {
    "first_epoch": "first epoch timed",
    "no_sync": "clock without sync",
    "sync_each": "sync every step",
    "one_thread": "CPU on 1 thread",
    "xla_one_device": "XLA on one device",
    "small_batch": "batch too small",
}

# How each pitfall's two figures were taken: (wrong, right), and what a reader must know.
_METHODS = {
    "no_sync": ("clock read after each call, no sync", "the same clock after a device sync"),
    "sync_each": (".numpy() after every step", "one sync per block of steps"),
    "xla_one_device": (
        "jit_compile=False (auto on a CPU-only machine)",
        "jit_compile=True (auto where a GPU is visible)",
    ),
    "small_batch": ("batch 10", "batch 512"),
}
_NOTES = {
    "one_thread": "batch 4096 steady step",
    "xla_one_device": "compare devices with the same jit_compile; ratio < 1: XLA is slower here",
}


def methods(r: PitfallRow) -> tuple[str, str]:
    """How the wrong and the right figure were taken."""
    if r.pitfall == "first_epoch":
        return "first epoch", "epoch 2" if r.epochs == 2 else f"median of epochs 2-{r.epochs}"
    if r.pitfall == "one_thread":
        return "1 CPU thread", f"all cores ({f'{r.threads} threads' if r.threads is not None else 'default threads'})"
    return _METHODS[r.pitfall]


def note(r: PitfallRow) -> str:
    if r.pitfall == "no_sync":
        if r.on_cpu:
            return (
                "on a CPU TensorFlow returns from the step after the work is done: an unsynchronized clock "
                "cannot distort here; on a GPU it times only the kernel launches"
            )
        return "the call returned before the GPU finished: the unsynchronized figure is the launch cost"
    return _NOTES.get(r.pitfall, "")


def verdict(r: PitfallRow) -> str:
    """What the mistake does to the figure: 'reads 2x the real cost', 'within noise: ...'."""
    if not r.significant:
        return "within noise: no distortion here"
    if r.pitfall == "xla_one_device":
        faster = "faster" if r.ratio > 1 else "slower"
        return f"XLA makes this device {max(r.ratio, 1 / r.ratio):.3g}x {faster}: a mixed-path comparison carries it"
    if r.ratio >= 1:
        return f"reads {r.ratio:.3g}x the real cost"
    return f"reads {1 / r.ratio:.3g}x too fast"


def _footer(r: PitfallRow) -> str:
    wrong, right = methods(r)
    n = note(r)
    return f"{SHORT[r.pitfall]} ({r.device}): wrong = {wrong}; right = {right}" + (f". {n}" if n else "")


def pitfalls_grid(rows: list[PitfallRow]) -> Grid:
    out: list[list[GridCell]] = []
    for r in rows:
        tone = "neutral" if not r.significant else ("bad" if abs(r.ratio - 1) > 0.1 else "")
        out.append(
            [
                GridCell(SHORT[r.pitfall]),
                GridCell(r.device),
                GridCell(seconds(r.wrong_s)),
                GridCell(seconds(r.right_s)),
                GridCell(f"{r.ratio:.3g}x", tone),
                GridCell(verdict(r), tone),
                GridCell(r.unit, "dim"),
            ]
        )
    footer = [_footer(r) for r in rows]
    return Grid(
        "Benchmarking mistakes: the wrong figure, the right one, wrong / right",
        ["pitfall", "device", "wrong", "right", "ratio", "what it does", "per"],
        out,
        footer,
        align=("left", "left", "right", "right", "right", "left", "left"),
    )


def render(console: Console, record: records.RunRecord, png: Path, *, loglog: bool) -> None:
    """Terminal table and an HTML report beside ``png`` (no plot: one table says it all)."""
    rows = analyze_pitfalls(record)
    warnings, failures = notes.timing_warnings(record), notes.failures(record)
    terminal.render_header(console, record)
    if record.options.get("quick"):
        console.print(
            "[yellow]--quick:[/yellow] 0.05 s of steady samples per point, 2 epochs for the first-epoch "
            "pitfall (the full run: whichdevice pitfalls)"
        )
    grid = pitfalls_grid(rows)
    terminal.render_grid(console, grid)
    if not any(d.startswith("GPU") for d in {r.device for r in rows}):
        console.print(
            "Only the CPU was measured: the unsynchronized-clock pitfall cannot distort a CPU timing; "
            "run on a GPU machine to measure it there."
        )
    terminal.render_notes(console, record, warnings, failures)  # one line per kind
    png.parent.mkdir(parents=True, exist_ok=True)
    page = html.render_html(
        record, [html.Section("Benchmarking mistakes", [grid])], warnings=warnings, failures=failures
    )
    html.write_html(png.with_suffix(".html"), page)
    console.print(f"Report: {escape(str(png.with_suffix('.html')))}")
