"""One self-contained HTML report: plots inlined as base64 PNG, no network needed.

Every string that comes from a record or a user's file goes through jinja2's autoescape,
so a model name like ``<script>`` is shown, never run.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import jinja2

from whichdevice.present.tables import Grid, column_align
from whichdevice.present.terminal import machine_line
from whichdevice.core.units import nbytes, seconds
from whichdevice.core.records import RunRecord, Session

if TYPE_CHECKING:  # firstscreen imports this module
    from collections.abc import Sequence

    from whichdevice.analysis.fixes import NotMeasured
    from whichdevice.analysis.quality import TimingWarning
    from whichdevice.present.firstscreen import FirstScreen

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("whichdevice.present", "templates"),
    autoescape=True,  # always, whatever the template's name
    undefined=jinja2.StrictUndefined,
)


@dataclass
class Section:
    title: str
    grids: list[Grid] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    pngs: list[Path] = field(default_factory=list)
    source: str | None = None  # the article the section reproduces (present/names.py), a footnote


@dataclass(frozen=True)
class Page:
    """What one report page is made of, as its renderer passed it (for other formats)."""

    record: RunRecord
    sections: list[Section]
    verdict: list[str]
    warnings: list[str]
    failures: list[str]
    first: FirstScreen | None
    skipped: list[NotMeasured | None]  # each skipped case's own reason (analysis/facade.Analysis.skipped)


class FirstView(TypedDict):
    """The first screen as plain values, for the HTML template and the Markdown."""

    answer: list[str]
    causes: list[dict[str, str]]
    quiet: list[str]  # with no cause, a script's measured step: none stands out (firstscreen.quiet_text)
    reads: list[str]  # a CPU step's host reads every step, a sync per read on a GPU (firstscreen.reads_text)
    changes: list[dict[str, str]]
    more: list[dict[str, str]]
    tail: list[str]
    warnings_line: str
    none: str  # the line when no change helps (present/firstscreen.none_text)
    busy: str  # the steps timed on a busy machine, "" when not (present/firstscreen.busy_text)


_pages: list[Page] | None = None


@contextmanager
def capturing() -> Iterator[list[Page]]:
    """Keep every page rendered inside the block: each command's renderer composes its page
    through :func:`render_html`, so ``report --markdown``/``--csv`` get the same sections,
    tables and first screen as the HTML, from any experiment, without a second composer."""
    global _pages
    saved, _pages = _pages, []
    try:
        yield _pages
    finally:
        _pages = saved


def _session_line(s: Session) -> str:
    d = s.device
    if d.kind == "cpu":
        onednn = "" if s.onednn is None else f", oneDNN {'on' if s.onednn else 'off'}"
        extra = (
            f"{s.cpu_threads_intra} intra-op / {s.cpu_threads_inter} inter-op threads [{s.cpu_threads_source}]{onednn}"
        )
    else:
        extra = ", ".join(
            x
            for x in (
                nbytes(d.memory_bytes) if d.memory_bytes else "",
                f"compute capability {d.compute_capability}" if d.compute_capability else "",
                f"driver {d.driver}" if d.driver else "",
            )
            if x
        )
    return (
        f"{d.name}: {d.description} — {extra} — {s.framework.name} {s.framework.version}, "
        f"import {s.import_s:.1f} s, timer+sync {seconds(s.overhead_s)}"
    )


def render_html(
    record: RunRecord,
    sections: list[Section],
    *,
    verdict: list[str] | None = None,
    warnings: list[str] | None = None,
    failures: list[str] | None = None,
    first: FirstScreen | None = None,
    measured: list[TimingWarning] | None = None,
    skipped: Sequence[NotMeasured | None],
) -> str:
    """The page, every CSS rule scoped under ``.whichdevice-report`` (a notebook shows its
    :func:`fragment_of`). Inside :func:`capturing`, what the page is made of is also kept
    (``report --markdown``). ``first`` (present/firstscreen.FirstScreen) goes on top; the warnings
    (``measured``: those of ``warnings`` that are measurement warnings, typed) are then grouped by
    kind in a collapsible list; a glossary and the sources close the page. ``skipped``: each skipped
    case's own reason, in the record's order (analysis/facade.Analysis.skipped)."""
    from whichdevice.present import names

    from whichdevice.present.firstscreen import aggregate_warnings, named_failures, skip_reasons, skipped_summary

    if _pages is not None:
        _pages.append(
            Page(
                record,
                list(sections),
                list(verdict or []),
                list(warnings or []),
                list(failures or []),
                first,
                list(skipped),
            )
        )
    named, failed = named_failures(record, failures or [], skipped)
    groups = [
        {"count": g.count, "text": g.text, "items": g.items} for g in aggregate_warnings(measured or [], warnings or [])
    ]
    sources = sorted({s.source for s in sections if s.source})
    footnote = {k: i for i, k in enumerate(sources, 1)}
    view = [
        {
            "title": s.title,
            "footnote": footnote.get(s.source or ""),
            "lines": s.lines,
            "grids": [
                {
                    "title": g.title,
                    "headers": g.headers,
                    "rows": g.rows,
                    "footer": g.footer,
                    "align": [column_align(g, i) for i in range(len(g.headers))],
                }
                for g in s.grids
            ],
            "images": [base64.b64encode(Path(p).read_bytes()).decode("ascii") for p in s.pngs],
        }
        for s in sections
    ]
    return _ENV.get_template("report.html.j2").render(
        record=record,
        machine_line=machine_line(record),
        sessions=[_session_line(s) for s in record.sessions],
        sections=view,
        verdict=verdict or [],
        warnings=warnings or [],
        failures=failed,
        skipped=named,
        skipped_summary=skipped_summary(skip_reasons(skipped), failed),
        first=first_view(first),
        warning_groups=groups,
        other_warnings=[],
        glossary=sorted(names.GLOSSARY.items(), key=lambda kv: kv[0].lower()) if first is not None else [],
        sources=[names.SOURCES.get(k, "") for k in sources],
    )


SCOPE = "whichdevice-report"  # the class every CSS rule of the report is scoped under


def fragment_of(page: str) -> str:
    """The report without the page around it (a notebook cell's output must not restyle the
    notebook): from the scoped container to its end."""
    start = page.find(f'<div class="{SCOPE}">')
    end = page.rfind("</div>")
    if start < 0 or end < start:
        return page
    return page[start : end + len("</div>")]


def first_view(fs: FirstScreen | None) -> FirstView | None:
    """The first screen as plain values (answer, causes, changes with code and caveat, ...)."""
    if fs is None:
        return None
    from whichdevice.present.firstscreen import (
        busy_text,
        cause_text,
        cause_title,
        none_text,
        quiet_text,
        reads_text,
        tail_lines,
        warnings_line,
    )

    return {
        "answer": fs.answer,
        "causes": [{"title": cause_title(c), "text": cause_text(c)} for c in fs.causes],
        "quiet": [] if fs.causes else [quiet_text(q) for q in fs.quiet],
        "reads": [reads_text(st) for st in fs.reads],
        "changes": [
            {"title": c.title, "gain": c.gain_text, "code": c.code, "caveat": c.caveat, "where": c.where}
            for c in fs.changes
        ],
        "more": [{"title": c.title, "gain": c.gain_text, "code": c.code, "caveat": c.caveat} for c in fs.more],
        "tail": [line for line in tail_lines(fs) if not line.startswith("Also helps")],  # more is listed whole
        "warnings_line": warnings_line(fs),
        "none": none_text(fs),
        "busy": busy_text(fs.busy) if fs.busy is not None else "",
    }
