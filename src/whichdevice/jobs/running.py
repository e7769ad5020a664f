"""Running a job: measure it with progress, write its record, draw its page; and the journal
that ``--resume`` reads back. The CLI, the Python API and the notebook magic all run jobs
through here (``jobs.run``), on present/screen.py's consoles (which the API and the magic
redirect to keep or show the text).
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pydantic
from rich.markup import escape

from whichdevice.analysis import facade
from whichdevice.core import records, safeio
from whichdevice.core.errors import PageNotDrawn, UsageError
from whichdevice.core.validate import check_output_dir, check_output_file
from whichdevice.measure import experiment, history, journal, session
from whichdevice.measure.journal import Journal, JournalState, journal_path
from whichdevice.present import cliprogress, plots, registry
from whichdevice.present.screen import console, err_console


def stamp() -> str:
    """The time and 4 random hex digits: two runs started in the same second get two names
    (their records, plots and journals never meet), and a name cannot be guessed ahead."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def record_paths(out: Path, json_path: Path | None, experiment: str) -> tuple[Path, Path]:
    """``--out`` and ``--json`` checked -> (the record's path, its plot's): ``--json``'s path and
    the PNG beside it, else ``OUT/<experiment>-<stamp>.json`` and ``.png``."""
    out_dir = check_output_dir(out, "--out")
    ts = stamp()
    json_file = check_output_file(json_path, "--json") if json_path else out_dir / f"{experiment}-{ts}.json"
    png = json_file.with_suffix(".png") if json_path else out_dir / f"{experiment}-{ts}.png"
    return json_file, png


# Set by save_record when every case of the record failed: the command exits 1 (cli/app.py).
all_failed: str | None = None
# The record save_record wrote: an interruption after it (while the page is drawn) names it
# (cli/guard.py); reset when a command starts.
written: Path | None = None


@contextmanager
def page_after_record() -> Iterator[None]:
    """Hold what the command prints on stdout until the block is done — the record written,
    the journal closed — then print it at once. ``whichdevice run | head -3`` used to quit
    while the first screen printed, before the record was written: the run was lost until
    ``--resume`` re-rendered it. Now a reader that quits early costs nothing (no journal left,
    nothing to resume; exit 0, or 141 when the pipe closed before the page was written). If the block fails, its page is not printed: the error
    says what was kept and how to finish."""
    with console.capture() as page:
        yield
    console.file.write(page.get())
    console.file.flush()


def save_record(record: records.RunRecord, json_file: Path) -> None:
    """Write the record (atomically), first of all: nothing measured is lost to a page that
    cannot be drawn or printed afterwards (a name that is not UTF-8, an ASCII terminal, a full
    disk). A failure to write it is raised as it is (cli/app.py: one line, the
    ``--resume`` command while the journal is kept, exit 1), with whatever this run created."""
    global all_failed, written
    if journal.active_changes:  # resumed on a changed machine: the record says so
        record = record.model_copy(
            update={"notes": [*record.notes, *(f"Resumed with a change: {c}." for c in journal.active_changes)]}
        )
    try:
        json_file.parent.mkdir(parents=True, exist_ok=True)
        records.save_run(record, json_file)
    except OSError:
        safeio.discard_created()  # never leave a report without its record
        raise
    safeio.keep_created()
    written = json_file
    if record.results and all(r.status == "failed" for r in record.results):
        first = record.results[0]
        all_failed = f"every case failed ({len(record.results)}); the first: {first.error}"


def draw_page(draw: Callable[[], Any], json_file: Path) -> Any:
    """``draw()`` (the command's renderer, after its record is written); a page that cannot be
    written or encoded ends the command with one line naming the record and how to draw it again
    (errors.PageNotDrawn), the files of the half-drawn page removed."""
    try:
        drawn = draw()
    except (OSError, UnicodeError) as e:
        safeio.discard_created()
        raise PageNotDrawn(json_file, e) from None
    safeio.keep_created()
    return drawn


def indexed(record: records.RunRecord, json_file: Path) -> str:
    """Add the record to the history; the line that says so (its run id), or why not."""
    try:
        run_id = history.add(record, json_file)
        return f"History: run {run_id} (whichdevice history; whichdevice compare {run_id} LATER_RUN)"
    except (OSError, sqlite3.Error, UnicodeError) as e:  # the index is a convenience: never fail a finished run
        return f"[yellow]History not updated ({escape(str(e))}).[/yellow]"


def announce_record(
    record: records.RunRecord, json_file: Path, png: Path | None, index_line: str | None = None
) -> None:
    """The lines after the page: where the record is, its run id in the history (``index_line``:
    added already), the plot."""
    console.print(f"Record: {escape(str(json_file))}")
    console.print(index_line if index_line is not None else indexed(record, json_file))
    if png is not None:
        console.print(f"Plot:   {escape(str(png))}")


