"""The answer after round 1 (provisional, then confirmed or changed
by round 2), the no-GPU answer predicted on the reference GPU, and the progress at 80 columns
and piped. The record tests read a real run on the 2-core VM (tests/data/README.md)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from conftest import fake_session

from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import (
    CaseResult,
    CaseSpec,
    DeviceInfo,
    FrameworkInfo,
    Timing,
    load_run,
)
from whichdevice.present.firstscreen import first_screen, render_terminal, screen_lines, MAX_LINES

DATA = Path(__file__).parent / "data"
TRACED = DATA / "run_cpu_2core_traced.json"  # a real run with the op traces and a provisional answer
OLD = DATA / "run_cpu_2core.json"  # a run from before the traces
LONG_KEY = (
    "train|tensorflow|CPU:0|batch=32,kind=placement,model=seed001,steps=10,string_op=True,"
    "example=ex2,data=numpy,epochs=3,jit_compile=False"
)


def _console(width: int, terminal: bool) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    c = Console(file=buf, width=width, force_terminal=terminal, color_system=None, highlight=False)
    return c, buf


# ------------------------------------------------------------------ item 6: 80 columns, pipes


def test_the_progress_line_keeps_its_count_and_time_at_80_columns(monkeypatch):
    """At 80 columns a long case name used to push the count and the elapsed time off the line
    (`…string_op=True ╸ … 0…`): the name is cut instead."""
    from whichdevice.cli import common
    from whichdevice.present.tables import describe_key

    console, buf = _console(80, True)
    monkeypatch.setattr(common, "err_console", console)
    bar = common.progress()
    bar.add_task(describe_key(LONG_KEY)[:90], total=40, completed=14)
    console.print(bar.get_renderable())
    line = buf.getvalue().rstrip("\n")
    assert "14/40" in line and re.search(r"0:00:0\d", line), line
    assert len(line) <= 80 and "\n" not in line


def test_piped_progress_prints_a_line_per_finished_phase(monkeypatch):
    """Piped (stderr not a terminal) the live bar draws nothing: a line per finished phase
    instead, with the count and the elapsed time; --quiet prints none."""
    from whichdevice.jobs import running as common
    from whichdevice.measure import session

    keys = [
        "matmul|tensorflow|CPU:0|dtype=float32,mode=steady,n=1",
        "matmul|tensorflow|CPU:0|dtype=float32,mode=steady,n=10",
        "train|tensorflow|CPU:0|batch=8,kind=steady,model=seed001,sync=none",
        "train|tensorflow|CPU:0|batch=32,kind=steady,model=seed001,sync=none",
        "calibrate|tensorflow|CPU:0|batch=8,model=seed001,probe=describe",
    ]

    def fake_measure(request, *, progress, **_kw):
        progress.on_total(len(keys))
        for k in keys:
            progress.on_start(k)
            progress.on_result(None)
        return "record"

    monkeypatch.setattr(session, "measure", fake_measure)
    for quiet, expected in ((False, 3), (True, 0)):
        console, buf = _console(80, False)
        monkeypatch.setattr(common, "err_console", console)
        assert common.measure_with_progress(object(), found=object(), quiet=quiet) == "record"  # type: ignore[arg-type]
        lines = buf.getvalue().splitlines()
        assert len(lines) == expected, lines
    console, buf = _console(80, False)
    monkeypatch.setattr(common, "err_console", console)
    common.measure_with_progress(object(), found=object())  # type: ignore[arg-type]
    assert [re.sub(r"\d:\d\d:\d\d", "T", x) for x in buf.getvalue().splitlines()] == [
        "CPU:0 matmul back-to-back: 2 cases done (2/5, T)",
        "CPU:0 train steady: 2 cases done (4/5, T)",
        "CPU:0 op trace: 1 case done (5/5, T)",
    ]


def test_wrapped_first_screen_lines_keep_their_indent(tmp_path):
    """At 80 columns a wrapped cause, caveat or answer line continues under its first word,
    not at column 0."""
    record = load_run(OLD)
    fs = first_screen(record, suite_verdict(record))
    console, buf = _console(80, True)
    render_terminal(console, fs, report=None)
    text = buf.getvalue()
    assert "\nnot per sample)" not in text and "\n     not per sample)" in text
    assert "\n        this CPU." in text  # the answer's second line under its first word
    for line in text.splitlines():
        assert len(line) <= 80


# ------------------------------------------------------------------ item 2: no GPU, predicted


def _traced_without_provisional(tmp_path: Path):
    """The traced run as a record from before the provisional field (item 2 alone)."""
    import json

    data = json.loads(TRACED.read_text())
    data.pop("provisional")
    (tmp_path / "r.json").write_text(json.dumps(data))
    return load_run(tmp_path / "r.json")


def test_a_run_without_a_gpu_answers_from_what_batch_the_reference_gpu_would_win(tmp_path):
    """The traced run's first screen: the crossover predicted on the shipped h100 profile,
    labelled a prediction and from which profile, what its step would be made of, then
    `diagnose` for one's own model; no longer the hint to run `predict`."""
    record = _traced_without_provisional(tmp_path)
    fs = first_screen(record, suite_verdict(record))
    answer = " ".join(fs.answer)
    assert "predict --quick" not in answer
    # a winner only where the ratio band excludes 1, the CPU's side its least disturbed steps
    assert (
        "An NVIDIA H100 80GB HBM3 would lose to this CPU at batch 8–32, be too close to call at batch 128–512, "
        "and win at batch 2048–8192" in answer
    )
    assert "To decide it: `whichdevice train --framework tensorflow --batches 128,512` on the GPU." in answer
    assert "would be mostly dispatch/launch" in answer
    assert "Predicted from costs measured on an NVIDIA H100 80GB HBM3, not measured here." in answer
    assert "`whichdevice diagnose --model FILE.py:FUNCTION`" in answer
    lines = screen_lines(fs, report="r.html")
    from whichdevice.present.firstscreen import _height

    assert _height(lines) <= MAX_LINES - 2


