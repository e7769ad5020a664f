"""Shared pieces of the command line: the typer app, consoles, progress, writing records,
and the registry that maps an experiment name to the function that renders its record."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from whichdevice import history, records
from whichdevice.errors import UsageError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure when the GPU pays off against the CPU for TensorFlow/Keras work, and why it does not.",
)
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

DEFAULT_OUT = Path("whichdevice-results")
MAX_MATMUL_N = 32768  # two float32 operands + result = 12 GiB: beyond that, not a laptop question


def progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err_console, transient=True)


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


