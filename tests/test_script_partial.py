"""A pre-flight stopped at its time limit after it had timed steps: an answer from what it timed.

keras-io's DCGAN on 2 busy cores (each step many seconds): ``diagnose dcgan.py --budget 90`` said
"reached no timed training step in the pre-flight (timed out: the script process ran past its
54 s limit before its steps were timed). Pass a larger --budget", and at --budget 240 the same,
though the capture had timed its warm-up steps and more before the limit. The capture now says
each step boundary as it comes (``capturekit.tick``), and the plan answers from those steps.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import run_cli
from whichdevice.core.errors import UsageError
from whichdevice.core.process import Finished
from whichdevice.workloads import script, scriptplan


def _stopped_run(ticks, wall_s, timing=None):
    """A pre-flight's script process stopped at its time limit, with the boundaries it said."""
    run = script.ChildRun(finished=Finished(None, wall_s, "timeout"))
    for line in ticks:
        script._read_line(run, line)
    run.timing.update(timing or {})
    return run


# DCGAN as recorded at --budget 90: its set-up 9.1 s, its first step 41 s (tracing), the second
# 18.2 s, then stopped at 84 s within its third.
DCGAN_TICKS = [
    '{"type": "tick", "n": 0, "at": 8.9}',
    '{"type": "tick", "n": 1, "at": 9.1}',
    '{"type": "tick", "n": 2, "at": 50.1}',
    '{"type": "tick", "n": 3, "at": 68.3}',
]
DCGAN_TIMING = {"entry": "keras.Model.fit", "backend": "tensorflow", "batch": 64, "model": "GAN"}


def _facts(monkeypatch, run, budget_s):
    monkeypatch.setattr(scriptplan, "_preflight_run", lambda *a, **k: run)
    monkeypatch.setattr(scriptplan, "_load_per_core", lambda: 1.0)
    return scriptplan.preflight({"script": "dcgan.py", "args": []}, budget_s)


def test_a_preflight_stopped_after_its_warmup_answers_from_the_steps_it_measured(monkeypatch):
    """Was: "reached no timed training step ... Pass a larger --budget", then a refusal that said the
    steps it measured. Now the answer: its step after the first is the baseline's, the words say the
    step, the first step and the set-up, and the budget that measures the baseline in its own
    processes and every fix."""
    facts = _facts(monkeypatch, _stopped_run(DCGAN_TICKS, 84.0, DCGAN_TIMING), 90.0)
    assert facts["framework"] == "tensorflow" and facts["entry"] == "keras.Model.fit" and facts["batch"] == 64
    assert facts["step_s"] == pytest.approx(18.2) and facts["first_step_s"] == pytest.approx(41.0)
    assert facts["setup_s"] == pytest.approx(9.1)
    r = facts["preflight_result"]
    assert r["step_s"] == pytest.approx([18.2]) and r["warmup_s"] == pytest.approx([41.0])
    assert r["samples_per_step"] == 64 and r["setup_s"] == pytest.approx(9.1)
    s = scriptplan.size(facts, 90.0)
    text = s["preflight_only"]
    assert s["planned"] == [] and not s["baseline_only"]
    assert "in the pre-flight, stopped at its 84 s limit 2 steps in, a training step took 18.2 s on this CPU" in text
    assert "(the first 41 s, with its tracing and start-up)" in text and "set-up 9.1 s" in text
    assert text.endswith(
        f"--budget {s['budget_for_all']} or more measures the baseline in its own processes and every fix"
    )


def test_a_preflight_stopped_within_its_first_step_is_refused_with_what_it_measured(monkeypatch):
    """With its first step alone ended (its tracing in it) there is no step to answer from: the
    refusal says what it measured, what the baseline needs, and the figure the sizer accepts."""
    facts = _facts(monkeypatch, _stopped_run(DCGAN_TICKS[:3], 84.0, DCGAN_TIMING), 90.0)
    assert facts["preflight_result"] is None and facts["first_step_s"] == pytest.approx(41.0)
    with pytest.raises(UsageError) as e:
        scriptplan.size(facts, 90.0)
    text = str(e.value)
    assert "stopped at its 84 s limit 1 step in, its first training step took 41 s on this CPU and the next ran" in text
    assert "set-up (imports and data loading) 9.1 s" in text
    need = scriptplan.budget_that_holds(facts)
    assert re.search(rf"needs about {scriptplan.least_budget(scriptplan._Costs(facts)):.0f} s", text), text
    assert e.value.fix.startswith(f"Pass --budget {need} or more")
    assert scriptplan.size(facts, float(need))["planned_s"] > 0  # the figure asked for is planned, not refused


