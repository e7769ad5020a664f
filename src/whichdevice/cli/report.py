"""`whichdevice report` and `whichdevice devices`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from whichdevice.measure import experiment
from whichdevice.core import records
from whichdevice.cli.common import REPORTERS, app, console
from whichdevice.core.errors import UsageError
from whichdevice.frameworks import FRAMEWORKS
from whichdevice.core.validate import check_output_dir, parse_choice


@app.command()
def devices(
    framework: str = typer.Option("tensorflow", "--framework", help="Framework to ask."),
) -> None:
    """List the devices the framework sees, and why a GPU is missing if it is."""
    fw = parse_choice(framework, "--framework", FRAMEWORKS)
    found = experiment.discover(fw)
    console.print(f"{escape(fw)} {escape(found.framework.version)} (import {found.import_s:.1f} s) sees:")
    for d in found.devices:
        console.print(f"  {escape(d.name)}: {escape(d.description)}")
    note = experiment.no_gpu_note(fw, found)
    if note:
        console.print(f"[yellow]Note:[/yellow] {escape(note)}")


@app.command()
def report(
    result: Path = typer.Argument(..., help="A JSON record written by a whichdevice command."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for the re-drawn plot (default: next to RESULT)."),
    linear: bool = typer.Option(False, "--linear", help="Linear axes in the plot (default log-log)."),
) -> None:
    """Re-render the table and plot from a saved record, without measuring again."""
    record = records.load_run(result, "RESULT")
    out_dir = check_output_dir(out, "--out") if out else result.parent
    png = out_dir / (result.stem + ".png")
    render = REPORTERS.get(record.experiment)
    if render is not None:
        render(record, png, loglog=not linear)
        if png.exists():
            console.print(f"Plot:   {escape(str(png))}")
    else:
        raise UsageError(
            "RESULT", f"experiment '{record.experiment}' has no report in this version", "Upgrade whichdevice."
        )