def test_a_record_without_traces_keeps_its_hint():
    """A run recorded before the traces keeps its line (the hint to `predict`)."""
    record = load_run(OLD)
    assert any(
        "`whichdevice predict --quick` models it" in a for a in first_screen(record, suite_verdict(record)).answer
    )


def test_op_lists_are_interpolated_between_the_two_traced_batches_exactly_for_dense_layers():
    from whichdevice.analysis.costmodel import OpCost, WorkloadDescription
    from whichdevice.analysis.prediction import interpolated

    def mlp(b: int) -> WorkloadDescription:  # 784 -> 128 dense + an optimizer update
        return WorkloadDescription(
            batch=b,
            ops=[
                OpCost(
                    op_type="MatMul",
                    kind="matmul",
                    flops=2.0 * b * 784 * 128,
                    bytes=4.0 * (b * 784 + 784 * 128 + b * 128),
                ),
                OpCost(op_type="AssignSub", kind="elementwise", flops=784 * 128, bytes=8.0 * 784 * 128),
            ],
            input_bytes=4.0 * b * 784,
        )

    got = interpolated({8: mlp(8), 8192: mlp(8192)}, [8, 32, 512, 8192])
    for b in (32, 512):
        assert got[b].batch == b
        assert got[b].input_bytes == pytest.approx(mlp(b).input_bytes)
        for o, want in zip(got[b].ops, mlp(b).ops):
            assert o.flops == pytest.approx(want.flops) and o.bytes == pytest.approx(want.bytes)
    other = mlp(8192).model_copy(update={"ops": mlp(8192).ops[:1]})
    assert interpolated({8: mlp(8), 8192: other}, [32]) == {}  # not the same ops: no interpolation
    assert interpolated({8: mlp(8)}, [32]) == {}


# ------------------------------------------------------------------ item 1: the provisional answer


