"""Adversarial cases on the user's history and on the Python API's arguments.

A history index left by a newer version (a column more, in any place), a record from a newer
schema named by its run id, and API arguments of the wrong type: each ends in one line naming
the file or the argument and its fix, never a traceback.
"""

from __future__ import annotations

import json
import re
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


# ---------------------------------------------------------------- the API's arguments


class _Planned(Exception):
    """Raised where the API would start measuring: its arguments were all accepted."""


@pytest.fixture
def planned(monkeypatch):
    """Stop the API where it would measure, keeping the arguments its plan was given."""
    from whichdevice import api, commands
    from whichdevice.cli import run as run_module

    seen: dict = {}

    def diagnose_plan(model_fn, data_fn, fw, shape, *rest):
        seen.update(fw=fw, shape=shape)
        raise _Planned()

    def stop(*args, **kwargs):
        seen.update(args=args, kwargs=kwargs)
        raise _Planned()

    monkeypatch.setattr(run_module, "diagnose_plan", diagnose_plan)
    monkeypatch.setattr(commands, "_suite", stop)
    monkeypatch.setattr(api, "matmul_job", stop)
    return seen


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def build():\n    import torch\n    return torch.nn.Linear(8, 2)\n")
    return f"{path}:build"


def test_diagnose_takes_one_number_as_an_input_shape_as_the_cli_does(planned):
    """``--input-shape 8`` is a shape of one; ``input_shape=8`` was a TypeError from inside."""
    torch = pytest.importorskip("torch")
    import whichdevice

    with pytest.raises(_Planned):
        whichdevice.diagnose(torch.nn.Linear(8, 2), framework="torch", input_shape=8)
    assert planned["shape"] == (8,) and planned["fw"] == "torch"


@pytest.mark.parametrize(
    ("value", "shape"), [(8, (8,)), ((28, 28, 1), (28, 28, 1)), ([4, 4], (4, 4)), ("28,28,1", (28, 28, 1))]
)
def test_diagnose_reads_an_input_shape_in_every_form_the_cli_gives(planned, model_file, value, shape):
    import whichdevice

    with pytest.raises(_Planned):
        whichdevice.diagnose(model_file, framework="torch", input_shape=value)
    assert planned["shape"] == shape


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("input_shape", True),
        ("input_shape", {"h": 28}),
        ("input_shape", [[28, 28]]),
        ("input_shape", b"28"),
        ("classes", [10]),
        ("classes", True),
        ("batch", (32,)),
        ("samples", {"n": 1}),
        ("budget_s", [90]),
        ("devices", True),
        ("devices", {"CPU": 0}),
        ("cpu_threads", [2]),
        ("framework", ["torch"]),
    ],
)
def test_diagnose_refuses_an_argument_of_the_wrong_type_naming_it(planned, model_file, argument, value):
    import whichdevice

    options = {"framework": "torch", argument: value}
    with pytest.raises(whichdevice.UsageError) as e:
        whichdevice.diagnose(model_file, **options)
    assert str(e.value).startswith(f"{argument}: ") and f"Pass e.g. {argument}=" in str(e.value)


@pytest.mark.parametrize("model", [8, None, [1, 2], {"a": 1}])
def test_diagnose_refuses_a_model_that_is_no_module(planned, model):
    import whichdevice

    with pytest.raises(whichdevice.UsageError, match="^model: .* is not a PyTorch module"):
        whichdevice.diagnose(model, framework="torch")


@pytest.mark.parametrize(
    ("argument", "value", "message"),
    [
        ("devices", 8, "--device: '8' is not a device name"),  # one value, as --device 8, then its check
        ("devices", True, "devices: bool True is not a value or a list of values"),
        ("devices", object(), "devices: object"),
        ("cpu_threads", [2], "cpu_threads: list [2] is not a number"),
        ("memory_limit_gib", True, "memory_limit_gib: bool True is not a number"),
        ("case_timeout_s", (600,), "case_timeout_s: tuple (600,) is not a number"),
        ("framework", 8, "framework: int 8 is not a name"),
    ],
)
def test_run_refuses_an_argument_of_the_wrong_type_naming_it(planned, argument, value, message):
    import whichdevice

    with pytest.raises(whichdevice.UsageError, match="^" + re.escape(message)):
        whichdevice.run(**{argument: value})


@pytest.mark.parametrize(
    ("argument", "value", "message"),
    [
        ("sizes", True, "sizes: bool True is not a value or a list of values"),
        ("sizes", [[8]], "sizes: list [[8]] is not a value or a list of values"),
        ("modes", 8, "--mode: '8' is not one of"),
        ("dtype", ["float32"], "dtype: list"),
        ("quick", "no", "quick: str 'no' is not True or False"),
        ("min_time_s", [0.1], "min_time_s: list"),
        ("devices", 2.5, "--device: '2.5' is not a device name"),
    ],
)
def test_matmul_refuses_an_argument_of_the_wrong_type_naming_it(planned, argument, value, message):
    import whichdevice

    with pytest.raises(whichdevice.UsageError, match="^" + re.escape(message)):
        whichdevice.matmul(framework="numpy", progress=False, **{argument: value})


def test_matmul_takes_one_size_and_none_as_the_defaults(planned):
    """``sizes=8`` is ``--sizes 8``; None for modes, dtype or case_timeout_s is the option left
    out (it was refused as a damaged --resume journal)."""
    import whichdevice

    with pytest.raises(_Planned):
        whichdevice.matmul(sizes=8, modes=None, dtype=None, case_timeout_s=None, framework="numpy", progress=False)
    opts = planned["args"][0]
    assert opts.sizes == [8] and opts.modes == ["steady", "seed"] and opts.dtype == "float32"
    assert opts.case_timeout_s == 900


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q", "-n", "0"]))
