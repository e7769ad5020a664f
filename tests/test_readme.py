"""The README as a user's page (issue #44 item 5): short, install and run first, every command
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
    """Issue #42: the README's command table and docs/commands.md's framework lists are what the
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
    assert "../" not in README.replace("](../", "")  # no ../shared/..., relative links aside
    assert not JARGON.search(README), JARGON.search(README)
    for link in re.findall(r"\]\(([^)#]+)", README):  # every local link exists
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link


def test_readme_figures_match_the_code():
    schemas = re.findall(r"schema (\d+)", README)
    assert schemas and all(int(s) == SCHEMA_VERSION for s in schemas), schemas
    assert "everything else to stderr" not in README  # --json-out - prints no verdict at all
    assert "7–12 min on 2 cores (measured 2026-11-27" in (ROOT / "CONTRIBUTING.md").read_text()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_seed_jargon_in_help(name, capsys, monkeypatch):
    from whichdevice.cli.app import main

    monkeypatch.setenv("COLUMNS", "200")
    main([name, "--help"])
    assert not JARGON.search(capsys.readouterr().out)
    assert not JARGON.search(COMMANDS[name][1])