def test_a_preflight_stopped_after_a_few_steps_measures_the_baseline_alone_where_it_fits(monkeypatch):
    ticks = [f'{{"type": "tick", "n": {n}, "at": {3.0 + 2.0 * (n - 1) + (3.0 if n > 1 else 0.0)}}}' for n in (1, 2, 3)]
    facts = _facts(
        monkeypatch, _stopped_run(ticks, 30.0, {"entry": "torch.optim.Optimizer.step", "framework": "torch"}), 30.0
    )
    assert facts["step_s"] == pytest.approx(2.0) and facts["first_step_s"] == pytest.approx(5.0)
    s = scriptplan.size(facts, 30.0)
    assert s["baseline_only"] and s["planned"] == []
    assert "stopped at its 30 s limit 2 steps in," in s["baseline_only"]
    assert not scriptplan.size(facts, 120.0)["baseline_only"]  # a budget that holds more: planned from these facts


def test_throttled_boundaries_are_read_as_their_mean_step():
    """After the first few, a fast loop says at most one boundary a second: the steps between two
    are their mean."""
    ticks = [(1, 2.0), (2, 3.0), (3, 3.5), (4, 4.0), (10, 7.0)]
    run = _stopped_run([f'{{"type": "tick", "n": {n}, "at": {t}}}' for n, t in ticks], 8.0)
    got = script.partial_steps(run)
    assert got["setup_s"] == 2.0 and got["steps"] == pytest.approx([1.0, 0.5, 0.5, *[0.5] * 6])


def test_no_step_ended_is_still_refused_in_words(monkeypatch):
    run = _stopped_run(['{"type": "tick", "n": 1, "at": 9.1}'], 84.0)
    with pytest.raises(UsageError, match="reached no timed training step in the pre-flight"):
        _facts(monkeypatch, run, 90.0)


SLEEPY = """
import time

import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4)
for i in range(100):
    time.sleep(2)  # a slow step: each takes about 2 s
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
"""


@pytest.mark.slow  # the script's torch import alone took 7.6 s on the loaded 2-core machine
def test_a_real_script_stopped_in_its_preflight_is_told_its_step_time(tmp_path, capsys, monkeypatch):
    """A torch script whose steps sleep 2 s, its pre-flight held to 12 s (a step or two in): the
    measured step time, not "reached no timed training step": the answer from the pre-flight's steps
    (exit 0) where a step after the first ended, else exit 2 with what it timed."""
    pytest.importorskip("torch")
    path = tmp_path / "sleepy.py"
    path.write_text(SLEEPY)
    held = scriptplan.preflight
    monkeypatch.setattr(scriptplan, "preflight", lambda *a, **k: held(*a, **{**k, "case_timeout_s": 12.0}))
    monkeypatch.setattr(scriptplan, "OVERRUN_S", 0.0)  # the baseline alone (about 40 s): out of this test's reach
    code, out, err = run_cli(["diagnose", str(path), "--budget", "20", "--out", str(tmp_path)], capsys)
    text = " ".join(err.split())
    assert code in (0, 2), text
    took = (
        r"(a training step took 2(\.\d+)? s|its first training step took [\d.]+ m?s on this CPU and the next ran [2-9])"
    )
    assert re.search(rf"stopped at its \d+ s limit \d+ steps? in, {took}", text), text
    assert "reached no timed training step" not in text
    if code == 0:
        assert "Answering from the pre-flight's steps" in text and "Timed in the pre-flight alone" in " ".join(
            out.split()
        )
    else:
        assert "1 step in" in text and "Pass --budget" in text
