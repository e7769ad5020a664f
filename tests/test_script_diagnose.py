"""``whichdevice diagnose SCRIPT.py``: the user's own training script, captured at the
framework's training entry points and measured.

The corpus (``tests/script_corpus/``, our own scripts written the ways users write them) is
run through the CLI as a user would (``slow``: each runs the script in several processes); the
fast subset checks the plan and the refusals without a framework, and one real capture of a
Keras fit (one TensorFlow import) with its variants in turns.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from whichdevice.core.errors import UsageError
from whichdevice.core import records
from whichdevice.core.records import CaseSpec
from whichdevice.frameworks.contracts import CaptureSpec
from whichdevice.workloads import fixes, script, scriptplan

CORPUS = Path(__file__).parent / "script_corpus"
# Each corpus file: the entry point and framework it trains through, or the words of its refusal.
TRAINS = {
    "keras_fit_arrays.py": ("keras.Model.fit", "tensorflow"),
    "keras_fit_dict_inputs.py": ("keras.Model.fit", "tensorflow"),
    "keras_fit_tfdata.py": ("keras.Model.fit", "tensorflow"),
    "keras_fit_pydataset.py": ("keras.Model.fit", "tensorflow"),
    "keras_custom_train_step.py": ("keras.Model.fit", "tensorflow"),
    "keras_compile_override.py": ("keras.Model.fit", "tensorflow"),
    "keras_fit_validation_callbacks.py": ("keras.Model.fit", "tensorflow"),
    "keras_train_on_batch.py": ("keras.Model.train_on_batch", "tensorflow"),
    "keras_notebook.ipynb": ("keras.Model.fit", "tensorflow"),
    "keras_three_fits.py": ("keras.Model.fit", "tensorflow"),
    "tf_gradient_tape_loop.py": ("tf.GradientTape+apply_gradients", "tensorflow"),
    "tf_eager_tape_loop.py": ("tf.GradientTape+apply_gradients", "tensorflow"),
    "tf_tape_optimizer_apply.py": ("tf.GradientTape+apply_gradients", "tensorflow"),
    # the torch helper's scripts (frameworks/torch/capture.py)
    "torch_closure_lbfgs.py": ("torch.optim.Optimizer.step", "torch"),
    "torch_cnn.py": ("torch.optim.Optimizer.step", "torch"),
    "torch_dataloader.py": ("torch.optim.Optimizer.step", "torch"),
    "torch_gan.py": ("torch.optim.Optimizer.step", "torch"),
    "torch_lstm_lm.py": ("torch.optim.Optimizer.step", "torch"),
    "torch_manual_update.py": ("torch.Tensor.backward", "torch"),
    "torch_optimizer_tensors.py": ("torch.optim.Optimizer.step", "torch"),
    "torch_heavy_setup.py": ("torch.optim.Optimizer.step", "torch"),
    "torch_sliced_batches.py": ("torch.optim.Optimizer.step", "torch"),
    "torch_two_loops.py": ("torch.optim.Optimizer.step", "torch"),
    # JAX's capture (frameworks/jax/capture.py): a jitted step that takes a gradient or applies optax updates
    "jax_plain_loop.py": ("jax.jit train step", "jax"),
    "jax_optax_loop.py": ("jax.jit train step", "jax"),
    "jax_beside_tensorflow.py": ("jax.jit train step", "jax"),
    "flax_linen_trainstate.py": ("jax.jit train step", "jax"),
    "flax_nnx_optimizer.py": ("jax.jit train step", "jax"),
    # a trainer's loop around torch's step (frameworks/torch/trainers.py; skipped where not installed)
    "lightning_trainer_fit.py": ("torch.optim.Optimizer.step", "torch"),
    "hf_trainer_tiny.py": ("torch.optim.Optimizer.step", "torch"),
}
# The modules a corpus file needs beyond the frameworks CI always installs (its tests skip without them).
NEEDS = {
    "jax_optax_loop.py": ("optax",),
    "jax_beside_tensorflow.py": ("optax",),
    "flax_linen_trainstate.py": ("flax", "optax"),
    "flax_nnx_optimizer.py": ("flax", "optax"),
    "lightning_trainer_fit.py": ("lightning",),
    "hf_trainer_tiny.py": ("transformers",),
}
REFUSED = {
    "no_training.py": "without reaching a training entry point (watched: keras Model.fit",
    "needs_gpu.py": "needs a GPU and this machine has none: it raised RuntimeError: No GPU device found",
    "downloads_data.py": "cannot reach the network: it raised URLError",
}


def test_every_corpus_file_has_an_expectation():
    files = {p.name for p in CORPUS.iterdir() if p.suffix in (".py", ".ipynb")}
    assert files == set(TRAINS) | set(REFUSED)
    assert len(TRAINS) >= 8


# ------------------------------------------------------------------ fast: the plan, without a framework


def _p(**kw):
    return {"script": "/x/train.py", "entry": "keras.Model.fit", "user_batch": 32, "batch": 32, **kw}


_TORCH = {"entry": "torch.optim.Optimizer.step"}


@pytest.mark.parametrize(
    "framework, params, variant",
    [
        ("keras-jax", _p(kind="steady", sync="none"), "baseline"),
        ("keras-jax", _p(kind="steady", sync="none", batch=128), "batch:128"),
        ("keras-jax", _p(kind="steady", sync="each"), "sync:each"),
        ("keras-jax", _p(kind="fit", steps_per_execution=8), "steps_per_execution:8"),
        ("keras-jax", _p(kind="fit", jit_compile=True), "jit_compile:true"),
        ("keras-jax", _p(kind="loop", data="tfdata_noprefetch"), "prefetch:off"),
        ("keras-jax", _p(kind="precision", precision="mixed_float16"), "precision:mixed_float16"),
        ("torch", _p(kind="steady", sync="none", fix="autocast", autocast="off", **_TORCH), "baseline"),
        ("torch", _p(kind="steady", sync="none", fix="autocast", autocast="bfloat16", **_TORCH), "autocast"),
        ("torch", _p(kind="steady", sync="none", fix="torch_compile", torch_compile=True, **_TORCH), "compile"),
        ("torch", _p(kind="loop", num_workers=2, **_TORCH), "workers:2"),
        ("torch", _p(kind="loop", num_workers=0, pin_memory=True, **_TORCH), "pin_memory"),
    ],
)
def test_variant_of_each_case(framework, params, variant):
    """A case as a version-4 record named its fix among its parameters, read as version 5 reads it
    (its variant apart): the framework's adapter gives the capture the member it was given then."""
    split = records.v4_script_split(params)
    rest, v = split if split is not None else (params, None)
    spec = CaseSpec(workload="train", framework=framework, device="CPU:0", params=rest, variant=v)
    assert script.variant_of(spec) == variant
    assert fixes.params_of(spec) == params  # the parameters the analysis reads are what they were


