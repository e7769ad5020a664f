"""What ``print(result)`` and ``repr(result)`` say for the Python API's results:
the answer in a few lines, and a one-line repr instead of the whole record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from whichdevice.core.records import RunRecord
from whichdevice.present import names
from whichdevice.present.firstscreen import first_screen, screen_lines
from whichdevice.present.claims import crossover_text

if TYPE_CHECKING:
    from whichdevice.analysis.suite import SuiteVerdict
    from whichdevice.analysis.sweep import Table


def _when(record: RunRecord) -> str:
    return record.created_at.replace("T", " ")[:16]


def _devices(record: RunRecord) -> str:
    return ", ".join(dict.fromkeys(r.spec.device for r in record.results)) or "no device"


def short_repr(cls: str, record: RunRecord) -> str:
    """'<Result matmul 2026-11-23 03:25: 12 cases on CPU:0, 0 failed>'."""
    failed = sum(r.status != "ok" for r in record.results)
    return (
        f"<{cls} {record.experiment} {_when(record)}: {len(record.results)} cases on {_devices(record)}, "
        f"{failed} failed>"
    )


def matmul_text(record: RunRecord, tables: list[Table]) -> str:
    """The crossover per mode; with one device, says that there is nothing to cross."""
    lines = [f"whichdevice matmul: {len(record.results)} cases on {_devices(record)} · {_when(record)}"]
    for t in tables:
        mode = str(t.group.get("mode", t.title))
        what = names.MATMUL_MODES.get(mode, mode)
        if t.crossovers:
            lines += [
                f"  {mode} ({what}): {d} vs {t.baseline}: {crossover_text(c, 'n')}" for d, c in t.crossovers.items()
            ]
            continue
        best = []
        for d in t.devices:
            timings = [(r.x, r.cells[d].timing) for r in t.rows if d in r.cells and r.cells[d].ok]
            pts = [(x, tm.median_s) for x, tm in timings if tm is not None]
            if pts:
                best.append(
                    f"{d} {pts[0][1] * 1e3:.3g} ms at n={pts[0][0]:g} … {pts[-1][1] * 1e3:.3g} ms at n={pts[-1][0]:g}"
                )
        lines.append(f"  {mode} ({what}): no crossover — one device measured ({'; '.join(best) or 'no data'})")
    lines += [f"  note: {n}" for n in record.notes]
    return "\n".join(lines)


def suite_text(record: RunRecord, verdict: SuiteVerdict) -> str:
    """The first screen of the record's verdict, as plain text (no report path: the result is not
    saved yet)."""
    fs = first_screen(record, verdict)
    lines = [text for style, text in screen_lines(fs, report=None)]
    return "\n".join(line for line in lines if not line.startswith("Every table"))


def record_text(record: RunRecord) -> str:
    failed = sum(r.status != "ok" for r in record.results)
    lines = [
        f"whichdevice {record.experiment}: {len(record.results)} cases on {_devices(record)} · {_when(record)}"
        + (f", {failed} failed" if failed else "")
        + " (`whichdevice report FILE` draws its tables and plots)"
    ]
    lines += [f"  note: {n}" for n in record.notes]
    return "\n".join(lines)
