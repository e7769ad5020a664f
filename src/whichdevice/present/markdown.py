"""A report as GitHub Markdown (to paste into a pull request or an issue) and its tables as CSV
(``whichdevice report X --markdown`` / ``--csv``).

Both are written from the pages a command's renderer composes (present/html.capturing): the
same first screen, sections and tables as the HTML report, so the formats cannot disagree.

Markdown: the run's header, the first screen (answer, why it is slow, what to change with the
line of code and its caveat), then the tables — for ``run``/``diagnose`` only the fix table
unless ``full`` (``--verbose``), for every other experiment all of them — and the notes,
failures and warnings in one line each. CSV: one "long" table, one row per cell
(``section,table,row,column,value``), so any number of tables of any shape fit in one file a
script or a spreadsheet's pivot can read.
"""

from __future__ import annotations

import csv
import io

from whichdevice.core.textsafe import clean
from whichdevice.present.firstscreen import named_failures, skip_reasons, skipped_summary
from whichdevice.present.html import FirstView, Page, first_view
from whichdevice.present.tables import Grid, column_align
from whichdevice.present.terminal import machine_line

# Experiments whose Markdown is the first screen and the fix table (their first section).
_FIRST_SCREEN = ("run", "diagnose")


def _cell(text: str) -> str:
    """A table cell: one line, pipes escaped (GitHub has no other escape inside tables)."""
    return clean(str(text)).replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>").strip() or " "


def _line(text: str) -> str:
    return clean(str(text)).replace("\n", " ").strip()


def grid_markdown(grid: Grid) -> list[str]:
    out = [f"**{_line(grid.title)}**", ""] if grid.title else []
    out.append("| " + " | ".join(_cell(h) for h in grid.headers) + " |")
    out.append(
        "|"
        + "|".join(" ---: " if column_align(grid, i) == "right" else " --- " for i in range(len(grid.headers)))
        + "|"
    )
    for row in grid.rows:
        out.append("| " + " | ".join(_cell(c.text) for c in row) + " |")
    out += [""] + [f"_{_line(f)}_" for f in grid.footer]
    return out + [""]


def _header_markdown(page: Page) -> list[str]:
    """The run's header: experiment and date, then the machine, framework versions and devices."""
    r = page.record
    versions = sorted({f"{s.framework.name} {s.framework.version}" for s in r.sessions})
    devices = sorted({s.device.name for s in r.sessions})
    return [
        f"### whichdevice {_line(r.experiment)} · {_line(r.created_at)}",
        "",
        f"{_line(machine_line(r))}"
        + (f" · {', '.join(versions)}" if versions else "")
        + (f" · {', '.join(devices)}" if devices else ""),
        "",
    ]


def _causes_markdown(causes: list[dict[str, str]], quiet: list[str], reads: list[str]) -> list[str]:
    """The block "Why it is slow": the measured causes, numbered; with none, a script's measured
    step's line saying no part stands out; then a CPU step's host reads every step."""
    head = ["**Why it is slow** (measured share of the time)", ""]
    if causes:
        lines = head + [f"{i}. **{_line(c['title'])}** — {_line(c['text'])}" for i, c in enumerate(causes, 1)]
    elif quiet:
        lines = head + [_line(q) for q in quiet]
    elif reads:
        lines = head
    else:
        return []
    if reads:
        lines += ([""] if causes or quiet else []) + [_line(r) for r in reads]
    return lines + [""]


def _changes_markdown(changes: list[dict[str, str]], none: str) -> list[str]:
    """The block "What to change": each fix with its gain, where, its line of code and its caveat."""
    lines = ["**What to change** (measured on this machine, best first)", ""]
    if not changes:
        return lines + [none]
    for i, c in enumerate(changes, 1):
        lines.append(f"{i}. **{_line(c['title'])}**: {_line(c['gain'])} ({_line(c['where'])})")
        lines += ["   ```python", *[f"   {clean(x)}" for x in str(c["code"]).splitlines()], "   ```"]
        if c["caveat"]:
            lines.append(f"   Caveat: {_line(c['caveat'])}")
    return lines


def _first_screen_markdown(fs: FirstView) -> list[str]:
    """The first screen: answer, why it is slow, what to change, what else helps, and the tail."""
    lines: list[str] = []
    answer = [_line(a) for a in fs["answer"]]
    if answer:
        lines += [f"**Answer:** {answer[0]}"] + [f"{a}" for a in answer[1:]] + [""]
    if fs["busy"]:  # the steps timed on a busy machine: what the answer's numbers were measured under
        lines += [_line(fs["busy"]), ""]
    lines += _causes_markdown(fs["causes"], fs["quiet"], fs["reads"])
    lines += _changes_markdown(fs["changes"], fs["none"])
    if fs["more"]:
        lines += [
            "",
            "Also helps: " + "; ".join(f"{_line(c['title'])} — {_line(c['gain'])}" for c in fs["more"]) + ".",
        ]
    for tail in fs["tail"]:  # slower here, no clear change, not measured (present/firstscreen.tail_lines)
        lines += ["", _line(tail)]
    return lines + [""]


def _sections_markdown(page: Page, *, full: bool) -> list[str]:
    """The tables: for run/diagnose only the fix table (and no section lines) unless ``full``."""
    brief = page.record.experiment in _FIRST_SCREEN and not full
    sections = page.sections[:1] if brief else page.sections  # [:1]: the fix table
    lines: list[str] = []
    for s in sections:
        lines += [f"#### {_line(s.title)}", ""]
        for g in s.grids:
            lines += grid_markdown(g)
        if not brief:
            lines += [f"- {_line(x)}" for x in s.lines]
            if s.lines:
                lines.append("")
    return lines


def _footer_markdown(page: Page) -> list[str]:
    """Notes, failures and the warning count in one line each, then the tool's signature."""
    r = page.record
    lines = [f"> Note: {_line(n)}" for n in r.notes]
    named, failed = named_failures(r, page.failures, page.skipped)
    lines += [f"> Failed: {_line(f)}" for f in failed]
    if named:  # the cases the time budget did not reach: not measured, never failed
        lines.append(f"> {_line(skipped_summary(skip_reasons(page.skipped), failed))}; each named in the HTML report")
    if page.warnings:
        lines.append(
            f"> {len(page.warnings)} measurement warning{'s' if len(page.warnings) != 1 else ''} (see the HTML report)"
        )
    return lines + [
        "",
        f"<sub>whichdevice {_line(r.tool_version)} · every number measured on this machine; the JSON record holds the raw samples.</sub>",
    ]


def page_markdown(page: Page, *, full: bool = False) -> str:
    lines = _header_markdown(page)
    fs = first_view(page.first)
    if fs is not None:
        lines += _first_screen_markdown(fs)
    elif page.verdict:
        lines += [f"- {_line(v)}" for v in page.verdict] + [""]
    lines += _sections_markdown(page, full=full)
    lines += _footer_markdown(page)
    return "\n".join(lines).rstrip() + "\n"


def pages_csv(pages: list[Page]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["section", "table", "row", "column", "value"])
    for page in pages:
        for s in page.sections:
            for g in s.grids:
                for i, row in enumerate(g.rows, 1):
                    for h, c in zip(g.headers, row):
                        w.writerow([_line(s.title), _line(g.title), i, _line(h), _line(c.text)])
    return buf.getvalue()