def test_keras_variants_share_a_process_but_mixed_precision():
    def spec(fix=None, value=None, framework="tensorflow", **kw):
        variant = fixes.entry(fix).variant(value) if fix else None
        return CaseSpec(workload="train", framework=framework, device="CPU:0", params=_p(**kw), variant=variant)

    fit = spec("jit_compile", True, kind="fit")
    assert script.group_key(fit) == script.group_key(spec(kind="steady", sync="none"))
    assert script.group_key(spec("precision", "mixed_float16", kind="precision")) is None
    loop = dict(entry="torch.optim.Optimizer.step", framework="torch", kind="steady", sync="none")
    # autocast is applied per step by the torch capture: it takes turns in the shared process
    assert script.group_key(spec("autocast", "bfloat16", **loop)) is not None
    # channels_last is switched in for its turns too; a thread count is read at import: alone
    assert script.group_key(spec("channels_last", True, **loop)) is not None
    assert script.group_key(spec("cpu_threads", 1, **loop)) is None
    assert script.group_key(spec("autocast", "off", **loop)) is not None


FACTS = {
    "framework": "tensorflow",
    "entry": "keras.Model.fit",
    "batch": 32,
    "step_s": 0.005,
    "first_step_s": 0.8,
    "setup_s": 6.0,
    "model": "Sequential",
    "data": "arrays",
    "steps_per_execution": 1,
}


