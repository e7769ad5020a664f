"""The typer app and the two consoles: all a command needs to register itself.

Kept apart from ``cli/common.py`` so that ``whichdevice --help`` and ``--version`` import
typer and rich only (issue #21): the shared helpers in ``common`` pull in the records,
the journal and the measuring session.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.segment import Segment

from whichdevice.core.textsafe import clean

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Measure when the GPU pays off against the CPU for TensorFlow/Keras work, and why it does not.",
)


class SafeConsole(Console):
    """A console that strips control characters and escape sequences from every piece of
    text it renders (``core.textsafe.clean``, issue #18): model names, error texts of
    frameworks and user code, the contents of a record or journal never move the cursor,
    clear the screen or set the window title. Rich's own colours and the progress bar's
    cursor movements are added after rendering (control segments), so they are kept."""

    def render(self, renderable, options=None):  # type: ignore[no-untyped-def, override]
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text and not segment.text.isprintable():
                yield Segment(clean(segment.text), segment.style, None)
            else:
                yield segment


console = SafeConsole(highlight=False)
err_console = SafeConsole(stderr=True, highlight=False)
