"""The options the measuring commands share, each defined once: ``--device``,
``--resume`` or ``--memory-limit`` has one name, one default and one help text in every
command that takes it, and a command passes only the word that differs ("one probe" where
the others say "one case").

Each factory, named after its option, returns a new ``typer.Option`` for a command's
signature (a new one each time: ``cli/base.apply_metavars`` sets its metavar in place)::

    from whichdevice.cli import options as opt

    device: Optional[str] = opt.device(),
    case_timeout: str = opt.case_timeout(120, "probe"),

The type `--help` shows comes from ``cli/base.py``'s METAVARS, keyed by the option's name,
as for every other option. Numeric options are read as text (``Optional[str]``) and checked
by ``core/validate.py``, so that bad input gets this tool's one line rather than click's.

Imports typer only: the command modules that use it import ``cli/common.py`` anyway, but
nothing here may pull the records, the journal or a framework into ``--help`` (and
``cli/common.py`` imports this module, never the other way round: ``resume_if_asked`` is
common's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from whichdevice.core.units import listed

DEFAULT_OUT = Path("whichdevice-results")
MEMORY_LIMIT_HELP = (
    "GiB the measuring process may hold before its case is stopped and recorded as out of memory "
    "(default: 90% of RAM, or of the container's limit when lower)."
)


def device() -> Any:
    return typer.Option(None, "--device", help="Only these devices, e.g. CPU:0,GPU:0. Default: every device.")


def framework(command: str, lead: str = "Framework to measure", default: str = "tensorflow") -> Any:
    """``--framework``: the help lists the frameworks ``command`` offers (``frameworks.offering``,
    derived from each framework's parts: the list the command checks it against)."""
    from whichdevice import frameworks

    return typer.Option(default, "--framework", help=frameworks.framework_help(command, lead))


def quick(help: str) -> Any:
    """``--quick``: ``help`` says what it reduces, and how long the run then takes."""
    return typer.Option(False, "--quick", help=help)


def min_time(per: str, default: float, quick: float | None = None, note: str | None = None) -> Any:
    """``--min-time``: "Seconds of steady samples per {per} (default {default}; {quick} with
    --quick; {note})." — ``default`` and ``quick`` are the values the command falls back on."""
    said = [f"default {default:g}"]
    if quick is not None:
        said.append(f"{quick:g} with --quick")
    if note is not None:
        said.append(note)
    return typer.Option(None, "--min-time", help=f"Seconds of steady samples per {per} ({'; '.join(said)}).")


def cpu_threads(limits: str = "the CPU run") -> Any:
    return typer.Option(None, "--cpu-threads", help=f"Limit {limits} to N threads (default: all cores).")


def memory_limit() -> Any:
    return typer.Option(None, "--memory-limit", help=MEMORY_LIMIT_HELP)


def case_timeout(default_s: float, case: str = "case") -> Any:
    """``--case-timeout`` with the command's default; ``case`` names what one case is to the
    user ("probe", "point", "device's run")."""
    return typer.Option(
        f"{default_s:g}",
        "--case-timeout",
        help=f"Seconds one {case} may take before it is killed and recorded as failed.",
    )


def out(*writes: str) -> Any:
    """``--out``: the folder for the JSON record and what else the command ``writes`` there."""
    return typer.Option(DEFAULT_OUT, "--out", help=f"Folder for {listed(('the JSON record', *writes))}.")


def json(command: str) -> Any:
    """``--json``: the record's path instead of ``OUT/<command>-<time>.json``."""
    return typer.Option(None, "--json", help=f"Write the JSON record here instead of OUT/{command}-<time>.json.")


def resume(run: str = "run", kept: str | None = "cases") -> Any:
    """``--resume``: ``run`` is what was interrupted ("run", "sweep"); ``kept`` what of it is
    not measured again (None: the command does not say)."""
    reused = f"Its options are reused; finished {kept} are kept." if kept else "Its options are reused."
    return typer.Option(
        None,
        "--resume",
        help=f"Finish an interrupted {run}: its .partial.jsonl journal (or the folder holding it). {reused}",
    )


def _of_model(option: str, help: str, for_model: bool) -> Any:
    """An option of the user's model; ``for_model``: the command also has built-in models, so
    ``help`` says the option is for ``--model``'s (``{of}``: " for --model", ``{whose}``: "--model's ")."""
    return typer.Option(None, option, help=help.format(of=" for --model" * for_model, whose="--model's " * for_model))


def input_shape(for_model: bool = True) -> Any:
    """``--input-shape`` of the user's model (``for_model``: see ``_of_model``)."""
    help = "Input shape of one sample{of}, e.g. 100 or 28,28,1 (default: the model's declared input)."
    return _of_model("--input-shape", help, for_model)


def classes(for_model: bool = True) -> Any:
    """``--classes`` of the user's model's synthetic labels (``for_model``: see ``_of_model``)."""
    help = "Number of classes for {whose}synthetic labels (1: binary; leave out: regression on the output shape)."
    return _of_model("--classes", help, for_model)


def samples(for_model: bool = True) -> Any:
    """``--samples`` per epoch of the user's model (``for_model``: see ``_of_model``)."""
    return _of_model("--samples", "Samples per epoch{of} (default 10000).", for_model)


def linear() -> Any:
    return typer.Option(False, "--linear", help="Linear axes in the plot (default log-log).")


def verbose(help: str) -> Any:
    return typer.Option(False, "--verbose", "-v", help=help)


def quiet() -> Any:
    return typer.Option(False, "--quiet", "-q", help="Print only where the record and the report are.")


def json_out() -> Any:
    return typer.Option(
        None,
        "--json-out",
        help="'-': write the JSON record to stdout, and to stderr only where the files are (as --quiet; for scripts).",
    )
