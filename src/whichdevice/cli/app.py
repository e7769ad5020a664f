"""Command line entry point: ``whichdevice <command>``.

Thin on purpose: each command lives in ``whichdevice/commands/<name>.py`` and registers itself
on the shared typer app; this module only turns bad input into one line and exit code 2.
"""

from __future__ import annotations

import signal
import sys

import typer
from rich.markup import escape

from whichdevice.measure import experiment, journal
from whichdevice.cli import run as _run  # noqa: F401  (each import registers its commands, in --help order)
from whichdevice.cli import matmul as _matmul  # noqa: F401
from whichdevice.cli import train as _train  # noqa: F401
from whichdevice.cli import pipeline as _pipeline  # noqa: F401
from whichdevice.cli import placement as _placement  # noqa: F401
from whichdevice.cli import pitfalls as _pitfalls  # noqa: F401
from whichdevice.cli import audit as _audit  # noqa: F401
from whichdevice.cli import calibrate as _calibrate  # noqa: F401
from whichdevice.cli import predict as _predict  # noqa: F401
from whichdevice.cli import report as _report  # noqa: F401
from whichdevice.cli import history as _history  # noqa: F401
from whichdevice.cli.common import app, err_console
from whichdevice.core.errors import UsageError

# typer >= 0.20 vendors click privately; find its UsageError through a public class
# instead of importing either click by name.
_CLICK_USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class _Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler's time limit, `kill`): unwound like Ctrl-C, so the run says
    how to resume instead of vanishing."""


def _on_sigterm(signum, frame) -> None:
    global _terminated
    _terminated = True
    raise _Terminated()


_terminated = False


def main(argv: list[str] | None = None) -> None:
    """Entry point: usage errors become one line on stderr and exit code 2."""
    global _terminated
    _terminated = False
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        code = app(args=argv, standalone_mode=False)
    except UsageError as e:
        err_console.print(f"error: {escape(str(e))}", soft_wrap=True)
        sys.exit(2)
    except _CLICK_USAGE_ERROR as e:
        if type(e).__name__.startswith("NoArgsIsHelp"):  # bare `whichdevice`: help was printed
            sys.exit(0)
        err_console.print(f"error: {escape(e.format_message())} (see --help)", soft_wrap=True)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except experiment.FrameworkUnavailable as e:
        err_console.print(f"error: {escape(str(e))}", soft_wrap=True)
        sys.exit(1)
    finally:
        signal.signal(signal.SIGTERM, previous)
    # Without standalone mode typer returns an Exit's code instead of raising it; Ctrl-C (and
    # SIGTERM, through _on_sigterm) is Exit(130).
    if isinstance(code, int) and code == INTERRUPTED:
        code = TERMINATED if _terminated else INTERRUPTED
        _say_interrupted("Terminated" if _terminated else "Interrupted")
    if isinstance(code, int) and code != 0:
        sys.exit(code)


INTERRUPTED = 130  # the shell's code for a process ended by SIGINT (Ctrl-C)
TERMINATED = 143  # ... and by SIGTERM


def _say_interrupted(what: str) -> None:
    """What was finished is in the journal; say how to finish the run."""
    path = journal.active
    if path is not None and path.exists():
        experiment_name = journal.Journal.read(path, part=True).header.get("experiment", "run")
        err_console.print(
            f"{what}. The finished cases are kept in {escape(str(path))}; finish the run with: "
            f"whichdevice {escape(experiment_name)} --resume {escape(str(path))}",
            soft_wrap=True,
        )
    else:
        err_console.print(f"{what}.")


if __name__ == "__main__":
    main()
