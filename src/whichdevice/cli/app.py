"""Command line entry point: ``whichdevice <command>``.

Thin on purpose: each command lives in ``whichdevice/cli/<module>.py`` and registers itself
on the shared typer app; this module imports only the module of the command being run
(``whichdevice --help`` and ``--version`` import typer and rich, nothing of the
records, the measuring session, matplotlib or pydantic) and turns bad input into one line
and exit code 2.
"""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from typing import Any

import typer
from rich.markup import escape

from whichdevice.cli import guard, helprender
from whichdevice.cli.base import app, apply_metavars, click_command, err_console
from whichdevice.core.errors import PageNotDrawn, UsageError
from whichdevice.core.textsafe import clean

# Every command: its name -> (the cli module that registers it, the one line `--help` lists).
# Listed in --help's order. A new command adds its line here; tests/test_cli.py checks that
# each line is the first line of the command's own help, so the two cannot drift apart.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": (
        "run",
        "The default suite: matmul crossover, the seeds' training cases, a batch sweep and the automatic fixes, "
        "each measured; then one verdict and an HTML report.",
    ),
    "diagnose": (
        "run",
        "The suite on YOUR training script or model: who wins at your batch, the batch sweep, every automatic fix measured — "
        "and the device and settings to use.",
    ),
    "matmul": ("matmul", "Matrix multiplication time vs size on every device; where the GPU starts to win."),
    "train": (
        "train",
        "The small MLP and the 3-layer MLP (or --model): warm-up vs steady steps, break-even, sync cost, batch-size "
        "crossover.",
    ),
    "pipeline": (
        "pipeline",
        "An image input pipeline (or --data): alone, the model alone, both — waiting-for-input share, variant ladder, "
        "slowest stage.",
    ),
    "placement": (
        "placement",
        "Per device: the ops of one training step by type (count, time), the host<->device copies (pageable or "
        "pinned) and syncs, and on a GPU the ops that ran on the CPU, with why.",
    ),
    "pitfalls": (
        "pitfalls",
        "Each timing mistake of the framework (no sync, the first epoch or step, a compile in the timing, a sync "
        "every step, num_workers=0, device_put every step, one CPU thread, tiny batch) next to the correct "
        "measurement, with the distortion as a ratio.",
    ),
    "audit": ("audit", "Audit your own CPU-vs-GPU benchmark script: what it timed vs what ran where."),
    "calibrate": ("calibrate", "Measure this machine's per-op, copy, matmul and memory costs into a device profile."),
    "predict": (
        "predict",
        "Measure the step on this CPU, predict it on a profiled GPU: winner, crossover, what dominates.",
    ),
    "profile": ("profile", "Device profiles for `predict --profile`: import one from a GPU run, list them, show one."),
    "import": ("importcmd", "Turn reference GPU runs (gpu_probe.py / keras_probe.py output) into whichdevice records."),
    "scale": (
        "scale",
        "Does the next device pay? 1…N replicas on the framework's own engine: efficiency, all-reduce share, crossover.",
    ),
    "devices": ("report", "List the devices the framework sees, and why a GPU is missing if it is."),
    "report": ("report", "Re-render the table and plot from a saved record, without measuring again."),
    "history": ("history", "List the runs recorded on this machine (newest first)."),
    "compare": (
        "history",
        "Point by point, what changed between two runs, and whether the change is beyond the noise.",
    ),
}


def _command_name(argv: list[str]) -> str | None:
    """The command named on the line: the first word that is not an option (the app's own
    options, --help and --version, take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def load_commands(argv: list[str]) -> None:
    """Register what this command line needs: the named command's module, or, when there is
    none (``--help``, a typo), one cheap stand-in per command so that the help lists them all
    and click's "No such command" names the choices."""
    name = _command_name(argv)
    if name in COMMANDS:
        app.registered_commands[:] = [c for c in app.registered_commands if c.callback is not _stand_in]
        importlib.import_module(f"whichdevice.cli.{COMMANDS[name][0]}")
        return
    registered = {c.name for c in app.registered_commands}
    for command, (_, short) in COMMANDS.items():
        if command not in registered:
            app.command(command, help=short, add_help_option=False)(_stand_in)


def _completion_words() -> list[str]:
    """While the shell asks for completions (typer's --install-completion script sets
    _WHICHDEVICE_COMPLETE), the words typed so far, from the shell's variables, past the program
    name: the command named there is loaded, so that its own options complete too."""
    if "_WHICHDEVICE_COMPLETE" not in os.environ:
        return []
    typed = os.environ.get("_TYPER_COMPLETE_ARGS") or os.environ.get("COMP_WORDS") or ""
    try:
        words = shlex.split(typed)
    except ValueError:  # an open quote, half typed
        words = typed.split()
    return words[1:]


