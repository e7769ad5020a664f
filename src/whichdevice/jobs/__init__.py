"""Jobs: what a measuring command runs, described once, and run one way.

A command (``cli/<name>.py``), the Python API (``api.py``) and the notebook magic
(``magics.py``) all go the same way:

1. **Build the job.** The command's options are checked (``core.validate``: the first bad one
   is one ``UsageError`` line naming the option and its fix) into a ``Job`` subclass: a
   dataclass of JSON values holding all that its cases and its record need. ``Job`` holds what
   every command has (the record's path, the command line, the device filter and the limits);
   the subclass adds the command's own. The job is journaled in the header of the run's
   journal, so ``--resume`` reads the same job back instead of parsing options again.
2. **Run it.** ``job.request(experiment, framework, cases_for, options)`` is the one way a
   ``measure.session.Request`` is built from a job; ``jobs.run(job, request,
   loglog=...)`` is the one run skeleton: measure with progress (each finished case journaled),
   write the record, close the journal, draw the page (``jobs.page``: the record's analysis
   formatted by ``present/pages/<name>.py``) and print the record's lines after it. A record
   written outside a measuring job (``result.save``, the Keras callback, ``import``) takes the
   same output step (``jobs.write_record``).

Progress goes through ``session.Progress`` callbacks: on the CLI a bar on stderr
(``present/cliprogress.py``); in the API and a notebook a line updated in place
(``present/progress.py``), chosen with ``jobs.running.progress_view``. Pages print on
``present/screen.py``'s consoles, which the API and the magic redirect to keep the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from whichdevice.core.validate import parse_memory_limit, parse_positive_float, parse_positive_int

if TYPE_CHECKING:  # imported where used: `COMMAND --help` defines its Job without the measuring session
    from whichdevice.jobs.running import finish, page, run, viewing, write_record
    from whichdevice.measure import session


@dataclass(kw_only=True)
class Job:
    """What every measuring command's job holds (JSON values only: journaled for ``--resume``)."""

    json_file: str  # the record's path
    command: list[str]  # the command as typed (or the API call), for the record
    devices_wanted: list[str] | None = None  # --device (None: every device the framework sees)
    min_time_s: float | None = None  # seconds of steady samples per point (None: the request's default)
    cpu_threads: int | None = None
    case_timeout_s: float | None = None  # None: the request's default, or the command's (run: the budget)
    memory_limit_bytes: int | None = None  # None: the runner's default (90 % of RAM)
    quick: bool = False  # --quick: the command's shorter run

    def request(
        self, experiment: str, framework: str, cases_for: session.CasesFor, options: dict[str, Any], **more: Any
    ) -> session.Request:
        """This job's ``measure.session.Request`` (``more``: the request's other fields, or
        ones this job sets otherwise, e.g. a budget)."""
        from whichdevice.measure import session

        limits: dict[str, Any] = {
            "devices": self.devices_wanted,
            "cpu_threads": self.cpu_threads,
            "memory_limit_bytes": self.memory_limit_bytes,
        }
        if self.min_time_s is not None:
            limits["min_time_s"] = self.min_time_s
        if self.case_timeout_s is not None:
            limits["case_timeout_s"] = self.case_timeout_s
        return session.Request(experiment, framework, cases_for, options, self.command, **(limits | more))


def checked(
    given: Mapping[str, Any],
    experiment_name: str,
    *,
    min_time: tuple[float, str] | None = None,
    case_timeout: str | None = None,
    png: bool = True,
) -> dict[str, Any]:
    """The options every measuring command shares, read from ``given`` (the command's parameters
    by name: typer's ``ctx.params``) and checked in this order (the first bad one is the error):
    ``--device``, ``--min-time`` (``min_time``: its default, the example of its fix),
    ``--cpu-threads``, ``--case-timeout`` (``case_timeout``: the example), ``--memory-limit``,
    ``--out``/``--json`` -> the ``Job`` fields they set, with ``--quick`` (a command without one of
    them leaves it out: its default)."""
    from whichdevice.jobs.running import command_line, record_paths
    from whichdevice.measure import experiment

    fields: dict[str, Any] = {"command": command_line()}
    if "quick" in given:
        fields["quick"] = bool(given["quick"])
    if "device" in given:
        fields["devices_wanted"] = experiment.parse_device_filter(given["device"])
    if "min_time" in given and min_time is not None:
        default, example = min_time
        fields["min_time_s"] = parse_positive_float(given["min_time"], "--min-time", example) or default
    if "cpu_threads" in given:
        fields["cpu_threads"] = parse_positive_int(given["cpu_threads"], "--cpu-threads", "4")
    if "case_timeout" in given and case_timeout is not None:
        fields["case_timeout_s"] = parse_positive_float(given["case_timeout"], "--case-timeout", case_timeout)
    fields["memory_limit_bytes"] = parse_memory_limit(given.get("memory_limit"))
    json_file, png_file = record_paths(given["out"], given.get("json_path"), experiment_name)
    fields["json_file"] = str(json_file.absolute())
    if png:
        fields["png_file"] = str(png_file.absolute())
    return fields


def __getattr__(name: str) -> Any:
    """The package's API from ``jobs/running.py``, imported on first use: a command's ``--help``
    imports ``Job`` only."""
    if name in ("finish", "page", "run", "viewing", "write_record"):
        from whichdevice.jobs import running

        return getattr(running, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Job", "checked", "finish", "page", "run", "viewing", "write_record"]
