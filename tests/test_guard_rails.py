"""The project's guard rails, run with the test suite (so `.ci/run`, which runs the README's test
command, runs them too): the layer contracts (import-linter), the lint rules (ruff) and strict
typing of the strict folders (mypy), each configured in pyproject.toml. A tool that is not
installed is a failure here, not a skip: the `test` extra installs all three."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(cmd[0])
    if exe is None:
        pytest.fail(f"{cmd[0]} is not installed: pip install '.[test]'")
    return subprocess.run([exe, *cmd[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_layer_contracts_hold():
    out = _run("lint-imports")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_ruff_finds_nothing():
    out = _run("ruff", "check", "src", "tests", "benchmarks")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_the_code_is_formatted():
    # `ruff format src tests benchmarks` fixes what this finds.
    out = _run("ruff", "format", "--check", "src", "tests", "benchmarks")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_the_strict_folders_type_check():
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


@pytest.mark.parametrize(
    "path, line, low, high",
    [
        ("core/stats.py", "from whichdevice.cli import common", "whichdevice.core", "whichdevice.cli"),
        # keras.py and magics.py are user entry points: nothing below them may import them
        (
            "frameworks/common/steptimer.py",
            "from whichdevice import keras",
            "whichdevice.frameworks",
            "whichdevice.keras",
        ),
        ("present/progress.py", "from whichdevice import magics", "whichdevice.present", "whichdevice.magics"),
        # an import circle, at module level or inside a function: the two Keras capture modules,
        # and a presenter importing back the first screen that imports it
        (
            "frameworks/common/kerasfit.py",
            "from whichdevice.frameworks.common import kerascapture",
            "cycles are allowed in whichdevice.frameworks.common",
            "kerascapture",
        ),
        (
            "present/names.py",
            "def _late():\n    from whichdevice.present import firstscreen",
            "cycles are allowed in whichdevice.present",
            "firstscreen",
        ),
    ],
)
def test_the_contract_catches_an_upward_import(tmp_path, path, line, low, high):
    """The layer contract can fail: a copy of the package with an import going up is refused."""
    pkg = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "whichdevice", pkg / "whichdevice", ignore=shutil.ignore_patterns("__pycache__"))
    bad = pkg / "whichdevice" / path
    bad.write_text(bad.read_text() + f"\n{line}  # noqa: E402,F401\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports is not installed: pip install '.[test]'")
    out = subprocess.run(
        [exe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PYTHONPATH": str(pkg), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode != 0
    assert low in out.stdout and high in out.stdout


# ------------------------------------------------------------------ function length

LONG = 80  # lines, signature and body (decorators excluded): benchmarks/code_shape.py counts the same way
# The named exceptions: functions allowed over LONG lines, each with why. At most 8.
LONG_FUNCTIONS_ALLOWED: dict[str, str] = {}


def _long_functions() -> dict[str, int]:
    import ast

    out: dict[str, int] = {}
    pkg = ROOT / "src" / "whichdevice"
    for path in sorted(pkg.rglob("*.py")):
        stack: list[tuple[ast.AST, str]] = [(ast.parse(path.read_text(encoding="utf-8")), "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    n = (child.end_lineno or child.lineno) - child.lineno + 1
                    if not isinstance(child, ast.ClassDef) and n > LONG:
                        out[f"{path.relative_to(pkg)}:{name}"] = n
                    stack.append((child, name + "."))
                else:
                    stack.append((child, prefix))
    return out


def test_no_function_is_over_80_lines_but_the_named_exceptions():
    found = _long_functions()
    assert len(LONG_FUNCTIONS_ALLOWED) <= 8
    new = {k: v for k, v in found.items() if k not in LONG_FUNCTIONS_ALLOWED}
    assert not new, f"over {LONG} lines (split them, or name the exception with why): {new}"
    stale = set(LONG_FUNCTIONS_ALLOWED) - set(found)
    assert not stale, f"named as long but no longer over {LONG} lines (remove them from the list): {stale}"
