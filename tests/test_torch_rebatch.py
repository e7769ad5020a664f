"""A torch loop that makes its own batches, re-batched at its step (``frameworks/torch/rebatch.py``),
and several torch training loops in one script (``frameworks/torch/loops.py``): the capture, the
plan (``workloads/scriptplan.py``) and what the record and the screen say of them."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from whichdevice.analysis import suite
from whichdevice.core.records import CaseResult, CaseSpec
from whichdevice.present import fixes as fixwords
from whichdevice.present import firstscreen
from whichdevice.workloads import script, scriptplan

CORPUS = Path(__file__).parent / "script_corpus"
ENTRY = "torch.optim.Optimizer.step"

# The pre-flight of tests/script_corpus/torch_sliced_batches.py: a tiny MLP at batch 8, its batches
# sliced from tensors (no DataLoader), a 0.3 ms step.
SLICED = {
    "framework": "torch",
    "entry": ENTRY,
    "batch": 8,
    "step_s": 0.0003,
    "first_step_s": 0.01,
    "setup_s": 10.0,
    "import_s": 9.0,
    "data_s": 1.0,
    "model": "Sequential",
    "data_source": None,
    "rebatch": "step",
    "samples": None,
    "loader": {},
}


# ------------------------------------------------------------------ the plan


def test_a_sliced_loop_plans_larger_tiled_batches_in_the_baseline_s_process():
    """The old plan swept no batch for a loop without a DataLoader ("the script makes its own batches")."""
    sizing = scriptplan.size(SLICED, 60.0)
    batches = sorted(scriptplan.planned_batches(sizing["planned"]))
    assert batches == [32, 128] and sizing["sweep_batches"] == [8, 32, 128]
    user = scriptplan.user_params({"script": "train.py", "args": []}, SLICED)
    cases = scriptplan.cases("torch", "CPU:0", user, sizing)
    tiled = [c for c in cases if script.variant_of(c).startswith("batch:")]
    base = next(c for c in cases if script.variant_of(c) == "baseline")
    assert len(tiled) == 2 and all(script.shares_child(c) for c in tiled)
    assert {script.group_key(c) for c in [*tiled, base]} == {script.group_key(base)}  # one process
    notes = " ".join(scriptplan.notes(user, sizing))
    assert "re-batched the captured step, not the script" in notes and "slices its own batches" in notes
    assert scriptplan.options(user, sizing)["rebatched"] == "step"


def test_a_dataloader_loop_re_batches_its_dataloader_not_its_step():
    """A DataLoader's batch variants are fed by a DataLoader the capture builds (taking turns in the
    baseline's process), never by tiling the step."""
    facts = {**SLICED, "data_source": "DataLoader", "rebatch": None, "samples": 4096, "batch": 32}
    sizing = scriptplan.size(facts, 600.0)
    user = scriptplan.user_params({"script": "train.py", "args": []}, facts)
    cases = scriptplan.cases("torch", "CPU:0", user, sizing)
    batches = [c for c in cases if script.variant_of(c).startswith("batch:")]
    assert batches and all(script.group_key(c) is not None for c in batches)
    assert all(c.params.get("rebatch") != "step" for c in batches)
    assert "rebatched" not in scriptplan.options(user, sizing)


LOOPS = [
    {"entry": ENTRY, "kind": "loop", "call": 1, "model": "Encoder", "batch": 16, "steps": 40, "s": 0.02},
    {"entry": ENTRY, "kind": "loop", "call": 2, "model": "Classifier", "batch": 32, "steps": 384, "s": 0.4},
]


def test_the_longest_running_loop_is_measured_and_the_others_listed():
    assert scriptplan.longest_call(LOOPS) == 2
    said, others = scriptplan.entry_words({"entries": LOOPS, "entry_call": 2, "entry_reason": "longest"})
    assert said == "the 2nd of 2 training loops (Classifier, batch 32, 384 steps in 400 ms), the longest-running"
    assert others == "also trains: the 1st loop (Encoder, batch 16, 40 steps in 20 ms); choose with --entry 1"
    # a Keras fit's calls are still chosen by the steps they ask for
    fits = [{"entry": "keras.Model.fit", "call": 1, "steps": 50}, {"entry": "keras.Model.fit", "call": 2, "steps": 10}]
    assert scriptplan.longest_call(fits) == 1


def test_an_entry_past_the_script_s_loops_names_them():
    err = scriptplan._wrong_entry(3, LOOPS, "train.py")
    assert err.argument == "--entry" and "2 training loops" in str(err) and "--entry 1 to 2" in str(err)


# ------------------------------------------------------------------ the record and the screen


