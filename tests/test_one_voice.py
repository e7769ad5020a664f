"""One voice: the terminal's first screen, the HTML report and `report --markdown` of a record
read the same analysis output, so they name the same causes of slowness in the same order with
the same shares, count the same failed cases, and say the same of the cases the time budget did
not reach ("not measured (time budget ...)", never "failed").

Every record in tests/data is rendered as `whichdevice report` renders it (the terminal page
without --verbose, at the first screen's 100 columns; the HTML page; the Markdown of each page).
A terminal that listed 1 cause where the HTML and the Markdown listed 3 (the 25-line first
screen was full) is what this catches: a short screen folds the causes onto one line instead.
A script's step with no cause named says so under the same heading with the same figures in
each form (a line that none stands out, and the shares measured), folded the same way. So do a
fixed cost's larger batch compared per sample (its ratio, interval and rounds) and a CPU step's
host reads every step (their count, their share here, a sync per read on a GPU).

A measured ratio reads the same everywhere: in the words of ``present/claims.ratio_text``. A
Flax record's batch grid said "2048: 0.84x (CI 0.814–0.866, n=10)" where the first screen said
"a larger batch 1.2× slower (95 % CI 1.2–1.2×, 10 samples)" of the same pair; every pair's
claim (a grid's cells too) is now checked to be written so in the Markdown and the HTML, every
"N× faster/slower (95 % CI ...)" in any form to be one the analysis claimed, and no form of any
record (the pitfalls' and the audits' pages too) to write a multiplier as "0.84x"."""

from __future__ import annotations

import dataclasses
import html as htmltext
import re
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from whichdevice.analysis import facade
from whichdevice.analysis.significance import Claim
from whichdevice.analysis.scriptsteps import script_steps
from whichdevice.cli import report as report_cli
from whichdevice.core import records
from whichdevice.core.errors import UsageError
from whichdevice.present import firstscreen, html, markdown, output, registry
from whichdevice.present.claims import ratio_text

DATA = Path(__file__).parent / "data"
HEAD = "Why it is slow (measured share of the time)"  # the causes' heading, in every form


def _records() -> list[tuple[Path, object]]:
    out = []
    for path in sorted(DATA.rglob("*.json")):
        try:
            out.append((path, report_cli.load_any(path)))
        except UsageError:  # a fixture that is not a record (op lists, telemetry series)
            continue
    return out


RECORDS = _records()


def _renders(record: object) -> dict[str, str]:
    """The terminal page (no --verbose), the HTML page's source and the Markdown of its pages."""
    with tempfile.TemporaryDirectory() as tmp, output.unseen(), html.capturing() as pages:
        with open(Path(tmp) / "screen.txt", "w") as f:  # a file: lines are printed whole, never wrapped
            con = Console(record=True, width=firstscreen.WIDTH, file=f)
            shown = facade.analyze(record) if isinstance(record, records.RunRecord) else record  # an audit: as is
            registry.render(con, shown, Path(tmp) / "r.png", loglog=True)
        pages_html = [p.read_text(encoding="utf-8") for p in sorted(Path(tmp).glob("*.html"))]
        return {
            "terminal": con.export_text(),
            "html": "\n".join(pages_html),
            "markdown": "\n".join(markdown.page_markdown(p) for p in pages),
        }


_SHARE = r"(\d+%)"


def _terminal_causes(text: str) -> list[tuple[str, str]]:
    lines = text.splitlines()
    head = [i for i, line in enumerate(lines) if line.startswith(HEAD)]
    if not head:
        return []
    line = lines[head[0]]
    if line != HEAD:  # folded: '...: 1. Fixed cost per step 98% · 2. ...' (a fixed cost's batch after ': ')
        folded = line[len(HEAD) + 2 :]
        return [
            (m.group(1), m.group(2))
            for part in folded.split(" · ")
            if (m := re.match(r"\d+\. (.+?) (\d+%)(?:: .*)?$", part))
        ]
    out = []
    for below in lines[head[0] + 1 :]:
        m = re.match(rf"  \d+\. (.+?) — {_SHARE}", below)
        if not m:
            break
        out.append((m.group(1), m.group(2)))
    return out


