"""Seen on the public-code check (benchmarks/public_check_39.md): a Keras diagnose whose
plan left fixes out for the budget said why wrongly. keras-io's weather LSTM at --budget 30
(tests/data/diagnose_keras_lstm_budget30_cpu_2core.json, a real record on the 2-core VM): its
plan cut the batch sweep to the user's batch 256 and the fixes' fits and the prefetch A/B (its
notes say so), yet the first screen said "a larger batch (one side did not run)" and the fix
table "steps_per_execution: not measured: not part of your model's suite (diagnose)". Both
were cut by the time budget: the plan now records which fixes it left out (``fixes_cut``) and
the fix table and the first screen say "left out: time budget"."""

from __future__ import annotations

from pathlib import Path

from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import load_run
from whichdevice.present.firstscreen import first_screen, screen_lines, tail_lines
from whichdevice.present.suitepage import fix_grid

LSTM = Path(__file__).parent / "data" / "diagnose_keras_lstm_budget30_cpu_2core.json"
RESNET = Path(__file__).parent / "data" / "diagnose_torch_resnet18_budget290_cpu_2core.json"
RECORDED = ["steps_per_execution", "jit_compile", "prefetch"]  # what the Keras plan records as fixes_cut
CUT = [*RECORDED, "batch"]  # the batch sweep's cut is read from sweep_batches


def test_fixes_the_budget_cut_read_left_out_never_not_in_the_suite():
    record = load_run(LSTM)
    cut = record.model_copy(update={"options": {**record.options, "fixes_cut": RECORDED}})  # as the plan records it now
    v = suite_verdict(cut, seed_batch=256)
    for key in CUT:
        assert v.fix(key).not_measured is not None and v.fix(key).not_measured.reason == "cut", key
    rows = {row[0].text.split(". ", 1)[1]: row[2].text for row in fix_grid(v, record=cut).rows}
    for title in ("Increase the batch size", "steps_per_execution", "jit_compile (XLA)", "Use tf.data with prefetch"):
        assert rows[title].startswith("not measured: the plan left it out to keep within the time budget"), rows[title]
    tail = " ".join(tail_lines(first_screen(cut, v)))
    assert "Not measured: a larger batch, prefetch, steps_per_execution, jit_compile (left out: time budget)." in tail
    assert "one side did not run" not in tail


def test_a_record_without_fixes_cut_says_only_what_it_shows():
    """A record made before the plan said which fixes it cut: its sweep (``sweep_batches``) still
    shows the larger batch was cut; its fixes' fits are not guessed."""
    record = load_run(LSTM)
    v = suite_verdict(record, seed_batch=256)
    assert v.fix("batch").not_measured.reason == "cut"
    assert v.fix("steps_per_execution").not_measured.reason == "not_in_suite"


def test_the_torch_plan_that_cut_the_sweep_says_so():
    """pytorch-cifar's ResNet18 at batch 128 (the 2-core VM, --budget 290 as diagnose asked): a
    step took 11.4 s, the plan kept only batch 128; the first screen said "a larger batch (one
    side did not run)"."""
    record = load_run(RESNET)
    assert record.options["sweep_batches"] == [128] and record.options["batch"] == 128
    v = suite_verdict(record, seed_batch=128)
    assert v.fix("batch").not_measured.reason == "cut"
    tail = " ".join(tail_lines(first_screen(record, v)))
    assert "Not measured: a larger batch, zero_grad(set_to_none=True)" in tail and "one side did not run" not in tail


def test_a_sweep_that_kept_a_larger_batch_or_had_none_is_not_called_cut():
    record = load_run(RESNET)
    for sweep, batch in (([128, 512], 128), ([512, 2048], 2048)):
        options = {**record.options, "sweep_batches": sweep, "batch": batch}
        v = suite_verdict(record.model_copy(update={"options": options}), seed_batch=128)
        assert v.fix("batch").not_measured is None or v.fix("batch").not_measured.reason != "cut", sweep


MNIST = Path(__file__).parent / "data" / "diagnose_keras_mnist_convnet_budget30_cpu_2core.json"


