"""The two consoles every page and message is printed on (stdout for pages, stderr for
progress and errors), and ``redirected``: the same consoles printing into a sink for a while
(the Python API keeps a command's page as text; the notebook magic shows it in place).

Kept apart from the pages so that ``whichdevice --help`` imports rich and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.segment import Segment

from whichdevice.core.textsafe import clean, for_encoding


class SafeConsole(Console):
    """A console that strips control characters and escape sequences from every piece of
    text it renders (``core.textsafe.clean``): model names, error texts of
    frameworks and user code, the contents of a record or journal never move the cursor,
    clear the screen or set the window title. Rich's own colours and the progress bar's
    cursor movements are added after rendering (control segments), so they are kept.

    On a stream that cannot encode a character (an ASCII or latin-1 terminal, a file name that
    is not UTF-8) the character is printed as its plain stand-in (``textsafe.for_encoding``)
    instead of ending the command with a traceback."""

    def render(self, renderable, options=None):  # type: ignore[no-untyped-def]
        encoding = self.encoding
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text:
                text = segment.text if segment.text.isprintable() else clean(segment.text)
                text = for_encoding(text, encoding)
                yield segment if text is segment.text else Segment(text, segment.style, None)
            else:
                yield segment


console = SafeConsole(highlight=False)
# Piped or redirected (not a terminal): lines are never wrapped, so a script that greps
# `^Record: ` gets the whole path and a table cell its whole name.
console.soft_wrap = not console.is_terminal
err_console = SafeConsole(stderr=True, highlight=False)
# The same on stderr: its summaries and one-line findings are read by scripts and logs too.
err_console.soft_wrap = not err_console.is_terminal


@contextmanager
def redirected(out: Any, err: Any, *, width: int = 80) -> Iterator[None]:
    """``console`` and ``err_console`` print into ``out`` and ``err`` (``write``, ``flush``) inside the block, as into a
    pipe: no colour, no cursor movement, no live progress, lines never wrapped (whatever the
    surrounding process forces: ipykernel sets ``FORCE_COLOR=1``). Every module keeps
    its reference to the same two objects, so their state is swapped, then restored."""
    saved = [(c, dict(c.__dict__)) for c in (console, err_console)]
    for c, sink in ((console, out), (err_console, err)):
        plain = SafeConsole(
            file=sink,
            width=width,
            highlight=False,
            no_color=True,
            color_system=None,
            force_terminal=False,
            force_jupyter=False,
            force_interactive=False,
            soft_wrap=True,
            stderr=c is err_console,
        )
        c.__dict__.update(plain.__dict__)
    try:
        yield
    finally:
        for c, state in saved:
            c.__dict__.clear()
            c.__dict__.update(state)
