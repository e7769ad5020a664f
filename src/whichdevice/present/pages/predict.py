"""The page of a ``predict`` record: the first screen (present/predictscreen.py) and with
``verbose`` the full table, the calibration and the assumptions; the prediction's plot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from whichdevice.present import prediction as present
from whichdevice.present import names, predictscreen

if TYPE_CHECKING:
    from whichdevice.analysis.facade import Prediction


def render(console: Console, result: Prediction, png: Path, *, loglog: bool, verbose: bool = False) -> None:
    """The first screen (present/predictscreen.py: the answer, one line per batch, why, what to
    run to be sure); ``verbose`` adds the full table, the calibration and the assumptions."""
    record, prof, report = result.record, result.profile, result.report
    predictscreen.render(console, report, record, prof)
    if verbose:
        console.print()
        present.render_predict(console, report, prof, record.machine.cpu_model)
        console.print(
            f"Model: {escape(predictscreen.model_words(record))}; the GPU side is a prediction from costs measured on "
            f"{escape(names.profile_words(prof, prof.gpu.description if prof.gpu else None))} "
            f"({escape(prof.framework)}), not a measurement."
        )
    present.plot_predict(
        report,
        png,
        loglog,
        f"{predictscreen.model_words(record)}: CPU measured vs {prof.gpu.description if prof.gpu else 'GPU'} predicted",
    )