def _html_causes(page: str) -> list[tuple[str, str]]:
    block = re.search(r"<h3>Why it is slow[^<]*</h3>\s*<ol>(.*?)</ol>", page, re.S)
    if block is None:
        return []
    items = re.findall(rf"<li><b>(.+?)</b> — {_SHARE}", block.group(1))
    return [(htmltext.unescape(t), s) for t, s in items]


def _markdown_causes(text: str) -> list[tuple[str, str]]:
    return re.findall(rf"^\d+\. \*\*(.+?)\*\* — {_SHARE}", text, re.M)


# The line of a script's step where no cause is named: the measured parts and their shares,
# up to where the line goes on (" of a 41 ms step", "; ...", another step's " · ", the HTML tag).
_QUIET = re.compile(r"no part the capture times stands out: ([^;<\n·]*?)(?= of a |;|<| ·|\.?$)", re.I | re.M)


def _quiet(text: str) -> list[list[tuple[str, str]]]:
    """Per quiet step's line, in order: its (part, share) figures."""
    return [re.findall(r"([a-z][a-z ]*?) (\d+%)", m.group(1)) for m in _QUIET.finditer(text)]


# A fixed cost's larger batch, per sample: its ratio where it is a gain, the two batches, and
# its interval and rounds where the claim has them (the folded line keeps these, the note aside).
_GAIN = re.compile(
    r"per-sample time (?:falls ([\d.]+)× )?from batch (\d+) to (\d+)[^(]*\((?:95 % CI ([\d.]+)–([\d.]+)×, (\d+) rounds)?"
)
# A CPU step's host reads every step: the reads a step and their share of the step here.
_READS = re.compile(r"host reads:? ([\d.]+) a step.*?, (\d+%) of the step on this CPU", re.I)


def _gains(text: str) -> list[tuple[str, ...]]:
    return [tuple(g or "" for g in m.groups()) for m in _GAIN.finditer(text)]


def _reads(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _READS.finditer(text)]


def _failed_counts(forms: dict[str, str]) -> dict[str, int]:
    """The failed cases each form counts: the terminal's first screen in its warnings line, a
    page without one on its 'Failed:' lines; the HTML and the Markdown one 'Failed:' each."""
    term = forms["terminal"]
    m = re.search(r"^Warnings: (\d+) cases? failed", term, re.M)
    return {
        "terminal": int(m.group(1)) if m else len(re.findall(r"^Failed: ", term, re.M)),
        "html": len(re.findall(r"<b>Failed:</b>", forms["html"])),
        "markdown": len(re.findall(r"^> Failed: ", forms["markdown"], re.M)),
    }


# A multiplier written outside ratio_text ('0.84x', '637x'): the claims' own words use '×'.
_X_MULTIPLIER = re.compile(r"(?<![\w.])\d[\d.,]*(?:e[+-]\d+)?x(?=[\s,;:)|]|$)")
# A claimed change as ratio_text writes it (the first screen adds a tag before its ')').
_CLAIMED = re.compile(r"\d[\d.,]*× (?:faster|slower) \(\d+ % CI [^)]*\)")
_TAG = re.compile(r"; (?:bimodal|see the report)\)$")


