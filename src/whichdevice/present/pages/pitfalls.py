"""The page of a ``pitfalls`` record: the table of benchmarking mistakes (the wrong figure, the
right one, their ratio) and the HTML report; no plot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from whichdevice import frameworks
from whichdevice.core.units import seconds
from whichdevice.present import html, terminal
from whichdevice.present.pages import write_page
from whichdevice.present.claims import times
from whichdevice.present.tables import Grid, GridCell
from whichdevice.present import notes

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Pitfalls
    from whichdevice.analysis.pitfalls import PitfallRow


TITLES = {
    "first_epoch": "Timing the first epoch (warm-up included)",
    "no_sync": "Reading the clock without synchronizing the device",
    "sync_each": "Synchronizing every step needlessly (.numpy() per step)",
    "one_thread": "CPU limited to one thread (torch.utils.benchmark default)",
    "xla_one_device": 'XLA on one device only (Keras jit_compile="auto")',
    "small_batch": "A batch too small (10 instead of 512)",
    "first_step": "Timing the first iteration (one-time costs included)",
    "compile_in_timing": "Compiling inside the timing",
    "num_workers": "Loading data in the training process (DataLoader num_workers=0)",
    "device_put": "Copying the batch to the device every step (jax.device_put)",
}

SHORT = {
    "first_epoch": "first epoch timed",
    "no_sync": "clock without sync",
    "sync_each": "sync every step",
    "one_thread": "CPU on 1 thread",
    "xla_one_device": "XLA on one device",
    "small_batch": "batch too small",
    "first_step": "first step timed",
    "compile_in_timing": "compile in the timing",
    "num_workers": "num_workers=0",
    "device_put": "device_put every step",
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


_OWN_NOTES = {
    "num_workers": "the small MLP's samples in memory, batch 32; fetch, step and .item() timed per step",
    "small_batch": "",
    "one_thread": "batch 4096 steady step (torch.set_num_threads(1) vs torch's default)",
}


# --quick's line in TensorFlow's words; the other frameworks declare their own (env.py's PITFALLS_QUICK).
_QUICK = (
    "[yellow]--quick:[/yellow] 0.05 s of steady samples per point, 2 epochs for the first-epoch "
    "pitfall (the full run: whichdevice pitfalls)"
)


def family(framework: str) -> str:
    """Whose words a row takes, as the framework's env.py declares (``WORDS_FAMILY``): tensorflow
    (the default), torch, keras-torch or jax (jax, keras-jax)."""
    return frameworks.declared(framework, "WORDS_FAMILY", frameworks.DEFAULT)


def _own(framework: str) -> bool:
    """The framework has words of its own (torch's, JAX's), not TensorFlow's."""
    return family(framework) != frameworks.DEFAULT


def methods(r: PitfallRow) -> tuple[str, str]:
    """How the wrong and the right figure were taken."""
    own: dict[str, tuple[str, str]] = frameworks.declared(r.framework, "PITFALLS_METHODS", {})
    if r.pitfall in own and own[r.pitfall][0]:
        wrong, right = own[r.pitfall]
        return (f"{wrong} ({r.detail})" if r.detail else wrong), right
    if r.pitfall == "num_workers":
        return "DataLoader num_workers=0", f"num_workers={r.workers}"
    if r.pitfall == "first_epoch":
        return "first epoch", "epoch 2" if r.epochs == 2 else f"median of epochs 2-{r.epochs}"
    if r.pitfall == "one_thread":
        return "1 CPU thread", f"all cores ({f'{r.threads} threads' if r.threads is not None else 'default threads'})"
    return _METHODS[r.pitfall]


def note(r: PitfallRow) -> str:
    """What a reader must know of the row's method (torch's and JAX's notes where they have their own)."""
    own = _own(r.framework)
    if r.pitfall == "no_sync" and not r.on_cpu:
        return "the call returned before the GPU finished: the unsynchronized figure is the launch cost"
    if r.pitfall == "no_sync" and own:  # JAX only: torch's no-sync mistake is not measured on a CPU
        return "JAX dispatches asynchronously on the CPU too: the call returns once the work is queued"
    if r.pitfall == "no_sync":
        return (
            "on a CPU TensorFlow returns from the step after the work is done: an unsynchronized clock "
            "cannot distort here; on a GPU it times only the kernel launches"
        )
    return _OWN_NOTES.get(r.pitfall, _NOTES.get(r.pitfall, "")) if own else _NOTES.get(r.pitfall, "")


def _too_few(r: PitfallRow) -> str | None:
    """torch's and JAX's rows: why no claim either way is made (analysis: ``PitfallRow.no_claim``)."""
    if r.no_claim is None:
        return None
    why, fewest = r.no_claim
    if why == "few":
        return f"not enough {r.n_unit} (n={r.n}, fewer than {fewest}): no claim either way"
    if why == "wide":
        return f"not enough {r.n_unit}: the interval is too wide to rule out a 2× change either way"
    return f"not enough {r.n_unit} (n={r.n}): no claim either way"


