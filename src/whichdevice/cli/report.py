"""`whichdevice report` and `whichdevice devices`."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape
from rich.text import Text

from whichdevice.cli import options as opt
from whichdevice.cli.base import SafeConsole, app, console
from whichdevice.core.errors import UsageError
from whichdevice import frameworks
from whichdevice.core.validate import check_output_dir, parse_choice

if TYPE_CHECKING:
    from whichdevice.core import records


@app.command()
def devices(
    framework: str = typer.Option("tensorflow", "--framework", help="Framework to ask."),
) -> None:
    """List the devices the framework sees, and why a GPU is missing if it is."""
    from whichdevice.measure import experiment

    fw = parse_choice(framework, "--framework", frameworks.offering("devices"))
    found = experiment.discover(fw)
    console.print(f"{escape(fw)} {escape(found.framework.version)} (import {found.import_s:.1f} s) sees:")
    for d in found.devices:
        console.print(f"  {escape(d.name)}: {escape(d.description)}")
    note = experiment.no_gpu_note(fw, found, measured=False)  # this command measures nothing
    if note:
        console.print(f"[yellow]Note:[/yellow] {escape(note)}")


def _free_png(folder: Path, stem: str) -> Path:
    """``stem.png`` unless it or the report beside it exists; then ``stem-report.png``,
    ``stem-report-2.png``...: the originals are kept (``--force`` overwrites them)."""

    def taken(s: str) -> bool:
        return (
            any(folder.glob(f"{glob.escape(s)}.png"))
            or any(folder.glob(f"{glob.escape(s)}-*.png"))
            or (folder / f"{s}.html").exists()
        )

    if not taken(stem):
        return folder / f"{stem}.png"
    for i in range(1, 1000):
        s = f"{stem}-report" + (f"-{i}" if i > 1 else "")
        if not taken(s):
            return folder / f"{s}.png"
    raise UsageError("--out", f"too many reports beside '{stem}' already", "Pass --force, or another --out.")


def load_any(result: Path, argument: str = "RESULT"):
    """A record from any file ``report`` reads: a whichdevice result, an audit record
    (returned as such), or a reference GPU run (gpu_probe.py / keras_probe.py output,
    converted by analysis/reference.py)."""
    from whichdevice.analysis import deviceprofile, reference
    from whichdevice.core import records, safeio

    if safeio.is_file_quietly(result):
        data = records.read_json(result, argument)
        if isinstance(data, dict) and data.get("experiment") == "audit":
            from whichdevice.audit import record as audit_record

            try:
                return audit_record.load(result)
            except ValueError as e:  # pydantic's ValidationError is a ValueError
                raise UsageError(
                    argument, f"'{result}' is not an intact audit record ({type(e).__name__})", "Re-run the audit."
                ) from None
        if reference.is_reference(data):
            try:
                return reference.record_from_reference(data, str(result), deviceprofile.file_date(result))
            except reference.BadReference as e:
                raise UsageError(
                    argument,
                    f"'{result}' looks like a reference run but does not fit its format ({e})",
                    "Pass the file as gpu_probe.py / keras_probe.py wrote it.",
                ) from None
    return records.load_run(result, argument)


def _print_as_text(record: records.RunRecord, *, markdown: bool, verbose: bool) -> None:
    """The record's report as Markdown or CSV on stdout: the command's own renderer (``report``
    checked there is one) composes the page (present/html.capturing keeps its sections) into a
    scratch folder that is removed, its terminal text discarded; nothing is written beside RESULT."""
    from whichdevice.analysis import facade
    from whichdevice.present import registry

    import sys
    import tempfile

    from whichdevice.present import html, markdown as md, output, terminal

    with tempfile.TemporaryDirectory(prefix="whichdevice-report-") as tmp, html.capturing() as pages:
        with console.capture(), terminal.capturing_grids() as grids, output.unseen():
            result = facade.analyze(record)
            registry.render(console, result, Path(tmp) / "report.png", loglog=True)
    if not pages and grids:  # a renderer with no HTML page (train): its terminal tables
        pages = [html.Page(record, [html.Section("Tables", list(grids))], [], [], [], None, result.skipped)]
    if not pages:
        raise UsageError(
            "--markdown" if markdown else "--csv",
            f"the '{record.experiment}' report has no tables to write",
            f"Run `whichdevice report` without {'--markdown' if markdown else '--csv'}.",
        )
    if markdown:
        text = "\n".join(md.page_markdown(p, full=verbose) for p in pages)
    else:
        text = md.pages_csv(pages)
    sys.stdout.write(text)
    sys.stdout.flush()


@app.command()
def report(
    result: Path = typer.Argument(
        ..., help="A JSON record written by a whichdevice command (or audit), or a reference GPU run's JSON."
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Write the re-drawn plots and HTML report into this folder (default: write nothing)."
    ),
    html_beside: bool = typer.Option(
        False, "--html", help="Write the re-drawn plots and HTML report next to RESULT (new names unless --force)."
    ),
    linear: bool = opt.linear(),
    force: bool = typer.Option(
        False, "--force", help="Overwrite the plots and report beside RESULT (default: write new ones next to them)."
    ),
    verbose: bool = typer.Option(
        False,
        "--verbose",
        help="Every table, finding and warning after the first screen (run, diagnose, predict; the others show them always).",
    ),
    markdown: bool = typer.Option(
        False,
        "--markdown",
        help="Print the report as GitHub Markdown (the first screen and the fix table; every table with --verbose) "
        "to paste into a pull request or an issue; writes no file.",
    ),
    as_csv: bool = typer.Option(
        False,
        "--csv",
        help="Print every table as CSV (one row per cell: section,table,row,column,value); writes no file.",
    ),
) -> None:
    """Re-render the table and plot from a saved record, without measuring again.

    The page is printed; its plots and HTML report are written only with --out or --html."""
    from whichdevice.analysis import facade
    from whichdevice.core import records
    from whichdevice.present import registry

    if markdown and as_csv:
        raise UsageError("--markdown", "--markdown and --csv are two formats of one output", "Pass one of them.")
    record = load_any(result, "RESULT")
    if (markdown or as_csv) and not isinstance(record, records.RunRecord):
        raise UsageError(
            "--markdown" if markdown else "--csv",
            "an audit record has no Markdown or CSV form yet",
            f"Run `whichdevice report {result}` for its text.",
        )
    if not isinstance(record, records.RunRecord):  # the audit's own record: no plot, nothing written
        registry.render(console, record, result.with_suffix(".png"), loglog=not linear)
        return
    if registry.renderer(record.experiment) is None:
        raise UsageError(
            "RESULT", f"experiment '{record.experiment}' has no report in this version", "Upgrade whichdevice."
        )
    if markdown or as_csv:
        _print_as_text(record, markdown=markdown, verbose=verbose)
        return
    if out is None and not html_beside:  # a report of a record writes nothing unless asked
        _print_only(record, result.stem, loglog=not linear, verbose=verbose)
        return
    out_dir = check_output_dir(out, "--out") if out else result.parent
    png = out_dir / (result.stem + ".png") if force else _free_png(out_dir, result.stem)
    registry.render(console, facade.analyze(record), png, loglog=not linear, verbose=verbose)
    if png.exists():
        console.print(f"Plot:   {escape(str(png))}")


class _WithoutLinesAbout(SafeConsole):
    """The command's console, less the lines that name a file under ``folder`` (the renderer's
    "Report:" and "Plot:" lines, when what it drew is thrown away)."""

    def __init__(self, folder: str) -> None:
        super().__init__(highlight=False)
        self.soft_wrap = console.soft_wrap
        self._folder = folder

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if any(self._folder in (o.plain if isinstance(o, Text) else str(o)) for o in objects):
            return
        super().print(*objects, **kwargs)


def _print_only(record: records.RunRecord, stem: str, *, loglog: bool, verbose: bool) -> None:
    """The record's page on the terminal, and no file anywhere: the renderer draws its plots
    and HTML into a scratch folder that is removed, and its lines naming them are dropped
    (``--out`` or ``--html`` keep them)."""
    from whichdevice.analysis import facade
    from whichdevice.present import registry

    import tempfile

    from whichdevice.present import output

    with tempfile.TemporaryDirectory(prefix="whichdevice-report-") as tmp, output.unseen():
        registry.render(
            _WithoutLinesAbout(tmp), facade.analyze(record), Path(tmp) / f"{stem}.png", loglog=loglog, verbose=verbose
        )