def _skipped(why: str) -> CaseResult:
    spec = CaseSpec(workload="train", framework="torch", device="CPU:0", params={"kind": "steady", "batch": 64})
    error = f"NotApplicable: not applicable to this script: {why}"
    return CaseResult(spec=spec, status="skipped", failure="skipped", error=error, wall_s=1.0)


def test_a_batch_the_step_could_not_be_tiled_to_says_why():
    """The old analysis said "skipped: time budget" for a variant the capture found not to fit."""
    why = "the tensors fed to the model differ in their first dimension (1, 35): which one is the batch is not known"
    got = suite._not_applicable([_skipped(why)])
    assert got is not None and got.reason == "not_applicable" and got.failures == [why]
    assert fixwords.not_measured_text(got) == f"not measured: {why}"
    assert fixwords.short_reason(got) == why
    assert suite._not_applicable([]) is None


def test_the_screen_says_the_step_was_re_batched():
    def case(batch: int, status: str = "ok", **more: object) -> types.SimpleNamespace:
        params = {"kind": "steady", "sync": "none", "batch": batch, **more}
        return types.SimpleNamespace(status=status, spec=types.SimpleNamespace(params=params, variant=None))

    results = [case(8), case(32), case(128), case(8, fix="autocast"), case(512, status="skipped")]
    record = types.SimpleNamespace(options={"rebatched": "step", "batch": 8}, results=results)
    line = firstscreen.rebatched_line(record)  # type: ignore[arg-type]
    assert line.startswith("A larger batch was measured by re-running your step on its own batch tiled to 32, 128 ")
    assert firstscreen.rebatched_line(types.SimpleNamespace(options={"batch": 8}, results=results)) == ""  # type: ignore[arg-type]
    only = types.SimpleNamespace(options={"rebatched": "step", "batch": 8}, results=[case(8)])
    assert firstscreen.rebatched_line(only) == ""  # type: ignore[arg-type]


# ------------------------------------------------------------------ the capture


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _cap(torch, **kw):
    from whichdevice.frameworks.torch import rebatch

    spec = types.SimpleNamespace(variant="baseline", also=("batch:32",))
    base = dict(
        torch=torch, done=False, loader=None, last=None, variant="baseline", tiles=None, why_not=None, spec=spec
    )
    return types.SimpleNamespace(**{**base, **kw}), rebatch


def test_the_first_step_gives_the_batch_and_a_tiled_step_slices_k_rows(torch):
    cap, rebatch = _cap(torch)
    orig = torch.Tensor.__getitem__
    try:
        rebatch.hook_slicing(torch, cap, lambda: True)
        X, Y = torch.arange(40.0).reshape(20, 2), torch.arange(20)
        xb, yb = X[0:8], Y[0:8]  # the first step: as the script wrote it
        rebatch.fed(cap, (xb,), {})
        assert xb.shape[0] == 8 and rebatch.why_not(cap) is None and cap.tiles.rows() == 8
        cap.last, cap.variant = 1.0, "batch:32"  # a batch member's turn after the first step
        xb, yb = X[8:16], Y[8:16]
        assert xb.shape == (32, 2) and yb.shape == (32,) and xb[8].tolist() == X[8].tolist()
        assert X[16:20].shape[0] == 32  # an epoch's last, smaller batch is tiled too
        assert X[:, 0].shape == (20,) and X[3].shape == (2,)  # not a batch: left alone
        rebatch.fed(cap, (xb,), {})
        assert cap.why_not is None
        cap.variant = "baseline"
        assert X[8:16].shape[0] == 8  # the baseline's turn: the script's own batch
    finally:
        torch.Tensor.__getitem__ = orig


def test_a_batch_that_cannot_be_tiled_soundly_is_refused_with_its_reason(torch):
    cap, rebatch = _cap(torch)
    rebatch.fed(cap, (torch.zeros(35, 20), (torch.zeros(1, 20, 8), torch.zeros(1, 20, 8))), {})
    assert "differ in their first dimension (1, 35)" in rebatch.why_not(cap)
    cap, rebatch = _cap(torch)
    rebatch.fed(cap, (torch.zeros(8, 4),), {})  # fed 8 rows, sliced none: data made another way
    assert "does not slice its batch of 8 rows" in rebatch.why_not(cap)
    cap, rebatch = _cap(torch, loader=object())
    assert "DataLoader" in rebatch.why_not(cap)
    assert rebatch.tile(torch, torch.arange(3), 7).tolist() == [0, 1, 2, 0, 1, 2, 0]


