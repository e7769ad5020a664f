"""Adversarial cases on the user's history and on the Python API's arguments.

A history index left by a newer version (a column more, in any place), a record from a newer
schema named by its run id, and API arguments of the wrong type: each ends in one line naming
the file or the argument and its fix, never a traceback.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import make_record, run_cli, timing_of

from whichdevice.core.records import CaseResult, CaseSpec, save_run
from whichdevice.measure import history


def _record(tmp_path: Path, name: str) -> Path:
    spec = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"n": 8, "mode": "steady"})
    result = CaseResult(spec=spec, status="ok", timing=timing_of(0.001), wall_s=0.1)
    record = make_record([result])
    path = tmp_path / name
    save_run(record, path)
    history.add(record, path)
    return path


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_history_with_a_column_more_at_the_end_is_read_by_name(tmp_path, capsys):
    _record(tmp_path, "a.json")
    _record(tmp_path, "b.json")
    with sqlite3.connect(history.db_path()) as con:
        con.execute("ALTER TABLE runs ADD COLUMN gpu_clock_mhz INTEGER DEFAULT 1980")
    code, out, err = run_cli(["history"], capsys)
    assert code == 0, err
    assert "a.json" in out and "b.json" in out
    code, out, err = run_cli(["history", "--json"], capsys)
    assert code == 0, err
    rows = json.loads(out)
    assert [Path(r["path"]).name for r in rows] == ["b.json", "a.json"]
    assert "gpu_clock_mhz" not in rows[0]  # an unknown column is ignored, not shown as if understood
    code, out, err = run_cli(["compare", "1", "2"], capsys)
    assert code == 0, err
    assert "cases changed beyond the noise" in out


def test_history_with_a_column_more_in_the_middle_is_read_by_name(tmp_path, capsys):
    """A newer version may lay its table out anew: columns are matched by name, not place."""
    history.db_path().parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(history.db_path()) as con:
        con.execute(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,"
            " schema TEXT DEFAULT 'v9', experiment TEXT NOT NULL, command TEXT NOT NULL, hostname TEXT NOT NULL,"
            " cpu TEXT NOT NULL, devices TEXT NOT NULL, frameworks TEXT NOT NULL, n_results INTEGER NOT NULL,"
            " n_failed INTEGER NOT NULL, path TEXT NOT NULL, n_skipped INTEGER)"
        )
    _record(tmp_path, "a.json")
    (entry,) = history.entries()
    assert entry.experiment == "matmul" and entry.path.endswith("a.json") and entry.n_skipped == 0
    code, out, err = run_cli(["compare", "1", "1"], capsys)
    assert code == 0, err


def test_history_without_a_column_this_version_needs_is_refused_in_one_line(tmp_path, capsys):
    history.db_path().parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(history.db_path()) as con:
        con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT, where_now TEXT)")
        con.execute("INSERT INTO runs (created_at, where_now) VALUES ('2030-01-01', '/x.json')")
    code, out, err = run_cli(["history"], capsys)
    assert code == 2
    line = _one_error_line(err)
    assert str(history.db_path()) in line and "Upgrade whichdevice" in line


def test_a_record_from_a_newer_schema_named_by_its_id_is_refused_in_one_line(tmp_path, capsys):
    _record(tmp_path, "a.json")
    newer = _record(tmp_path, "b.json")
    data = json.loads(newer.read_text())
    data["schema_version"] = 99
    data["a_field_from_the_future"] = {"x": 1}
    newer.write_text(json.dumps(data))
    with sqlite3.connect(history.db_path()) as con:
        con.execute("ALTER TABLE runs ADD COLUMN gpu_clock_mhz INTEGER")
    code, out, err = run_cli(["history"], capsys)
    assert code == 0, err  # listing the index does not need the record
    code, out, err = run_cli(["compare", "1", "2"], capsys)
    assert code == 2
    line = _one_error_line(err)
    assert str(newer) in line and "newer than this whichdevice reads" in line and "pip install -U" in line


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q", "-n", "0"]))