def test_plan_fits_the_budget_and_says_what_it_cut():
    big = scriptplan.size(FACTS, 300.0)
    small = scriptplan.size(FACTS, 30.0)
    assert big["rounds"] == 2 and not big["cut"]
    assert {"steps_per_execution", "jit_compile"} <= {p["variant"]["fix"] for p in big["planned"]}
    assert len(small["planned"]) < len(big["planned"]) and small["cut"]
    assert small["planned_s"] <= 30.0
    cases = scriptplan.cases("tensorflow", "CPU:0", scriptplan.user_params({"script": "t.py"}, FACTS), big)
    assert cases[0].params["kind"] == "steady" and cases[0].params["batch"] == 32
    assert len({c.key for c in cases}) == len(cases)


def test_a_budget_below_the_scripts_setup_is_refused_only_with_no_step_to_answer_from():
    """Facts with no pre-flight result (a pre-flight stopped within its first step) are refused; with
    the steps it timed, the plan answers from them (tests/test_preflight_answer.py)."""
    with pytest.raises(UsageError, match="--budget: 20 s is too short for this script"):
        scriptplan.size({**FACTS, "setup_s": 40.0}, 20.0)
    timed = {"status": "ok", "step_s": [0.005] * 5, "warmup_s": [0.8], "setup_s": 40.0}
    s = scriptplan.size({**FACTS, "setup_s": 40.0, "preflight_result": timed}, 20.0)
    assert s["preflight_only"] and s["planned"] == [] and s["preflight_result"] == timed


def _slower(facts, by):
    """The same script's pre-flight facts on a re-run whose set-up and steps took ``by`` times longer."""
    times = ("setup_s", "data_s", "import_s", "step_s", "first_step_s")
    return {**facts, **{k: facts[k] * by for k in times if k in facts}}


def _asked(facts, budget_s):
    """The figure a refusal asks for (facts with no pre-flight result to answer from, as a pre-flight
    stopped within its first step leaves)."""
    with pytest.raises(UsageError) as e:
        scriptplan.size(facts, budget_s)
    return int(re.search(r"Pass --budget (\d+) or more", e.value.fix).group(1)), str(e.value)


# The refused scripts of a new user's try (keras-io's DCGAN, actor-critic, a bidirectional LSTM on
# Keras-torch): told "Pass --budget 80", re-run as asked and refused again ("Pass --budget 120").
SLOW_SCRIPTS = [
    {**FACTS, "step_s": 1.8, "first_step_s": 6.0, "setup_s": 25.8, "data_s": 4.0, "import_s": 21.8, "preflight_s": 45},
    {**FACTS, "step_s": 3.0, "first_step_s": 9.0, "setup_s": 30.0, "data_s": 10.0, "import_s": 20.0, "preflight_s": 60},
    {**FACTS, "framework": "keras-torch", "step_s": 11.5, "first_step_s": 14.0, "setup_s": 8.2, "preflight_s": 100},
    {**FACTS, "entry": "torch.optim.Optimizer.step", "framework": "torch", "step_s": 0.9, "setup_s": 41.5},
]


@pytest.mark.parametrize("facts", SLOW_SCRIPTS)
def test_the_budget_a_refusal_asks_for_holds_on_the_re_run(facts):
    """The figure allows for the script's set-up and steps taking longer on the re-run (they vary
    from run to run on a busy machine): at the figure, the same times and times up to the headroom
    slower are both planned, never refused again."""
    need, _ = _asked(facts, 20.0)
    for by in (1.0, 1.2, scriptplan.HEADROOM):
        assert scriptplan.size(_slower(facts, by), float(need))["planned_s"] > 0  # not refused
    assert not scriptplan.size(facts, float(need))["baseline_only"]
    # the sizer's own test is the figure's: just below the least budget, the baseline alone or a refusal
    below = float(math.floor(scriptplan.least_budget(scriptplan._Costs(facts)) - 1))
    if scriptplan.baseline_fits_overrun(facts, below):
        assert scriptplan.size(facts, below)["baseline_only"]
    else:
        with pytest.raises(UsageError):
            scriptplan.size(facts, below)


def test_a_busier_machine_asks_for_more_headroom():
    facts = SLOW_SCRIPTS[0]
    quiet, _ = _asked({**facts, "load_per_core": 0.5}, 20.0)
    busy, _ = _asked({**facts, "load_per_core": 4.0}, 20.0)
    assert busy > quiet
    assert scriptplan.size(_slower(facts, scriptplan.MAX_HEADROOM), float(busy))["planned_s"] > 0