def test_steps_per_execution_not_tried_for_short_epochs_reads_left_out():
    """keras-io's mnist_convnet at --budget 30, batch 128: the fits ran (jit_compile measured) but
    epochs of 9 steps tried no steps_per_execution above 1; the first screen said
    "steps_per_execution (one side did not run)"."""
    record = load_run(MNIST)
    assert record.options["steps_per_execution_tried"] == [] and "not tried" in " ".join(record.options["budget_cut"])
    cut = record.model_copy(update={"options": {**record.options, "fixes_cut": ["steps_per_execution"]}})
    v = suite_verdict(cut, seed_batch=128)
    assert v.fix("steps_per_execution").not_measured.reason == "cut"
    tail = " ".join(tail_lines(first_screen(cut, v)))
    assert "Not measured: steps_per_execution (left out: time budget)." in tail, tail


def test_channels_last_for_a_model_without_conv2d_is_not_a_budget_cut():
    """channels_last applies to Conv2d only: a torch diagnose of a model without one (an LSTM) whose plan
    cut fixes for the budget says it is not part of the suite, never "left out: time budget"."""
    record = load_run(RESNET)
    no_conv = record.model_copy(update={"options": {**record.options, "torch_conv2d": False}})
    v = suite_verdict(no_conv, seed_batch=128)
    (fv,) = [f for f in v.fixes if f.entry.key == "channels_last"]
    assert fv.not_measured is not None and fv.not_measured.reason != "cut"
    conv = suite_verdict(record, seed_batch=128)
    (cv,) = [f for f in conv.fixes if f.entry.key == "channels_last"]
    assert cv.not_measured is not None and cv.not_measured.reason == "cut"  # with Conv2d: the budget did cut it


def test_a_pair_with_samples_enough_but_too_wide_an_interval_says_so():
    from whichdevice.analysis.fixes import NotMeasured
    from whichdevice.present.fixes import not_measured_text

    text = not_measured_text(NotMeasured("too_few_samples", n=10, unit="samples", needed=5, wide=True))
    assert "too wide to rule out a 2× change" in text and "fewer than" not in text


REGRESSION = Path(__file__).parent / "data" / "diagnose_script_regression_budget60_cpu_2core.json"


def test_a_script_that_makes_its_own_batches_is_not_called_a_budget_cut():
    """pytorch/examples' regression/main.py (a real record): it builds each batch itself and trains through
    loss.backward(), so diagnose has no batch to change. Its plan cut torch.compile for the budget, and the
    first screen said "a larger batch (left out: time budget)", which a larger --budget would not change."""
    record = load_run(REGRESSION)
    assert record.options["fixes_cut"] == ["torch_compile"] and record.options["batch"] == 0
    v = suite_verdict(record, seed_batch=0)
    assert v.fix("batch").not_measured.reason == "fixed_batch"
    assert v.fix("torch_compile").not_measured.reason == "cut"
    tail = " ".join(tail_lines(first_screen(record, v)))
    assert "a larger batch (the script makes its own batches)" in tail, tail
    assert "torch.compile (left out: time budget)" in tail, tail
    rows = {row[0].text.split(". ", 1)[1]: row[2].text for row in fix_grid(v, record=record).rows}
    assert rows["Increase the batch size"] == (
        "not measured: the script makes its own batches (diagnose changes the batch of a DataLoader)"
    )


def test_a_script_whose_plan_cut_its_batch_sweep_says_left_out():
    record = load_run(REGRESSION)
    cut = record.model_copy(
        update={"options": {**record.options, "batch": 32, "fixes_cut": ["batch", "torch_compile"]}}
    )
    assert suite_verdict(cut, seed_batch=32).fix("batch").not_measured.reason == "cut"


GAN = Path(__file__).parent / "data" / "diagnose_script_kio_gan_budget90_cpu_2core.json"
DDP = Path(__file__).parent / "data" / "diagnose_script_ddp_single_cpu_budget60_cpu_2core.json"