def output(write: Callable[[], None], draw: Callable[[], Any], json_file: Path, announce: Callable[[], None]) -> None:
    """Every command's output step, for a run's record and an audit's alike: ``write`` the record
    first (nothing measured is lost to a page that cannot be drawn), ``draw`` its page
    (``draw_page``), then ``announce`` the lines after it, all printed at once
    (``page_after_record``). Interrupted while drawing: no half-drawn page beside the record
    (``report`` draws it whole)."""
    with page_after_record():
        write()
        try:
            draw_page(draw, json_file)
        except KeyboardInterrupt:
            safeio.discard_created()
            raise
        announce()


def page(record: records.RunRecord, png: Path, *, loglog: bool, **more: Any) -> Any:
    """Draw ``record``'s page on present/screen.py's console: its analysis, once
    (analysis/facade.analyze), formatted by its experiment's renderer (present/registry.py), the
    plots and the HTML report beside ``png``; ``more``: the renderer's own options (``verbose``,
    ``quiet``). Returns the analysis (calibrate saves the profile fitted in it)."""
    result = facade.analyze(record)
    render: Any = registry.renderer(record.experiment)  # every measuring command's experiment has one
    render(console, result, png, loglog=loglog, **more)
    return result


# ------------------------------------------------------------------ --resume
# A measuring command parses its arguments into a job (a dataclass of JSON values: all that
# its cases and its record need), journals it in the header, and runs it. ``--resume`` reads
# the job back instead of parsing arguments: nothing is re-checked or re-asked.


def command_line() -> list[str]:
    """The command as typed, for the record (a resumed run keeps the original's)."""
    return ["whichdevice", *sys.argv[1:]]


def read_plan(resume: Path, experiment: str, plan_cls):
    """``--resume JOURNAL_OR_DIR`` -> (the interrupted run's plan, what it had finished).

    The plan's fields are checked against their types (pydantic), and the user's model and
    data files it names are checked again before anything runs (``recheck_user_files``)."""
    state = Journal.read(resume, "--resume", experiment=experiment)
    options = dict(state.header.get("options") or {})
    if isinstance(state.header.get("json_file"), str):  # where the journal is now (journal._rebase)
        options["json_file"] = state.header["json_file"]
    try:
        plan = pydantic.TypeAdapter(plan_cls).validate_python(options)
    except (KeyError, TypeError, pydantic.ValidationError):
        raise unreadable_resume(resume, experiment) from None
    recheck_user_files(plan, state.header)
    return plan, state


def unreadable_resume(resume: Path, experiment: str) -> UsageError:
    """The one line for a journal whose options this version cannot read."""
    return UsageError(
        "--resume", f"'{resume}' holds {experiment} options this version of whichdevice cannot read", "Start a new run."
    )


def _user_refs(value) -> list[dict]:
    """The dicts of a plan that name a user's model file (``model_file``), at any depth."""
    if isinstance(value, dict):
        found = [value] if isinstance(value.get("model_file"), str) else []
        for v in value.values():
            found += _user_refs(v)
        return found
    if isinstance(value, list):
        return [d for v in value for d in _user_refs(v)]
    return []


def _file_hash(path: str) -> str | None:
    try:
        return hashlib.sha256(safeio.read_capped(path, "--model", what="Python file")).hexdigest()
    except UsageError:
        return None


def user_file_hashes(options: dict) -> dict[str, str | None]:
    """sha256 of the user's model and data files a plan names, journaled in its header."""
    files = {}
    for ref in _user_refs(options):
        for key in ("model_file", "data_file"):
            if isinstance(ref.get(key), str):
                files[ref[key]] = _file_hash(ref[key])
    return files


