"""`diagnose SCRIPT` on a machine without a GPU: the step the pre-flight traces, the reference
GPU predicted from it at each measured batch (the same decision and words as `run`), and one
line saying why not where the step could not be traced."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
from html import escape as html_escape
from pathlib import Path

import pytest

from conftest import run_cli
from whichdevice.analysis import deviceprofile, errormodel, prediction
from whichdevice.analysis.scriptpredict import cpu_steps, description, measured_host_s, script_prediction
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import STEP_TRACE_VERSION, StepTrace, load_run
from whichdevice.present.firstscreen import MAX_LINES, _height, first_screen, screen_lines

DATA = Path(__file__).parent / "data"
CORPUS = Path(__file__).parent / "script_corpus"
TRACED = DATA / "diagnose_script_torch_cnn_traced_budget60_cpu_2core.json"
UNTRACED = DATA / "diagnose_script_input_bound_budget60_cpu_2core_busy.json"


def _bench():
    spec = importlib.util.spec_from_file_location(
        "script_gpu_prediction", DATA.parents[1] / "benchmarks" / "script_gpu_prediction.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ the torch trace


def test_one_traced_step_scaled_to_another_batch_is_that_batch_s_own_trace():
    """The batch-proportional parts: the MLP traced at batch 32 and scaled to 512 has the kernels,
    FLOPs and bytes of the same step traced at 512 (dense layers: exact)."""
    bench = _bench()
    at32, at512 = bench.mlp_trace(32), bench.mlp_trace(512)
    scaled, own = description(at32, 512), description(at512, 512)
    assert scaled.kernels == own.kernels > 10
    assert sum(o.flops for o in scaled.ops) == pytest.approx(sum(o.flops for o in own.ops), rel=1e-9)
    assert sum(o.bytes for o in scaled.ops) == pytest.approx(sum(o.bytes for o in own.ops), rel=0.01)
    matmul = [o for o in own.ops if o.kind == "matmul"]
    # forward and weight gradient of the first layer (its input needs no gradient), all three of the second
    assert sum(o.flops for o in matmul) == 2 * 2 * 512 * 100 * 128 + 3 * 2 * 512 * 128 * 10


def test_the_optimizer_is_traced_as_a_gpu_runs_it_and_the_loader_is_left_out():
    """torch.optim's foreach path (a GPU's default) for the traced step only, put back after; the
    DataLoader's collate in the loop's process is not a GPU kernel; each op is timed."""
    import torch

    from whichdevice.frameworks.torch.steptrace import StepRecorder

    model = torch.nn.Linear(8, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 8)), batch_size=16)
    it = iter(data)

    def step() -> None:
        (x,) = next(it)
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    step()
    rec = StepRecorder(torch, 16)
    rec.start([opt])
    step()
    rec.stop()
    trace = StepTrace.model_validate(rec.trace())
    names = {o.op_type for o in trace.ops}
    assert any(n.startswith("_foreach_") for n in names)
    assert opt.param_groups[0]["foreach"] is None  # the script's own setting back
    assert "stack" not in names and trace.totals["loader_ops_left_out"] > 0
    assert trace.totals["op_s"] > 0 and trace.batch == 16
    optim = [o for o in trace.ops if o.op_type.startswith("_foreach_")]
    assert all(o.batched_bytes == 0 for o in optim)  # the optimizer does not grow with the batch


# ------------------------------------------------------------------ against the real H100 runs


def test_the_h100_step_of_the_reference_mlp_from_one_trace_against_its_real_runs():
    """h100_probe_torch.json's MLP (real H100 steps at 9 batches), predicted from one step traced at
    batch 32 and scaled: within ×1.3 of the real step at the median batch, and inside the
    calibrated band at 8 of 9 (benchmarks/script_gpu_prediction.md states the table)."""
    bench = _bench()
    points = bench.torch_points()
    assert len(points) == 9
    factor, inside = bench.summary(points)
    assert factor < 1.3 and inside >= 8
    assert all(0.5 < band.mid / real < 2.0 for _, real, band in points)


def test_the_h100_step_of_a_jitted_matmul_from_xla_s_cost_analysis_against_its_real_runs():
    """keras_jax_gpu.json's jitted matmul (real H100 steps, n = 16 to 8000), predicted from XLA's
    cost analysis and kernels of the same function compiled here: within ×1.3 at the median size,
    the real step inside the band at 6 of 7; the largest, device-bound, within ×1.2."""
    pytest.importorskip("jax")
    bench = _bench()
    points = bench.jax_points()
    factor, inside = bench.summary(points)
    assert factor < 1.3 and inside >= 6
    big = max(points, key=lambda p: p[0])
    assert big[0] == 8000 and abs(math.log(big[2].mid / big[1])) < math.log(1.2)


def test_xla_flops_beyond_the_dots_go_to_the_convolutions():
    from whichdevice.frameworks.jax.steptrace import _conv_flops

    ops = [
        {"op_type": "convolution", "kind": "elementwise", "flops": 0.0, "bytes": 300.0},
        {"op_type": "convolution", "kind": "elementwise", "flops": 0.0, "bytes": 100.0},
        {"op_type": "dot (dot)", "kind": "matmul", "flops": 1000.0, "bytes": 10.0},
        {"op_type": "fusion", "kind": "elementwise", "flops": 0.0, "bytes": 10.0},
    ]
    _conv_flops(ops, 5000.0)
    assert [o["kind"] for o in ops] == ["conv", "conv", "matmul", "elementwise"]
    assert [o["flops"] for o in ops] == [3000.0, 1000.0, 1000.0, 0.0]


# ------------------------------------------------------------------ the record and the first screen


def test_a_traced_script_record_predicts_the_reference_gpu_in_run_s_words(tmp_path, capsys):
    """A real diagnose of torch_cnn.py on this project's CPU: the answer names the GPU (never the
    profile's key), the batch, what its step would be mostly, where it comes from; the same
    sentence in the terminal, the markdown and the HTML page; the first screen within 25 lines."""
    record = load_run(TRACED)
    assert record.step_trace is not None and record.step_trace.version == STEP_TRACE_VERSION
    fs = first_screen(record, suite_verdict(record))
    answer = " ".join(fs.answer)
    said = next(a for a in fs.answer if a.startswith("Would a GPU help?"))
    assert said.startswith("Would a GPU help? An NVIDIA H100 80GB HBM3 would")
    assert "at batch 32" in said and "its step would be mostly" in said
    assert "From one step of your script traced in the pre-flight (its ATen ops)" in answer
    assert "profile 'h100'" not in answer and "machine with the GPU" not in answer
    assert "The answer changed" not in answer  # the provisional answer predicted from the same trace
    assert _height(screen_lines(fs, report="r.html")) <= MAX_LINES

    path = tmp_path / TRACED.name
    shutil.copy(TRACED, path)
    code, md, err = run_cli(["report", str(path), "--markdown"], capsys)
    assert code == 0, err
    head = said.split(";")[0]
    assert head in md
    code, _, err = run_cli(["report", str(path), "--out", str(tmp_path / "o")], capsys)
    assert code == 0, err
    page = next((tmp_path / "o").glob("*.html")).read_text()
    assert html_escape(head, quote=False) in page or head in page


def test_the_prediction_is_at_every_batch_the_cpu_measured_with_the_measured_host_time():
    record = load_run(TRACED)
    trace = record.step_trace
    assert trace is not None
    steps = cpu_steps(record)
    host = measured_host_s(trace, steps)
    assert host is not None and 0 <= host < steps[32][0]
    profile = deviceprofile.load(prediction.RUN_PROFILE)
    report = script_prediction(record, profile, errormodel.shipped(prediction.RUN_ERRORS))
    assert report is not None and [r.batch for r in report.rows] == sorted(steps)
    row = report.rows[0]
    assert row.band is not None and 0 < row.band.low < row.band.mid < row.band.high  # calibrated: bias and spread
    assert row.kernels == sum(o.count for o in trace.ops if o.kind != "free")
    assert row.gpu.parts_s["host overhead"] == pytest.approx(host)
    # a sweep batch: the trace scaled to it, set beside that batch's own CPU step
    wider = record.model_copy(update={"results": [*record.results, _at_batch(record.results[0], 128, 4.0)]})
    rows = script_prediction(wider, profile, None).rows  # type: ignore[union-attr]
    assert [r.batch for r in rows] == [32, 128] and rows[1].cpu_s == pytest.approx(4 * rows[0].cpu_s)  # type: ignore[operator]
    at32, at128 = description(trace, 32), description(trace, 128)
    conv = [(a.flops, b.flops) for a, b in zip(at32.ops, at128.ops) if a.kind == "conv"]
    assert conv and all(b == pytest.approx(4 * a) for a, b in conv)  # a convolution's FLOPs grow with the batch
    update = [(a.bytes, b.bytes) for a, b in zip(at32.ops, at128.ops) if a.op_type.startswith("_foreach_")]
    assert update and all(a == b for a, b in update)  # the optimizer's do not


def _at_batch(r, batch: int, slower: float):
    t = r.timing
    timing = t.model_copy(update={"samples_s": [s * slower for s in t.samples_s], "rounds_s": None})
    return r.model_copy(
        update={"spec": r.spec.model_copy(update={"params": {**r.spec.params, "batch": batch}}), "timing": timing}
    )


def test_a_step_that_could_not_be_traced_says_why_in_one_line():
    record = load_run(TRACED).model_copy(
        update={
            "step_trace": StepTrace(
                framework="torch",
                source="",
                why_not="the model is compiled with torch.compile: its kernels are Inductor's",
            )
        }
    )
    fs = first_screen(record, suite_verdict(record))
    lines = [a for a in fs.answer if "Would a GPU help?" in a]
    assert len(lines) == 1
    assert "Not predicted: the model is compiled with torch.compile" in lines[0]
    assert "An NVIDIA H100" not in " ".join(fs.answer)


def test_a_script_record_from_before_the_trace_keeps_its_line():
    record = load_run(UNTRACED)
    assert record.step_trace is None
    answer = " ".join(first_screen(record, suite_verdict(record)).answer)
    assert "Would a GPU help? Run the same `whichdevice diagnose` on the machine with the GPU" in answer


def test_a_trace_of_a_newer_version_is_left_out_and_the_record_still_reads(tmp_path):
    data = json.loads(TRACED.read_text())
    data["step_trace"] = {**data["step_trace"], "version": STEP_TRACE_VERSION + 1, "something_new": 1}
    (tmp_path / "r.json").write_text(json.dumps(data))
    assert load_run(tmp_path / "r.json").step_trace is None


# ------------------------------------------------------------------ the corpus: a trace or a reason


@pytest.mark.parametrize(
    "script,framework,traced",
    [
        ("torch_cnn.py", "torch", True),
        ("jax_optax_loop.py", "jax", True),
        # the same JAX trace through Flax's TrainState, and the reason path (its unit test below): slow
        pytest.param("flax_linen_trainstate.py", "jax", True, marks=pytest.mark.slow),
        pytest.param("keras_fit_arrays.py", None, False, marks=pytest.mark.slow),
    ],
)
def test_each_framework_s_corpus_script_gets_a_trace_or_a_reason(script, framework, traced):
    """The pre-flight of a corpus script: its step traced (ops with FLOPs and bytes at the script's
    batch) or, where this version does not trace its framework, the reason; the collection's
    overhead measured."""
    if script.startswith("flax"):
        pytest.importorskip("flax")
    if script.startswith("keras"):
        pytest.importorskip("keras")
    from whichdevice.workloads import scriptplan

    facts = scriptplan.preflight({"script": str(CORPUS / script), "args": []}, 60)
    trace = StepTrace.model_validate(facts["step_trace"])
    if traced:
        assert trace.framework == framework and trace.why_not is None
        assert trace.batch == facts["batch"] > 0
        assert sum(o.flops * o.count for o in trace.ops if o.kind == "matmul") > 0
        assert trace.overhead_s is not None and trace.collect_s > 0
    else:
        assert trace.why_not and not trace.ops


@pytest.mark.parametrize(
    "result,framework",
    [
        ({"entry": "keras.Model.fit", "backend": "jax"}, "keras-jax"),
        ({"entry": "keras.Model.fit", "backend": "tensorflow"}, "tensorflow"),
        ({"entry": "tf.GradientTape.gradient"}, "tensorflow"),
    ],
)
def test_a_framework_whose_step_is_not_traced_gets_its_reason(result, framework):
    from whichdevice.workloads import scriptplan

    trace = StepTrace.model_validate(scriptplan.step_trace(result, 0.01))
    assert trace.framework == framework and not trace.ops
    assert trace.why_not is not None and ("Keras" in trace.why_not or "TensorFlow" in trace.why_not)
    record = load_run(TRACED).model_copy(update={"step_trace": trace})
    line = next(a for a in first_screen(record, suite_verdict(record)).answer if "Would a GPU help?" in a)
    assert f"Not predicted: {trace.why_not}." in line


def test_a_traced_step_s_overhead_is_its_wall_beyond_an_untraced_one():
    from whichdevice.workloads import scriptplan

    got = scriptplan.step_trace({"step_trace": {"framework": "torch", "source": "", "collect_s": 0.5}}, 0.2)
    assert got is not None and got["overhead_s"] == pytest.approx(0.3)
    said = {"framework": "jax", "source": "", "collect_s": 4.0, "overhead_s": 4.0}  # a compile of its own: all of it
    assert scriptplan.step_trace({"step_trace": said}, 0.2)["overhead_s"] == 4.0  # type: ignore[index]


def test_a_script_whose_batch_could_not_be_read_is_predicted_at_its_own_batch():
    """A loop that makes its own batches (no DataLoader to read the size from): traced as it runs,
    predicted at that one batch, called the script's own batch (never "batch 0")."""
    record = load_run(TRACED)
    trace = record.step_trace
    assert trace is not None
    flat = [o.model_copy(update={"batched_flops": 0.0, "batched_bytes": 0.0}) for o in trace.ops]
    results = [
        r.model_copy(
            update={"spec": r.spec.model_copy(update={"params": {**r.spec.params, "batch": 0, "user_batch": 0}})}
        )
        for r in record.results
    ]
    record = record.model_copy(
        update={
            "step_trace": trace.model_copy(update={"batch": 0, "ops": flat}),
            "results": results,
            "options": {**record.options, "sweep_batches": []},  # as the plan of such a script has it
        }
    )
    line = next(a for a in first_screen(record, suite_verdict(record)).answer if "Would a GPU help?" in a)
    assert "at the script's own batch, the only batch measured" in line
    assert "batch 0" not in line


