"""`report` with nothing to write draws no plot (report under 2 s at 3,000 samples a point;
drawing the H200 run's two figures was 3.5 s of 6 s, all of it thrown away with the scratch folder)."""

from __future__ import annotations

from pathlib import Path

from whichdevice.cli import report as report_cli
from whichdevice.core.records import load_run
from whichdevice.present import output, plots

H200_RUN = Path(__file__).parent / "data" / "h200" / "run.json"


def test_a_page_whose_plots_are_thrown_away_draws_none(monkeypatch):
    drawn: list[Path] = []
    real = plots.save_figure

    def spy(fig, path, dpi=110):
        out = real(fig, path, dpi)
        drawn.append(Path(out))
        assert Path(out).stat().st_size == 0  # not drawn: an empty file, the page still composed
        return out

    monkeypatch.setattr(plots, "save_figure", spy)
    report_cli._print_only(load_run(H200_RUN), "run", loglog=True, verbose=False)
    assert drawn  # the renderer asked for its plots, and got empty files


def test_unseen_restores_drawing(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with output.unseen():
        fig = plt.figure()
        assert output.save_figure(fig, tmp_path / "a.png").stat().st_size == 0
    fig = plt.figure()
    assert output.save_figure(fig, tmp_path / "b.png").stat().st_size > 0