def test_the_budget_refusal_says_what_the_preflight_measured():
    """The refusal hid its own finding: a Keras-torch LSTM's 11.5 s step on the CPU is the answer to
    why its training is slow. It says the step and the set-up it just measured."""
    _, text = _asked(SLOW_SCRIPTS[2], 60.0)
    assert "60 s is too short for this script: in the pre-flight a training step took 11.5 s on this CPU" in text
    assert "the set-up (imports and data loading) 8.2 s" in text and "needs about" in text, text


def test_a_budget_too_short_for_the_fixes_measures_the_baseline_alone():
    """An answer rather than a refusal: where the budget holds the baseline but nothing beside it
    and the run stays within 1.3 x the budget + 40 s, the baseline alone is measured (its child and
    case may take what it needs), and the plan says what was cut and the budget that measures it."""
    facts = SLOW_SCRIPTS[0]  # keras-io's DCGAN as a new user ran it at --budget 60: refused before
    s = scriptplan.size(facts, 60.0)
    assert s["baseline_only"] and s["planned"] == [] and s["rounds"] == 1
    c = scriptplan._Costs(facts)
    assert s["child_limit_s"] >= c.baseline() and s["case_timeout_s"] >= c.start + c.baseline()
    assert s["cut"][0].startswith("the baseline alone was measured: 60 s holds no fix beside it (in the pre-flight")
    assert "--budget" in s["cut"][0] and {"batch", "precision"} <= set(s["fixes_cut"])
    user = scriptplan.user_params({"script": "t.py"}, facts)
    assert [c.params["kind"] for c in scriptplan.cases("tensorflow", "CPU:0", user, s)] == ["steady"]
    # an 11.5 s step at --budget 60: even the baseline would overrun it, so the answer is the pre-flight's
    # steps, or a refusal where it has none to answer from
    with pytest.raises(UsageError):
        scriptplan.size(SLOW_SCRIPTS[2], 60.0)
    timed = {"status": "ok", "step_s": [11.5] * 5, "warmup_s": [14.0], "setup_s": 8.2}
    lstm = scriptplan.size({**SLOW_SCRIPTS[2], "preflight_result": timed}, 60.0)
    assert lstm["preflight_only"] and not lstm["baseline_only"] and lstm["planned"] == []
    assert "a training step took 11.5 s on this CPU" in lstm["preflight_only"]


def test_refusals_quote_the_scripts_own_error():
    job = {"script": "train.py"}
    gpu = script.ChildRun(
        end={
            "status": "script_error",
            "error": "AssertionError: Torch not compiled with CUDA enabled",
            "where": "train.py:12",
        }
    )
    assert "needs a GPU and this machine has none: it raised AssertionError: Torch not compiled with CUDA" in str(
        scriptplan.refusal(gpu, job, 30)
    )
    other = script.ChildRun(end={"status": "script_error", "error": "KeyError: 'lr'", "where": "train.py:3"})
    assert "train.py raised KeyError: 'lr' at train.py:3 before its first training step" in str(
        scriptplan.refusal(other, job, 30)
    )
    none = script.ChildRun(end={"status": "no_entry", "watched": ["keras Model.fit"]})
    assert str(scriptplan.refusal(none, job, 30)).startswith("SCRIPT: train.py ran to its end without reaching")


def test_a_script_that_ends_within_the_warmup_is_told_to_train_longer_not_to_raise_the_budget():
    """pytorch/examples' time_sequence_prediction/train.py run with `-- --steps 2` (two LBFGS steps) ended by
    itself within the pre-flight's warm-up, and the refusal said "Pass a larger --budget", which changes nothing."""
    short = script.ChildRun(end={"status": "too_short", "entry": "torch.optim.Optimizer.step"})
    text = str(scriptplan.refusal(short, {"script": "train.py"}, 72))
    assert (
        "train.py reached no timed training step in the pre-flight (the script ended within its first warm-up" in text
    )
    assert "at least 12 training steps" in text and "larger --budget" not in text, text


