"""IPython magics: ``%load_ext whichdevice`` registers

- ``%whichdevice ARGS``: any command, exactly as typed in a terminal (``%whichdevice matmul --quick``,
  ``%whichdevice compare 3 7``); its text is shown in the cell as it would be in a terminal, and
  when it wrote a record, that record is returned as the Python API's result object (rendered
  inline by its ``_repr_html_``; ``r = %whichdevice train --quick`` keeps it).
- ``%%whichdevice_audit [audit options]``: audits the cell's code (``whichdevice audit``). The
  cell is written to ``whichdevice-results/cell-<time>.py`` first and kept there, so every line
  and hint of the audit names a file that exists; the audit record is returned.

Each command runs in this process (``whichdevice/commands.py``: no ``python -m whichdevice``
child), its measurements in child processes as every command's are; a Ctrl-C (the kernel's
interrupt) stops them. In a notebook its text and progress are one HTML block updated in place,
with the elapsed time, and left as the command's output; in a terminal (IPython) it is printed
as it comes, with a progress bar.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from whichdevice.commands import run_command

# The line every command that writes a record prints (jobs.running.announce_record, cli/audit.py).
_RECORD_LINE = re.compile(r"^Record:\s+(.+?)\s*$", re.M)


class AuditResult:
    """What ``%%whichdevice_audit`` returns: the audit record (``.record``, the ``AuditRecord``
    ``whichdevice report PATH`` reads) and where it is, shown in one line (its text is above)."""

    def __init__(self, record: Any, path: Path) -> None:
        self.record, self.path = record, path

    def __repr__(self) -> str:
        n = len(getattr(self.record, "findings", []))
        return f"<AuditResult {self.record.script}: {n} finding{'s' if n != 1 else ''}, record {self.path}>"


def _result_of(args: list[str]) -> Any:
    """``whichdevice ARGS`` run in this process, and the record it wrote (its last ``Record:``
    line) as the API's result object; None when the command failed (it said why: one line on
    stderr for bad input) or wrote no record."""
    done = run_command(args)
    found = _RECORD_LINE.findall(done.stdout) if done.code == 0 else []
    if not found:
        return None
    path = Path(found[-1])
    if not path.exists():
        return None
    from whichdevice.api import load

    try:
        return load(path)
    except ValueError:  # not a RunRecord (an audit record): the audit's own reader
        from whichdevice.audit import record as audit_record

        try:
            return AuditResult(audit_record.load(path), path)
        except Exception:
            return None


def _split(line: str) -> list[str]:
    """The magic's line as a shell splits it. IPython hands a line magic the whole rest of the
    line, a trailing ``# comment`` included, so a comment ends it as in a shell: a ``#`` that
    starts a word, outside quotes (``'#1'``, ``"a # b"`` and ``run#2`` stay as they are).
    A quote left open is shlex's ``ValueError``."""
    quote = ""
    escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            line = line[:i]
            break
    return shlex.split(line)


def whichdevice_line(line: str) -> Any:
    """``%whichdevice ARGS``."""
    try:
        args = _split(line)
    except ValueError as e:
        print(f"error: %whichdevice: {e} (quote the argument)", file=sys.stderr)
        return None
    return _result_of(args or ["--help"])


def whichdevice_audit_cell(line: str, cell: str) -> Any:
    """``%%whichdevice_audit [options]``: the cell audited as a script."""
    try:
        options = _split(line)
    except ValueError as e:
        print(f"error: %%whichdevice_audit: {e} (quote the argument)", file=sys.stderr)
        return None
    folder = Path("whichdevice-results")
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"cell-{time.strftime('%Y%m%d-%H%M%S')}-{len(list(folder.glob('cell-*.py')))}.py"
    script.write_text(cell)
    return _result_of(["audit", *options, str(script)])


def register(ipython) -> None:  # noqa: ANN001
    ipython.register_magic_function(whichdevice_line, magic_kind="line", magic_name="whichdevice")
    ipython.register_magic_function(whichdevice_audit_cell, magic_kind="cell", magic_name="whichdevice_audit")
