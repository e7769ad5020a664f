"""The page of a ``calibrate`` record: the device profile analysis fitted from it (its table),
the cases that failed, the notes and the profile's plot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from whichdevice.present import prediction as present
from whichdevice.present.tables import describe_key

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Calibration


def render(console: Console, result: Calibration, png: Path, *, loglog: bool) -> None:
    """The device profile fitted from the record, its failures and notes, and the profile's plot."""
    present.render_profile(console, result.profile)
    for r in result.record.results:
        if r.status != "ok":
            console.print(f"[red]Failed:[/red] {escape(describe_key(r.spec.key))}: {escape(r.error or '')}")
    for n in result.record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")
    present.plot_profile(result.profile, png)
