"""The typer app and the two consoles (present/screen.py's): all a command needs to register itself.

Kept apart from ``cli/common.py`` so that ``whichdevice --help`` and ``--version`` import
typer and rich only: the shared helpers in ``common`` pull in the records,
the journal and the measuring session.
"""

from __future__ import annotations

from typing import Any

import typer
import typer.main

from whichdevice.present.screen import SafeConsole, console, err_console  # noqa: F401  (the commands' consoles)

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Measure when the GPU pays off against the CPU for TensorFlow/Keras work, and why it does not.",
)


# What `--help` shows as an option's type. Most numeric options are read as text so that
# bad input gets this tool's one-line message rather than click's; without this table typer
# would show them all as <str> and every flag as <bool>. One name means one thing in every
# command, so the table is keyed by option name. An option missing here shows TEXT (a path,
# PATH); tests/test_cli_startup.py checks that no option shows <str> or <bool>.
METAVARS: dict[str, str] = {
    "--batch": "INTEGER",
    "--batches": "INTEGER,...",
    "--budget": "FLOAT",
    "--case-timeout": "FLOAT",
    "--classes": "INTEGER",
    "--cpu-threads": "INTEGER",
    "--heavy-factor": "INTEGER",
    "--image-size": "INTEGER",
    "--images": "INTEGER",
    "--input-shape": "INTEGER,...",
    "--limit": "INTEGER",
    "--memory-limit": "FLOAT",
    "--min-time": "FLOAT",
    "--samples": "INTEGER",
    "--sizes": "INTEGER,...",
    "--steps": "INTEGER",
    "--timeout": "FLOAT",
    "--model": "FILE.py:FUNCTION",
    "--data": "FILE.py:FUNCTION",
    "--device": "DEVICE,...",
}


def click_command() -> Any:
    """The click command typer builds from the registered commands, each help option (click's
    own, created on first use) shown without a type."""
    group = typer.main.get_command(app)
    commands = [group, *getattr(group, "commands", {}).values()]
    for command in commands:
        help_option = command.get_help_option(typer.Context(command, help_option_names=["-h", "--help"]))
        if help_option is not None:
            help_option.metavar = ""
            # A flag's value read as a bool is passed as it is; left None (not given), typer would
            # build a pydantic validator for it, and importing pydantic is most of `COMMAND --help`.
            help_option.default = False
    for param in group.params:  # typer's --install-completion / --show-completion: flags
        if param.name in ("install_completion", "show_completion"):
            param.metavar = ""
            param.default = False  # as the help option's: no validator built for a flag not given
    return group


def apply_metavars() -> None:
    """Give every registered option the type `--help` shows: the table above for options read
    as text, PATH for paths, nothing for flags (a flag takes no value)."""
    import inspect

    for command in app.registered_commands:
        if command.callback is None:
            continue
        for parameter in inspect.signature(command.callback).parameters.values():
            info = parameter.default
            if type(info).__name__ == "ArgumentInfo" and info.metavar is None:
                info.metavar = parameter.name.upper()  # usage line: RESULT, not {result}
                continue
            if type(info).__name__ != "OptionInfo" or info.metavar is not None:
                continue
            long_name = next((d for d in info.param_decls if d.startswith("--")), "")
            annotation = str(parameter.annotation)
            if annotation == "bool":
                info.metavar = ""
            elif long_name in METAVARS:
                info.metavar = METAVARS[long_name]
            elif "Path" in annotation:
                info.metavar = "PATH"
            else:
                info.metavar = "TEXT"