def recheck_user_files(plan, header: dict) -> None:
    """Before ``--resume`` imports the user's code again: the files must be the
    ones the run started with (the sha256 journaled in the header) and pass the pre-flight
    again (the same child check as a new run, through core.process)."""
    from whichdevice import frameworks
    from whichdevice.workloads import userfile

    options = dataclasses.asdict(plan)
    journaled = header.get("files") or {}
    for ref in _user_refs(options):
        for key, argument in (("model_file", "--model"), ("data_file", "--data")):
            path = ref.get(key)
            if not isinstance(path, str):
                continue
            now = _file_hash(path)
            if now is None:
                raise UsageError(
                    "--resume", f"the run's {argument} file '{path}' is gone or unreadable", "Start a new run."
                )
            if journaled.get(path) not in (None, now):
                raise UsageError(
                    "--resume",
                    f"the run's {argument} file '{path}' changed since the run started",
                    "Its finished cases measured the old code: start a new run.",
                )
        if ref.get("script"):  # trained by the script --model wrote: each case's run checks it as it loads it
            continue
        fw = getattr(plan, "framework", None) or (getattr(plan, "frameworks", None) or ["tensorflow"])[0]
        fw = fw if fw in frameworks.FRAMEWORKS else "tensorflow"
        model_fn = userfile.UserFunction(Path(ref["model_file"]), str(ref.get("model_fn")), "--model")
        data_fn = (
            userfile.UserFunction(Path(ref["data_file"]), str(ref.get("data_fn")), "--data")
            if isinstance(ref.get("data_file"), str)
            else None
        )
        env = frameworks.env_module(fw).child_env("cpu")
        err_console.print(f"Checking {escape(model_fn.text)} again before resuming (imports {escape(fw)})…")
        if "output_shape" in ref:
            shape = tuple(int(d) for d in str(ref.get("input_shape") or "").split(",") if d) or None
            if fw not in frameworks.KERAS:  # an nn.Module measured by the cases of an older whichdevice
                raise UsageError(
                    "--resume",
                    "this journal is of a --model diagnose of an older whichdevice, whose cases this version no "
                    "longer runs",
                    "Start a new run: whichdevice diagnose --model FILE.py:FUNCTION",
                )
            again = userfile.user_model_params(model_fn, None if data_fn else shape, ref.get("classes"), data_fn, env)
            if str(again.get("output_shape")) != str(ref.get("output_shape")):
                raise UsageError(
                    "--resume",
                    f"the run's model now outputs shape ({again.get('output_shape')}), "
                    f"not ({ref.get('output_shape')}) as when the run started",
                    "Start a new run.",
                )
        else:
            size = getattr(plan, "size", None)
            shape = (size, size, 3) if size and not data_fn else None
            userfile.preflight(model_fn, shape, None, data_fn, env)


def journal_header(experiment: str, plan) -> dict:
    options = dataclasses.asdict(plan)
    return {
        "experiment": experiment,
        "json_file": plan.json_file,
        "options": options,
        "files": user_file_hashes(options),
    }


def open_journal(experiment: str, plan, resumed: JournalState | None) -> Journal:
    """The plan's journal: continued when resuming, else created (its header: the plan)."""
    path = journal_path(Path(plan.json_file))
    return Journal(path) if resumed else Journal.create(path, journal_header(experiment, plan))


# ------------------------------------------------------------------ measuring
# Every measuring command goes through ``measure.session.measure``; this adds the terminal's
# side: the "looking for devices" line and one progress bar.


def announce_discovery(framework: str) -> None:
    """Say that devices are being looked for when that takes a child (a framework import)."""
    if experiment.needs_discovery_child(framework):
        err_console.print(f"Looking for devices ({escape(framework)} import takes a few seconds)…")


def find_devices(framework: str):
    """The devices ``framework`` sees, for a measuring command: no child where the parent can
    tell only the CPU exists (the measuring child reports the rest: experiment.discover's
    ``fold``), else a discovery child, announced since it takes a few seconds."""
    announce_discovery(framework)
    return experiment.discover(framework, fold=True)


# How progress is shown: None, the CLI's (present/cliprogress.py on stderr); the Python API and
# the notebook magic set their own for the call (``viewing``): given the experiment's name, a
# context manager whose value has ``callbacks(**more) -> session.Progress`` and ``say(text)``.
progress_view: Callable[[str], Any] | None = None


@contextmanager
def viewing(view: Callable[[str], Any]) -> Iterator[None]:
    """Show the progress of the jobs run inside the block with ``view`` (see ``progress_view``)."""
    global progress_view
    saved, progress_view = progress_view, view
    try:
        yield
    finally:
        progress_view = saved


def measure_with_progress(
    request: session.Request,
    *,
    journal: Journal | Callable[[], Journal] | None = None,
    resumed: JournalState | None = None,
    found=None,
    quiet: bool = False,
    on_provisional: Callable[[records.RunRecord, Any], None] | None = None,
) -> records.RunRecord:
    """Measure ``request`` with its progress on stderr: a live line in a terminal (gone when
    done), a line per finished phase when piped (none with ``quiet``); or ``progress_view``'s.
    ``on_provisional``: given the record of round 1's answer cases (session.Progress.on_provisional)
    and the progress (its ``say`` prints above it)."""
    if found is None:
        found = find_devices(request.framework)
    view = progress_view(request.experiment) if progress_view else cliprogress.CliProgress(err_console, quiet=quiet)
    with view as shown:
        callbacks = shown.callbacks(
            # matplotlib (≈ 0.5 s) imported while the child imports its framework
            while_child_starts=plots.pyplot,
            on_provisional=(lambda rec: on_provisional(rec, shown)) if on_provisional else None,
        )
        return session.measure(request, journal=journal, resumed=resumed, progress=callbacks, found=found)


