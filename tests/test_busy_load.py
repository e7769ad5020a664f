"""A step timed on a busy machine, said beside the answer (analysis/scriptsteps.busy_load,
present/firstscreen.busy_text): where the pre-flight's 1-minute load per core reached the
contention threshold (``scriptplan.CONTENDED_LOAD``), every time in the report, and the CPU side of
a GPU prediction made from them, can be slower than the machine's own when idle. A busy run named
no cause and compared the predicted GPU against the slowed CPU step without telling the user.

Built on ``edited/diagnose_script_torch_cnn_traced_busy.json`` (a real script diagnose at load 13.2
on 2 cores, its load added as the record keeps it now: tests/data/edited/make.py) and on the real
record whose pre-flight load per core is 0.599 (below the threshold)."""

from __future__ import annotations

import html as htmltext
import re
import tempfile
from pathlib import Path

from rich.console import Console

from whichdevice.analysis import facade
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import RunRecord, load_run
from whichdevice.present import firstscreen, html, markdown, output, registry
from whichdevice.present.firstscreen import BUSY_WIDTH, busy_lines, busy_text, first_screen, screen_lines
from whichdevice.workloads.scriptplan import CONTENDED_LOAD

DATA = Path(__file__).parent / "data"
BUSY = DATA / "edited" / "diagnose_script_torch_cnn_traced_busy.json"  # load 6.6 per core, 2 cores
QUIET = DATA / "diagnose_script_keras_fit_validation_callbacks_budget20_cpu_2core.json"  # 0.599 per core
OPENING = "Measured on a busy machine"


def _renders(record: RunRecord) -> dict[str, str]:
    """The terminal page (no --verbose, at the first screen's width), the HTML page's source and
    the Markdown of its pages, as `whichdevice report` renders them (tests/test_one_voice.py)."""
    with tempfile.TemporaryDirectory() as tmp, output.unseen(), html.capturing() as pages:
        with open(Path(tmp) / "screen.txt", "w") as f:  # a file: lines are printed whole, never wrapped
            con = Console(record=True, width=firstscreen.WIDTH, file=f)
            registry.render(con, facade.analyze(record), Path(tmp) / "r.png", loglog=True)
        return {
            "terminal": con.export_text(),
            "html": "\n".join(p.read_text(encoding="utf-8") for p in sorted(Path(tmp).glob("*.html"))),
            "markdown": "\n".join(markdown.page_markdown(p) for p in pages),
        }


def _with_load(record: RunRecord, per_core: float) -> RunRecord:
    return record.model_copy(update={"options": {**record.options, "preflight_load_per_core": per_core}})


def test_a_busy_run_says_so_in_the_same_words_in_every_form():
    record = load_run(BUSY)
    v = suite_verdict(record, seed_batch=int(str(record.options["batch"])))
    b = v.busy
    assert b is not None and b.cores == 2 and b.load == 13.2 and b.predicted  # its H100 prediction is shown
    text = busy_text(b)
    assert text == (
        "Measured on a busy machine: load 13.2 on 2 cores (the pre-flight's 1-minute average), so the times "
        "here and the GPU prediction's CPU side can be slower than on this machine idle. Run it again when it "
        "is quiet."
    )
    lines = busy_lines(b)
    assert " ".join(line.strip() for line in lines) == text  # the terminal's lines are the same words
    assert all(len(line) <= BUSY_WIDTH for line in lines)
    forms = _renders(record)
    terminal = forms["terminal"].splitlines()
    at = terminal.index(lines[0])
    assert terminal[at : at + len(lines)] == lines  # whole, right under the answer, before the causes
    head = next(i for i, line in enumerate(terminal) if line.startswith(firstscreen.CAUSES_HEAD))
    assert terminal[at - 1].startswith("        ") and head > at
    assert len(terminal) <= firstscreen.MAX_LINES - firstscreen.AFTER_PAGE
    assert text in forms["markdown"]
    (para,) = re.findall(r'<p class="busy">(.*?)</p>', forms["html"])
    assert htmltext.unescape(para) == text


def test_a_quiet_run_and_a_run_without_the_load_say_nothing_of_it():
    quiet = load_run(QUIET)
    assert 0 < float(quiet.options["preflight_load_per_core"]) < CONTENDED_LOAD
    unrecorded = load_run(DATA / "diagnose_script_torch_cnn_traced_budget60_cpu_2core.json")
    assert "preflight_load_per_core" not in unrecorded.options
    for record in (quiet, unrecorded):
        assert suite_verdict(record).busy is None
        forms = _renders(record)
        assert not [form for form, text in forms.items() if OPENING in text]


def test_the_threshold_is_the_contention_cause_s():
    record = load_run(QUIET)
    assert suite_verdict(_with_load(record, CONTENDED_LOAD)).busy is not None
    assert suite_verdict(_with_load(record, CONTENDED_LOAD - 0.001)).busy is None
    b = suite_verdict(_with_load(record, 3.9)).busy
    assert b is not None and not b.predicted  # no GPU prediction made from this record: none named
    assert "load 7.8 on 2 cores" in busy_text(b) and "prediction" not in busy_text(b)


def test_a_short_screen_drops_the_unhelped_tail_before_the_busy_machine_and_never_the_answer():
    record = load_run(BUSY)
    fs = first_screen(record, suite_verdict(record, seed_batch=int(str(record.options["batch"]))))
    assert fs.busy is not None
    said = [("busy", line) for line in busy_lines(fs.busy)]
    full = screen_lines(fs, report=None, budget=100)
    tail = [x for x in full if x[1].lstrip().startswith("Not measured: ")]
    assert tail and all(x in full for x in said)
    kept_busy_without_tail = False
    for budget in range(30, 5, -1):
        lines = screen_lines(fs, report=None, budget=budget)
        assert [x for x in lines if x[0] == "answer"] == [x for x in full if x[0] == "answer"]
        busy = all(x in lines for x in said)
        assert busy or not any(x in lines for x in tail)  # the busy machine goes only after the tail
        kept_busy_without_tail |= busy and not any(x in lines for x in tail)
    assert kept_busy_without_tail
