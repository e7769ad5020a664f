"""The typer app and the two consoles: all a command needs to register itself.

Kept apart from ``cli/common.py`` so that ``whichdevice --help`` and ``--version`` import
typer and rich only (issue #21): the shared helpers in ``common`` pull in the records,
the journal and the measuring session.
"""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Measure when the GPU pays off against the CPU for TensorFlow/Keras work, and why it does not.",
)
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)