def run(
    job: Any,
    request: session.Request | None,
    *,
    loglog: bool,
    resumed: JournalState | None,
    journal: Journal | Callable[[], Journal] | None = None,
    found=None,
    measure: Callable[..., records.RunRecord] | None = None,
    **more: Any,
) -> records.RunRecord:
    """The one run skeleton: measure ``request`` (``measure``: a command's own way, default
    ``measure_with_progress``; None: ``measure`` measures several of its own), journaled in
    ``journal``, else the job's own, created once the devices are checked (none for a job
    without a record path, the API's); then ``finish`` (``more``: the page's options)."""
    if journal is None and job.json_file and request is not None:
        journal = lambda: open_journal(request.experiment, job, resumed)  # noqa: E731
    measuring: Callable[..., records.RunRecord] = measure or measure_with_progress
    record = measuring(request, journal=journal, resumed=resumed, found=found)
    finish(record, job, loglog=loglog, **more)
    return record


def finish(
    record: records.RunRecord,
    job: Any,
    *,
    loglog: bool,
    journals: Sequence[Path] = (),
    printing: AbstractContextManager[Any] | None = None,
    then: Callable[[Any, UsageError | None], None] | None = None,
    **more: Any,
) -> None:
    """A measured job's end (``output``): its record written, its journal (and ``journals``)
    closed and the record added to the history, then its page drawn (``page``: beside the job's
    ``png_file``, else beside the record, not announced) inside ``printing`` (``--json-out -``
    moves it to stderr) and the record's lines after it. A job without a record path (the
    API's) is kept in the history instead, with no page (``keep``).

    ``then``: what the command keeps of its page, after the record's lines (calibrate: the
    profile fitted in the page's analysis), given that analysis, or the ``UsageError`` by which
    the analysis refused the record (a non-positive fitted value: the record is kept and
    announced without its plot; without ``then`` the error is raised after them). The journals
    are closed once it is done: interrupted before, ``--resume`` draws the page and keeps it again."""
    if not job.json_file:
        keep(record)
        return
    json_file = Path(job.json_file)
    png = Path(job.png_file) if getattr(job, "png_file", None) else None
    index_line = ""
    drawn: Any = None
    refused: UsageError | None = None

    def close() -> None:
        for path in (journal_path(json_file), *journals):  # the record is complete: they have done their job
            Journal(path).finish()

    def write() -> None:
        nonlocal index_line
        save_record(record, json_file)
        if then is None:
            close()
        # In the history before the page: a run interrupted while it draws is complete, and
        # listed where its record is named (cli/guard.py).
        index_line = indexed(record, json_file)

    def draw() -> None:
        nonlocal drawn, refused
        drawn, refused = page_or_refusal(record, png or json_file.with_suffix(".png"), loglog=loglog, **more)

    def announce() -> None:
        announce_record(record, json_file, None if refused else png, index_line)
        if then is not None:
            then(drawn, refused)
            close()

    with printing or nullcontext():
        output(write, draw, json_file, announce)
    if refused is not None and then is None:
        raise refused


def page_or_refusal(record: records.RunRecord, png: Path, **options: Any) -> tuple[Any, UsageError | None]:
    """``page``'s analysis, or the ``UsageError`` by which the analysis refused the record (the
    record was measured all the same: it is kept)."""
    try:
        return page(record, png, **options), None
    except UsageError as e:
        return None, e


def write_record(
    record: records.RunRecord,
    json_file: Path,
    *,
    draw: Callable[[], Any] = lambda: None,
    announce: Callable[[], None] = lambda: None,
) -> Path:
    """A finished record written where its caller names it, outside a measuring job (an API
    result saved to a folder, the Keras callback's record, a record converted by ``import``):
    the same output step (``output``): the record first, its folder made, then its page
    (``draw``), then the lines after it (``announce``)."""

    def write() -> None:
        json_file.parent.mkdir(parents=True, exist_ok=True)
        records.save_run(record, json_file)

    output(write, draw, json_file, announce)
    return json_file


def keep(record: records.RunRecord) -> Path | None:
    """The API's record kept like a command's: written under the history's folder
    (``$WHICHDEVICE_HOME/records/``) and indexed, so ``whichdevice history`` lists it and
    ``whichdevice compare`` takes its id; its path is ``written``. Never fails the call: a history
    that cannot be written is said in one warning line (``written`` is then None)."""
    import warnings

    global written
    written = None
    try:
        folder = history.home() / "records"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{record.experiment}-{stamp()}.json"
        records.save_run(record, path)
        history.add(record, path)
    except (OSError, sqlite3.Error) as e:
        warnings.warn(f"whichdevice: the run was not kept in the history ({e})", stacklevel=6)
        return None
    written = path
    return path