def test_a_scripts_batch_sweep_that_failed_says_failed_not_that_it_makes_its_own_batches():
    """keras-io's GAN guide (a real record, every case failed in its child): the plan swept batch 8-128
    on its tf.data, yet the first screen said "a larger batch (the script makes its own batches)"."""
    record = load_run(GAN)
    assert record.options["sweep_batches"] == [8, 32, 64, 128] and record.options["batch"] == 64
    v = suite_verdict(record, seed_batch=64)
    assert v.fix("batch").not_measured.reason == "failed"
    tail = " ".join(tail_lines(first_screen(record, v)))
    assert "the script makes its own batches" not in tail, tail
    assert "a larger batch" in tail and "(failed)" in tail, tail


def test_the_warm_up_check_on_a_script_is_not_called_a_pair_with_one_side_missing():
    """pytorch/examples' ddp-tutorial single_gpu.py on the CPU (a real record): its DataLoader worker
    pair (kind "loop") matched the warm-up check's cases, which the check does not read, and the fix
    table said "not measured: one side of the pair did not run" for a check that has no pair."""
    record = load_run(DDP)
    v = suite_verdict(record, seed_batch=32)
    assert v.fix("warmup").not_measured.reason == "not_in_suite"
    rows = {row[0].text.split(". ", 1)[1]: row[2].text for row in fix_grid(v, record=record).rows}
    assert rows["Benchmark after warm-up"] == "not measured: not part of what diagnose measures"
    assert "one side" not in " ".join(rows.values())


ANTIRECT_JAX = Path(__file__).parent / "data" / "diagnose_script_kio_antirectifier_jax_budget60_cpu_2core.json"


def test_jit_compile_on_keras_jax_script_reads_already_the_default():
    """keras-io's antirectifier under KERAS_BACKEND=jax (a real record, the fit cases now record their
    resolved jit_compile): XLA is Keras/JAX's default, so False -> True is no change for the user."""
    record = load_run(ANTIRECT_JAX)
    v = suite_verdict(record, seed_batch=128)
    assert v.fix("jit_compile").not_measured.reason == "default"
    screen = " ".join(text for _style, text in screen_lines(first_screen(record, v), report=None))
    assert "Already the default here: jit_compile" in screen, screen
    assert "jit_compile=True" not in screen and "Compile the step with XLA" not in screen, screen


SMALLER = Path(__file__).parent / "data" / "diagnose_script_torch_cnn_smaller_batches_budget60_cpu_2core_busy.json"


def test_a_sweep_of_smaller_batches_only_says_none_larger_not_that_the_script_makes_its_own():
    """The corpus's torch_cnn.py at load 10 (a real record): its DataLoader's 256 samples hold too few
    batches above 32 for a case's steps, so the plan swept batch 8 only. The fix table said "the script
    makes its own batches (diagnose changes the batch of a DataLoader)" of a script that has one."""
    record = load_run(SMALLER)
    assert record.options["sweep_batches"] == [8, 32] and record.options["batch"] == 32
    v = suite_verdict(record, seed_batch=32)
    why = v.fix("batch").not_measured
    assert why is not None and why.reason == "none_larger" and why.above == 32
    rows = {row[0].text.split(". ", 1)[1]: row[2].text for row in fix_grid(v, record=record).rows}
    assert "no batch larger than 32 measured (only batch 8)" in rows["Increase the batch size"]
    assert "makes its own batches" not in rows["Increase the batch size"]
    assert "makes its own batches" not in " ".join(tail_lines(first_screen(record, v)))


def test_the_fixes_the_budget_cut_name_the_budget_that_measures_them():
    """A script's plan that cut fixes knows the --budget whose plan holds every one
    (``budget_for_all``): the first screen says it beside them, so the user need not guess."""
    record = load_run(LSTM)
    cut = record.model_copy(update={"options": {**record.options, "fixes_cut": RECORDED, "budget_for_all": 140}})
    v = suite_verdict(cut, seed_batch=256)
    assert v.fix("jit_compile").not_measured.budget == 140
    line = "(left out: time budget; --budget 140 or more measures every fix)."
    assert line in " ".join(tail_lines(first_screen(cut, v)))
    from tests.test_one_voice import _renders

    shown = _renders(cut)
    assert all("--budget 140 or more measures every fix" in shown[form] for form in ("terminal", "markdown", "html"))
