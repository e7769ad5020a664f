"""`whichdevice run`: the default suite on this machine, one verdict, proven fixes, one report."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape

from whichdevice import frameworks
from whichdevice.cli.base import app, console, err_console
from whichdevice.cli import options as opt
from whichdevice.jobs import Job
from whichdevice.core.errors import UsageError
from whichdevice.workloads.defaults import DEFAULT_BUDGET_S
from whichdevice.core.validate import (
    parse_choice,
    parse_choice_list,
    parse_positive_int,
    parse_shape,
)

if TYPE_CHECKING:
    from whichdevice.measure import session
    from whichdevice.core import records
    from whichdevice.workloads import userfile
    from whichdevice.present.cliprogress import CliProgress
    from whichdevice.measure.journal import JournalState


RUN_MIN_TIME_S = 0.05  # steady seconds per point: short, the suite has many points
DIAGNOSE_FRAMEWORK = "tensorflow"
VERBOSE_HELP = "Also print every finding, the fix table, the notes and every warning."


@dataclass
class RunPlan(Job):
    """A checked `run`: what its cases and record need, journaled so ``--resume`` runs the same."""

    frameworks: list[str]  # several: side by side, one record
    budget_s: float


@app.command()
def run(
    ctx: typer.Context,
    budget: Optional[str] = typer.Option(
        None,
        "--budget",
        help=f"Seconds per device (default {DEFAULT_BUDGET_S:g}). Cases that do not fit are recorded as skipped.",
    ),
    device: Optional[str] = opt.device(),
    cpu_threads: Optional[str] = opt.cpu_threads(),
    memory_limit: Optional[str] = opt.memory_limit(),
    framework: str = opt.framework(
        "run", "Framework(s) to measure, several comma-separated side by side in one report"
    ),
    out: Path = opt.out("the plots", "the HTML report"),
    json_path: Optional[Path] = opt.json("run"),
    resume: Optional[Path] = opt.resume(),
    verbose: bool = opt.verbose(VERBOSE_HELP),
    quiet: bool = opt.quiet(),
    json_out: Optional[str] = opt.json_out(),
) -> None:
    """The default suite: matmul crossover, the seeds' training cases, a batch sweep and the
    automatic fixes, each measured; then one verdict and an HTML report."""
    from whichdevice import jobs
    from whichdevice.cli.common import resume_if_asked
    from whichdevice.workloads.suite import parse_budget

    output = _output_options(ctx, verbose, quiet, json_out)
    if resume_if_asked(ctx, resume, "run", RunPlan, lambda plan, resumed: run_suite(plan, resumed, output)):
        return
    plan = RunPlan(
        frameworks=parse_choice_list(framework, "--framework", frameworks.offering("run")),
        budget_s=parse_budget(budget),
        **jobs.checked(ctx.params, "run", png=False),
    )
    run_suite(plan, None, output)


def run_suite(plan: RunPlan, resumed: JournalState | None, output: ScriptOutput) -> None:
    """Run ``plan`` (continuing ``resumed``'s journal): measured, its record written, its page drawn."""
    from whichdevice.measure.journal import journal_path

    request = run_request(plan, plan.frameworks[0])
    if len(plan.frameworks) == 1:
        output.run(plan, request, resumed)
        return
    # Frameworks side by side: one after the other, one record; their part journals, kept until
    # the record is written, are closed with the run's.
    parts = [journal_path(_part_json(Path(plan.json_file), f)) for f in plan.frameworks]
    output.run(plan, request, resumed, measure=lambda _request, **_: _run_frameworks(plan, resumed), journals=parts)


class ScriptOutput:
    """``--verbose``/``--quiet``/``--json-out -``: how much the page says, and where. With
    ``--json-out -`` the record goes to stdout and every other line to stderr."""

    def __init__(self, verbose: bool = False, quiet: bool = False, json_out: str | None = None) -> None:
        self.render: dict[str, Any] = {"verbose": verbose, "quiet": quiet or json_out == "-"}
        self.quiet = quiet or json_out == "-"  # only the final answer: no provisional one, no phase lines
        self.json_out = json_out
        self._file = None
        self._redirected = False

    def __enter__(self) -> ScriptOutput:
        if self.json_out == "-":
            self._redirected = True
            self._file = getattr(console, "_file", None)  # None: the console follows sys.stdout
            console.file = sys.stderr
        return self

    def __exit__(self, *exc) -> None:
        if self._redirected:
            console._file = self._file  # what the file setter does; its type (IO[str]) leaves out None

    def run(self, job: Job, request: session.Request, resumed: JournalState | None, **how: Any) -> None:
        """The suite's job (run, diagnose) run by ``jobs.run``: measured (``how``'s ``measure``,
        default the suite's with its provisional answer), the record written, its journals
        closed, the page drawn as asked (the plots' stem: the record's), the record on stdout
        with ``--json-out -``; exit 1 when no case that decides the answer was measured."""
        from whichdevice import jobs

        how.setdefault("measure", functools.partial(measure_suite, quiet=self.quiet))
        record = jobs.run(job, request, loglog=True, resumed=resumed, printing=self, **how, **self.render)
        self.emit(Path(job.json_file))
        exit_if_nothing_decided(record)

    def emit(self, json_file: Path) -> None:
        """``--json-out -``: the record as written, on stdout."""
        if self.json_out == "-":
            sys.stdout.write(json_file.read_text(encoding="utf-8"))
            sys.stdout.flush()


def _output_options(ctx: typer.Context, verbose: bool, quiet: bool, json_out: str | None) -> ScriptOutput:
    """Check the output options; they say how to print, not what to measure, so they are
    allowed with --resume (marked as defaults for reject_options_with_resume)."""
    from whichdevice.cli.common import allow_with_resume

    if json_out is not None and json_out != "-":
        raise UsageError("--json-out", f"takes '-' (stdout), not '{json_out}'", "Use --json PATH to write a file.")
    if verbose and quiet:
        raise UsageError("--quiet", "contradicts --verbose", "Pass one of them.")
    allow_with_resume(ctx, "verbose", "quiet", "json_out")
    return ScriptOutput(verbose, quiet, json_out)


def run_request(plan: RunPlan, fw: str) -> session.Request:
    from whichdevice.workloads.suite import suite_cases

    return _suite_request(
        "run", fw, lambda found, d: suite_cases(fw, d.name, gpu_present=bool(found.gpus)), plan, options={}
    )


def _suite_request(name: str, fw: str, cases_for, plan, *, options: dict, notes=()) -> session.Request:
    """run and diagnose: each device its own budget; a case may take the budget (at least 60 s)."""
    return plan.request(
        name,
        fw,
        cases_for,
        options,
        min_time_s=RUN_MIN_TIME_S,
        case_timeout_s=plan.case_timeout_s or max(plan.budget_s, 60.0),
        budget_s=plan.budget_s,
        notes=list(notes),
        # diagnose: each point samples long enough for a few samples of the user's slowest step
        point_cap_s=(getattr(plan, "sizing", None) or {}).get("point_cap_s"),
        rounds=(getattr(plan, "sizing", None) or {}).get("rounds"),
        decides_answer=_decides_answer,
    )


def _decides_answer(spec: records.CaseSpec) -> bool:
    """What the provisional answer waits for: the answer's cases, and the op traces of the
    GPU predicted on a machine without one."""
    from whichdevice.analysis import prediction
    from whichdevice.analysis.suite import decides_answer

    return decides_answer(spec) or prediction.is_trace(spec)


def _part_json(json_file: Path, fw: str) -> Path:
    return json_file.with_name(f"{json_file.stem}.{fw}{json_file.suffix}")


def _run_frameworks(plan: RunPlan, resumed: JournalState | None) -> records.RunRecord:
    """``run`` for each framework in turn (each device of each its own budget, never two at
    once), merged into one record. The run's journal (``run-X.partial.jsonl``) holds the plan;
    each framework journals its cases in a part journal beside it (``run-X.keras-jax.partial.jsonl``,
    header ``part_of``), kept until the merged record is written. Resuming continues each
    framework from its part journal, or starts it if it had not started."""
    from whichdevice.cli.common import find_devices, journal_header, open_journal
    from whichdevice.measure import experiment
    from whichdevice.measure.journal import Journal, journal_path

    for f in plan.frameworks:  # fail before measuring anything if one is missing
        experiment.require_installed(f)
    found_chosen = []
    for f in plan.frameworks:  # every --device checked before anything is journaled
        found = find_devices(f)
        experiment.select_devices(found, plan.devices_wanted)  # a bad --device: refused before measuring
        found_chosen.append(found)
    json_file = Path(plan.json_file)
    top = open_journal("run", plan, resumed)
    parts = []
    for f, found in zip(plan.frameworks, found_chosen):
        part_json = _part_json(json_file, f)
        part_plan = dataclasses.replace(plan, frameworks=[f], json_file=str(part_json))
        path = journal_path(part_json)
        if resumed is not None and path.exists():
            state, journal = Journal.read(path, "--resume", experiment="run", part=True), Journal(path)
        else:  # a part journal names the run it belongs to
            state = None
            journal = Journal.create(path, {**journal_header("run", part_plan), "part_of": str(top.path.absolute())})
        parts.append(measure_suite(run_request(plan, f), journal=journal, resumed=state, found=found))
    options = {**parts[0].options, "framework": ",".join(plan.frameworks)}
    return experiment.merge_records(parts, options)


def measure_suite(request: session.Request, *, journal, resumed, found=None, quiet=None) -> records.RunRecord:
    """The suite measured with its progress; ``quiet`` not None (one framework: run, diagnose):
    with the provisional answer after round 1 of the answer's cases, shown in a terminal
    unless ``quiet``, and kept in the record."""
    from whichdevice.cli.common import measure_with_progress

    if quiet is None:  # several frameworks, one after the other: no provisional answer per part
        return measure_with_progress(request, journal=journal, resumed=resumed, found=found)
    early = ProvisionalAnswer(quiet)
    record = measure_with_progress(
        request, journal=journal, resumed=resumed, found=found, quiet=quiet, on_provisional=early
    )
    return record.model_copy(update={"provisional": early.value}) if early.value is not None else record


class ProvisionalAnswer:
    """``measure_with_progress``'s ``on_provisional``: the answer from round 1 of the cases
    that decide it, printed above the progress line in a terminal unless ``quiet``
    ("Provisional answer (round 1 of 2): ..."), and kept (``value``) for the record."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.started = time.monotonic()
        self.value: records.Provisional | None = None

    def __call__(self, record: records.RunRecord, shown: CliProgress) -> None:
        from whichdevice.analysis import facade
        from whichdevice.core import records
        from whichdevice.present import firstscreen

        rounds = int(str(record.options.get("rounds") or 2))
        try:
            answer, gist = firstscreen.provisional_answer(record, facade.suite(record).verdict)
        except Exception:  # noqa: BLE001 (an early answer is a courtesy: never lose the run over it)
            return
        self.value = records.Provisional(
            after_s=round(time.monotonic() - self.started, 1),
            rounds=rounds,
            cases=len(record.results),
            answer=answer,
            gist=gist,
        )
        if shown.live and not self.quiet:
            lines = [f"Provisional answer (round 1 of {rounds}):", *(f"  {a}" for a in answer)]
            lines.append(f"  Round {rounds} confirms it or changes it; the full report follows.")
            for i, line in enumerate(lines):
                style = "bold green" if i <= 1 else "dim" if i == len(lines) - 1 else None
                for part in firstscreen.hanging(line, shown.console.width):
                    firstscreen.print_line(shown.console, part, style)


@dataclass
class DiagnosePlan(Job):
    """A checked `diagnose`: the user's model as the pre-flight found it and the suite's
    settings, journaled so ``--resume`` runs the same (without a second pre-flight)."""

    model: str  # --model / --data as typed, for the record
    data: str | None
    user: dict
    batch: int
    samples: int
    budget_s: float
    # The cases sized from the pre-flight's measured step (workloads.suite.size_user_cases);
    # None in a journal written before sizing existed (the sizes as asked).
    sizing: dict | None = None
    framework: str = DIAGNOSE_FRAMEWORK  # --framework (journals from before it: tensorflow)


# This command's own options (the shared ones are cli/options.py's), kept out of the signature
# so that it reads as one line per option.
DIAGNOSE_MODEL_OPTION = typer.Option(
    None,
    "--model",
    help="Your model: FILE.py:FUNCTION returning a Keras model (compiled or not), or with --framework torch "
    "an nn.Module, (module, loss_fn) or (module, loss_fn, optimizer). Required without a SCRIPT or --resume.",
)
DIAGNOSE_FRAMEWORK_OPTION = opt.framework(
    "diagnose", "Framework of your model (a Keras backend other than TensorFlow: is the backend the cause?)"
)
DIAGNOSE_DATA_OPTION = typer.Option(
    None,
    "--data",
    help="FILE.py:FUNCTION returning a tf.data.Dataset of (x, y), or with --framework torch a DataLoader or "
    "iterable of (x, y) batches (default: synthetic data).",
)
DIAGNOSE_BATCH_OPTION = typer.Option(
    None, "--batch", help="Your batch size (default 32): the baseline every fix is measured against."
)
DIAGNOSE_BUDGET_OPTION = typer.Option(None, "--budget", help=f"Seconds per device (default {DEFAULT_BUDGET_S:g}).")
DIAGNOSE_ENTRY_OPTION = typer.Option(
    None,
    "--entry",
    help="With a SCRIPT that trains more than once (fit called for a teacher, then a student): which call to "
    "measure, counted from 1 (default: the one with the most steps, where the pre-flight can count them).",
)


DIAGNOSE_SCRIPT_ARGUMENT = typer.Argument(
    None,
    metavar="[SCRIPT.py|NOTEBOOK.ipynb [-- ARGS...]]",
    help="Your own training script (or notebook), run as you run it, its training step captured and measured; "
    "its arguments after --. Instead of --model.",
    show_default=False,
)


@app.command()
def diagnose(
    ctx: typer.Context,
    script: Optional[list[str]] = DIAGNOSE_SCRIPT_ARGUMENT,
    model: Optional[str] = DIAGNOSE_MODEL_OPTION,
    framework: str = DIAGNOSE_FRAMEWORK_OPTION,
    input_shape: Optional[str] = opt.input_shape(for_model=False),
    classes: Optional[str] = opt.classes(for_model=False),
    data: Optional[str] = DIAGNOSE_DATA_OPTION,
    samples: Optional[str] = opt.samples(for_model=False),
    batch: Optional[str] = DIAGNOSE_BATCH_OPTION,
    budget: Optional[str] = DIAGNOSE_BUDGET_OPTION,
    entry: Optional[str] = DIAGNOSE_ENTRY_OPTION,
    device: Optional[str] = opt.device(),
    cpu_threads: Optional[str] = opt.cpu_threads(),
    memory_limit: Optional[str] = opt.memory_limit(),
    out: Path = opt.out("the plots", "the HTML report"),
    json_path: Optional[Path] = opt.json("diagnose"),
    resume: Optional[Path] = opt.resume("diagnose"),
    verbose: bool = opt.verbose(VERBOSE_HELP),
    quiet: bool = opt.quiet(),
    json_out: Optional[str] = opt.json_out(),
) -> None:
    """The suite on YOUR training script or model: who wins at your batch, the batch sweep, every
    automatic fix measured — and the device and settings to use."""
    from whichdevice import jobs
    from whichdevice.cli.common import resume_if_asked
    from whichdevice.workloads.suite import parse_budget

    output = _output_options(ctx, verbose, quiet, json_out)
    if resume_if_asked(
        ctx, resume, "diagnose", DiagnosePlan, lambda plan, resumed: run_diagnose(plan, resumed, output)
    ):
        return
    if script:  # the user's own script: cli/scriptcmd.py plans it
        from whichdevice.cli import scriptcmd

        given = {"--model": model, "--data": data, "--batch": batch, "--input-shape": input_shape, "--classes": classes}
        given |= {"--samples": samples, "--framework": framework if framework != frameworks.DEFAULT else None}
        plan = scriptcmd.plan(script, given, budget, ctx.params, DiagnosePlan)
        run_diagnose(plan, None, output)
        return
    if entry is not None:
        raise UsageError(
            "--entry",
            "goes with a SCRIPT: it chooses which of the script's training calls is measured",
            "Leave --entry out with --model, or diagnose your script: whichdevice diagnose train.py --entry 2",
        )
    # Each option is checked in this order: the first bad one is the error.
    fw = parse_choice(framework, "--framework", frameworks.offering("diagnose"))
    model_fn, data_fn = _model_and_data(model, data, fw)
    shape = parse_shape(input_shape)
    n_classes = parse_positive_int(classes, "--classes", "10", maximum=1_000_000)
    n_samples = parse_positive_int(samples, "--samples", "10000", maximum=10_000_000) or 10_000
    given_batch = parse_positive_int(batch, "--batch", "32", maximum=65536)
    budget_s = parse_budget(budget)
    fields = jobs.checked(ctx.params, "diagnose", png=False)
    plan = diagnose_plan(
        model_fn, data_fn, fw, shape, n_classes, given_batch, n_samples, budget_s, samples is not None, fields
    )
    run_diagnose(plan, None, output)


def diagnose_plan(
    model_fn: userfile.UserFunction,
    data_fn: userfile.UserFunction | None,
    fw: str,
    shape,
    n_classes: int | None,
    given_batch: int | None,
    n_samples: int,
    budget_s: float,
    samples_given: bool | str,
    fields: dict,
) -> DiagnosePlan:
    """The checked options -> the plan, after the pre-flight (held to the run's memory limit and
    the budget, as the cases are); ``fields``: the job's shared ones (the command's
    and the API's)."""
    from whichdevice.measure import experiment
    from whichdevice.workloads import userfile

    experiment.require_installed(fw)
    with userfile.limits(fields["memory_limit_bytes"], max(budget_s, 60.0), timeout_from="--budget"):
        user, user_batch, sizing = _diagnose_preflight(
            model_fn, shape, n_classes, data_fn, fw, given_batch, budget_s, n_samples, samples_given
        )
    return DiagnosePlan(
        model=model_fn.text,
        data=data_fn.text if data_fn else None,
        user=user,
        batch=user_batch,
        samples=n_samples,
        budget_s=budget_s,
        sizing=sizing,
        framework=fw,
        **fields,
    )


def _diagnose_preflight(
    model_fn: userfile.UserFunction,
    shape,
    n_classes: int | None,
    data_fn: userfile.UserFunction | None,
    fw: str,
    given_batch: int | None,
    budget_s: float,
    n_samples: int,
    samples_given: bool | str,
) -> tuple[dict, int, dict | None]:
    """``diagnose``'s pre-flight: the case parameters, the batch and (Keras) the sizing."""
    from whichdevice.workloads.suite import plan_user_suite

    if fw not in frameworks.KERAS:  # an nn.Module: torch's own pre-flight (torch_diagnose.plan)
        # One real training step, in a child, and steps timed at the batch: the case parameters,
        # the batch (--batch, else the DataLoader's own batch size, else 32), the cases sized to the budget.
        err_console.print(f"Checking {escape(model_fn.text)}: one training step (imports torch)…")
        from whichdevice.workloads import torch_diagnose

        env = frameworks.env_module("torch").child_env("cpu")
        return torch_diagnose.plan(
            model_fn, shape, n_classes, data_fn, given_batch, env, budget_s=budget_s, samples=n_samples
        )
    user_batch = given_batch or 32
    err_console.print(
        f"Checking {escape(model_fn.text)}: one training step at batch {user_batch} (imports {escape(fw)})…"
    )
    user, sizing = plan_user_suite(
        model_fn,
        shape,
        n_classes,
        data_fn,
        fw,
        batch=user_batch,
        samples=n_samples,
        budget_s=budget_s,
        samples_given=samples_given,
    )
    return user, user_batch, sizing


def _model_and_data(
    model: str | None, data: str | None, fw: str
) -> tuple[userfile.UserFunction, userfile.UserFunction | None]:
    """``--model`` (required) and ``--data`` -> the user's functions; a tf.data dataset is
    TensorFlow's, so not for keras-jax or keras-torch."""
    from whichdevice.workloads import userfile

    if model is None:
        raise UsageError(
            "--model",
            "is required",
            "Pass your training script (whichdevice diagnose train.py -- ARGS) or your model as --model "
            "FILE.py:FUNCTION (or --resume JOURNAL to finish an interrupted diagnose).",
        )
    model_fn = userfile.parse_spec(model, "--model")
    data_fn = userfile.parse_spec(data, "--data") if data else None
    if fw in frameworks.KERAS and fw not in frameworks.TFDATA and data_fn is not None:
        raise UsageError(
            "--data",
            f"a tf.data dataset is TensorFlow's; --framework {fw} measures your Keras model on synthetic data",
            "Leave --data out, or use --framework tensorflow",
        )
    return model_fn, data_fn


def _diagnose_cases(plan: DiagnosePlan):
    """The cases of one device for ``plan``'s framework."""
    from whichdevice.workloads.suite import user_cases

    fw = plan.framework
    if plan.user.get("script"):  # the user's script (workloads/scriptplan.py)
        from whichdevice.workloads import scriptplan

        return lambda found, d: scriptplan.cases(fw, d.name, plan.user, plan.sizing or {})
    if fw not in frameworks.KERAS:  # an nn.Module (torch)
        from whichdevice.workloads import torch_diagnose

        return lambda found, d: torch_diagnose.cases(
            d.name, user=plan.user, batch=plan.batch, samples=plan.samples, budget_s=plan.budget_s, sizing=plan.sizing
        )
    # A Keras model on another backend (keras-jax, keras-torch): what does not apply there is left out.
    return lambda found, d: [
        c
        for c in user_cases(fw, d.name, user=plan.user, batch=plan.batch, samples=plan.samples, sizing=plan.sizing)
        if frameworks.unsupported(fw, c.params) is None
    ]


def diagnose_request(plan: DiagnosePlan) -> session.Request:
    """``plan``'s request: its cases, the record's options and notes (the command's and the API's)."""
    from whichdevice.workloads.suite import sizing_options

    fw = plan.framework
    request = _suite_request(
        "diagnose",
        fw,
        _diagnose_cases(plan),
        plan,
        options={
            "model": plan.model,
            "data": plan.data,
            "batch": plan.batch,
            "samples": plan.samples,
            **sizing_options(plan.sizing),
            **_framework_options(plan),
        },
        notes=_diagnose_notes(plan),
    )
    if fw not in frameworks.KERAS and not plan.sizing:  # a journal from before the torch plan: its fixed point cap
        from whichdevice.workloads import torch_diagnose

        request = dataclasses.replace(request, point_cap_s=torch_diagnose.POINT_CAP_S)
    return request


def run_diagnose(plan: DiagnosePlan, resumed: JournalState | None, output: ScriptOutput | None = None) -> None:
    """Run ``plan`` (continuing ``resumed``'s journal): measured, its record written, its page drawn."""
    output = output or ScriptOutput()
    measure = functools.partial(_measure_script, plan, output.quiet) if plan.user.get("script") else None
    output.run(plan, diagnose_request(plan), resumed, **({"measure": measure} if measure else {}))


def _measure_script(plan: DiagnosePlan, quiet: bool, request: session.Request, **how: Any) -> records.RunRecord:
    """The user's script measured with its folder watched: however it ends, the folder is as it
    was and the screen says what the script wrote; what the script did per step (data wait,
    copies, reads) and what it wrote are the record's notes."""
    from whichdevice.workloads import scriptplan, userfolder

    userfolder.watch(str(plan.user["script"]), plan.json_file)  # started by the pre-flight, or here on --resume
    try:
        record = measure_suite(request, quiet=quiet, **how)
    finally:
        written = userfolder.finish(plan.json_file)
        if written:
            where = userfolder.files_dir(plan.json_file)
            shown = where if not where.is_relative_to(Path.cwd()) else where.relative_to(Path.cwd())
            err_console.print(escape(userfolder.summary(written, f"{shown}{os.sep}")), soft_wrap=True)
    notes = scriptplan.record_notes(record) + userfolder.notes(written)
    options = {**record.options, "script_wrote": [w.path for w in written]} if written else record.options
    return record.model_copy(update={"notes": notes, "options": options})


def exit_if_nothing_decided(record: records.RunRecord) -> None:
    """Exit 1 when no case that decides the answer was measured (every one failed or was
    skipped): the page says "not measured" and why; a script must not read it as a verdict."""
    from whichdevice.analysis.suite import answer_cases

    if not any(r.status == "ok" for r in answer_cases(record)):
        err_console.print(
            "[red]No case that decides the answer was measured[/red] (they failed or the budget skipped them; "
            "see the report): exit 1."
        )
        raise typer.Exit(1)


def _diagnose_notes(plan: DiagnosePlan) -> list[str]:
    from whichdevice.workloads.suite import sizing_notes

    if plan.user.get("script"):
        from whichdevice.workloads import scriptplan

        return scriptplan.notes(plan.user, plan.sizing) + sizing_notes(plan.sizing)
    return sizing_notes(plan.sizing)


def _framework_options(plan: DiagnosePlan) -> dict:
    """The record's options beyond the Keras diagnose's (the framework is every record's option):
    for torch, what the pre-flight found (what the function returned, the loss and optimizer
    trained with, the input); for a script, the script, its arguments and the entry point captured."""
    if plan.user.get("script"):
        from whichdevice.workloads import scriptplan

        fw = {} if plan.framework == DIAGNOSE_FRAMEWORK else {"framework": plan.framework}
        return fw | scriptplan.options(plan.user, plan.sizing)
    if plan.framework in frameworks.KERAS:
        return {}
    from whichdevice.workloads import torch_diagnose

    return {f"torch_{k}": plan.user.get(k) for k in torch_diagnose.INFO_KEYS}
