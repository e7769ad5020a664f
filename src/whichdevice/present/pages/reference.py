"""The page of a reference GPU run imported as a record (analysis/reference.py): its tables
(present/reference.py); it has no plot and no HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from whichdevice.present.reference import render_reference

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Analysis


def render(console: Console, result: Analysis, png: Path, *, loglog: bool) -> None:
    render_reference(console, result.record)