def _said_as_final(record):
    """``record`` with its provisional answer's gist the final answer's (recorded before the
    CPU's inputs were its least disturbed steps, its crossover moved: this shows it unchanged)."""
    from whichdevice.present.firstscreen import provisional_answer

    gist = provisional_answer(record, suite_verdict(record))[1]
    return record.model_copy(update={"provisional": record.provisional.model_copy(update={"gist": gist})})


def test_round_2_confirms_or_changes_the_provisional_answer():
    record = _said_as_final(load_run(TRACED))
    assert record.provisional is not None and record.provisional.after_s < 40
    fs = first_screen(record, suite_verdict(record))
    # without a GPU the answer rests on the batch sweep the prediction reads: round 2 measured 5 of its 7 again
    assert fs.confirmed == (
        "Round 2 confirmed the provisional answer (after round 1 of 2, at 29 s), measuring 5 of the 7 cases "
        "behind it again (2 rest on round 1's samples)."
    )
    changed = record.model_copy(
        update={"provisional": record.provisional.model_copy(update={"gist": ["predicted cpu_everywhere 8192.0–None"]})}
    )
    text = first_screen(changed, suite_verdict(changed)).confirmed
    # its words of the time named the profile's file ("predicted on profile 'h100' (...)"): quoted, the card
    assert text.startswith(
        "Round 2 changed the provisional answer (after round 1 of 2, at 29 s), which said: an NVIDIA H100 80GB "
        "HBM3, predicted, would win from batch ≈ 265 (128–512, uncertain)"
    )
    assert text.endswith("; measuring 5 of the 7 cases behind it again (2 rest on round 1's samples).")
    assert first_screen(load_run(OLD), suite_verdict(load_run(OLD))).confirmed == ""  # none was shown


def _round_1_only(record):
    """The record as if round 2 had measured none of its cases again (its budget spent in round 1)."""
    results = [
        r.model_copy(update={"timing": r.timing.model_copy(update={"rounds_s": None, "samples_s": r.timing.rounds[0]})})
        if r.timing is not None
        else r
        for r in record.results
    ]
    return record.model_copy(update={"results": results})


def test_round_2_is_said_to_confirm_only_the_cases_it_measured_again():
    """Diagnose said "Round 2 confirmed the provisional answer" when round 2 had measured none of the
    cases behind it (its budget spent, or every case failed): a confirmation nothing confirmed."""
    record = _said_as_final(_round_1_only(load_run(TRACED)))
    text = first_screen(record, suite_verdict(record)).confirmed
    assert text == (
        "Round 2 measured none of the 7 cases behind the answer again (the time budget ran out, or they failed "
        "in that round): it rests on round 1's samples, as the provisional answer (after round 1 of 2, at 29 s) did."
    )
    gan = load_run(DATA / "diagnose_script_kio_gan_budget90_cpu_2core.json")  # every case failed, in round 1
    assert first_screen(gan, suite_verdict(gan)).confirmed == (
        "Round 2 had nothing to measure again: no case behind the answer ran to the end."
    )
    changed = record.model_copy(
        update={"provisional": record.provisional.model_copy(update={"gist": ["predicted cpu_everywhere 8192.0–None"]})}
    )
    text = first_screen(changed, suite_verdict(changed)).confirmed
    assert text.startswith("The answer changed from the provisional one (after round 1 of 2, at 29 s), which said: ")
    assert text.endswith(
        "; round 2 measured none of its 7 cases again (the time budget ran out, or they failed in that round)."
    )
    assert "confirmed" not in text


def _case(dev: DeviceInfo, n: int) -> CaseSpec:
    return CaseSpec(workload="matmul", framework="tensorflow", device=dev.name, params={"n": n, "mode": "steady"})


