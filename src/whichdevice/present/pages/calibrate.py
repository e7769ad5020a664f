"""The page of a ``calibrate`` record: the device profile fitted from it (its table), the
cases that failed, the notes and the profile's plot."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from whichdevice.analysis import deviceprofile
from whichdevice.analysis.calibration import profile_from_record
from whichdevice.core import records
from whichdevice.present import prediction as present
from whichdevice.present.tables import describe_key


def render(console: Console, record: records.RunRecord, png: Path, *, loglog: bool) -> deviceprofile.DeviceProfile:
    """The device profile fitted from the record, its failures and notes, and the profile's plot."""
    profile = profile_from_record(record, str(record.options.get("name") or "local"))
    present.render_profile(console, profile)
    for r in record.results:
        if r.status != "ok":
            console.print(f"[red]Failed:[/red] {escape(describe_key(r.spec.key))}: {escape(r.error or '')}")
    for n in record.notes:
        console.print(f"[yellow]Note:[/yellow] {escape(n)}")
    present.plot_profile(profile, png)
    return profile
