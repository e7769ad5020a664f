"""`pipeline` on PyTorch's DataLoader and Keras' PyDataset: the constructed
known answers measured on this CPU (input-bound, model-bound, a variant that helps, the slow
stage named), the GPU-only variant said "not measured here", and `pipeline --quick` writing
records that `report` renders (terminal, Markdown, HTML)."""

import json

import pytest
from conftest import make_record, run_cli

from whichdevice import frameworks
from whichdevice.analysis import pipeline as ap
from whichdevice.core.records import CaseSpec, DeviceInfo
from whichdevice.core.timing import TimingPolicy
from whichdevice.workloads import pipeline as wl

SMALL = {"images": 128, "image_size": 64, "batch": 32}


def _spec(group, framework="torch", **params):
    return CaseSpec(
        workload="pipeline", framework=framework, device="CPU:0", params={**SMALL, "group": group, **params}
    )


# ------------------------------------------------------------------ parent side (no framework)


def test_pipeline_and_calibrate_are_offered_by_the_frameworks_that_have_the_part():
    from whichdevice.cli.pipeline import PIPELINE_FRAMEWORKS

    assert set(PIPELINE_FRAMEWORKS) == {n for n in frameworks.FRAMEWORKS if "pipeline" in frameworks.PARTS[n]}
    assert {"tensorflow", "torch", "keras-jax", "keras-torch"} <= set(PIPELINE_FRAMEWORKS)
    assert {"tensorflow", "torch", "keras-jax", "keras-torch", "jax"} <= set(frameworks.offering("calibrate"))
    for fw in PIPELINE_FRAMEWORKS:  # every framework with the part has its ladder
        assert wl.ladder(fw).variants


def test_a_gpu_only_variant_is_planned_on_a_gpu_only():
    kw = dict(images=64, size=32, batch=32, net="tiny", variants=list(wl.ladder("torch").variants), stages=False)
    on_cpu = {c.params["variant"] for c in wl.build_cases("torch", "CPU:0", **kw)}
    on_gpu = {c.params["variant"] for c in wl.build_cases("torch", "GPU:0", **kw)}
    assert "pinned" not in on_cpu and "pinned" in on_gpu
    assert on_gpu - on_cpu == {"pinned"}