def test_the_session_gives_round_1_of_the_answers_cases_before_round_2(monkeypatch, tmp_path):
    """Two devices, two rounds: once round 1 of every case the answer rests on is in (on every
    device), ``on_provisional`` gets a record of round 1 — before any round 2 starts; never
    without ``decides_answer``."""
    import tempfile

    from whichdevice.measure import experiment, session

    events: list[str] = []

    def fake_run_devices(fw, devices, cases_for, **kw):
        (dev,) = devices
        rnd = 1 if "repeat_for" in kw else 2
        events.append(f"{dev.name} r{rnd}")
        out = []
        for spec in cases_for(dev):
            r = CaseResult(
                spec=spec,
                status="ok",
                timing=Timing(
                    first_call_s=1e-3, warmup_s=[1e-3], samples_s=[1e-3 * rnd] * 5, number_per_sample=1, overhead_s=0.0
                ),
                wall_s=0.1,
            )
            out.append(r)
            if kw.get("on_result"):
                kw["on_result"](r)
        return [fake_session(dev)], out, []

    devices = [DeviceInfo(name="CPU:0", kind="cpu"), DeviceInfo(name="GPU:0", kind="gpu")]
    found = experiment.Discovery(FrameworkInfo(name="tensorflow", version="0"), devices, [], 0.0)
    monkeypatch.setattr(experiment, "require_installed", lambda fw: None)
    monkeypatch.setattr(experiment, "run_devices", fake_run_devices)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    got = []

    def on_provisional(rec):
        events.append("provisional")
        got.append(rec)

    req = session.Request(
        "run",
        "tensorflow",
        lambda f, d: [_case(d, 8), _case(d, 64)],
        {},
        ["t"],
        rounds=2,
        decides_answer=lambda c: c.params["n"] == 8,
    )
    final = session.measure(req, found=found, progress=session.Progress(on_provisional=on_provisional))
    assert events == ["CPU:0 r1", "GPU:0 r1", "provisional", "GPU:0 r2", "CPU:0 r2"]
    (rec,) = got
    assert {r.spec.key for r in rec.results} >= {_case(d, 8).key for d in devices}
    assert all(r.timing.rounds_s is None for r in rec.results)  # round 1 only
    assert all(len(r.timing.rounds_s) == 2 for r in final.results)
    events.clear()
    plain = session.Request("run", "tensorflow", lambda f, d: [_case(d, 8)], {}, ["t"], rounds=2)
    session.measure(plain, found=found, progress=session.Progress(on_provisional=on_provisional))
    assert "provisional" not in events


def test_the_provisional_answer_is_shown_unless_quiet_and_kept_either_way():
    """In a terminal: 'Provisional answer (round 1 of 2): …' with the prediction, drawn above the
    progress line (tests/test_stable_prediction.py: erased with it); piped: printed once, saying
    that the final answer replaces it; --quiet: nothing printed (the final answer only); the
    record keeps it in every case."""
    from whichdevice.cli.run import ProvisionalAnswer
    from whichdevice.core.records import Provisional
    from whichdevice.present.cliprogress import CliProgress

    record = load_run(TRACED).model_copy(update={"provisional": None})
    heads = {
        (True, False): "Provisional answer (round 1 of 2):\n  No GPU here",
        (False, False): "Provisional answer (round 1 of 2; the final answer at the end replaces it):\n  No GPU here",
    }
    for terminal, quiet in ((True, False), (False, False), (True, True)):
        console, buf = _console(80, terminal)
        early = ProvisionalAnswer(quiet)
        with CliProgress(console, quiet=quiet) as shown:
            early(record, shown)
        text = re.sub(r"\x1b\[[?\d;]*[A-Za-z]|\r", "", buf.getvalue())
        assert isinstance(early.value, Provisional) and early.value.rounds == 2
        assert early.value.gist == ["predicted per batch: CPU 8–32, too_close 128–512, GPU 2048–8192"]
        head = heads.get((terminal, quiet))
        if head is None:  # --quiet: the progress line alone
            assert "Provisional" not in text and "GPU" not in text
            continue
        assert head in text, text
        assert "An NVIDIA H100 80GB HBM3 would lose to" in text
        if terminal:  # each line rich draws, between its cursor moves, fits the 80 columns
            assert all(len(x) <= 80 for x in re.split(r"\x1b\[[?\d;]*[A-Za-z]|\r|\n", buf.getvalue()))


