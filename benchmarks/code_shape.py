"""The shape of the code that the guard rails (analysis returns data, presenters only format) ask about, measured from the source.

- functions over 80 lines (``end_lineno - lineno + 1`` of each ``def``: the signature and body,
  decorators excluded), the issue's target being 8 or fewer;
- ruff's complexity findings (C901, PLR0912, PLR0913, PLR0915) with ruff's default thresholds
  and *without* the project's named exceptions (``--isolated``), so the figure shows what the
  exceptions hide;
- the same with the project's configuration, which must be 0 once the rules are on;
- import cycles between the package's modules (static imports, including function-level ones);
- string literals in analysis/ that read as sentences (present/ should write them).

Usage::

    python benchmarks/code_shape.py                 # the whole package, a table
    python benchmarks/code_shape.py --files a.py b.py   # only these files
    python benchmarks/code_shape.py --json
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "whichdevice"
LONG = 80
RULES = "C901,PLR0912,PLR0913,PLR0915"


def _shown(path: Path) -> str:
    for base in (Path.cwd(), ROOT):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


def long_functions(files: list[Path], limit: int = LONG) -> list[tuple[int, str, str]]:
    """(lines, file, qualified name) of every function longer than ``limit`` lines."""
    out: list[tuple[int, str, str]] = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        n = (child.end_lineno or child.lineno) - child.lineno + 1
                        if n > limit:
                            out.append((n, _shown(path), name))
                    stack.append((child, name + "."))
                else:
                    stack.append((child, prefix))
    return sorted(out, reverse=True)


def ruff_findings(files: list[Path], isolated: bool) -> Counter[str]:
    exe = shutil.which("ruff")
    if exe is None:
        sys.exit("ruff is not installed: pip install '.[test]'")
    cmd = [exe, "check", "--output-format", "json", "--exit-zero"]
    cmd += ["--isolated", "--ignore-noqa", "--select", RULES] if isolated else ["--select", RULES]
    out = subprocess.run([*cmd, *map(str, files)], cwd=ROOT, capture_output=True, text=True, check=True)
    return Counter(f["code"] for f in json.loads(out.stdout or "[]"))


def analysis_sentences(files: list[Path]) -> dict[str, int]:
    """String literals in analysis/ that read as sentences (3+ words, 2+ spaces): what the guard rails
    wants written in present/ only. Docstrings, exception messages (a raise's text) and pydantic
    field descriptions (schema documentation) are not counted."""
    out: dict[str, int] = {}
    for path in files:
        if "analysis" not in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip: set[int] = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                skip.add(id(body[0].value))
            if isinstance(node, ast.Raise) or (isinstance(node, ast.keyword) and node.arg == "description"):
                skip.update(id(m) for m in ast.walk(node))
        n = sum(
            1
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip
            and len(re.findall(r"[A-Za-z]{2,}", node.value)) >= 3
            and node.value.count(" ") >= 2
        )
        if n:
            out[_shown(path)] = n
    return out


def _module(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_cycles(files: list[Path]) -> list[list[str]]:
    """Strongly connected groups (size > 1) of the package's static import graph."""
    mods = {_module(p): p for p in files}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")
                    up = up[: len(up) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                names = [f"{base}.{a.name}" for a in node.names]
            for name in names:
                while name and name not in mods:
                    name = name.rpartition(".")[0]
                # A module's own package (its __init__) runs before it anyway: not an edge.
                if name and name != mod and name.startswith("whichdevice") and not mod.startswith(name + "."):
                    graph[mod].add(name)
    # Tarjan's strongly connected components.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", type=Path, help="only these files (default: the whole package)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    files = [p.resolve() for p in args.files] if args.files else sorted(PACKAGE.rglob("*.py"))
    files = [p for p in files if "__pycache__" not in p.parts]
    longs = long_functions(files)
    raw = ruff_findings(files, isolated=True)
    configured = ruff_findings(files, isolated=False)
    cycles = import_cycles(sorted(PACKAGE.rglob("*.py"))) if not args.files else []
    sentences = analysis_sentences(files)
    result = {
        "files": len(files),
        "functions_over_80_lines": len(longs),
        "long_functions": [{"lines": n, "file": f, "function": q} for n, f, q in longs],
        "ruff_complexity_default_thresholds": dict(raw),
        "ruff_complexity_with_project_config": dict(configured),
        "import_cycles": cycles,
        "analysis_sentences": sentences,
        "load_average": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{len(files)} files; functions over {LONG} lines: {len(longs)}")
    for n, f, q in longs:
        print(f"  {n:4d}  {f}:{q}")
    print(f"ruff {RULES}, ruff's default thresholds, no exceptions: {sum(raw.values())} {dict(sorted(raw.items()))}")
    print(f"ruff {RULES}, the project's configuration: {sum(configured.values())} {dict(sorted(configured.items()))}")
    if not args.files:
        print(f"import cycles: {len(cycles)}" + "".join(f"\n  {' <-> '.join(c)}" for c in cycles))
    print(f"sentences written in analysis/ (present/ writes them): {sum(sentences.values())}")
    for f, n in sorted(sentences.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {f}")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