def test_a_variant_whose_module_is_missing_is_left_out_and_said(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorflow" else real(name, *a))
    kept, notes = wl.installed_variants("keras-jax", ["serial", "tfdata"])
    assert kept == ["serial"]
    assert notes == ["tfdata: not measured here (tensorflow is not installed; pip install tensorflow)."]


def test_the_gpu_only_row_on_a_cpu_says_not_measured_here_never_failed():
    from whichdevice.core.records import CaseResult, Timing

    def ok(part, variant, s):
        t = Timing(first_call_s=s, warmup_s=[s], samples_s=[s] * 8, number_per_sample=1, overhead_s=0.0)
        metrics = {"input_wait_s": 0.1 * s * 8, "loop_s": s * 8} if part == "both" else {}
        return CaseResult(
            spec=_spec("g", part=part, variant=variant), status="ok", timing=t, metrics=metrics, wall_s=0.0
        )

    rec = make_record([ok("pipeline", "serial", 1e-3), ok("both", "serial", 2e-3)], experiment="pipeline")
    rec = rec.model_copy(update={"options": {"variants": ["serial", "pinned"]}})
    (rep,) = ap.analyze_pipeline(rec)
    pinned = next(r for r in rep.rows if r.variant == "pinned")
    assert pinned.not_measured == "not measured here (no GPU: pinned host memory only speeds host-to-GPU copies)"
    assert not pinned.failed and pinned.loop is None
    from whichdevice.present.pipeline import variant_grid

    grid = variant_grid(rep)
    assert any("not measured here (no GPU" in c.text for row in grid.rows for c in row)
    assert not any("failed" in line for line in grid.footer)
    assert "stages of the Dataset + DataLoader pipeline" in ap.record_ladder(rec).stage_title


def test_on_a_gpu_machine_the_words_are_the_dataloaders_and_the_cpu_row_says_gpu_only():
    """A torch run on CPU:0 and GPU:0: the work-place line speaks of the DataLoader (not tf.data), and
    the CPU's pinned row says it is GPU only (there was a GPU, so not "no GPU")."""
    from conftest import fake_session

    from whichdevice.core.records import CaseResult, Timing
    from whichdevice.present.pipeline import device_verdict

    def ok(device, part, variant, s):
        t = Timing(first_call_s=s, warmup_s=[s], samples_s=[s] * 8, number_per_sample=1, overhead_s=0.0)
        metrics = {"input_wait_s": 0.3 * s * 8, "loop_s": s * 8} if part == "both" else {}
        spec = CaseSpec(
            workload="pipeline", framework="torch", device=device, params={**SMALL, "part": part, "variant": variant}
        )
        return CaseResult(spec=spec, status="ok", timing=t, metrics=metrics, wall_s=0.0)

    results = [
        ok(d, part, v, 1e-3) for d in ("CPU:0", "GPU:0") for part in ("pipeline", "both") for v in ("serial", "pinned")
    ]
    results = [r for r in results if not (r.spec.device == "CPU:0" and r.spec.params["variant"] == "pinned")]
    sessions = [fake_session(DeviceInfo(name="CPU:0", kind="cpu")), fake_session(DeviceInfo(name="GPU:0", kind="gpu"))]
    rec = make_record(results, experiment="pipeline")
    rec = rec.model_copy(update={"options": {"variants": ["serial", "pinned"]}, "sessions": sessions})
    cpu, gpu = ap.analyze_pipeline(rec)
    assert next(r for r in cpu.rows if r.variant == "pinned").not_measured.startswith(
        "not measured on the CPU (GPU only"
    )
    assert [r.variant for r in gpu.rows] == ["serial", "pinned"] and all(r.not_measured is None for r in gpu.rows)
    lines = " ".join(device_verdict(gpu))
    assert "DataLoader work" in lines and "tf.data" not in lines


@pytest.mark.parametrize(
    "args, message",
    [
        (["--framework", "torch", "--model", "m.py:f"], "--model: is TensorFlow's"),
        (["--framework", "keras-jax", "--trace", "t"], "--trace: is TensorFlow's"),
        (["--framework", "torch", "--variants", "prefetch,tfrecord"], "--variants"),
        (["--framework", "torch", "--heavy-stage", "parse"], "--heavy-stage"),
    ],
)
def test_bad_input_for_another_framework_is_one_line_exit_2(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["pipeline", *args, "--json", str(tmp_path / "p.json")], capsys)
    assert code == 2 and message in err, err
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------ torch, measured in a child


@pytest.fixture(scope="module")
def torch_answers():
    """One torch child runs every constructed case: (group -> analysis report)."""
    pytest.importorskip("torch")
    from whichdevice.measure import experiment

    heavy_aug = {"heavy_stage": "augment", "heavy_factor": 30}
    stages = wl.ladder("torch").stages
    cases = [
        # a heavy per-example transform, on the training process, in front of a tiny model: input-bound
        _spec("input", part="pipeline", variant="serial", net="tiny", **heavy_aug),
        _spec("input", part="both", variant="serial", net="tiny", **heavy_aug),
        # the same work on the whole batch, in front of the heavy model: not input-bound
        _spec("compute", part="both", variant="batched", net="heavy"),
        # small images (16x16): the per-example ops' dispatch dominates, which batching pays once a batch
        _spec("helps", part="pipeline", variant="serial", net="tiny", image_size=16),
        _spec("helps", part="pipeline", variant="batched", net="tiny", image_size=16),
        # the stages with a constructed slow augment: it is named
        *[_spec("aug", part="stage", variant="serial", stage=s, net="tiny", **heavy_aug) for s in stages],
    ]
    _, results, notes = experiment.run_devices(
        "torch",
        [DeviceInfo(name="CPU:0", kind="cpu")],
        lambda d: cases,
        policy=TimingPolicy(min_time_s=0.1),
        # one intra-op thread: on an oversubscribed machine torch's parallel regions over a whole batch
        # waited on descheduled threads (the batched rung 8 ms a batch with 1 thread, 295 ms with 2, load 18)
        cpu_threads=1,
        case_timeout_s=120,
    )
    failed = [r.error for r in results if r.status != "ok"]
    assert not failed, failed
    out = {}
    for g in ("input", "compute", "helps", "aug"):
        rec = make_record([r for r in results if r.spec.params["group"] == g], experiment="pipeline")
        (out[g],) = ap.analyze_pipeline(rec)
    return out


@pytest.mark.slow  # one torch child of 10 cases: ~40 s on the 2-core machine, minutes under load
@pytest.mark.frameworks
def test_torch_heavy_transform_in_front_of_a_tiny_model_is_highly_input_bound(torch_answers):
    rep = torch_answers["input"]
    assert rep.first is not None and rep.first.input_bound == ap.HIGHLY, rep.first


@pytest.mark.slow  # one torch child of 10 cases: ~40 s on the 2-core machine, minutes under load
@pytest.mark.frameworks
def test_torch_batched_input_in_front_of_the_heavy_model_is_not_input_bound(torch_answers):
    rep = torch_answers["compute"]
    assert rep.first is not None and rep.first.input_bound == ap.NOT, rep.first


@pytest.mark.slow  # one torch child of 10 cases: ~40 s on the 2-core machine, minutes under load
@pytest.mark.frameworks
def test_torch_transforms_on_the_batch_beat_per_example_transforms(torch_answers):
    (_, batched) = torch_answers["helps"].rows
    assert batched.variant == "batched" and batched.pipeline_speedup is not None
    assert batched.pipeline_speedup.ratio > 1.0, batched.pipeline_speedup
    assert batched.pipeline_speedup.winner in (None, "batched")


@pytest.mark.slow  # one torch child of 10 cases: ~40 s on the 2-core machine, minutes under load
@pytest.mark.frameworks
def test_torch_the_stage_made_slow_is_named(torch_answers):
    rep = torch_answers["aug"]
    assert rep.slowest is not None and rep.slowest.stage == "augment", rep.stages


# ------------------------------------------------------------------ the command, end to end


@pytest.mark.frameworks
@pytest.mark.parametrize(
    "framework, variants, module",
    [("torch", "serial,pinned,batched", "torch"), ("keras-jax", "serial,batched", "jax")],
)
def test_pipeline_writes_a_record_that_report_renders(tmp_path, capsys, framework, variants, module):
    pytest.importorskip(module)
    json_file = tmp_path / "p.json"
    args = ["pipeline", "--framework", framework, "--images", "64", "--image-size", "32", "--net", "tiny"]
    args += ["--variants", variants, "--no-stages", "--min-time", "0.05", "--json", str(json_file)]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    rec = json.loads(json_file.read_text())
    assert all(r["status"] == "ok" for r in rec["results"]), [r.get("error") for r in rec["results"]]
    measured = {r["spec"]["params"]["variant"] for r in rec["results"]}
    assert measured == {"serial", "batched"}  # pinned: a GPU-only variant, not planned on the CPU
    if framework == "torch":
        assert "not measured here (no GPU" in out and "failed" not in out
    for extra in ([], ["--markdown"], ["--out", str(tmp_path / "html")]):
        code, text, err = run_cli(["report", str(json_file), *extra], capsys)
        assert code == 0, err
        assert "input wait" in text or "html" in str(extra) or "Report" in text
    assert (tmp_path / "html").exists() and list((tmp_path / "html").rglob("*.html"))
