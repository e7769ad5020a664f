"""One registry of renderers, one per record type.

A renderer draws a saved record's analysis (analysis/facade.analyze: one typed result per
record type) on a console: the terminal text, and beside ``png`` its plots and HTML report. The
command that measured the record and ``whichdevice report`` look the renderer up here, by the
record's ``experiment``; neither knows the other. Each entry
names its module in ``present/pages/`` and is imported only when asked for, so that one
command loads only its own presenter (``whichdevice pitfalls`` never imports the suite's
pages). Nothing registers itself by being imported.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.console import Console

if TYPE_CHECKING:  # the audit's record is loaded only by the audit's page
    from whichdevice.analysis.facade import Analysis
    from whichdevice.audit.record import AuditRecord


class Renderer(Protocol):
    """``render(console, result, png, loglog=...)``; the ones with a first screen also take
    ``verbose`` (every table, finding and warning after it)."""

    def __call__(self, console: Console, result: Analysis | AuditRecord, png: Path, *, loglog: bool) -> object: ...


# record.experiment -> the module under present/pages/ whose ``render`` draws it
RENDERERS: dict[str, str] = {
    "run": "run",
    "diagnose": "run",
    "matmul": "matmul",
    "train": "train",
    "pipeline": "pipeline",
    "placement": "placement",
    "pitfalls": "pitfalls",
    "calibrate": "calibrate",
    "predict": "predict",
    "scale": "scale",
    "reference": "reference",  # analysis/reference.KIND: a GPU run imported from gpu_probe.py / keras_probe.py
    "audit": "audit",  # audit/record.AuditRecord: `whichdevice audit SCRIPT`; no plot
}


def renderer(experiment: str) -> Renderer | None:
    """The renderer of records of ``experiment``, or None when this version has none."""
    module = RENDERERS.get(experiment)
    if module is None:
        return None
    render: Renderer = importlib.import_module(f"whichdevice.present.pages.{module}").render
    return render


def takes_verbose(render: Renderer) -> bool:
    """Whether ``render`` has a first screen that ``verbose`` extends (run, diagnose, predict)."""
    return "verbose" in inspect.signature(render).parameters


def render(console: Console, result: Analysis | AuditRecord, png: Path, *, loglog: bool, verbose: bool = False) -> bool:
    """Draw ``result`` with its renderer; False (nothing drawn) when its experiment has none."""
    draw = renderer(result.experiment)
    if draw is None:
        return False
    if verbose and takes_verbose(draw):
        draw(console, result, png, loglog=loglog, verbose=True)  # type: ignore[call-arg]  # checked just above
    else:
        draw(console, result, png, loglog=loglog)
    return True
