"""IPython magics: ``%load_ext whichdevice`` registers

- ``%whichdevice ARGS``: any command, exactly as typed in a terminal (``%whichdevice matmul --quick``,
  ``%whichdevice compare 3 7``); its text is shown in the cell as it would be in a terminal, and
  when it wrote a record, that record is returned as the Python API's result object (rendered
  inline by its ``_repr_html_``; ``r = %whichdevice train --quick`` keeps it).
- ``%%whichdevice_audit [audit options]``: audits the cell's code (``whichdevice audit``). The
  cell is written to ``whichdevice-results/cell-<time>.py`` first and kept there, so every line
  and hint of the audit names a file that exists; the audit record is returned.

Each command runs in a child process (``python -m whichdevice``), as the measuring commands
run their cases anyway: the notebook's own process keeps its state, signal handlers and
imported frameworks, and a Ctrl-C (the kernel's interrupt) stops the child and its children.

The child writes to a pipe as it would for a script: no colour, no progress frames, tables at
their natural width (issue #44: ipykernel sets ``FORCE_COLOR=1``, which made the child draw 181
progress frames with escape codes into the notebook, and ``history`` squeezed to 80 columns).
In a notebook its text is one HTML block updated in place, with the elapsed time, and left as
the command's output; in a terminal (IPython) it is printed as it comes, with the CLI's bar.
"""

from __future__ import annotations

import html
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

from whichdevice.core import process
from typing import IO, Any

# The line every command that writes a record prints (cli/common.write_record, cli/audit.py).
_RECORD_LINE = re.compile(r"^Record:\s+(.+?)\s*$", re.M)


# What makes a child that writes to a pipe draw as on a terminal anyway (rich, click, colorama).
_FORCING = ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS")
MIN_INTERVAL_S = 0.25  # a notebook redraw at most 4x per second
_STYLE = (
    "<style>.whichdevice-report pre.whichdevice-out{white-space:pre;overflow-x:auto;margin:0;"
    "font-size:12px;line-height:1.3}.whichdevice-report .whichdevice-status{color:#555}</style>"
)


def child_env() -> dict[str, str]:
    """The environment of the command's child: the notebook's, less what forces terminal output."""
    env = {k: v for k, v in os.environ.items() if k not in _FORCING}
    env.update(NO_COLOR="1", TERM="dumb")
    return env


def output_html(text: str, status: str) -> str:
    """The command's text as one scoped block (wide tables scroll, never wrap), and its status."""
    return (
        f'<div class="whichdevice-report">{_STYLE}<pre class="whichdevice-out">{html.escape(text)}</pre>'
        f'<div class="whichdevice-status"><code>{html.escape(status)}</code></div></div>'
    )


class _Shown:
    """The notebook's one output block for a command, redrawn in place (an IPython display
    handle); in a terminal, nothing (the lines are printed as they come)."""

    def __init__(self, title: str, notebook: bool) -> None:
        self.title, self._t0, self._drawn, self._handle = title, time.monotonic(), 0.0, None
        if notebook:
            from IPython.display import display

            self._handle = display(self._data("", "starting"), raw=True, display_id=True)  # type: ignore[no-untyped-call]

    def _data(self, text: str, status: str) -> dict[str, str]:
        return {"text/plain": f"{text}{status}\n", "text/html": output_html(text, status)}

    def draw(self, text: str, code: int | None = None) -> None:
        if self._handle is None:
            return
        now = time.monotonic()
        if code is None and now - self._drawn < MIN_INTERVAL_S:
            return
        self._drawn = now
        took = f"{now - self._t0:.0f} s"
        status = f"whichdevice {self.title}: running, {took}" if code is None else f"whichdevice {self.title}: "
        if code is not None:
            status += f"done in {took}" if code == 0 else f"exit code {code} after {took}"
        self._handle.update(self._data(text, status), raw=True)


