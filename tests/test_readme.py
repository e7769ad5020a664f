"""The README as a user's page (item 5): short, install and run first, every command
with its frameworks, nothing from outside the repository, no internal jargon, figures true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from whichdevice.cli.app import COMMANDS
from whichdevice.core.records import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
JARGON = re.compile(r"\bseeds? 00\d", re.I)  # "seed 001", "Seeds 001/002" (an option value such as seed001 is a name)


def test_readme_is_short_with_install_and_run_first():
    lines = README.splitlines()
    assert len(lines) <= 350, len(lines)
    first = "\n".join(lines[:40])
    assert 'pip install ".[tensorflow]" && whichdevice run' in first


def test_readme_lists_every_command_with_its_frameworks():
    section = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    named = {re.match(r"\| `([a-z]+)", row).group(1) for row in rows}
    assert named == set(COMMANDS), set(COMMANDS) ^ named
    assert all(row.count("|") == 4 for row in rows)  # command | what | frameworks


def _commands_table():
    """docs/commands_table.py, the generator of the frameworks lists (not a package module)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("commands_table", ROOT / "docs" / "commands_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_frameworks_lists_are_generated_from_the_framework_registry():
    """The README's command table and docs/commands.md's framework lists are what the
    registry offers (``frameworks.offered``/``offering``); after a change to a framework's parts,
    ``python docs/commands_table.py`` rewrites them."""
    from whichdevice import frameworks

    table = _commands_table()
    assert README == table.readme(README), "the README's frameworks column: run python docs/commands_table.py"
    docs = (ROOT / "docs" / "commands.md").read_text()
    assert docs == table.commands_md(docs), "docs/commands.md's frameworks: run python docs/commands_table.py"
    # the generator reads the registry: a framework that gains a part appears in the column
    row = next(line for line in README.splitlines() if line.startswith("| `scale`"))
    assert row.endswith(f"| {frameworks.offered('scale')} |") and "jax" not in frameworks.offering("scale")
    assert table.column("scale", True) == frameworks.offered("scale")
    assert table.column("report", False) == "—"


def test_readme_names_nothing_outside_the_repository_and_no_jargon():
    assert "../" not in README.replace("](../", "")  # no path outside the repository, relative links aside
    assert not JARGON.search(README), JARGON.search(README)
    for link in re.findall(r"\]\(([^)#]+)", README):  # every local link exists
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link


def test_readme_figures_match_the_code():
    schemas = re.findall(r"schema (\d+)", README)
    assert schemas and all(int(s) == SCHEMA_VERSION for s in schemas), schemas
    assert "everything else to stderr" not in README  # --json-out - prints no verdict at all
    assert (
        "12¾–13½ min on 2 cores at 1,911 tests, above the 12-minute target. Measured 2026-12-08"
        in (ROOT / "CONTRIBUTING.md").read_text()
    )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_seed_jargon_in_help(name, capsys, monkeypatch):
    from whichdevice.cli.app import main

    monkeypatch.setenv("COLUMNS", "200")
    main([name, "--help"])
    assert not JARGON.search(capsys.readouterr().out)
    assert not JARGON.search(COMMANDS[name][1])


# ---------------------------------------------------------------- every example, run as written

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`whichdevice\s+([^`]+)`")


def _section(title: str) -> str:
    return README.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _inline_commands() -> list[list[str]]:
    """Every `whichdevice ...` the README's prose names, as words (a span may break across lines)."""
    import shlex

    return [shlex.split(m.group(1)) for m in INLINE.finditer(README)]


def test_every_inline_command_parses_with_todays_options():
    """Each command the prose names is one `whichdevice` accepts: its command exists and every option
    and argument parses (placeholders such as A B or train.py stand for the user's own). Nothing is run:
    the commands that cost little run as written below, the others are the blocks' own."""
    from whichdevice.cli.app import load_commands
    from whichdevice.cli.base import click_command

    commands = _inline_commands()
    assert len(commands) >= 10, commands
    for words in commands:
        if words[0].startswith("-") or words[0] == "COMMAND":  # --help, --install-completion, COMMAND --help
            assert words in (["--help"], ["--install-completion"], ["COMMAND", "--help"]), words
            continue
        load_commands(words)
        group = click_command()
        command = group.commands.get(words[0]) if hasattr(group, "commands") else None
        assert command is not None, f"README names `whichdevice {' '.join(words)}`: no such command"
        command.make_context(words[0], words[1:])  # raises on an unknown option or a missing argument


# The prose's placeholders, each given a file that stands for the user's own (a saved record).
STAND_INS = {"A": "A.json", "B": "B.json", "RESULT": "tests/data/run_cpu_readme.json"}
CHEAP = ("--help", "--install-completion", "history", "report", "compare")  # they measure nothing


def test_the_cheap_inline_commands_run_as_written(tmp_path):
    """The prose's commands that measure nothing run as written (a placeholder given a saved record),
    in a fresh history and a scratch home folder: each exits 0. `whichdevice COMMAND --help` runs for
    every command in test_no_seed_jargon_in_help, in this process."""
    import os
    import shutil
    import subprocess
    import sys

    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "WHICHDEVICE_HOME": str(tmp_path / "h"),
        "HOME": str(tmp_path),
        "SHELL": "/bin/bash",
    }  # --install-completion writes into HOME's .bashrc
    (tmp_path / "tests" / "data").mkdir(parents=True)  # the README's paths are the repository's
    for name in ("tests/data/run_cpu_readme.json", "A.json", "B.json"):
        shutil.copy(ROOT / "tests" / "data" / "run_cpu_readme.json", tmp_path / name)
    cheap = [[STAND_INS.get(w, w) for w in words] for words in _inline_commands() if words[0] in CHEAP]
    assert {w[0] for w in cheap} == set(CHEAP), cheap
    console = shutil.which("whichdevice")  # completion is installed for the name it was called by
    for words in cheap:
        cmd = [console] if console and words[0] == "--install-completion" else [sys.executable, "-m", "whichdevice"]
        done = subprocess.run([*cmd, *words], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (words, done.stderr[-2000:])
    assert "whichdevice" in (tmp_path / ".bashrc").read_text()


def test_the_install_lines_are_what_ci_runs():
    """The README's two `pip install` lines are run by CI as a new user runs them: `.ci/fresh-user`
    installs `.[tensorflow]` in a fresh venv, `.ci/run` ends with the test line verbatim (a test cannot
    run the suite it is part of, nor install into the environment it runs in)."""
    install = FENCE.findall(_section("Install and run"))[0][1].strip()
    assert install == 'pip install ".[tensorflow]" && whichdevice run'
    assert 'pip install -q ".[tensorflow]"' in (ROOT / ".ci" / "fresh-user").read_text()
    tests = FENCE.findall(_section("Run the tests"))[0][1].strip()
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == tests


def test_the_ci_blocks_are_run_by_the_ci_gate_tests():
    """The "In CI" bash block runs line by line in tests/test_ci_gate.py (verbatim in the slow set, a
    two-size numpy matmul in CI); the workflow's `run:` lines are that block, the baseline kept."""
    bash, yaml = (body for _lang, body in FENCE.findall(_section("In CI")))
    from test_ci_gate import _readme_ci_block

    assert _readme_ci_block() == bash
    run_lines = [line.strip() for line in yaml.split("- run: |", 1)[1].splitlines()[1:] if line.strip()]
    kept = [line.strip() for line in bash.strip().splitlines()]
    baseline = "test -f baseline.json || " + kept[1].split("#")[0].strip()
    assert run_lines == [kept[0].split("#")[0].strip(), baseline, kept[2].split("#")[0].strip(), kept[3]]


@pytest.mark.slow
@pytest.mark.tf
def test_the_run_line_runs_as_written(tmp_path):
    """`whichdevice run` as the README's first line has it (its default budget, ≈ 2 min on 2 cores):
    it exits 0, prints its first screen and writes the record, the plots and the HTML report."""
    import subprocess
    import sys

    run = FENCE.findall(_section("Install and run"))[0][1].strip().split(" && ", 1)[1]
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT / "src"), "WHICHDEVICE_HOME": str(tmp_path / "h")}
    done = subprocess.run(
        ["bash", "-c", run.replace("whichdevice", f'"{sys.executable}" -m whichdevice', 1)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("whichdevice run · ") and "\nAnswer: " in done.stdout
    folder = tmp_path / "whichdevice-results"
    assert {p.suffix for p in folder.iterdir()} >= {".json", ".html", ".png"}


def _notebook_cells() -> list[str]:
    """The "In a notebook" blocks as a notebook has them: a paragraph is one cell."""
    blocks = [body for _lang, body in FENCE.findall(_section("In a notebook"))]
    assert len(blocks) == 2, blocks
    return [cell.strip("\n") for body in blocks for cell in re.split(r"\n\s*\n", body) if cell.strip()]


@pytest.mark.tf
def test_the_notebook_cells_run_as_written_in_a_jupyter_kernel(tmp_path):
    """Every cell of the README's notebook blocks, comments and all, in one ipykernel (as a user pastes
    them): the API cells, the magics with their trailing comments and the audited cell. None raises, none
    prints an error, and each does what its comment says."""
    from test_notebook import _notebook, _texts

    cells = _notebook_cells()
    assert any(c.startswith("%%whichdevice_audit") for c in cells)
    assert not any(line.lstrip().startswith("...") for c in cells for line in c.splitlines())  # no placeholder
    assert any("%whichdevice" in c and "  # " in c for c in cells)  # the magics' comments, as written
    outputs = _notebook(cells, tmp_path, timeout=900)
    by_cell = dict(zip(cells, outputs))
    said = re.compile(r"^(error: |Usage: )|unexpected extra argument", re.M)  # whichdevice's own, not TF's logs
    for cell, out in by_cell.items():
        errors = [o for o in out if o["output_type"] == "error" or said.search("".join(_texts([o])))]
        assert not errors, (cell, errors)
    shown = next(out for cell, out in by_cell.items() if cell.startswith("r  #"))
    assert any(o["output_type"] == "execute_result" and "text/html" in o["data"] for o in shown)  # the report inline
    compare = next(out for cell, out in by_cell.items() if cell.startswith("%whichdevice compare"))
    assert "matrix multiply" in "".join(_texts(compare)), compare
    results = tmp_path / "whichdevice-results"
    assert list(results.glob("pipeline-*.json"))  # the API's pipeline keeps its record there
    assert list(results.glob("cell-*.py")) and list(results.glob("audit-*.json"))  # the audited cell, kept
    audit = next(out for cell, out in by_cell.items() if cell.startswith("%%whichdevice_audit"))
    assert "Findings" in "".join(_texts(audit)), audit


def test_docs_commands_name_every_option_of_every_command_and_no_other():
    """docs/commands.md, the README's reference page, is true to today's `COMMAND --help`: every option
    of every command is named there, and each `--option` it names belongs to a command (or to the other
    tool it is given with: tensorboard, jupyter nbconvert, XLA_FLAGS)."""
    from whichdevice.cli.app import load_commands
    from whichdevice.cli.base import click_command

    docs = (ROOT / "docs" / "commands.md").read_text()
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", docs))
    options = {}
    for name in COMMANDS:
        load_commands([name])
        command = click_command().commands[name]
        options[name] = {o for p in command.params for o in getattr(p, "opts", []) if o.startswith("--")} - {"--help"}
    missing = {name: sorted(opts - named) for name, opts in options.items() if opts - named}
    assert not missing, missing
    assert named - set().union(*options.values()) <= {"--logdir", "--to", "--xla"}, named


def _readme_screen():
    """benchmarks/readme_screen.py, which makes the README's sample screen (not a package module)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_screen", ROOT / "benchmarks" / "readme_screen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_sample_screen_is_the_render_of_its_record():
    """The README's sample screen is `whichdevice report` of the record it names (piped, 100 columns),
    then the lines that run printed after it: when the code renders that record otherwise, this fails;
    `python benchmarks/readme_screen.py` makes a new run and puts its screen in the README."""
    made = _readme_screen()
    block = README.split(made.BEGIN, 1)[1].split(made.END, 1)[0]
    screen = FENCE.search(block).group(2)
    record = ROOT / re.search(r"The record is `([^`]+)`", block).group(1)
    assert record == made.RECORD and made.ORIGIN.exists()  # a real run, its origin written beside it
    rendered = made.render(record)
    assert rendered.startswith("whichdevice run · ") and "\nAnswer: " in rendered
    assert screen.startswith(rendered), "the README's sample screen: run python benchmarks/readme_screen.py"
    tail = screen[len(rendered) :].splitlines()
    assert [line.split(" ", 1)[0] for line in tail] == ["Report:", "Record:", "History:"], tail
    assert "(run traces no ops to model)" not in README  # the screen of a run before the traces


def test_the_readme_run_timing_is_the_benchmarks_newest_with_its_load():
    """The README's figure for `whichdevice run` is the newest one benchmarks/readme_screen.py measured,
    the load it ran at included."""
    figures = re.findall(r"^README figure: (.*)\.$", (ROOT / "benchmarks" / "readme_screen.md").read_text(), re.M)
    assert figures and " at load " in figures[-1]
    assert " ".join(figures[-1].split()) in " ".join(_section("Install and run").split())


# The prose's own files, as a user has them: a training script taking --epochs, a model builder.
TRAIN_PY = """import argparse

import keras
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=5)
epochs = ap.parse_args().epochs
x = np.random.rand(2048, 32).astype("float32")
y = np.random.randint(0, 10, size=(2048,))
model = keras.Sequential([keras.Input(shape=(32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=32, epochs=epochs)
"""
MY_MODEL_PY = """import keras


def build():
    return keras.Sequential([keras.Input((20,)), keras.layers.Dense(32, activation="relu"),
                             keras.layers.Dense(3, activation="softmax")])
"""


@pytest.mark.slow
@pytest.mark.tf
def test_the_measuring_inline_commands_run_as_written_on_the_users_files(tmp_path):
    """`whichdevice diagnose train.py -- --epochs 1` and `diagnose --model my_model.py:build` as the prose
    writes them (at their default budget, minutes on 2 cores; `predict` too when the prose gives one with
    its options), train.py and my_model.py standing in for the user's: each exits 0 and writes its record."""
    import os
    import subprocess
    import sys

    (tmp_path / "train.py").write_text(TRAIN_PY)
    (tmp_path / "my_model.py").write_text(MY_MODEL_PY)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "WHICHDEVICE_HOME": str(tmp_path / "h")}
    measuring = []
    for words in _inline_commands():  # FILE.py:FUNCTION (the screen's hint) is my_model.py:build's form
        words = [{"FILE.py:FUNCTION": "my_model.py:build"}.get(w, w) for w in words]
        if words[0] in ("diagnose", "predict") and len(words) > 1 and words not in measuring:
            measuring.append(words)
    assert ["diagnose", "train.py", "--", "--epochs", "1"] in measuring, measuring
    for words in measuring:
        done = subprocess.run(
            [sys.executable, "-m", "whichdevice", *words],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, (words, done.stderr[-3000:])
        assert "\nRecord: " in "\n" + done.stdout, (words, done.stdout[-2000:])