def test_round_2_of_a_traced_script_counts_its_own_steps_as_behind_the_answer():
    """A script's no-GPU answer compares the traced step with its own measured steps; round 2
    said "had nothing to measure again: no case behind the answer ran to the end" over a run
    whose every step case was measured in both rounds (it looked for `run`'s sweep cases)."""
    from whichdevice.analysis import facade
    from whichdevice.present.firstscreen import first_screen

    record = load_run(DATA / "diagnose_script_torch_cnn_traced_budget60_cpu_2core.json")
    v = facade.analyze(record)
    confirmed = first_screen(record, getattr(v, "verdict", v)).confirmed
    assert "nothing to measure" not in confirmed and confirmed.startswith("Round 2 confirmed")


def test_a_jax_step_whose_predicted_gpu_step_is_all_modelled_host_time_names_no_winner():
    """Flax's linen MNIST (a real record): its jitted step's host time is modelled from this CPU,
    not measured in the trace, and every batch's predicted H100 step came out over a second of
    host dispatch: "an H100 would lose to this CPU" for a CNN. No winner is told from that."""
    from whichdevice.analysis import facade
    from whichdevice.present.firstscreen import first_screen

    record = load_run(DATA / "public" / "diagnose_script_flax_linen_mnist_budget60_cpu_2core.json")
    v = facade.analyze(record)
    answer = " ".join(first_screen(record, getattr(v, "verdict", v)).answer)
    assert "Cannot predict it" in answer and "host time" in answer
    assert "would lose" not in answer and "would win" not in answer
