"""A new user's first minutes: the notebook magic as IPython users write it, piped output
never wrapped, progress counts that never pass their total."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from whichdevice import magics


@pytest.fixture
def magic_args(monkeypatch):
    seen: list[list[str]] = []
    monkeypatch.setattr(magics, "_result_of", lambda args: seen.append(args))
    return seen


@pytest.mark.parametrize(
    ("line", "args"),
    [
        ("matmul --quick         # any command as in a terminal; r keeps the result", ["matmul", "--quick"]),
        ("compare 3 7                # two runs of `whichdevice history`", ["compare", "3", "7"]),
        ("compare 3 7 #no space", ["compare", "3", "7"]),
        ("report 'run #2.json' # quoted stays", ["report", "run #2.json"]),
        ('report "a # b.json"', ["report", "a # b.json"]),
        ("report run#2.json", ["report", "run#2.json"]),  # a '#' inside a word starts no comment
        (r"report \#2.json", ["report", "#2.json"]),
        ("# only a comment", ["--help"]),
    ],
)
def test_the_line_magic_drops_a_trailing_comment_as_a_shell_does(magic_args, line, args):
    magics.whichdevice_line(line)
    assert magic_args == [args]


def test_ipython_hands_the_magic_its_trailing_comment(magic_args):
    """What the test above assumes: IPython passes the comment on to a line magic."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        magics.register(shell)
        code = shell.transform_cell("r = %whichdevice matmul --quick   # a comment\n")
        assert "# a comment" in code
        shell.run_cell("r = %whichdevice matmul --quick   # a comment\n")
    finally:
        InteractiveShell.clear_instance()
    assert magic_args == [["matmul", "--quick"]]


def test_the_cell_magic_drops_a_trailing_comment(monkeypatch, tmp_path):
    seen: list[list[str]] = []
    monkeypatch.setattr(magics, "_result_of", lambda args: seen.append(args))
    monkeypatch.chdir(tmp_path)
    magics.whichdevice_audit_cell("--no-rerun   # no second run", "x = 1\n")
    assert seen[0][:2] == ["audit", "--no-rerun"] and len(seen[0]) == 3


# ---------------------------------------------------------------- piped output is never wrapped


def _piped(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "80", "WHICHDEVICE_HOME": str(tmp_path / "home"), "TERM": "xterm"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120
    )


def test_a_long_line_on_piped_stderr_is_not_wrapped(tmp_path):
    long = "Found keras.Model.fit (" + "x" * 60 + "): a step took 2.7 ms, the imports and data loading 8.6 s."
    code = (
        f"from whichdevice.cli.base import err_console, console; err_console.print({long!r}); console.print({long!r})"
    )
    done = _piped(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [long]
    assert done.stdout.splitlines() == [long]


def test_compare_summary_on_piped_stderr_is_one_line(tmp_path):
    from conftest import make_record, timing_of

    from whichdevice.core.records import CaseResult, CaseSpec, save_run

    spec = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"n": 8, "mode": "steady"})
    record = make_record([CaseResult(spec=spec, status="ok", timing=timing_of(0.001), wall_s=0.1)])
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_run(record, a)
    save_run(record, b)
    done = _piped(["-m", "whichdevice", "compare", str(a), str(b), "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    (summary,) = [line for line in done.stderr.splitlines() if "changed beyond the noise" in line]
    assert summary.rstrip().endswith("5% by default)"), done.stderr


# ---------------------------------------------------------------- progress counts


def test_a_run_count_never_passes_its_total_as_later_rounds_add_cases():
    """Two devices of 12 planned cases each, then each device's round 2 of 8 and 4 verdict
    cases (the H200's "35/20": round 2 told its own count as the total). Every count the
    caller sees is within its total, and the total ends at what ran."""
    from whichdevice.measure import session

    seen: list[tuple[int, int]] = []
    state = {"done": 0, "total": 0}

    def on_total(n: int) -> None:
        state["total"] = n

    def on_result(_r: object) -> None:
        state["done"] += 1
        seen.append((state["done"], state["total"]))

    count = session._Count(session.Progress(on_total=on_total, on_result=on_result))
    progress = count.counting(24)
    assert progress.on_result is not None
    for _ in range(24):
        progress.on_result(None)  # type: ignore[arg-type]
    count.grow(8)  # GPU:0's round 2
    for _ in range(8):
        progress.on_result(None)  # type: ignore[arg-type]
    count.grow(4)  # CPU:0's round 2
    for _ in range(4):
        progress.on_result(None)  # type: ignore[arg-type]
    progress.on_result(None)  # type: ignore[arg-type]  # a case run once more than planned
    assert all(done <= total for done, total in seen), seen
    assert seen[-1] == (37, 37) and seen[23] == (24, 24) and seen[31] == (32, 32)


OUT_COMMANDS = ["run", "diagnose", "matmul", "train", "pipeline", "placement", "pitfalls", "calibrate", "predict"]
OUT_COMMANDS += ["scale", "audit", "import"]


@pytest.mark.parametrize("command", OUT_COMMANDS)
def test_every_commands_error_line_on_a_pipe_at_80_columns_is_one_line(tmp_path, command):
    """A usage error naming a long path, piped at COLUMNS=80: the whole line on one line of stderr,
    and nothing on stdout (a pipe's reader greps whole lines)."""
    taken = tmp_path / ("a-file-where-a-folder-belongs-" + "x" * 70)
    taken.write_text("")
    named = {"diagnose": "train.py", "audit": "t.py", "import": "t.json"}.get(command)
    extra = []
    if named:  # the command's own file, long and empty: its error or --out's names a long path
        extra = [str(tmp_path / ("a-long-file-name-" + "y" * 70 + "-" + named))]
        Path(extra[0]).write_text("")
    done = _piped(["-m", "whichdevice", command, *extra, "--out", str(taken)], tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    said = [ln for ln in lines if str(taken) in ln or (extra and extra[0] in ln)]
    assert len(said) == 1 and len(said[0]) > 80, done.stderr
    assert done.stdout == ""
