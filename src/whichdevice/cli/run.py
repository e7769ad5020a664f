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
from whichdevice.workloads.fixes import BATCH
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


def _undecided(results: list[records.CaseResult]) -> set[str]:
    """The cases of the fix pairs a further round could still decide (analysis/fixes.undecided)."""
    from whichdevice.analysis.fixes import undecided

    return undecided(results)


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


def measure_suite(
    request: session.Request, *, journal, resumed, found=None, quiet=None, trace: records.StepTrace | None = None
) -> records.RunRecord:
    """The suite measured with its progress; ``quiet`` not None (one framework: run, diagnose):
    with the provisional answer after round 1 of the answer's cases, shown in a terminal
    unless ``quiet``, and kept in the record. ``trace``: a script's step traced in its pre-flight,
    kept in the record (and in the one the provisional answer reads, so both predict alike)."""
    from whichdevice.cli.common import measure_with_progress

    if quiet is None:  # several frameworks, one after the other: no provisional answer per part
        return measure_with_progress(request, journal=journal, resumed=resumed, found=found)
    early = ProvisionalAnswer(quiet, trace)
    record = measure_with_progress(
        request, journal=journal, resumed=resumed, found=found, quiet=quiet, on_provisional=early
    )
    if trace is not None:
        record = record.model_copy(update={"step_trace": trace})
    return record.model_copy(update={"provisional": early.value}) if early.value is not None else record


class ProvisionalAnswer:
    """``measure_with_progress``'s ``on_provisional``: the answer from round 1 of the cases
    that decide it, unless ``quiet``: in a terminal drawn above the progress line and erased
    with it, so that the final answer replaces it; piped, printed once, saying that the final
    answer replaces it ("Provisional answer (round 1 of 2; ...)"). Kept (``value``) for the record."""

    def __init__(self, quiet: bool, trace: records.StepTrace | None = None) -> None:
        self.quiet = quiet
        self.trace = trace  # a script's traced step: the provisional answer predicts from it too
        self.started = time.monotonic()
        self.value: records.Provisional | None = None

    def __call__(self, record: records.RunRecord, shown: CliProgress) -> None:
        from whichdevice.analysis import facade
        from whichdevice.core import records
        from whichdevice.present import firstscreen

        rounds = int(str(record.options.get("rounds") or 2))
        if self.trace is not None:
            record = record.model_copy(update={"step_trace": self.trace})
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
        show = getattr(shown, "show_provisional", None)  # a notebook's progress has no place for it
        if show is None or self.quiet:
            return
        if shown.live:
            lines = [f"Provisional answer (round 1 of {rounds}):", *(f"  {a}" for a in answer)]
            lines.append(f"  Round {rounds} confirms it or changes it; the final answer replaces this one.")
        else:  # printed for good: it says itself that it is not the answer
            lines = [f"Provisional answer (round 1 of {rounds}; the final answer at the end replaces it):"]
            lines += [f"  {a}" for a in answer]
        styled: list[tuple[str, str | None]] = []
        for i, line in enumerate(lines):
            style = "bold green" if i <= 1 else "dim" if i == len(lines) - 1 and shown.live else None
            width = shown.console.width if shown.live else len(line)  # piped: one line each, never folded
            styled += [(part, style) for part in firstscreen.hanging(line, width)]
        show(styled)


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
    # The cases sized from the pre-flight's measured step (workloads/scriptplan.size);
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
    help="With a SCRIPT that trains more than once (fit called for a teacher, then a student; torch training "
    "loops one after another): which call or loop to measure, counted from 1 (default: the one with the most "
    "steps, or the longest-running loop, where the pre-flight can count them).",
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
    """The checked options -> the plan (the command's and the API's; ``fields``: the job's shared
    ones): the script that trains the model as a user would (``workloads/modelscript.py``),
    written beside the record, then planned as any script (``scriptcmd.plan_job``: the
    pre-flight, the sizer, the cases)."""
    from whichdevice.cli import scriptcmd
    from whichdevice.measure import experiment
    from whichdevice.workloads import modelscript

    experiment.require_installed(fw)
    job = modelscript.ModelJob(
        model=(str(model_fn.path.absolute()), model_fn.function),
        framework=fw,
        input_shape=tuple(shape) if shape else None,
        classes=n_classes,
        samples=n_samples,
        batch=given_batch,
        data=(str(data_fn.path.absolute()), data_fn.function) if data_fn else None,
    )
    if not fields["json_file"]:  # the API keeps no record file: the script goes to whichdevice's own folder
        from whichdevice.measure import history

        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
        fields = {**fields, "json_file": str(history.home() / "models" / f"script-{stamp}" / "diagnose.json")}
    made = not Path(fields["json_file"]).parent.exists()
    path = modelscript.write(job, fields["json_file"])
    script = {"script": str(path), "args": [], "name": model_fn.text, "model_file": job.model[0]}
    if job.data is not None:
        script["data_file"] = job.data[0]
    try:
        plan = scriptcmd.plan_job(script, budget_s, fields, DiagnosePlan)
    except BaseException as e:  # refused or interrupted: nothing written
        modelscript.remove(path, folder_too=made)
        if isinstance(e, UsageError) and e.argument == "SCRIPT":  # the script is ours: the user's model is at fault
            raise modelscript.as_model_error(e) from None
        raise
    return dataclasses.replace(plan, model=model_fn.text, data=data_fn.text if data_fn else None)


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
    """The cases of one device: the script's (``diagnose SCRIPT``, or the script ``--model`` wrote)."""
    from whichdevice.workloads import scriptplan

    if not plan.user.get("script"):  # a journal of a --model measured before it was trained by a script
        raise UsageError(
            "--resume",
            "this journal is of a --model diagnose of an older whichdevice, whose cases this version no longer runs",
            "Start a new run: whichdevice diagnose --model FILE.py:FUNCTION",
        )
    return lambda found, d: scriptplan.cases(plan.framework, d.name, plan.user, plan.sizing or {})


