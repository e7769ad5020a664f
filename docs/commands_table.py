"""The frameworks each command offers, written into the README and docs/commands.md from the
framework registry ("The README's command table lists every command with the
frameworks it supports, generated from the framework parts").

- README.md, the ``## Commands`` table: its third column (``frameworks (--framework)``) is
  ``frameworks.offered(command)`` for a command with a ``--framework`` option, the audit's
  frameworks (those with an ``audit`` part) for ``audit``, "—" for the others.
- docs/commands.md: every ``whichdevice COMMAND ... [--framework a|b|c]`` usage line, every
  ``<!-- frameworks: COMMAND -->`--framework a|b|c``` list, and the yes/— cells of the
  ``| `--framework` | matmul | train | run |`` table, from ``frameworks.offering(command)``.

Usage: ``python docs/commands_table.py`` rewrites both files; tests/test_readme.py fails when
either differs from what this writes.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMANDS_MD = ROOT / "docs" / "commands.md"
# what the README adds after a command's frameworks (a fact about the option, not a framework)
EXTRA = {"run": "; several at once side by side"}
_ROW = re.compile(r"^(\| `([a-z]+)[^|]*\|[^|]*\| )([^|]*)( \|)$", re.M)
_USAGE = re.compile(r"^(whichdevice ([a-z]+) .*?\[--framework )([a-z-]+(?:\|[a-z-]+)+)", re.M)
_MARKED = re.compile(r"(<!-- frameworks: ([a-z]+) -->`--framework )([a-z|-]+)")
_GRID_HEAD = re.compile(r"^\| `--framework` \|(( [a-z]+ \|)+) what runs \|$", re.M)


def framework_commands() -> set[str]:
    """The commands whose CLI takes ``--framework`` (read from the commands themselves)."""
    import typer

    from whichdevice.cli.app import COMMANDS, app

    for module in sorted({m for m, _ in COMMANDS.values()}):
        importlib.import_module(f"whichdevice.cli.{module}")
    group = typer.main.get_command(app)
    commands = getattr(group, "commands", {})
    return {n for n, c in commands.items() if any("--framework" in p.opts for p in c.params)}


def column(command: str, takes_framework: bool) -> str:
    """The README's frameworks cell of ``command``."""
    from whichdevice import frameworks

    if takes_framework:
        return frameworks.offered(command) + EXTRA.get(command, "")
    if command == "audit":
        return "the script's own: " + ", ".join(frameworks.having("audit"))
    return "—"


def readme(text: str) -> str:
    """``text`` (the README) with its command table's frameworks column generated."""
    takes = framework_commands()
    head, sep, rest = text.partition("## Commands")
    section, nxt, tail = rest.partition("\n## ")
    section = _ROW.sub(lambda m: m.group(1) + column(m.group(2), m.group(2) in takes) + m.group(4), section)
    return head + sep + section + nxt + tail


def commands_md(text: str) -> str:
    """``text`` (docs/commands.md) with its framework lists generated."""
    from whichdevice import frameworks

    def listed(m: re.Match) -> str:
        return m.group(1) + "|".join(frameworks.offering(m.group(2)))

    text = _MARKED.sub(listed, _USAGE.sub(listed, text))
    lines = text.split("\n")
    for i, line in enumerate(lines):
        head = _GRID_HEAD.match(line)
        if not head:
            continue
        commands = [c.strip() for c in head.group(1).split("|") if c.strip()]
        for j in range(i + 2, len(lines)):
            cells = lines[j].split(" | ")
            name = re.match(r"\| `([a-z-]+)`", cells[0])
            if not name:
                break
            for k, command in enumerate(commands, start=1):
                offered = name.group(1) in frameworks.offering(command)
                if cells[k].startswith("yes") != offered:
                    cells[k] = "yes" if offered else "—"
            lines[j] = " | ".join(cells)
    return "\n".join(lines)


def main() -> int:
    for path, make in ((README, readme), (COMMANDS_MD, commands_md)):
        old = path.read_text(encoding="utf-8")
        new = make(old)
        if new != old:
            path.write_text(new, encoding="utf-8")
            print(f"{path.relative_to(ROOT)}: frameworks rewritten from the registry")
    return 0


if __name__ == "__main__":
    sys.exit(main())
