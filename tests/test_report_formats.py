"""`whichdevice report X --markdown` / `--csv`: a result pasted into a pull request
or read by a script, from the same pages as the HTML report, writing no file."""

import csv
import io
import shutil
from pathlib import Path

import pytest

from conftest import run_cli

DATA = Path(__file__).parent / "data"


def _copy(tmp_path, name):
    path = tmp_path / name
    shutil.copy(DATA / name, path)
    return path


def test_markdown_of_a_run_is_the_first_screen_and_the_fix_table(tmp_path, capsys):
    path = _copy(tmp_path, "run_cpu_2core_budget300.json")
    code, out, err = run_cli(["report", str(path), "--markdown"], capsys)
    assert code == 0, err
    assert out.startswith("### whichdevice run · 2026-11-23")
    assert "**Answer:** No GPU here" in out and "**What to change**" in out
    assert "   ```python\n   model.fit(x, y, batch_size=8192)\n   ```" in out
    assert "| fix | status | measured effect | how |\n| --- | --- | --- | --- |" in out
    assert "Matrix multiply" not in out  # the other tables only with --verbose
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # nothing written beside it
    code, full, _ = run_cli(["report", str(path), "--markdown", "--verbose"], capsys)
    assert code == 0 and "Matrix multiply" in full and len(full) > len(out)


def test_markdown_cells_are_one_line_with_pipes_escaped():
    from whichdevice.present.markdown import grid_markdown
    from whichdevice.present.tables import Grid, GridCell

    grid = Grid("t", ["case", "time"], [[GridCell("a | b\nc"), GridCell("1 ms")]], ["foot"], align=("left", "right"))
    lines = grid_markdown(grid)
    assert "| a \\| b<br>c | 1 ms |" in lines and "| --- | ---: |" in lines


def test_csv_is_one_row_per_cell_of_every_table(tmp_path, capsys):
    path = _copy(tmp_path, "run_cpu_2core.json")
    code, out, err = run_cli(["report", str(path), "--csv"], capsys)
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["section", "table", "row", "column", "value"]
    assert len(rows) > 50 and all(len(r) == 5 for r in rows)
    fixes = [r for r in rows if r[0] == "Fixes, each measured on the same workload" and r[3] == "fix"]
    assert fixes and fixes[0][4].startswith("1. ")
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_markdown_and_csv_together_is_bad_input(tmp_path, capsys):
    path = _copy(tmp_path, "run_cpu_2core.json")
    code, out, err = run_cli(["report", str(path), "--markdown", "--csv"], capsys)
    assert code == 2 and out == "" and err.startswith("error: --markdown:") and len(err.strip().splitlines()) == 1


@pytest.mark.tf
def test_markdown_of_a_step_timer_record_has_its_runs_table(tmp_path, capsys):
    """train's report has no HTML page: its terminal tables are what --markdown writes."""
    import keras
    import numpy as np

    from whichdevice.keras import StepTimer

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)], name="net")
    model.compile(optimizer="sgd", loss="mse")
    path = tmp_path / "run.json"
    model.fit(np.zeros((64, 4), "float32"), np.zeros((64, 1), "float32"), batch_size=8, epochs=2, verbose=0,
              callbacks=[StepTimer(path, batch_size=8, verbose=0)])  # fmt: skip
    code, out, err = run_cli(["report", str(path), "--markdown"], capsys)
    assert code == 0, err
    assert out.startswith("### whichdevice train") and "| run |" in out and "net, batch 8" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]
