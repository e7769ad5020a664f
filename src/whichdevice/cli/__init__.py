"""The command line: parse -> plan -> one ``measure`` session -> reports. Nothing else.

Each command lives in ``cli/<name>.py`` and registers itself on the shared typer app
(``cli/common.py``); ``cli/app.py`` holds the entry point.
"""


def main(argv: list[str] | None = None) -> None:
    """Entry point (``whichdevice``): see ``cli/app.py``."""
    from whichdevice.cli.app import main as _main

    _main(argv)
