"""No name the project uses for itself reaches a reader: every record in tests/data rendered as
`whichdevice report` renders it (terminal with --verbose, --markdown, the HTML page's text) and
the progress line of every case of those records say what was measured in people's words, never
a seed number, an example id, a matmul mode's code name, a shipped profile's file name or an SI
prefix glued onto an abbreviation ("kex/s")."""

from __future__ import annotations

import html as htmltext
import re
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from whichdevice.analysis import facade
from whichdevice.cli import report as report_cli
from whichdevice.core import records
from whichdevice.core.errors import UsageError
from whichdevice.present import html, markdown, output, registry
from whichdevice.present.cliprogress import phase_of
from whichdevice.present.tables import describe_key

DATA = Path(__file__).parent / "data"
INTERNAL = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bseeds? ?0\d\d\b",
        r"\bex\d\b",
        r"\bex\d_",
        r"model=seed",
        r"example=",
        r"mode=seed",
        r"kex/s",
        r"\bex/s\b",
        r"profile '",
        r"the article",
    )
]


def _records() -> list[tuple[Path, object]]:
    out = []
    for path in sorted(DATA.rglob("*.json")):
        try:
            out.append((path, report_cli.load_any(path)))
        except UsageError:  # a fixture that is not a record (op lists, telemetry series)
            continue
    return out


RECORDS = _records()


def _renders(record: object) -> list[tuple[str, str]]:
    """(form, text) of one record: the terminal page with --verbose, the HTML page's text and
    the Markdown of each page, composed by the renderer `report` calls."""
    texts = []
    with tempfile.TemporaryDirectory() as tmp, output.unseen(), html.capturing() as pages:
        con = Console(record=True, width=160, file=open(Path(tmp) / "screen.txt", "w"))  # noqa: SIM115
        if isinstance(record, records.RunRecord):
            registry.render(con, facade.analyze(record), Path(tmp) / "r.png", loglog=True, verbose=True)
        else:  # an audit record: its own page, as `report` prints it
            registry.render(con, record, Path(tmp) / "r.png", loglog=True)
        con.file.close()
        texts.append(("terminal", con.export_text()))
        for page in Path(tmp).glob("*.html"):
            texts.append(("html", htmltext.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))))
        texts += [("markdown", markdown.page_markdown(p, full=True)) for p in pages]
    return texts


def _leaks(text: str) -> list[str]:
    found = []
    for pat in INTERNAL:
        for m in pat.finditer(text):
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            found.append(f"{pat.pattern}: {text[start : end if end >= 0 else None].strip()[:160]}")
    return found


def test_the_records_are_found():
    assert len(RECORDS) > 40  # the fixtures of every command, audit records included


@pytest.mark.parametrize("path,record", RECORDS, ids=[str(p.relative_to(DATA)) for p, _ in RECORDS])
def test_no_internal_name_in_a_rendered_record(path, record):
    leaks = [f"[{form}] {leak}" for form, text in _renders(record) for leak in _leaks(text)]
    assert not leaks, "\n".join(leaks[:20])


def test_no_internal_name_in_a_progress_line():
    keys = {r.spec.key for _, rec in RECORDS if isinstance(rec, records.RunRecord) for r in rec.results}
    assert len(keys) > 300
    leaks = [f"{key}: {leak}" for key in sorted(keys) for leak in _leaks(describe_key(key) + "\n" + phase_of(key))]
    assert not leaks, "\n".join(leaks[:20])


def test_a_case_of_the_suite_reads_as_what_it_trains():
    key = "train|tensorflow|CPU:0|batch=10,data=numpy,epochs=1,example=ex2,kind=loop,model=seed001,samples=1000"
    assert describe_key(key) == "CPU:0 small MLP, 1,000 samples, batch 10, custom training loop"
    assert describe_key("matmul|tensorflow|CPU:0|dtype=float32,mode=seed,n=10").startswith(
        "CPU:0 matrix multiply 10×10 (operands created"
    )
    assert phase_of("matmul|tensorflow|CPU:0|dtype=float32,mode=seed,n=10") == "CPU:0 matmul created and read back"