def _stand_in() -> None:  # never run: a named command always loads its real module
    raise AssertionError("stand-in command ran")


def _version() -> None:
    from whichdevice.core.version import __version__

    print(f"whichdevice {__version__}")


def _on_version(value: bool) -> None:
    if value:
        _version()
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", help="Print the version and exit.", is_eager=True, callback=_on_version, metavar=""
    ),
) -> None:
    pass


# typer >= 0.20 vendors click privately; find its UsageError through a public class
# instead of importing either click by name.
_CLICK_USAGE_ERROR: type[Any] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def main(argv: list[str] | None = None, *, raising: tuple[type[Exception], ...] = ()) -> None:
    """Entry point: usage errors become one line on stderr and exit code 2 (``raising``: errors
    raised to the caller as they are instead, e.g. the Python API's ``UsageError``)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if guard.closed_output():
        sys.exit(2)
    if args and args[0] in ("--version", "-V"):
        _version()
        return
    # SIGTERM, SIGHUP and a closed output pipe unwind like Ctrl-C; the run's scratch folder and
    # the libraries' caches under WHICHDEVICE_HOME (set before matplotlib is imported); warnings
    # as one line (cli/guard.py)
    command = _command_name(args) in COMMANDS
    if command and guard.unusable_home():
        sys.exit(2)
    undo = guard.install(scratch=command, own_process=argv is None)
    try:
        load_commands(_completion_words() or args)
        apply_metavars()
        helprender.import_renderer()
        code = click_command()(args=args, standalone_mode=False)
    except Exception as e:
        if isinstance(e, raising):
            raise
        exit_code = _error_exit(e)
        if exit_code is None:
            raise
        sys.exit(exit_code)
    finally:
        undo()
    # Without standalone mode typer returns an Exit's code instead of raising it; Ctrl-C (and
    # SIGTERM, SIGHUP, a closed pipe, through cli/guard.py) is Exit(130).
    if isinstance(code, int) and code == INTERRUPTED:
        sys.exit(guard.interrupted_code(INTERRUPTED, measuring=_command_name(args) in JOURNALED))
    if isinstance(code, int) and code != 0:
        sys.exit(code)
    if guard.all_failed():  # a record was written, but nothing in it was measured
        sys.exit(1)


def _error_exit(e: Exception) -> int | None:
    """The exit code for an error that ended a command, its line printed on stderr; None for
    an error that is not the user's nor the machine's (a bug: its traceback is shown)."""
    if isinstance(e, UsageError):  # one line, whatever the user typed into it (a newline, a NUL)
        err_console.print(f"error: {escape(clean(str(e), newlines=False))}", soft_wrap=True)
        return 2
    if isinstance(e, _CLICK_USAGE_ERROR):
        if type(e).__name__.startswith("NoArgsIsHelp"):  # bare `whichdevice`: help was printed
            return 0
        err_console.print(f"error: {escape(clean(e.format_message(), newlines=False))} (see --help)", soft_wrap=True)
        return 2
    if isinstance(e, typer.Exit):
        return e.exit_code
    if isinstance(e, typer.Abort):
        err_console.print("aborted")
        return 130
    if isinstance(e, PageNotDrawn):  # measured and recorded; the page alone failed
        print(f"Record: {e.record}", flush=True)  # the line scripts grep for, as after every record
        err_console.print(f"error: {escape(clean(str(e), newlines=False))}", soft_wrap=True)
        return 1
    if isinstance(e, OSError):  # a full disk, a folder gone read-only, a path too long: one line
        return guard.os_error(e)
    # A damaged history database (only a command that opened it can raise this, and it has
    # imported sqlite3 then: --help need not).
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is not None and isinstance(e, sqlite3.Error):
        return guard.database_error(e)
    # Only a command that measured can raise this, and it has imported the module then.
    experiment = sys.modules.get("whichdevice.measure.experiment")
    if experiment is None or not isinstance(e, experiment.FrameworkUnavailable):
        return None
    err_console.print(f"error: {escape(str(e))}", soft_wrap=True)
    return 1


INTERRUPTED = 130  # the shell's code for a process ended by SIGINT (Ctrl-C)
# The commands that journal what they measure: interrupted before their journal exists, their
# line says that nothing was kept.
JOURNALED = frozenset({"run", "diagnose", "matmul", "train", "pipeline", "placement", "pitfalls", "calibrate"})
JOURNALED |= {"predict", "scale"}


if __name__ == "__main__":
    main()