def _claims_in(obj: object, seen: set[int] | None = None) -> list[Claim]:
    """Every significance.Claim the analysis result holds, however deep."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, type)):
        return []
    seen.add(id(obj))
    if isinstance(obj, Claim):
        return [obj]
    if dataclasses.is_dataclass(obj):
        items: list[object] = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    elif isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        items = list(obj)
    else:
        return []
    return [c for item in items for c in _claims_in(item, seen)]


def _same_ratio_words(record: records.RunRecord, result: facade.Suite, forms: dict[str, str]) -> None:
    """Each measured pair's ratio in ratio_text's words in every form that lists it (see the module)."""
    plain = {}
    for form, text in forms.items():
        flat = " ".join(htmltext.unescape(re.sub(r"<[^>]+>", " ", text)).split())
        for note in record.notes:  # the record's own words, quoted as recorded
            flat = flat.replace(" ".join(note.split()), "")
        plain[form] = flat
    pairs = [f for v in result.verdict.fixes for f in [*v.fixes, *(c for g in v.grids for c in g.cells)]]
    for f in pairs:  # the report lists every measured pair, a grid's cells too
        said = ratio_text(f.claim)
        assert said in plain["markdown"] and said in plain["html"], (f.entry.key, f.device, f.variant, said)
    claimed = [ratio_text(dataclasses.replace(c, note=None)) for c in _claims_in(result)]
    for form, text in plain.items():
        for m in _CLAIMED.finditer(text):
            phrase = _TAG.sub(")", m.group(0))
            assert any(c.startswith(phrase[:-1]) for c in claimed), (form, phrase)
        assert not _X_MULTIPLIER.findall(text), (form, _X_MULTIPLIER.findall(text))


@pytest.mark.parametrize("path,record", RECORDS, ids=[str(p.relative_to(DATA)) for p, _ in RECORDS])
def test_the_three_forms_say_the_same_causes_failures_and_not_measured(path, record):
    forms = _renders(record)
    causes = {
        "terminal": _terminal_causes(forms["terminal"]),
        "html": _html_causes(forms["html"]),
        "markdown": _markdown_causes(forms["markdown"]),
    }
    assert causes["terminal"] == causes["html"] == causes["markdown"], causes
    quiet = {form: _quiet(text) for form, text in forms.items()}
    assert quiet["terminal"] == quiet["html"] == quiet["markdown"], quiet
    gains = {form: _gains(text) for form, text in forms.items()}
    assert gains["terminal"] == gains["html"] == gains["markdown"], gains
    reads = {form: _reads(text) for form, text in forms.items()}
    assert reads["terminal"] == reads["html"] == reads["markdown"], reads
    if not isinstance(record, records.RunRecord):  # an audit record: no cause, no case the budget cut
        assert not causes["terminal"] and "not measured (time budget" not in forms["terminal"]
        return
    result = facade.analyze(record)
    if isinstance(result, facade.Suite):  # the causes the analysis returned, in its order
        want = [(firstscreen.cause_title(c), f"{c.share:.0%}") for c in result.verdict.causes]
        assert causes["markdown"] == want[: firstscreen.SHOWN_CAUSES]
        # a script's measured step with no cause named: its line, in every form, with the same figures
        said = [_quiet(firstscreen.QUIET + ": " + firstscreen.quiet_parts(q))[0] for q in result.verdict.quiet]
        assert bool(said) == (not want and bool(script_steps(record)))
        assert all(quiet[form] == said for form in quiet), (quiet, said)
        # a CPU step's host reads every step: in every form where the analysis returned it, and only there
        assert len(reads["markdown"]) == len(result.verdict.gpu_reads), reads
        _same_ratio_words(record, result, forms)

    failed = sum(r.status == "failed" for r in record.results)
    skipped = sum(r.status == "skipped" for r in record.results)
    if forms["html"] and forms["markdown"]:  # a page with a report: every form counts them
        assert _failed_counts(forms) == {"terminal": failed, "html": failed, "markdown": failed}
        said = f"{skipped} case{'s' if skipped != 1 else ''} not measured (time budget" if skipped else None
        for form, text in forms.items():
            plain = htmltext.unescape(re.sub(r"<[^>]+>", " ", text))
            assert (said in plain) if said else ("not measured (time budget" not in plain), form
            # a case the budget did not reach is never called failed in any form
            assert not re.search(r"failed: skipped|Failed:[^\n]*the time budget ran out", plain), form


# A multiplier as a number and an 'x' ('3.64x', '38.4x'): every ratio is written with '×'
# (present/claims.times), on the pitfalls and audit pages as in the suite's report.
_NX = re.compile(r"(?<![\w.])\d+(\.\d+)?x\b")  # a number of its own, not the end of a name ("tmpcjhczx4x")


def _quoted(record: object) -> list[str]:
    """The record's own words each form quotes as recorded: its notes, and an audit's lines of the
    user's script (``print("matmul 20x", ...)`` is the user's, not a ratio of ours)."""
    out = list(getattr(record, "notes", []) or [])
    out += [x.text for x in [*getattr(record, "blocks", []), *getattr(record, "measurements", [])]]
    return out


@pytest.mark.parametrize("path,record", RECORDS, ids=[str(p.relative_to(DATA)) for p, _ in RECORDS])
def test_no_form_writes_a_multiplier_as_nx(path, record):
    """Every record in tests/data (the pitfalls' and the audits' too, which the claims' check above
    does not reach): terminal, HTML and Markdown write no 'N.Nx' multiplier."""
    for form, text in _renders(record).items():
        flat = " ".join(htmltext.unescape(re.sub(r"<[^>]+>", " ", text)).split())
        for quoted in _quoted(record):
            flat = flat.replace(" ".join(quoted.split()), "")
        found = [flat[max(0, m.start() - 40) : m.end() + 10] for m in _NX.finditer(flat)]
        assert not found, (form, found)


def test_a_full_first_screen_folds_its_causes_and_drops_none():
    """The README's run: 3 causes; its first screen is full at 25 lines. The terminal listed only
    the first while the report listed 3: now they are folded onto one line, each with its share."""
    record = report_cli.load_any(DATA / "run_cpu_readme.json")
    assert isinstance(record, records.RunRecord)
    forms = _renders(record)
    term = _terminal_causes(forms["terminal"])
    assert [t for t, _ in term] == ["Fixed cost per step", "Python in the input pipeline", "Waiting for input"]
    assert term == _markdown_causes(forms["markdown"])
    body = forms["terminal"].split("Report: ")[0]  # the page as printed, without the path line
    assert len(body.splitlines()) + 1 <= firstscreen.MAX_LINES - firstscreen.AFTER_PAGE


def test_a_screen_with_room_lists_each_cause_on_its_own_line():
    record = report_cli.load_any(DATA / "run_cpu_2core.json")
    assert isinstance(record, records.RunRecord)
    term = _renders(record)["terminal"]
    assert f"{HEAD}\n  1. Fixed cost per step — " in term
    assert len(_terminal_causes(term)) == 3


def _flags_and_float16(record: records.RunRecord, *, fast: bool, slower_by: float) -> records.RunRecord:
    """``record`` as if its CPU had avx512_fp16/amx_fp16 and avx512_bf16/amx_bf16 (``fast``),
    its mixed_float16 precision case ``slower_by`` times slower."""

    def scaled(t: records.Timing) -> records.Timing:
        return t.model_copy(
            update={
                "samples_s": [x * slower_by for x in t.samples_s],
                "rounds_s": [[x * slower_by for x in r] for r in t.rounds_s] if t.rounds_s else t.rounds_s,
            }
        )

    out = []
    for r in record.results:
        if r.spec.params.get("kind") == "precision":
            r = r.model_copy(
                update={"metrics": {**r.metrics, "cpu_fast_bf16": float(fast), "cpu_fast_fp16": float(fast)}}
            )
            if r.spec.params["precision"] == "mixed_float16" and r.timing is not None:
                r = r.model_copy(update={"timing": scaled(r.timing)})
        out.append(r)
    return record.model_copy(update={"results": out})


def test_fast_16bit_flags_beside_a_much_slower_float16_are_reconciled_in_one_line():
    """A Keras mixed_float16 fit measured 224× slower than float32 beside 'This CPU has fast
    bfloat16 and float16 math (amx_bf16 ...)': two lines that read as a contradiction. The note
    now says, from the measurement, that the float16 ops do not run on those instructions here."""
    record = report_cli.load_any(DATA / "run_cpu_2core.json")
    assert isinstance(record, records.RunRecord)
    slow = _flags_and_float16(record, fast=True, slower_by=224.0)
    md = _renders(slow)["markdown"]
    row = next(line for line in md.splitlines() if "Mixed precision" in line and "float32 -> mixed_float16" in line)
    assert re.search(r"mixed_float16: \d+× slower \(95 % CI", row)
    assert "This CPU has fast bfloat16 and float16 math" in row
    assert "Yet mixed_float16 measured significantly slower than float32 on this CPU" in row
    assert "float16 ops do not run on them here" in row
    # the same record, float16 not slower: the flags' line alone, no explanation to make
    same = _renders(_flags_and_float16(record, fast=True, slower_by=1.0))["markdown"]
    assert "This CPU has fast bfloat16 and float16 math" in same and "Yet mixed_float16" not in same
    # no fast flags: the slowdown is what the existing 'not accelerated' line explains
    plain = _renders(_flags_and_float16(record, fast=False, slower_by=224.0))["markdown"]
    assert "no fast 16-bit math" in plain and "Yet mixed_float16" not in plain


SUITES = [(p, r) for p, r in RECORDS if isinstance(r, records.RunRecord) and r.experiment in ("run", "diagnose")]


@pytest.mark.parametrize("path,record", SUITES, ids=[str(p.relative_to(DATA)) for p, _ in SUITES])
def test_no_screen_budget_drops_a_cause(path, record):
    """However few lines the first screen has (a long answer, a changed provisional answer, a
    prediction), every cause the report lists is on it, in the same order, with its share."""
    from whichdevice.present.suitepage import first_screen

    result = facade.analyze(record)
    assert isinstance(result, facade.Suite)
    fs = first_screen(record, result.verdict)
    want = [(firstscreen.cause_title(c), f"{c.share:.0%}") for c in fs.causes]
    quiet = [_quiet(firstscreen.QUIET + ": " + firstscreen.quiet_parts(q))[0] for q in fs.quiet]
    roomy = "\n".join(t for _, t in firstscreen.screen_lines(fs, report="r.html", budget=100))
    for budget in range(firstscreen.MAX_LINES, 5, -1):
        text = "\n".join(t for _, t in firstscreen.screen_lines(fs, report="r.html", budget=budget))
        assert _terminal_causes(text) == want, (budget, text)
        assert _quiet(text) == quiet, (budget, text)  # no budget drops the line that none stands out
        # nor a fixed cost's larger batch (its ratio, interval, rounds) or a CPU step's host reads
        assert _gains(text) == _gains(roomy) and _reads(text) == _reads(roomy), (budget, text)


@pytest.mark.parametrize(
    "name",
    ["diagnose_script_regression_budget60_cpu_2core.json", "diagnose_script_torch_cnn_traced_budget60_cpu_2core.json"],
)
def test_a_script_naming_no_cause_still_says_why_in_every_form(name):
    """Two real script diagnoses whose measured step names no cause: the heading was left out of
    every form, so the first screen said which device and what to change but not why. Now each
    form has the heading and the same line that no part stands out, with the measured shares."""
    forms = _renders(report_cli.load_any(DATA / name))
    plain = {f: htmltext.unescape(re.sub(r"<[^>]+>", " ", t)).replace("**", "") for f, t in forms.items()}
    for form, text in plain.items():
        assert "Why it is slow" in text and "No part the capture times stands out: " in text, form
    assert _quiet(forms["terminal"]) == _quiet(forms["html"]) == _quiet(forms["markdown"]) != []
