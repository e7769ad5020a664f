"""The page of a reference GPU run imported as a record (analysis/reference.py): its tables
(present/reference.py); it has no plot and no HTML report."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from whichdevice.core.records import RunRecord
from whichdevice.present.reference import render_reference


def render(console: Console, record: RunRecord, png: Path, *, loglog: bool) -> None:
    render_reference(console, record)
