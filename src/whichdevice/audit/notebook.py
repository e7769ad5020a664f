"""A Jupyter notebook (``.ipynb``) audited through its code cells, in order, magics translated.

:func:`translate` reads the notebook's JSON and joins its code cells into one Python script, each
cell after a ``# In[k]`` comment. IPython syntax becomes Python:

- ``%timeit STMT`` / ``%%timeit`` (with ``-n N``, ``-r R``; the cell's first line as setup for
  the line form's ``%%timeit SETUP``) and ``%time STMT`` / ``%%time``: calls of the audit's
  ``Magics`` (``clocks.py``), which time the code as IPython does and record every run;
- ``!shell``, ``%pip``, ``%matplotlib`` and every other magic: skipped (a comment says so) —
  the audit runs the Python, not the shell.

A notebook that is not valid JSON, has no code cell, or whose translated cells are still not
Python (a cell magic the audit does not translate, such as ``%%bash``) is refused with one line
naming ``jupyter nbconvert --to script`` (``UsageError``, exit 2).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from whichdevice.core.errors import UsageError

MAGICS = "__whichdevice_magics__"


def _refuse(path: Path, why: str) -> UsageError:
    return UsageError(
        "SCRIPT",
        f"'{path}' cannot be audited as a notebook ({why})",
        f"Convert it first: `jupyter nbconvert --to script {path.name}`, then audit the .py it writes.",
    )


def _options(words: list[str]) -> tuple[int, int, list[str]]:
    """-n N, -r R (IPython's %timeit); the rest is the statement."""
    number, repeat = 0, 7
    rest: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("-n", "-r") and i + 1 < len(words) and words[i + 1].isdigit():
            if w == "-n":
                number = int(words[i + 1])
            else:
                repeat = int(words[i + 1])
            i += 2
            continue
        if w.startswith("-") and w[1:2] in ("q", "o", "p", "t", "c") and not rest:
            i += 1
            continue
        rest.append(w)
        i += 1
    return number, repeat, rest


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, posix=False)
    except ValueError:
        return text.split()


def _line_magic(line: str, lineno: int) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    body = line.strip()
    name, _, arg = body[1:].partition(" ")
    if name == "timeit":
        number, repeat, rest = _options(_split(arg))
        stmt = arg[arg.find(rest[0]) :] if rest else "pass"
        return f"{indent}{MAGICS}.timeit({stmt!r}, '', globals(), {lineno}, number={number}, repeat={repeat})  # {body}"
    if name == "time":
        return f"{indent}{MAGICS}.time({arg.strip()!r}, globals(), {lineno})  # {body}"
    return f"{indent}pass  # skipped by whichdevice audit: {body}"


def _cell(source: str, first_line: int) -> str:
    lines = source.splitlines()
    if not lines:
        return ""
    head = lines[0].strip()
    if head.startswith("%%"):
        name, _, arg = head[2:].partition(" ")
        body = "\n".join(lines[1:])
        if name == "timeit":
            number, repeat, rest = _options(_split(arg))
            setup = arg[arg.find(rest[0]) :] if rest else ""
            return (
                f"{MAGICS}.timeit({body!r}, {setup!r}, globals(), {first_line}, number={number}, repeat={repeat})"
                f"  # {head}"
            )
        if name == "time":
            return f"{MAGICS}.time({body!r}, globals(), {first_line})  # {head}"
        if name in ("capture", "writefile"):
            return f"pass  # skipped by whichdevice audit: {head}"
        raise ValueError(f"cell magic {head.split()[0]} is not Python")
    out = []
    for k, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith("%"):
            out.append(_line_magic(line, first_line + k))
        elif stripped.startswith("!"):
            out.append(line[: len(line) - len(stripped)] + f"pass  # skipped by whichdevice audit: {stripped}")
        else:
            out.append(line)
    return "\n".join(out)


def translate(path: Path) -> tuple[str, dict]:
    """(the Python source of the notebook's code cells, {'cells', 'magics', 'cell_lines'})."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = list(nb["cells"])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, RecursionError) as e:
        raise _refuse(path, f"not a readable notebook: {type(e).__name__}") from None  # nested too deep: RecursionError
    code = []
    for k, c in enumerate(cells, 1):
        if isinstance(c, dict) and c.get("cell_type") == "code":
            src = c.get("source", "")
            if isinstance(src, list) and not all(isinstance(x, str) for x in src):
                raise _refuse(path, f"cell {k}'s source is not text")  # a list of numbers
            code.append("".join(src) if isinstance(src, list) else str(src))
    if not code:
        raise _refuse(path, "it has no code cell")
    parts, starts, magics = [], [], 0
    line = 1
    for k, src in enumerate(code, 1):
        header = f"# In[{k}]"
        parts.append(header)
        line += 1
        starts.append(line)
        try:
            text = _cell(src, line)
        except ValueError as e:
            raise _refuse(path, f"cell {k}: {e}") from None
        magics += sum(1 for ln in src.splitlines() if ln.lstrip().startswith(("%", "!")))
        parts.append(text)
        line += text.count("\n") + 1
        parts.append("")
        line += 1
    source = "\n".join(parts) + "\n"
    try:
        compile(source, str(path), "exec")
    except SyntaxError as e:
        raise _refuse(path, f"line {e.lineno} of its joined cells is not Python: {e.msg}") from None
    return source, {"cells": len(code), "magics_translated": magics, "cell_first_lines": starts}