def test_a_changed_provisional_answer_is_said_and_the_screen_stays_within_25_lines():
    """A real run whose round 2 moved the predicted crossover: the screen says what round 1
    said, and with the Record/History lines after it stays within 25 lines at 100 columns."""
    from whichdevice.present.firstscreen import AFTER_PAGE, _height

    record = load_run(DATA / "run_cpu_2core_changed.json")
    fs = first_screen(record, suite_verdict(record))
    assert fs.confirmed == (
        "Round 2 changed the provisional answer (after round 1 of 2, at 22 s), which said: "
        "An NVIDIA H100 80GB HBM3 would win from batch ≈ 343 (128–512, uncertain)."
    )
    # the final answer: a winner only where the ratio band excludes 1 (too close at 512)
    assert any(
        "would lose to this CPU at batch 8–128, be too close to call at batch 512, and win at batch 2048–8192" in a
        for a in fs.answer
    )
    assert (
        _height(screen_lines(fs, report="whichdevice-results/run-20261127-151819-209d.html")) + AFTER_PAGE <= MAX_LINES
    )


def test_piped_progress_never_counts_past_its_total():
    """On the H200 the piped lines read "(32/24, …)", "(44/20, …)": round 2 gave each device's own
    count as a new total. The session now grows the whole run's total as a round adds cases
    (measure/session._Count), and the lines say the total they are given."""
    import io

    from rich.console import Console

    from whichdevice.present.cliprogress import CliProgress

    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=False, color_system=None)
    with CliProgress(console) as p:
        p.on_total(24)
        for key in ["CPU:0|train|a"] * 24:
            p.on_start(key)
            p.on_result(None)
        p.on_total(32)  # a device's round 2: its 8 cases added to the run's total
        for key in ["GPU:0|train|b"] * 8:
            p.on_start(key)
            p.on_result(None)
    lines = buf.getvalue().splitlines()
    assert "(24/32," in lines[0] and "(32/32," in lines[-1], lines


def test_the_op_trace_cases_have_a_name():
    """compare of two no-GPU runs named the prediction's op traces "small MLP, batch 8, None"."""
    from whichdevice.present import names

    name = names.workload_name({"model": "seed001", "probe": "describe", "batch": 8}, "calibrate")
    assert name == "small MLP, batch 8, op trace"


def test_a_script_cases_progress_line_names_the_experiment_not_its_plumbing():
    """A script case's key carries the script's path, its arguments as JSON, the entry point and the
    child's limit: the progress line showed them all (`CPU:0 train batch=0 child_limit_s=30.0
    entry=…`) and the count fell off the line. It now names the experiment only."""
    from whichdevice.present.tables import describe_key

    key = (
        "train|torch|CPU:0|batch=0,child_limit_s=30.0,entry=optimizer.step,fix=autocast,kind=pair,"
        'model=script,script=/home/u/a,b/train.py,script_args=["--lr", "0.1,0.2", "x=1"],user_batch=0'
    )
    assert describe_key(key) == "CPU:0 train fix=autocast kind=pair model=script"
    assert (
        describe_key("matmul|tensorflow|CPU:0|mode=steady,n=10")
        == "CPU:0 matrix multiply 10×10 (back-to-back, operands on the device)"
    )


def test_the_live_line_takes_the_grown_total_of_later_rounds():
    """rich's ``update(total=None)`` keeps the old total, so the live line counted past it: "6/3"
    through a public script's round 2 (word_language_model, --budget 120). The session now tells
    the whole run's total, grown by round 2's cases, and the live line shows it."""
    from whichdevice.present.cliprogress import CliProgress

    console, buf = _console(100, True)
    with CliProgress(console) as p:
        p.on_total(3)
        for _ in range(3):
            p.on_start("train|torch|CPU:0|kind=steady,model=RNNModel")
            p.on_result(None)
        p.on_total(6)  # round 2's 3 cases added to the run's total
        for _ in range(3):
            p.on_result(None)
        assert p._bar is not None
        (task,) = p._bar.tasks
        assert task.total == 6 and task.completed == 6
        console.print(p._bar.get_renderable())
    assert "6/3" not in buf.getvalue() and "6/6" in buf.getvalue()
