"""Every third-party module imported under ``src/`` is declared in the dependency group that
needs it.

The README's first line installs ``.[tensorflow]`` and nothing else; a module imported by the
package but declared nowhere (``click`` once, through typer's old dependency; ``xprof``) works on
the developers' machine, where the test extra brings it along, and crashes for every new user.

The rule, read from the package's AST (deptry's DEP001 check, with the group added):

* a module imported at the top of a file outside a framework's own folder runs on every
  ``import whichdevice...``: it must be a base dependency;
* a file of a framework's folder (``frameworks/tensorflow/``, ``frameworks/torch/audit.py``, ...) is
  imported only when that framework runs: its imports may come from that framework's extra;
* an import inside a function (a guarded, optional import) may come from any extra, and the
  extra must exist: ``pip install 'whichdevice[EXTRA]'`` is what the guard tells the user.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Modules whose distribution has another name, for when the distribution is not installed
# here (packages_distributions() only knows installed ones).
ALIASES = {"pynvml": "nvidia-ml-py", "yaml": "pyyaml", "PIL": "pillow", "jinja2": "jinja2"}

KERAS = ("tensorflow", "tensorflow-cpu", "jax", "torch")  # the extras that bring Keras 3

# A framework's own files and the extras that may provide their imports.
FRAMEWORK_FILES: dict[str, tuple[str, ...]] = {
    "frameworks/tensorflow/": ("tensorflow", "tensorflow-cpu"),
    "frameworks/keras_jax/": ("jax",),
    "frameworks/jax/": ("jax",),
    "frameworks/keras_torch/": ("torch",),
    "frameworks/torch/": ("torch",),
    # Keras' own helpers and the StepTimer callback: imported only with a Keras backend
    "frameworks/common/keras.py": KERAS,
    "frameworks/common/batches.py": KERAS,
    "frameworks/common/steptimer.py": KERAS,
    # the pipeline command's PyDataset ladder (keras-jax, keras-torch): loaded only with a Keras backend
    "frameworks/common/keraspipeline.py": KERAS,
    "keras.py": KERAS,
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_groups(pyproject: Path) -> dict[str, set[str]]:
    """Distribution name -> the groups declaring it ("base" or an extra's name)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    groups: dict[str, set[str]] = {}
    for group, reqs in [("base", project.get("dependencies", []))] + list(
        project.get("optional-dependencies", {}).items()
    ):
        for req in reqs:
            dist = re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0]
            groups.setdefault(_norm(dist), set()).add(group)
    return groups


@functools.cache
def _distribution(module: str) -> str:
    dists = metadata.packages_distributions().get(module)
    return _norm(dists[0]) if dists else _norm(ALIASES.get(module, module))


@dataclass(frozen=True)
class Import:
    file: str  # relative to the package folder
    line: int
    module: str  # top-level module name
    lazy: bool  # inside a function (an optional import, guarded where it is used)


def third_party_imports(package: Path) -> list[Import]:
    own = {package.name}
    std = set(sys.stdlib_module_names) | {"__future__"}
    found: list[Import] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        tree = ast.parse(path.read_text(), filename=str(path))
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            lazy, up = False, parents.get(node)
            while up is not None:
                if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lazy = True
                    break
                up = parents.get(up)
            for name in names:
                top = name.split(".")[0]
                if top not in own and top not in std:
                    found.append(Import(rel, node.lineno, top, lazy))
    return found


def undeclared(package: Path, pyproject: Path) -> list[str]:
    """One line per import that the install its file needs would not provide."""
    groups = declared_groups(pyproject)
    extras = set().union(*groups.values()) - {"base"}
    problems = []
    for imp in third_party_imports(package):
        dist = _distribution(imp.module)
        have = groups.get(dist, set())
        where = f"{imp.file}:{imp.line} imports {imp.module} ({dist})"
        allowed = next((ex for prefix, ex in FRAMEWORK_FILES.items() if imp.file.startswith(prefix)), None)
        if not have:
            problems.append(f"{where}: declared nowhere in pyproject.toml")
        elif "base" in have or (imp.lazy and have & extras):
            continue
        elif allowed is not None:
            if not have & set(allowed):
                problems.append(f"{where}: not in the extra of its framework ({', '.join(allowed)})")
        else:
            problems.append(f"{where}: imported at module level but only in extra(s) {sorted(have)}")
    return problems


def test_every_import_is_declared_in_its_group():
    assert undeclared(ROOT / "src" / "whichdevice", ROOT / "pyproject.toml") == []


def _copy(tmp_path: Path) -> Path:
    pkg = tmp_path / "whichdevice"
    shutil.copytree(ROOT / "src" / "whichdevice", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg


@pytest.mark.parametrize(
    "where, source, expected",
    [
        # what broke the README's first command: click, used by typer once, declared nowhere
        ("cli/run_extra.py", "import click\n", "declared nowhere"),
        # a framework imported at the top of a file every command imports
        ("analysis/uses_torch.py", "import torch\n", "imported at module level"),
        # jax is in the jax extra, not in tensorflow's
        ("frameworks/tensorflow/uses_jax.py", "import jax\n", "not in the extra of its framework"),
        ("present/lazy.py", "def f():\n    import not_a_real_dependency_xyz\n", "declared nowhere"),
    ],
)
def test_an_undeclared_import_fails_the_check(tmp_path, where, source, expected):
    pkg = _copy(tmp_path)
    (pkg / where).write_text(source)
    problems = undeclared(pkg, ROOT / "pyproject.toml")
    assert len(problems) == 1 and expected in problems[0], problems


def test_a_guarded_import_from_an_extra_passes(tmp_path):
    pkg = _copy(tmp_path)
    (pkg / "present" / "lazy_gpu.py").write_text(
        "def f():\n    try:\n        import pynvml\n    except ImportError:\n        return None\n"
    )
    assert undeclared(pkg, ROOT / "pyproject.toml") == []


def test_every_install_hint_names_an_extra_that_exists():
    """The guards tell the user `pip install 'whichdevice[EXTRA]'`: EXTRA must exist."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = set()
    for path in (ROOT / "src").rglob("*.py"):
        named |= set(re.findall(r"whichdevice\[([a-z0-9_-]+)\]", path.read_text()))
    assert named and named <= extras, named - extras
