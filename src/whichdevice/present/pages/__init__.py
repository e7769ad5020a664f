"""One module per record type, each with ``render(console, record, png, *, loglog)``: the
terminal text, and beside ``png`` the plots and the HTML report (present/registry.py names them)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from whichdevice.present import output


def write_page(console: Console, png: Path, page: str) -> Path:
    """Write the HTML report beside ``png`` (its name, ``.html``) and say where, as every page does."""
    path = output.write_html(png.with_suffix(".html"), page)
    console.print(f"Report: {escape(str(path))}")
    return path
