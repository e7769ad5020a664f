"""``whichdevice diagnose SCRIPT.py [-- ARGS...]``: the user's own training script.

The command's checks and pre-flight; ``cli/run.py``'s ``diagnose`` then measures the plan as it
measures a ``--model`` (``run_diagnose``: the same record, first screen, history and compare). The
plan's class is passed in (``DiagnosePlan``), so this module does not import ``cli/run.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.markup import escape

from whichdevice import jobs
from whichdevice.cli.common import err_console
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import parse_positive_int
from whichdevice.core.units import seconds
from whichdevice.frameworks.common import nvidia
from whichdevice.measure import experiment, history
from whichdevice.workloads import scriptrun
from whichdevice.workloads import script as script_workload
from whichdevice.workloads import scriptplan, userfolder
from whichdevice.workloads.suite import parse_budget

SUFFIXES = (".py", ".ipynb")


def _job(words: list[str]) -> dict[str, Any]:
    """SCRIPT and its arguments, checked: a file that exists, a .py or a notebook with code."""
    path = Path(words[0])
    if path.suffix not in SUFFIXES:
        raise UsageError(
            "SCRIPT",
            f"'{words[0]}' is not a Python script or notebook (.py, .ipynb)",
            "Pass your training script, with its own arguments after --: whichdevice diagnose train.py -- --epochs 1",
        )
    if not path.is_file():
        raise UsageError("SCRIPT", f"'{words[0]}' is not a file", "Pass the path of your training script")
    job: dict[str, Any] = {"script": str(path), "args": list(words[1:])}
    scriptrun.remember_terminal()
    if path.suffix == ".ipynb":
        try:
            job["source"] = script_workload.notebook_source(path)
        except (ValueError, OSError, UnicodeDecodeError, TypeError, AttributeError) as e:
            raise UsageError(
                "SCRIPT",
                f"'{path}' cannot be read as a notebook ({type(e).__name__}: {str(e)[:120]})",
                f"Convert it first: `jupyter nbconvert --to script {path.name}`, then diagnose the .py it writes",
            ) from None
    return job


def plan(
    words: list[str], given: dict[str, str | None], budget: str | None, params: Mapping[str, Any], plan_class: Any
) -> Any:
    """The checked plan of ``diagnose SCRIPT``: the options (``params``: the command's, by name),
    then the pre-flight (one run of the script on the CPU, a refusal being one line and exit 2),
    then the cases sized to the budget."""
    job = _job(words)
    for option, value in given.items():
        if value is not None:
            raise UsageError(
                option,
                "does not go with a SCRIPT: the script's own model, data and batch are measured",
                f"Leave {option} out, or diagnose a model function with --model FILE.py:FUNCTION",
            )
    budget_s = parse_budget(budget)
    entry_call = parse_positive_int(params.get("entry"), "--entry", "2", maximum=10_000)
    fields = jobs.checked(params, "diagnose", png=False)
    return plan_job(job, budget_s, fields, plan_class, entry_call=entry_call)


def plan_job(
    job: dict[str, Any], budget_s: float, fields: dict[str, Any], plan_class: Any, *, entry_call: int | None = None
) -> Any:
    """The pre-flight (one run of the script on the CPU, a refusal being one line and exit 2),
    then the cases sized to the budget: ``diagnose SCRIPT``'s and the script ``--model`` writes
    (``job``'s ``model_file``: the user's file, whose folder is kept as it was, not the script's)."""
    name = escape(job.get("name") or Path(job["script"]).name)
    # From its first run on, what the script writes in the user's folder is put back after each
    # run (workloads/userfolder.py); a refused or interrupted plan keeps none of it.
    userfolder.watch(job.get("model_file") or job["script"], fields["json_file"])
    try:
        err_console.print(f"Running {name} once on the CPU to find its training step (pre-flight)…")
        facts = scriptplan.preflight(
            job,
            budget_s,
            memory_limit_bytes=fields["memory_limit_bytes"],
            case_timeout_s=fields.get("case_timeout_s"),
            entry_call=entry_call,
            cpu_threads=fields.get("cpu_threads"),
        )
        if facts.get("framework"):
            experiment.require_installed(facts["framework"])
        err_console.print(found_line(facts))
        _, others = scriptplan.entry_words(facts)
        if others:
            err_console.print(escape(others[0].upper() + others[1:] + "."))
        # GPU-only variants are planned (and cut for the budget) only where a GPU can be measured: on a
        # machine with no NVIDIA driver, "cudnn_benchmark not measured on a GPU: ... more than the budget
        # leaves" read as if the budget were the reason (pytorch-cifar's report)
        wanted = fields.get("devices_wanted")
        gpu = nvidia.driver_present() and (wanted is None or any(w.startswith("GPU") for w in wanted))
        # the last run of the same command on this machine: its plan's decisions hold while the costs
        # stay near them, so two runs ask the same question of the script
        prior = history.latest(
            "diagnose", lambda r: scriptplan.prior_plan(r, job, budget_s), mentions=Path(job["script"]).name
        )
        sizing = scriptplan.size(facts, budget_s, gpu=gpu, prior=prior)
        if sizing.get("baseline_only"):  # past the budget: its case may take what the baseline needs
            fields["case_timeout_s"] = fields.get("case_timeout_s") or sizing["case_timeout_s"]
            err_console.print(escape(f"Measuring the baseline alone: {sizing['baseline_only']}."))
        if sizing.get("preflight_only"):  # past the budget even alone: the pre-flight's steps are the answer
            err_console.print(escape(f"Answering from the pre-flight's steps: {sizing['preflight_only']}."))
    except BaseException:
        userfolder.abandon()
        raise
    user = scriptplan.user_params(job, facts)
    return plan_class(
        model=" ".join([job["script"], *job["args"]]),
        data=None,
        user=user,
        batch=int(facts[scriptplan.BATCH] or 0),
        samples=int(facts[scriptplan.BATCH] or 0) * scriptplan.STEPS,
        budget_s=budget_s,
        sizing=sizing,
        framework=facts["framework"],
        **fields,
    )


def found_line(facts: dict[str, Any]) -> str:
    """The pre-flight's line: the entry point, the model and batch where it read them, the framework."""
    model = f"{escape(str(facts['model']))}, " if facts.get("model") else ""  # a tape loop: no model seen
    user_batch = facts[scriptplan.BATCH]  # 0: a loop whose batch the pre-flight can't read
    batch = f"batch {user_batch}, " if user_batch else ""
    trainer = scriptplan.trainer_name(facts.get("trainer"))
    under = f" inside {escape(trainer)}" if trainer else ""  # the loop the user wrote nothing of
    which, _ = scriptplan.entry_words(facts)
    which = f", {escape(which)}" if which else ""
    part = facts.get("partial")
    if part:  # stopped at its limit: what it timed until then
        steps = f"{part['steps']} step{'s' if part['steps'] != 1 else ''}"
        first = f" (the first {seconds(facts['first_step_s'])})" if part["steps"] > 1 else ""
        return (
            f"Found {escape(str(facts['entry'] or 'a training step'))}{under} ({model}{batch}"
            f"{escape(str(facts['framework'] or 'framework unknown'))}){which}: stopped at its "
            f"{part['stopped_s']:.0f} s limit after timing {steps}; a step took {seconds(facts['step_s'])}{first}, "
            f"the imports and data loading {facts['setup_s']:.1f} s."
        )
    return (
        f"Found {escape(str(facts['entry']))}{under} ({model}{batch}{escape(facts['framework'])}){which}: a step took "
        f"{seconds(facts['step_s'])}, the imports and data loading {facts['setup_s']:.1f} s."
    )