@pytest.mark.frameworks
def test_the_sliced_corpus_script_is_timed_with_its_step_re_batched():
    """One process: the baseline and two tiled batches dealt the loop's steps in turn (the old capture
    refused a batch member in turns: it needed a run of its own, where it found no DataLoader)."""
    pytest.importorskip("torch")
    from whichdevice.frameworks.contracts import CaptureSpec

    spec = CaptureSpec("baseline", warmup_steps=1, steps=3, also=("batch:64", "batch:256"))
    job = {"script": str(CORPUS / "torch_sliced_batches.py"), "args": ["--epochs", "2"]}
    run = script.run_child(job, spec, ["torch"], timeout_s=240, env=scriptplan._cpu_env())
    got = run.by_variant()
    assert set(got) == {"baseline", "batch:64", "batch:256"}, (run.end, run.stderr_tail[-800:])
    assert all(r["status"] == "ok" and len(r["step_s"]) >= 3 for r in got.values()), got
    assert got["baseline"]["batch_size"] == 8 and got["baseline"]["samples_per_step"] == 8
    assert got["baseline"]["rebatch"] == "step" and got["baseline"]["rebatched"] is None
    assert got["batch:64"]["samples_per_step"] == 64 and got["batch:256"]["samples_per_step"] == 256
    assert got["batch:64"]["rebatched"] == got["batch:256"]["rebatched"] == "step"


@pytest.mark.frameworks
def test_two_loops_the_survey_lists_both_and_entry_2_measures_the_second():
    """The old capture timed the first loop only and listed none."""
    pytest.importorskip("torch")
    from whichdevice.frameworks.contracts import CaptureSpec

    job = {"script": str(CORPUS / "torch_two_loops.py"), "args": []}
    survey = CaptureSpec("baseline", warmup_steps=1, steps=3, survey=True, deadline_s=120)
    run = script.run_child(job, survey, ["torch"], timeout_s=240, env=scriptplan._cpu_env())
    loops = scriptplan._entries(run)
    assert [(e["call"], e["model"], e["kind"]) for e in loops[:2]] == [
        (1, "Encoder", "loop"),
        (2, "Classifier", "loop"),
    ]
    assert loops[0]["steps"] == 40 and loops[0]["batch"] == 16 and loops[0]["measured"]
    assert run.results[0]["model"] == "Encoder"
    second = CaptureSpec("baseline", warmup_steps=1, steps=3, entry_call=2)
    run = script.run_child(job, second, ["torch"], timeout_s=240, env=scriptplan._cpu_env())
    (r,) = run.results
    assert r["status"] == "ok" and r["model"] == "Classifier" and r["batch_size"] == 32, (run.end, r)
    assert r["setup_s"] > 0 and len(r["step_s"]) >= 3


def test_a_model_fed_noise_drawn_in_the_step_is_not_tiled(torch):
    """Tiling the slices alone would leave the noise at the script's batch (a GAN's generator input)."""
    cap, rebatch = _cap(torch)
    orig = torch.Tensor.__getitem__
    try:
        rebatch.hook_slicing(torch, cap, lambda: True)
        X = torch.zeros(20, 2)
        xb = X[0:8]
        rebatch.fed(cap, (xb.view(8, 2),), {})  # a view of the slice: the sliced batch
        assert rebatch.why_not(cap) is None
        rebatch.fed(cap, (torch.randn(8, 2),), {})
        assert "no slice of the script's data" in rebatch.why_not(cap)
    finally:
        torch.Tensor.__getitem__ = orig


@pytest.mark.frameworks
def test_the_survey_follows_a_script_a_few_seconds_past_its_measured_loop(tmp_path):
    """A script that evaluates for a minute after training: the pre-flight's survey ends it a few
    seconds past the measured loop's steps, not at its time limit."""
    pytest.importorskip("torch")
    import time

    from whichdevice.frameworks.contracts import CaptureSpec
    from whichdevice.frameworks.torch import loops

    path = tmp_path / "train_then_wait.py"
    path.write_text(
        "import time, torch\n"
        "m = torch.nn.Linear(4, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1); X = torch.randn(64, 4)\n"
        "for i in range(0, 64, 4):\n"
        "    opt.zero_grad(); m(X[i : i + 4]).sum().backward(); opt.step()\n"
        "time.sleep(120)\n"
    )
    spec = CaptureSpec("baseline", warmup_steps=1, steps=3, survey=True, deadline_s=200)
    t = time.perf_counter()
    run = script.run_child({"script": str(path), "args": []}, spec, ["torch"], timeout_s=240, env=scriptplan._cpu_env())
    assert run.end.get("status") == "ok" and run.results[0]["status"] == "ok", (run.end, run.stderr_tail[-800:])
    assert run.seen.get("survey_stopped") and time.perf_counter() - t < 100
    (loop,) = scriptplan._entries(run)
    assert loop["steps"] == 16 and loop["model"] == "Linear" and loop["batch"] == 4
    assert loops.SURVEY_EXTRA_S < 30