def verdict(r: PitfallRow) -> str:
    """What the mistake does to the figure: 'reads 2× the real cost', 'within noise: ...' (ratios
    as every claim writes them, present/claims.times)."""
    if not r.significant and _own(r.framework):
        too_few = _too_few(r)
        if too_few:
            return too_few
    if not r.significant:
        return "within noise: no distortion here"
    if r.pitfall == "num_workers" and r.ratio < 1:
        return f"workers cost more here: num_workers=0 is {times(1 / r.ratio)}× faster on this data"
    if r.pitfall == "xla_one_device":
        faster = "faster" if r.ratio > 1 else "slower"
        return f"XLA makes this device {times(max(r.ratio, 1 / r.ratio))}× {faster}: a mixed-path comparison carries it"
    if r.ratio >= 1:
        return f"reads {times(r.ratio)}× the real cost"
    return f"reads {times(1 / r.ratio)}× too fast"


def _footer(r: PitfallRow) -> str:
    wrong, right = methods(r)
    n = note(r)
    return f"{SHORT[r.pitfall]} ({r.device}): wrong = {wrong}; right = {right}" + (f". {n}" if n else "")


def interval(r: PitfallRow) -> str:
    """The ratio's 95 % interval and sample count: '1.8–2.2×, n=40'."""
    n = (f"n={r.n}" + (" rounds" if r.n_unit == "rounds" else "")) if r.n else "n unknown"
    if r.lo is None or r.hi is None:
        return f"no interval ({n})"
    return f"{times(r.lo)}–{times(r.hi)}×, {n}"


def pitfalls_grid(rows: list[PitfallRow]) -> Grid:
    """The rows' table; torch's and JAX's add the ratio's interval and sample count
    (TensorFlow's rows are read as they were recorded, without it)."""
    with_interval = any(_own(r.framework) for r in rows)
    out: list[list[GridCell]] = []
    for r in rows:
        tone = "neutral" if not r.significant else ("bad" if abs(r.ratio - 1) > 0.1 else "")
        cells = [
            GridCell(SHORT[r.pitfall]),
            GridCell(r.device),
            GridCell(seconds(r.wrong_s)),
            GridCell(seconds(r.right_s)),
            GridCell(f"{times(r.ratio)}×", tone),
        ]
        cells += [GridCell(interval(r), "dim")] if with_interval else []
        out.append([*cells, GridCell(verdict(r), tone), GridCell(r.unit, "dim")])
    interval_head = ["interval"] if with_interval else []
    return Grid(
        "Benchmarking mistakes: the wrong figure, the right one, wrong / right"
        + (" (95 % interval, samples)" if with_interval else ""),
        ["pitfall", "device", "wrong", "right", "ratio", *interval_head, "what it does", "per"],
        out,
        [_footer(r) for r in rows],
        align=("left", "left", "right", "right", "right", *(["right"] if with_interval else []), "left", "left"),
    )


def not_measured_lines(not_measured: list[tuple[str, str]]) -> list[str]:
    """The framework's GPU-only mistakes on a CPU: said, never measured (analysis.not_measured)."""
    return [
        f"{SHORT[m]} ({d}): not measured here (no GPU): the framework's CPU ops return when done, so an "
        "unsynchronized clock cannot distort a CPU timing; on a GPU it times only the kernel launches"
        for m, d in not_measured
    ]


def render(console: Console, result: Pitfalls, png: Path, *, loglog: bool) -> None:
    """Terminal table and an HTML report beside ``png`` (no plot: one table says it all)."""
    record, rows = result.record, result.rows
    warnings, failures = notes.timing_warnings(result.warnings), notes.failures(record)
    terminal.render_header(console, record)
    if record.options.get("quick"):
        console.print(frameworks.declared(result.framework, "PITFALLS_QUICK", _QUICK))
    grid = pitfalls_grid(rows)
    terminal.render_grid(console, grid)
    unmeasured = not_measured_lines(result.not_measured)
    for line in unmeasured:
        console.print(escape(line))
    tensorflow = result.framework == "tensorflow"  # the others' GPU-only mistakes are said above
    if tensorflow and not any(d.startswith("GPU") for d in {r.device for r in rows}):
        console.print(
            "Only the CPU was measured: the unsynchronized-clock pitfall cannot distort a CPU timing; "
            "run on a GPU machine to measure it there."
        )
    # the measurement warnings one line per kind
    terminal.render_notes(console, record, warnings, failures, result.warnings, skipped=result.skipped)
    png.parent.mkdir(parents=True, exist_ok=True)
    page = html.render_html(
        record,
        [html.Section("Benchmarking mistakes", [grid], lines=unmeasured)],
        warnings=warnings,
        failures=failures,
        measured=result.warnings,
        skipped=result.skipped,
    )
    write_page(console, png, page)