def run_command(args: list[str], *, echo: bool = True) -> tuple[int, str, str]:
    """``whichdevice ARGS`` in a child: in a notebook its output in one block updated in place,
    elsewhere printed as it comes with the elapsed time. Returns (exit code, stdout, stderr)."""
    from whichdevice.present.progress import ApiProgress, in_notebook

    notebook = echo and in_notebook()
    child = subprocess.Popen(
        [sys.executable, "-m", "whichdevice", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=child_env(),
        start_new_session=True,  # its own process group: an interrupt stops it and its measuring children
    )
    out: list[str] = []
    err: list[str] = []
    both: list[str] = []  # in the order they came, for the notebook's block
    pumps = [_pump(child.stdout, out, both, "stdout", echo and not notebook)]
    pumps.append(_pump(child.stderr, err, both, "stderr", echo and not notebook))
    title = args[0] if args else "whichdevice"
    try:
        shown = _Shown(title, notebook)
        with ApiProgress(title, enabled=echo and not notebook) as bar:
            bar.current = " ".join(args)[:80]
            while child.poll() is None:
                bar.tick()
                shown.draw("".join(both))
                time.sleep(0.1)
            bar.done = 1 if child.returncode == 0 else 0
    except BaseException:
        process.interrupt_group(child)
        raise
    for t in pumps:
        t.join()
    shown.draw("".join(both), child.returncode)
    return child.returncode, "".join(out), "".join(err)


def _pump(stream: IO[str] | None, sink: list[str], both: list[str], target: str, echo: bool) -> threading.Thread:
    def pump() -> None:
        assert stream is not None
        for line in iter(stream.readline, ""):
            sink.append(line)
            both.append(line)
            if echo:  # sys.stdout looked up per line: a progress bar redirects it while it runs
                f = getattr(sys, target)
                f.write(line)
                f.flush()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


class AuditResult:
    """What ``%%whichdevice_audit`` returns: the audit record (``.record``, the ``AuditRecord``
    ``whichdevice report PATH`` reads) and where it is, shown in one line (its text is above)."""

    def __init__(self, record: Any, path: Path) -> None:
        self.record, self.path = record, path

    def __repr__(self) -> str:
        n = len(getattr(self.record, "findings", []))
        return f"<AuditResult {self.record.script}: {n} finding{'s' if n != 1 else ''}, record {self.path}>"


def _result_of(stdout: str) -> Any:
    """The record the command wrote (its last ``Record:`` line), as the API's result object."""
    found = _RECORD_LINE.findall(stdout)
    if not found:
        return None
    path = Path(found[-1])
    if not path.exists():
        return None
    import whichdevice

    try:
        return whichdevice.load(path)
    except ValueError:  # not a RunRecord (an audit record): the audit's own reader
        from whichdevice.audit import record as audit_record

        try:
            return AuditResult(audit_record.load(path), path)
        except Exception:
            return None


def whichdevice_line(line: str) -> Any:
    """``%whichdevice ARGS``."""
    try:
        args = shlex.split(line)
    except ValueError as e:
        print(f"error: %whichdevice: {e} (quote the argument)", file=sys.stderr)
        return None
    if not args:
        args = ["--help"]
    code, stdout, _ = run_command(args)
    if code != 0:
        return None  # the command said why (one line on stderr for bad input)
    return _result_of(stdout)


def whichdevice_audit_cell(line: str, cell: str) -> Any:
    """``%%whichdevice_audit [options]``: the cell audited as a script."""
    try:
        options = shlex.split(line)
    except ValueError as e:
        print(f"error: %%whichdevice_audit: {e} (quote the argument)", file=sys.stderr)
        return None
    folder = Path("whichdevice-results")
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"cell-{time.strftime('%Y%m%d-%H%M%S')}-{len(list(folder.glob('cell-*.py')))}.py"
    script.write_text(cell)
    code, stdout, _ = run_command(["audit", *options, str(script)])
    if code != 0:
        return None
    return _result_of(stdout)


def register(ipython) -> None:  # noqa: ANN001
    ipython.register_magic_function(whichdevice_line, magic_kind="line", magic_name="whichdevice")
    ipython.register_magic_function(whichdevice_audit_cell, magic_kind="cell", magic_name="whichdevice_audit")
