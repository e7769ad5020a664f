"""Shared pieces of the command line: the typer app, consoles, progress, writing records,
and the registry that maps an experiment name to the function that renders its record."""

from __future__ import annotations

import dataclasses
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from whichdevice.cli.base import app, console, err_console  # noqa: F401  (re-exported for the commands)
from whichdevice.measure import history, session
from whichdevice.core import records
from whichdevice.core.errors import UsageError
from whichdevice.measure.journal import Journal, JournalState, journal_path


DEFAULT_OUT = Path("whichdevice-results")
MEMORY_LIMIT_HELP = (
    "GiB the measuring process may hold before its case is stopped and recorded as out of memory "
    "(default: 90% of RAM, or of the container's limit when lower)."
)
MAX_MATMUL_N = 32768  # two float32 operands + result = 12 GiB: beyond that, not a laptop question


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


# experiment name -> render(record, png_path, loglog) used by `report` (and by the command).
REPORTERS: dict[str, Callable[[records.RunRecord, Path, bool], None]] = {}


def describe_key(key: str) -> str:
    workload, _, device, params = key.split("|", 3)
    return f"{device} {workload} {params.replace(',', ' ')}"


def write_record(record: records.RunRecord, json_file: Path, png: Path | None) -> None:
    try:
        json_file.parent.mkdir(parents=True, exist_ok=True)
        records.save_run(record, json_file)
    except OSError as e:
        if png is not None:  # never leave a report without its record
            png.unlink(missing_ok=True)
            png.with_suffix(".html").unlink(missing_ok=True)
        raise UsageError("--json", f"cannot write '{json_file}' ({e.strerror})", "Pass a writable path.") from None
    console.print(f"Record: {escape(str(json_file))}")
    try:
        run_id = history.add(record, json_file)
        console.print(f"History: run {run_id} (whichdevice history; whichdevice compare {run_id} LATER_RUN)")
    except (OSError, sqlite3.Error) as e:  # the index is a convenience: never fail a finished run over it
        console.print(f"[yellow]History not updated ({escape(str(e))}).[/yellow]")
    if png is not None:
        console.print(f"Plot:   {escape(str(png))}")


# ------------------------------------------------------------------ --resume
# A measuring command parses its arguments into a plan (a dataclass of JSON values: all that
# its cases and its record need), journals the plan in the header, and runs it. ``--resume``
# reads the plan back instead of parsing arguments: nothing is re-checked or re-asked.


def command_line() -> list[str]:
    """The command as typed, for the record (a resumed run keeps the original's)."""
    return ["whichdevice", *sys.argv[1:]]


def reject_options_with_resume(ctx: typer.Context) -> None:
    """With ``--resume`` the interrupted run's options are reused: any other option given on
    the command line would be silently ignored, so it is an error instead."""
    if ctx.params.get("resume") is None:
        return
    for param in ctx.command.params:
        if param.name == "resume":
            continue
        source = ctx.get_parameter_source(param.name)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            option = max(param.opts, key=len)
            raise UsageError(
                option,
                "--resume reuses the interrupted run's options",
                f"Drop {option}, or start a new run without --resume.",
            )


def read_plan(resume: Path, experiment: str, plan_cls):
    """``--resume JOURNAL_OR_DIR`` -> (the interrupted run's plan, what it had finished)."""
    state = Journal.read(resume, "--resume", experiment=experiment)
    try:
        plan = plan_cls(**state.header["options"])
    except (KeyError, TypeError):
        raise UsageError(
            "--resume",
            f"'{resume}' holds {experiment} options this version of whichdevice cannot read",
            "Start a new run.",
        ) from None
    return plan, state


def journal_header(experiment: str, plan) -> dict:
    return {"experiment": experiment, "json_file": plan.json_file, "options": dataclasses.asdict(plan)}


def open_journal(experiment: str, plan, resumed: JournalState | None) -> Journal:
    """The plan's journal: continued when resuming, else created (its header: the plan)."""
    path = journal_path(Path(plan.json_file))
    return Journal(path) if resumed else Journal.create(path, journal_header(experiment, plan))


# ------------------------------------------------------------------ measuring
# Every measuring command goes through ``measure.session.measure``; this adds the terminal's
# side: the "looking for devices" line and one progress bar.


def measure_with_progress(
    request: session.Request,
    *,
    journal: Journal | Callable[[], Journal] | None = None,
    resumed: JournalState | None = None,
    found=None,
) -> records.RunRecord:
    """Measure ``request`` with a progress bar on stderr (transient: gone when done)."""
    if found is None:
        err_console.print(f"Looking for devices ({escape(request.framework)} import takes a few seconds)…")
    with progress() as bar:
        task = bar.add_task("starting", total=None)
        callbacks = session.Progress(
            on_total=lambda n: bar.update(task, total=n),
            on_start=lambda key: bar.update(task, description=escape(describe_key(key))[:90]),
            on_result=lambda r: bar.advance(task),
        )
        return session.measure(request, journal=journal, resumed=resumed, progress=callbacks, found=found)
