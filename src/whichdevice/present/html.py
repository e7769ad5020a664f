"""One self-contained HTML report: plots inlined as base64 PNG, no network needed.

Every string that comes from a record or a user's file goes through jinja2's autoescape,
so a model name like ``<script>`` is shown, never run.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from whichdevice.present.tables import Grid, column_align
from whichdevice.present.terminal import machine_line
from whichdevice.core.units import nbytes, seconds
from whichdevice.core import safeio
from whichdevice.core.records import RunRecord

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


def _session_line(s) -> str:
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
) -> str:
    view = [
        {
            "title": s.title,
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
        failures=failures or [],
    )


def write_html(path: Path, html: str) -> Path:
    safeio.write_atomic(path, html)  # O_EXCL|O_NOFOLLOW temp, renamed; removed if the record is not written
    return path