def test_torch_2_13s_no_accelerator_error_is_a_script_that_needs_a_gpu():
    """pytorch/examples' distributed/ddp-tutorial-series/single_gpu.py moves its model with
    ``model.to(0)``; on torch 2.13's CPU build that raises "Cannot access accelerator device when none
    is available", which the refusal called a plain script error ("Make `python single_gpu.py` run here
    first"), not a script that needs a GPU (benchmarks/public_check_40.md)."""
    run = script.ChildRun(
        end={
            "status": "script_error",
            "error": "RuntimeError: Cannot access accelerator device when none is available.",
            "where": "single_gpu.py:17",
        }
    )
    text = str(scriptplan.refusal(run, {"script": "single_gpu.py"}, 30))
    assert "single_gpu.py needs a GPU and this machine has none: it raised RuntimeError: Cannot access" in text
    assert "Run diagnose on the machine with the GPU" in text


def test_the_preflight_line_leaves_out_a_model_it_did_not_see():
    """keras-io's custom-training-loop guide (a GradientTape loop): the capture names no model, and the
    pre-flight printed "Found tf.GradientTape+apply_gradients (None, batch 32, tensorflow)"."""
    from whichdevice.cli.scriptcmd import found_line

    facts = {"entry": "tf.GradientTape+apply_gradients", "model": None, "batch": 32, "framework": "tensorflow"}
    line = found_line({**facts, "step_s": 0.00865, "setup_s": 2.9})
    assert line.startswith("Found tf.GradientTape+apply_gradients (batch 32, tensorflow): a step took"), line
    assert "None" not in line
    named = found_line({**facts, "model": "Linear", "batch": 0, "step_s": 0.1, "setup_s": 1.0})
    assert "(Linear, tensorflow)" in named


def test_a_jax_script_that_reached_no_step_is_told_which_steps_are_captured():
    """A JAX script that ran to its end without a step the JAX capture knows (no jitted gradient, no optax
    update) is told what JAX's capture watches, not the Keras and torch entry points or --model."""
    run = script.ChildRun(end={"status": "no_entry", "watched": ["keras Model.fit"], "plain_jax": True})
    text = " ".join(str(scriptplan.refusal(run, {"script": "mnist_classifier_fromscratch.py"}, 60)).split())
    assert "imported JAX and ran to its end without a training step diagnose captures" in text
    assert "jax.value_and_grad" in text and "optax.apply_updates" in text and "nnx.Optimizer.update" in text
    assert "whichdevice audit mnist_classifier_fromscratch.py" in text and "--model" not in text


def test_step_notes_say_what_the_script_did_per_step():
    from whichdevice.core.records import CaseResult, Timing

    def result(params, metrics):
        spec = CaseSpec(workload="train", framework="torch", device="CPU:0", params=_p(**params))
        timing = Timing(first_call_s=0.1, warmup_s=[0.1], samples_s=[0.01] * 5, number_per_sample=1, overhead_s=0.0)
        return CaseResult(spec=spec, status="ok", metrics=metrics, wall_s=1.0, timing=timing)

    base = result({"kind": "steady", "sync": "none"}, {"data_wait_s": 0.002, "syncs": 10.0, "sync_s": 0.004})
    other = result({"kind": "steady", "sync": "none", "batch": 128}, {"data_wait_s": 0.5})

    class Rec:
        results = [base, other]

    (note,) = scriptplan.step_notes(Rec())
    assert "waited 2 ms for its next batch" in note and "10 host reads" in note and "4 ms" in note


def test_notebook_cells_joined_magics_left_out():
    src = script.notebook_source(CORPUS / "keras_notebook.ipynb")
    assert "model.fit(x, y" in src and "pip install" not in src.replace("# !pip", "")
    compile(src, "nb", "exec")


def test_spec_round_trips_with_its_shared_variants():
    spec = CaptureSpec("baseline", 2, 5, "cpu", 30.0, also=("batch:64",))
    assert CaptureSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    typed = CaptureSpec("batch:64", fixes=({"fix": "batch", "value": 64},))
    assert CaptureSpec.from_dict(json.loads(json.dumps(typed.to_dict()))) == typed  # the typed variant travels too


def test_cli_refuses_a_script_that_downloads_with_one_line(tmp_path, capsys):
    code, out, err = run_cli(["diagnose", str(CORPUS / "downloads_data.py"), "--out", str(tmp_path)], capsys)
    assert code == 2
    assert "cannot reach the network: it raised URLError" in " ".join(err.split())
    assert not list(tmp_path.iterdir())


