"""Shared pieces of the command line: the progress line, the options that only apply to
``--model``, and ``--resume``'s checks. Running a job (measuring, the record, the page, the
journal) is ``whichdevice.jobs``', re-exported here for the commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import Progress

from whichdevice import frameworks
from whichdevice.cli.base import err_console
from whichdevice.core.errors import UsageError
from whichdevice.jobs.running import (  # noqa: F401  (re-exported for the commands)
    command_line,
    find_devices,
    journal_header,
    measure_with_progress,
    open_journal,
    read_plan,
    record_paths,
    stamp,
    unreadable_resume,
)
from whichdevice.present import cliprogress
from whichdevice.workloads import userfile


def progress() -> Progress:
    """A progress line on stderr that fits the terminal (present/cliprogress.py)."""
    return cliprogress.bar_for(err_console)


def user_model(
    model_fn: userfile.UserFunction,
    fw: str,
    fields: dict[str, Any],
    shape: Any = None,
    n_classes: int | None = None,
    data_fn: userfile.UserFunction | None = None,
    *,
    check: Callable[..., dict] | None = None,
) -> dict:
    """The pre-flight of the user's model (and ``data_fn``'s dataset), said on stderr, in a child
    under the job's memory and time limits (``fields``: jobs.checked's): what ``check``
    finds (default: the case parameters, ``userfile.user_model_params``)."""
    err_console.print(f"Checking {escape(model_fn.text)} (imports {escape(fw)})…")
    with userfile.limits(fields["memory_limit_bytes"], fields["case_timeout_s"]):
        env = frameworks.env_module(fw).child_env("cpu")
        return (check or userfile.user_model_params)(model_fn, shape, n_classes, data_fn, env)


def user_text(user: dict | None, part: str = "model") -> str | None:
    """The user's model (``part="data"``: dataset) as FILE.py:FUNCTION, for the record, from
    what the pre-flight found (``user``'s ``model_file`` and ``model_fn``); None for a built-in."""
    if not user or not user.get(f"{part}_file"):
        return None
    return f"{user[f'{part}_file']}:{user[f'{part}_fn']}"


def traced(cases: list, trace_dir: str | None, **which: object) -> list:
    """``cases`` with ``--trace``'s folder in the parameters of those with ``which`` (e.g.
    ``part="both"``: the profiler around their steady steps); as they are without a folder."""
    if trace_dir is None:
        return cases
    return [
        c.model_copy(update={"params": {**c.params, "trace_dir": trace_dir}})
        if all(c.params.get(k) == v for k, v in which.items())
        else c
        for c in cases
    ]


def only_with_model(model: str | None, **given: object) -> None:
    """Options that only apply to ``--model`` (keyword: the option's parameter name): without
    ``--model``, the first of them given, in the order passed, is the error."""
    if model is not None:
        return
    for name, value in given.items():
        if value is not None:
            arg = "--" + name.replace("_", "-")
            raise UsageError(arg, "only applies to --model", f"Add --model FILE.py:FUNCTION, or drop {arg}.")


# ------------------------------------------------------------------ --resume
# A measuring command parses its arguments into a plan (a dataclass of JSON values: all that
# its cases and its record need), journals the plan in the header, and runs it. ``--resume``
# reads the plan back instead of parsing arguments: nothing is re-checked or re-asked.


_FINE_WITH_RESUME = "whichdevice.fine_with_resume"


def allow_with_resume(ctx: typer.Context, *names: str) -> None:
    """Options that say how to print, not what to measure: allowed with ``--resume``."""
    ctx.meta.setdefault(_FINE_WITH_RESUME, set()).update(names)


def reject_options_with_resume(ctx: typer.Context) -> None:
    """With ``--resume`` the interrupted run's options are reused: any other option given on
    the command line would be silently ignored, so it is an error instead."""
    if ctx.params.get("resume") is None:
        return
    fine = ctx.meta.get(_FINE_WITH_RESUME, set())
    for param in ctx.command.params:
        if param.name == "resume" or param.name in fine:
            continue
        source = ctx.get_parameter_source(param.name)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            option = max(param.opts, key=len)
            raise UsageError(
                option,
                "--resume reuses the interrupted run's options",
                f"Drop {option}, or start a new run without --resume.",
            )


def resume_if_asked(
    ctx: typer.Context, resume: Path | None, experiment: str, plan_cls: type, run: Callable[[Any, Any], None]
) -> bool:
    """A measuring command's first lines: refuse other options given with ``--resume``; with
    it, read the interrupted run's plan and journal and ``run(plan, resumed)`` them. True when
    it ran (the command returns), False for a new run::

        if resume_if_asked(ctx, resume, "train", TrainPlan, run_train):
            return
    """
    reject_options_with_resume(ctx)
    if resume is None:
        return False
    plan, resumed = read_plan(resume, experiment, plan_cls)
    run(plan, resumed)
    return True
