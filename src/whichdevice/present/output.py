"""The one step that writes a page's files: its PNG plots and its HTML report.

Presenters compose (a matplotlib figure, the report's HTML as a string); only this module puts
them on disk, each atomically (a random O_EXCL|O_NOFOLLOW temporary file, then a rename:
core/safeio.py), so that no half-written file and no planted link is ever left. The record's
JSON is written by core/records.py's ``save``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from whichdevice.core import safeio

if TYPE_CHECKING:  # matplotlib is imported on first use (present/plots.pyplot)
    from matplotlib.figure import Figure

_unseen = False  # a page whose plots are thrown away (unseen()): no PNG is drawn


@contextlib.contextmanager
def unseen() -> Iterator[None]:
    """Within it, plots are not drawn: each PNG is an empty file. For pages whose files are
    thrown away (`report` with no --out/--html, --markdown, --csv): drawing the H200 run's two
    figures was 3.5 s of a 6 s `report` (report under 2 s at 3,000 samples a point)."""
    global _unseen
    before, _unseen = _unseen, True
    try:
        yield
    finally:
        _unseen = before


def save_figure(fig: Figure, path: Path, dpi: int = 110) -> Path:
    """Write the figure as a PNG and close it. Every plot of the package is written here."""
    import matplotlib.pyplot as plt  # already imported: the figure was drawn with it

    path = Path(path)
    try:
        with safeio.atomic_writer(path) as f:
            if not _unseen:
                fig.savefig(f, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return path


def write_html(path: Path, html: str) -> Path:
    """Write the report's HTML (the record's own file is removed if the record is not written)."""
    safeio.write_atomic(path, html)
    return path