def test_cli_refuses_model_with_a_script(tmp_path, capsys):
    code, _, err = run_cli(["diagnose", str(CORPUS / "keras_fit_arrays.py"), "--model", "m.py:f"], capsys)
    assert code == 2 and "--model: does not go with a SCRIPT" in " ".join(err.split())


# ------------------------------------------------------------------ several training calls in one script

THREE = [
    {"entry": "keras.Model.fit", "call": 1, "model": "Sequential", "name": "teacher", "steps": 128, "batch": 32},
    {"entry": "keras.Model.fit", "call": 2, "model": "Distiller", "name": "distiller", "steps": 192, "batch": 32},
    {"entry": "keras.Model.fit", "call": 3, "model": "Sequential", "name": "student", "steps": 128, "batch": 32},
]


def test_the_call_with_the_most_steps_is_chosen_and_unknown_steps_choose_the_first():
    assert scriptplan.longest_call(THREE) == 2
    assert scriptplan.longest_call([{**THREE[0], "steps": 192}, *THREE[1:]]) == 1  # equals: the first
    assert scriptplan.longest_call([THREE[0], {**THREE[1], "steps": None}]) is None  # a generator's length


def test_the_screen_says_which_call_was_measured_and_lists_the_others():
    from whichdevice.cli.scriptcmd import found_line

    facts = {**FACTS, "entry": "keras.Model.fit", "model": "Distiller"}
    facts |= {"entries": THREE, "entry_call": 2, "entry_reason": "longest"}
    which, others = scriptplan.entry_words(facts)
    assert which == "the 2nd of 3 fit calls, the one with the most steps (192 steps)"
    assert others == (
        "also trains: Sequential 'teacher' fit (1st call, 128 steps), Sequential 'student' fit (3rd call, 128 steps); "
        "choose with --entry 1 or 3"
    )
    assert "the 2nd of 3 fit calls" in found_line(facts)
    assert scriptplan.entry_words({**facts, "entries": THREE[:1]}) == ("", "")  # one call: nothing to say
    user = scriptplan.user_params({"script": "kd.py"}, facts)
    assert user["entry_call"] == 2  # every case measures the 2nd call
    assert script._spec(user, "CPU:0", "baseline").entry_call == 2
    notes = scriptplan.notes(user, scriptplan.size(facts, 120.0))
    assert "the 2nd of 3 fit calls" in notes[0] and "passed over untrained" in notes[0]
    assert any(n.startswith("The script also trains: Sequential 'teacher'") for n in notes)
    assert "entry_call" not in scriptplan.user_params({"script": "kd.py"}, FACTS)  # one call: cases as before


def test_an_entry_the_script_never_made_is_refused_with_the_calls_it_made():
    e = scriptplan._wrong_entry(5, THREE, "kd.py")
    assert e.argument == "--entry" and "saw 3 keras.Model.fit calls" in str(e) and "--entry 1 to 3" in e.fix


def test_entry_goes_with_a_script_only(capsys):
    code, _out, err = run_cli(["diagnose", "--model", "m.py:build", "--entry", "2"], capsys)
    assert code == 2 and "--entry: goes with a SCRIPT" in " ".join(err.split())


@pytest.mark.tf
def test_the_survey_measures_the_chosen_fit_and_records_every_other():
    """keras-io's knowledge distillation calls fit three times (teacher, Distiller, student); the
    first was measured without a word. The pre-flight's survey measures the call it is asked for
    (the calls before it passed over untrained) and lets the script go on, recording the rest."""
    spec = CaptureSpec("baseline", 1, 3, "cpu", 60.0, entry_call=2, survey=True)
    run = script.run_child(
        {"script": str(CORPUS / "keras_three_fits.py"), "args": []}, spec, ["tensorflow"], timeout_s=240
    )
    assert run.end.get("status") == "ok", run.stderr_tail[-800:]
    assert [r["model"] for r in run.results] == ["Distiller"] and len(run.results[0]["step_s"]) >= 3
    seen = [(e["call"], e["name"], e["measured"], e["steps"]) for e in run.entries]
    assert seen == [(1, "teacher", False, 128), (2, "distiller", True, 192), (3, "student", False, 128)]