def diagnose_request(plan: DiagnosePlan) -> session.Request:
    """``plan``'s request: its cases, the record's options and notes (the command's and the API's)."""
    from whichdevice.measure import session
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
            BATCH.param: plan.batch,
            "samples": plan.samples,
            **sizing_options(plan.sizing),
            **_framework_options(plan),
        },
        notes=_diagnose_notes(plan),
    )
    # within the budget, further rounds measure the fix pairs that the planned ones left undecided
    request = dataclasses.replace(request, undecided=_undecided, rounds_share=session.ALL_ROUNDS_SHARE)
    return request


def run_diagnose(plan: DiagnosePlan, resumed: JournalState | None, output: ScriptOutput | None = None) -> None:
    """Run ``plan`` (continuing ``resumed``'s journal): measured, its record written, its page drawn."""
    output = output or ScriptOutput()
    measure = functools.partial(measure_script, plan, output.quiet) if plan.user.get("script") else None
    output.run(plan, diagnose_request(plan), resumed, **({"measure": measure} if measure else {}))


def measure_script(plan: DiagnosePlan, quiet: bool, request: session.Request, **how: Any) -> records.RunRecord:
    """The user's script measured with its folder watched (the command's and the API's): however it
    ends, the folder is as it was and the screen says what the script wrote; what the script did
    per step (data wait, copies, reads) and what it wrote are the record's notes."""
    from whichdevice.workloads import scriptplan, userfolder

    # started by the pre-flight, or here on --resume (a --model's: the folder of the user's file)
    userfolder.watch(str(plan.user.get("model_file") or plan.user["script"]), plan.json_file)
    try:
        # the pre-flight's traced step, for the no-GPU answer
        record = measure_suite(request, quiet=quiet, trace=scriptplan.recorded_trace(plan.sizing), **how)
    finally:
        written = userfolder.finish(plan.json_file)
        if written:
            where, earlier = (_shown(d(plan.json_file)) for d in (userfolder.files_dir, userfolder.earlier_dir))
            err_console.print(escape(userfolder.summary(written, where, earlier)), soft_wrap=True)
    notes = scriptplan.record_notes(record) + userfolder.notes(written)
    wrote = userfolder.wrote(written)
    options = {**record.options, "script_wrote": wrote} if wrote else record.options
    # a baseline answered from the pre-flight: its case as measured; one the budget skipped: the pre-flight's steps
    results = scriptplan.recorded_results(record, plan.user, plan.sizing)
    if any(a.status != b.status for a, b in zip(record.results, results, strict=True)):
        options = {**options, "preflight_only": scriptplan.skipped_baseline_words(plan.budget_s)}
        notes = [*notes, scriptplan.skipped_baseline_note(results)]
    return record.model_copy(update={"notes": notes, "options": options, "results": results})


def _shown(folder: Path) -> str:
    """A folder as the screen names it: relative to the working folder when under it."""
    shown = folder if not folder.is_relative_to(Path.cwd()) else folder.relative_to(Path.cwd())
    return f"{shown}{os.sep}"


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
    from whichdevice.workloads import scriptplan
    from whichdevice.workloads.suite import sizing_notes

    return scriptplan.notes(plan.user, plan.sizing) + sizing_notes(plan.sizing)


def _framework_options(plan: DiagnosePlan) -> dict:
    """The record's options beyond the ones every diagnose has: the script, its arguments and the
    entry point captured (the framework where it is not the default)."""
    from whichdevice.workloads import scriptplan

    fw = {} if plan.framework == DIAGNOSE_FRAMEWORK else {"framework": plan.framework}
    return fw | scriptplan.options(plan.user, plan.sizing, plan.budget_s)