@pytest.mark.slow
@pytest.mark.tf
def test_the_survey_past_its_deadline_stops_at_the_scripts_next_evaluate_and_says_so():
    """What the script does besides training (a test set's evaluate) must not hold the pre-flight
    to its process's time limit: past the deadline the survey ends there and says later calls
    are not listed."""
    spec = CaptureSpec("baseline", 1, 3, "cpu", 0.0, entry_call=1, survey=True)
    run = script.run_child(
        {"script": str(CORPUS / "keras_three_fits.py"), "args": []}, spec, ["tensorflow"], timeout_s=240
    )
    assert run.end.get("status") == "ok", run.stderr_tail[-800:]
    assert [e["call"] for e in run.entries] == [1] and run.seen.get("survey_stopped") is True
    facts = {"entries": [*THREE[:1], {**THREE[1], "call": 2}], "entry_call": 1, "entry_reason": "first"}
    assert "later ones are not listed" in scriptplan.entry_words({**facts, "survey_stopped": True})[1]


# ------------------------------------------------------------------ one real capture (one TensorFlow import)


@pytest.mark.tf
def test_keras_fit_captured_with_variants_in_turns():
    spec = CaptureSpec("baseline", 1, 4, "cpu", 60.0, also=("batch:128", "steps_per_execution:4", "prefetch"))
    run = script.run_child(
        {"script": str(CORPUS / "keras_fit_arrays.py"), "args": []}, spec, ["tensorflow"], timeout_s=240
    )
    got = run.by_variant()
    assert run.end.get("status") == "ok", run.stderr_tail[-800:]
    assert got["baseline"]["entry"] == "keras.Model.fit" and got["baseline"]["batch_size"] == 32
    assert len(got["baseline"]["step_s"]) >= 4 and got["baseline"]["setup_s"] > 0
    assert got["batch:128"]["samples_per_step"] == 128
    assert got["steps_per_execution:4"]["samples_per_step"] == 128 and got["steps_per_execution:4"]["step_s"]
    assert got["prefetch"]["status"] == "not_applicable" and "not a tf.data dataset" in got["prefetch"]["why_not"]


@pytest.mark.tf
def test_a_model_with_its_own_compile_signature_is_recompiled_through_keras():
    """keras-io's GAN (guides/custom_train_step_in_tensorflow.py) overrides compile(d_optimizer,
    g_optimizer, loss_fn): the child's recompile for steps_per_execution called model.compile(optimizer=...),
    which raised TypeError out of the child, and every case of it failed, the baseline too
    (benchmarks/public_check_40.md). The recompile goes through keras.Model.compile, whose arguments
    were recorded; a variant whose compile fails is that variant's error, never the child's."""
    spec = CaptureSpec("baseline", 1, 3, "cpu", 60.0, also=("steps_per_execution:4", "jit_compile:true"))
    run = script.run_child(
        {"script": str(CORPUS / "keras_compile_override.py"), "args": []}, spec, ["tensorflow"], timeout_s=240
    )
    got = run.by_variant()
    assert run.end.get("status") == "ok", run.stderr_tail[-800:]
    assert got["baseline"]["model"] == "TwoHalves" and len(got["baseline"]["step_s"]) >= 3
    assert got["steps_per_execution:4"]["samples_per_step"] == 256 and got["steps_per_execution:4"]["step_s"]
    assert got["jit_compile:true"].get("status") != "error", got["jit_compile:true"]


@pytest.mark.tf
def test_a_shared_fit_child_led_by_a_batch_variant_keeps_the_users_batch_for_the_others():
    """Round 2 of keras-io's GAN guide (tf.data .batch(64)) ran its shared child with batch:8 first:
    Dataset.batch was patched to 8 at the script's build, so the baseline, steps_per_execution, jit_compile
    and prefetch members all ran at batch 8 and were recorded as batch 64 (24 ms steps against round 1's
    157 ms: "bimodal between rounds"; benchmarks/public_check_40.md)."""
    spec = CaptureSpec("batch:16", 1, 3, "cpu", 60.0, also=("baseline", "steps_per_execution:4"))
    run = script.run_child(
        {"script": str(CORPUS / "keras_fit_tfdata.py"), "args": []}, spec, ["tensorflow"], timeout_s=240
    )
    got = run.by_variant()
    assert run.end.get("status") == "ok", run.stderr_tail[-800:]
    assert got["batch:16"]["batch_size"] == 16 and got["batch:16"]["step_s"]
    assert got["baseline"]["batch_size"] == 64 and got["baseline"]["step_s"]
    assert got["steps_per_execution:4"]["samples_per_step"] == 4 * 64


@pytest.mark.tf
def test_a_fit_records_the_jit_compile_it_ran_with():
    """keras-io's antirectifier on Keras/JAX: jit_compile='auto' already compiles with XLA there, yet the
    first screen said "Compile the step with XLA (jit_compile): 10.9× faster" and "model.compile(...,
    jit_compile=True)": the script's fit cases did not record what their jit_compile resolved to, so
    analysis/fixes.jit_by_default could not tell (benchmarks/public_check_40.md)."""
    spec = CaptureSpec("baseline", 1, 3, "cpu", 60.0, also=("jit_compile:true", "steps_per_execution:4"))
    run = script.run_child(
        {"script": str(CORPUS / "keras_fit_arrays.py"), "args": []}, spec, ["tensorflow"], timeout_s=240
    )
    got = run.by_variant()
    assert run.end.get("status") == "ok", run.stderr_tail[-800:]
    # TensorFlow on a CPU-only machine: 'auto' resolves to no XLA (Keras' trainer); the variant forces it
    assert script.metrics_of(got["baseline"])["jit_compile"] == 0.0
    assert script.metrics_of(got["steps_per_execution:4"])["jit_compile"] == 0.0
    assert script.metrics_of(got["jit_compile:true"])["jit_compile"] == 1.0


@pytest.mark.tf
@pytest.mark.parametrize("name", ["tf_tape_optimizer_apply.py", "tf_eager_tape_loop.py"])
def test_a_tape_loop_is_captured_through_optimizer_apply_or_apply_gradients(name):
    """keras-io's guides/writing_a_custom_training_loop_in_tensorflow.py updates with Keras 3's
    optimizer.apply(grads, vars): the capture watched apply_gradients only, and the pre-flight ran the
    script until its limit, then said "reached no timed training step ... Pass a larger --budget"
    (benchmarks/public_check_40.md). apply_gradients calls apply: each step is counted once."""
    spec = CaptureSpec("baseline", 2, 5, "cpu", 60.0)
    run = script.run_child({"script": str(CORPUS / name), "args": []}, spec, ["tensorflow"], timeout_s=240)
    (r,) = run.results
    assert r["entry"] == "tf.GradientTape+apply_gradients" and r["batch_size"] == 16, (r, run.stderr_tail[-500:])
    assert len(r["step_s"]) >= 5, r  # 5 at least, more while a short step's median settles


@pytest.mark.tf
def test_mixed_precision_child_fits_under_the_policy():
    spec = CaptureSpec("precision:mixed_float16", 1, 3, "cpu", 60.0)
    run = script.run_child(
        {"script": str(CORPUS / "keras_fit_pydataset.py"), "args": []}, spec, ["tensorflow"], timeout_s=240
    )
    (r,) = run.results
    assert r["status"] == "ok" and len(r["step_s"]) >= 3, (r, run.stderr_tail[-500:])


# ------------------------------------------------------------------ slow: the corpus as a user runs it


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(TRAINS))
def test_corpus_script_diagnosed_every_case_measured(tmp_path, capsys, name):
    for module in NEEDS.get(name, ()):
        pytest.importorskip(module)
    record = tmp_path / "r.json"
    code, out, err = run_cli(
        ["diagnose", str(CORPUS / name), "--budget", "60", "--json", str(record), "--out", str(tmp_path), "--quiet"],
        capsys,
    )
    assert code == 0, err[-2000:]
    rec = json.loads(record.read_text())
    entry, fw = TRAINS[name]
    assert rec["options"]["entry"] == entry and rec["options"]["script"].endswith(name)
    assert rec["options"].get("framework", "tensorflow") == fw
    bad = [
        (r["spec"]["params"].get("kind"), r["status"], r.get("error")) for r in rec["results"] if r["status"] != "ok"
    ]
    assert not bad, bad


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("name", ["no_training.py", "needs_gpu.py"])
def test_corpus_script_refused_with_one_line(tmp_path, capsys, name):
    code, _, err = run_cli(["diagnose", str(CORPUS / name), "--out", str(tmp_path)], capsys)
    assert code == 2
    assert REFUSED[name] in " ".join(err.split())
    assert not list(tmp_path.iterdir())
