"""`whichdevice pitfalls --framework torch / keras-jax`: the analysis on the recorded
H200 run (tests/data/h200/run.json: its torch and keras-jax cases on CPU:0 and GPU:0), one
hand-made case per finding kind of the two frameworks, the page's words, and both commands
end to end on this CPU (slow: 40-75 s each on 2 loaded cores)."""

import json
from pathlib import Path

import pytest
from conftest import DATA, make_record, run_cli

from whichdevice import frameworks
from whichdevice.analysis.pitfalls import analyze_pitfalls, not_measured
from whichdevice.core.records import CaseResult, CaseSpec, Timing, load_run
from whichdevice.present.pages import pitfalls as page


def _framework_part(record, fw):
    """The record's cases of one framework, as a pitfalls record of that framework."""
    return record.model_copy(
        update={"experiment": "pitfalls", "results": [r for r in record.results if r.spec.framework == fw]}
    )


@pytest.fixture(scope="module")
def h200():
    return load_run(DATA / "h200" / "run.json")


def test_h200_torch_gpu_rows_are_read_with_torch_words(h200):
    rec = _framework_part(h200, "torch")
    rows = {(r.pitfall, r.device): r for r in analyze_pitfalls(rec)}
    # the run has the steady batch 10 (.item() and not), 512, and seed 001 ex2's loop on both devices
    assert {p for p, d in rows if d == "GPU:0"} == {"first_step", "sync_each", "small_batch"}
    each = {
        r.spec.params.get("sync"): r
        for r in rec.results
        if r.spec.device == "GPU:0" and r.spec.params.get("batch") == 10 and r.spec.params.get("kind") == "steady"
    }
    item = rows[("sync_each", "GPU:0")]
    assert item.ratio == pytest.approx(each["each"].timing.median_s / each["none"].timing.median_s)
    # run's cases ran in two rounds (fresh processes): the interval is between rounds, and two are too few
    assert item.lo is not None and item.lo <= item.ratio <= item.hi and (item.n, item.n_unit) == (2, "rounds")
    assert page.interval(item).endswith("n=2 rounds")
    assert page.verdict(item) == "not enough rounds (n=2, fewer than 3): no claim either way"
    assert page.methods(item)[0] == ".item() after every step"  # torch's words, not TensorFlow's .numpy()
    small = rows[("small_batch", "GPU:0")]
    # the H200's ~1.9 ms step floor: a sample costs far more at batch 10 (two rounds: said, not claimed)
    assert small.ratio > 20 and small.lo > 20
    first = rows[("first_step", "GPU:0")]
    loop = next(
        r
        for r in rec.results
        if r.spec.device == "GPU:0" and r.spec.params.get("kind") == "loop" and r.spec.params.get("example") == "ex2"
    )
    assert first.wrong_s == loop.timing.first_call_s and first.n == len(loop.timing.samples_s)


def test_h200_no_sync_is_said_not_measured_on_the_cpu_only(h200):
    rec = _framework_part(h200, "torch")
    assert not_measured(rec) == [("no_sync", "CPU:0")]  # GPU:0 is never "not measured (no GPU)"
    lines = page.not_measured_lines(not_measured(rec))
    assert len(lines) == 1 and "not measured here (no GPU)" in lines[0] and "failed" not in lines[0]


def test_h200_keras_jax_compile_in_timing_and_nothing_gpu_only(h200):
    rec = _framework_part(h200, "keras-jax")
    rows = {(r.pitfall, r.device): r for r in analyze_pitfalls(rec)}
    assert ("compile_in_timing", "GPU:0") in rows and ("compile_in_timing", "CPU:0") in rows
    # its steady batch 512 and sync=each cases failed on the GPU in that run: no row rests on them
    assert ("small_batch", "GPU:0") not in rows and ("sync_each", "GPU:0") not in rows
    c = rows[("compile_in_timing", "GPU:0")]
    assert c.ratio > 1 and page.methods(c)[0].startswith("100-step loop timed with jit's")
    assert not_measured(rec) == []  # JAX dispatches asynchronously on a CPU too: nothing GPU-only


def _r(fw, params, samples, metrics=None, first=None, device="CPU:0"):
    t = Timing(
        first_call_s=first or samples[0],
        warmup_s=[first or samples[0]],
        samples_s=samples,
        number_per_sample=1,
        overhead_s=0.0,
    )
    return CaseResult(
        spec=CaseSpec(workload="train", framework=fw, device=device, params={"model": "seed001", **params}),
        status="ok",
        timing=t,
        metrics=metrics or {},
        wall_s=0.0,
    )


SPREAD = [1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 0.97, 1.0, 1.0]


def _scaled(k):
    return [k * s for s in SPREAD]


def test_torch_finding_kinds_one_case_each():
    fw = "torch"
    rec = make_record(
        [
            _r(fw, {"kind": "loop", "example": "ex2", "batch": 10}, _scaled(1e-3), first=0.5),
            _r(
                fw,
                {"kind": "pitfall", "mistake": "compile", "batch": 10, "backend": "aot_eager"},
                _scaled(1e-3),
                first=3.0,
            ),
            _r(fw, {"kind": "pitfall", "mistake": "num_workers", "batch": 32, "workers": 0}, _scaled(4e-3)),
            _r(fw, {"kind": "pitfall", "mistake": "num_workers", "batch": 32, "workers": 2}, _scaled(1e-3)),
        ],
        experiment="pitfalls",
    )
    rows = {r.pitfall: r for r in analyze_pitfalls(rec)}
    assert list(rows) == ["first_step", "compile_in_timing", "num_workers"]  # torch's MISTAKES order
    assert rows["first_step"].ratio == pytest.approx(500, rel=0.05) and rows["first_step"].significant
    # a 10-step loop whose first step took 3 s: (3 + 9 steady) / 10 per step against the steady median
    assert rows["compile_in_timing"].wrong_s == pytest.approx((3.0 + sum(_scaled(1e-3))) / 11)
    assert "backend=aot_eager" in page.methods(rows["compile_in_timing"])[0]
    nw = rows["num_workers"]
    assert nw.ratio == pytest.approx(4, rel=0.05) and nw.significant and page.verdict(nw) == "reads 4× the real cost"
    assert page.methods(nw) == ("DataLoader num_workers=0", "num_workers=2")


def test_workers_slower_is_said_so_not_too_fast():
    fw = "torch"
    rec = make_record(
        [
            _r(fw, {"kind": "pitfall", "mistake": "num_workers", "batch": 32, "workers": 0}, _scaled(1e-3)),
            _r(fw, {"kind": "pitfall", "mistake": "num_workers", "batch": 32, "workers": 2}, _scaled(3e-3)),
        ],
        experiment="pitfalls",
    )
    (row,) = analyze_pitfalls(rec)
    assert page.verdict(row).startswith("workers cost more here: num_workers=0 is 3× faster")


def test_keras_jax_finding_kinds_one_case_each():
    fw = "keras-jax"
    rec = make_record(
        [
            _r(fw, {"kind": "loop", "example": "ex2", "batch": 10}, _scaled(1e-4), first=0.2),
            _r(fw, {"kind": "steady", "batch": 10, "sync": "none"}, _scaled(1e-4), {"samples_per_step": 10}),
            _r(fw, {"kind": "steady", "batch": 10, "sync": "each"}, _scaled(2e-4), {"samples_per_step": 10}),
            _r(fw, {"kind": "pitfall", "mistake": "device_put", "batch": 10}, _scaled(3e-4), {"samples_per_step": 10}),
            _r(
                fw,
                {"kind": "nosync", "batch": 10},
                _scaled(2e-5),
                {"synced_median_s": 1e-4, "synced_q1_s": 0.99e-4, "synced_q3_s": 1.01e-4, "steps": 20},
            ),
        ],
        experiment="pitfalls",
    )
    rows = {r.pitfall: r for r in analyze_pitfalls(rec)}
    assert list(rows) == ["compile_in_timing", "no_sync", "sync_each", "device_put"]
    assert rows["device_put"].ratio == pytest.approx(3, rel=0.05) and rows["device_put"].significant
    assert page.methods(rows["device_put"])[0].startswith("jax.device_put(x)")
    ns = rows["no_sync"]  # measured on the CPU: JAX's dispatch is asynchronous there too
    assert ns.ratio == pytest.approx(0.2, rel=0.05) and page.verdict(ns) == "reads 5× too fast"
    assert "asynchronously on the CPU" in page.note(ns)
    assert page.methods(rows["sync_each"])[0] == "float(loss) after every step"


def test_too_few_samples_or_a_wide_interval_is_no_claim():
    fw = "keras-jax"
    few = make_record(
        [
            _r(fw, {"kind": "steady", "batch": 10, "sync": "none"}, [1e-4, 1.1e-4, 0.9e-4], {"samples_per_step": 10}),
            _r(
                fw,
                {"kind": "pitfall", "mistake": "device_put", "batch": 10},
                [1e-4, 5e-4, 0.2e-4],
                {"samples_per_step": 10},
            ),
        ],
        experiment="pitfalls",
    )
    (row,) = analyze_pitfalls(few)
    assert "no distortion" not in page.verdict(row) and "not enough samples" in page.verdict(row)


@pytest.mark.parametrize(
    ("n", "n_unit", "lo", "hi", "enough", "why"),
    [
        (2, "rounds", 0.9, 1.1, True, ("few", 3)),  # fewer rounds than a claim needs
        (4, "samples", 0.9, 1.1, True, ("few", 5)),
        (11, "samples", 0.4, 1.2, True, ("wide", 0)),  # cannot rule out a 2x change either way
        (11, "samples", 0.9, 2.5, True, ("wide", 0)),
        (11, "samples", 0.9, 1.1, False, ("not_enough", 0)),
        (11, "samples", 0.9, 1.1, True, None),  # a claim: within noise, measured
    ],
)
def test_the_analysis_says_why_a_row_makes_no_claim(n, n_unit, lo, hi, enough, why):
    """Whether a row can make a claim is the analysis' (the page only words it)."""
    from whichdevice.analysis.pitfalls import PitfallRow

    row = PitfallRow(
        "device_put", "CPU:0", 1.0, 1.0, "s per step", False, lo=lo, hi=hi, n=n, n_unit=n_unit, enough=enough
    )
    assert row.no_claim == why


def test_tensorflow_rows_keep_their_words():
    rec = make_record(
        [
            _r("tensorflow", {"kind": "steady", "batch": 10, "sync": "none"}, _scaled(1e-3), {"samples_per_step": 10}),
            _r("tensorflow", {"kind": "steady", "batch": 10, "sync": "each"}, _scaled(2e-3), {"samples_per_step": 10}),
        ],
        experiment="pitfalls",
    )
    (row,) = analyze_pitfalls(rec)
    assert page.methods(row)[0] == ".numpy() after every step"
    assert page.pitfalls_grid([row]).headers[5] == "what it does"  # TensorFlow's table: no interval column
    assert not_measured(rec) == []


def test_frameworks_offered_are_those_with_the_part():

    assert frameworks.offering("pitfalls") == frameworks.having("pitfalls")
    assert {"tensorflow", "torch", "keras-jax"} <= set(frameworks.offering("pitfalls"))
    for fw in frameworks.offering("pitfalls"):  # each part importable in the parent, its cases named in its MISTAKES
        part = frameworks.part(fw, "pitfalls")
        main, one = part.cases(fw, "CPU:0", quick=True, is_cpu=True)
        assert main and set(part.GPU_ONLY) <= set(part.MISTAKES)


def test_bad_framework_is_one_line_exit_2(tmp_path, capsys):
    code, _, err = run_cli(["pitfalls", "--framework", "numpy", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--framework" in err and "torch" in err
    assert not (tmp_path / "o").exists()


def _e2e(tmp_path, capsys, fw):
    out = tmp_path / "o"
    code, _, err = run_cli(
        ["pitfalls", "--quick", "--framework", fw, "--out", str(out), "--json", str(out / "p.json")], capsys
    )
    assert code == 0, err
    rec = load_run(out / "p.json")
    assert all(r.status == "ok" for r in rec.results), [r.error for r in rec.results if r.status != "ok"]
    code, text, err = run_cli(["report", str(out / "p.json"), "--markdown"], capsys)
    assert code == 0, err
    return rec, {r.pitfall: r for r in analyze_pitfalls(rec)}, text


@pytest.mark.slow
def test_torch_pitfalls_quick_on_the_cpu(tmp_path, capsys):
    rec, rows, text = _e2e(tmp_path, capsys, "torch")
    assert set(rows) == {"first_step", "sync_each", "compile_in_timing", "num_workers", "one_thread", "small_batch"}
    c = rows["compile_in_timing"]
    case = next(r for r in rec.results if r.spec.params.get("mistake") == "compile")
    steps = [case.timing.first_call_s, *case.timing.samples_s]
    assert c.wrong_s == pytest.approx(sum(steps) / len(steps)) and c.n == len(steps) - 1
    assert case.timing.first_call_s > c.right_s  # the compiling step costs more than a steady one
    assert "no_sync" not in rows and "not measured here (no GPU)" in text
    assert json.loads(Path(tmp_path / "o" / "p.json").read_text())["experiment"] == "pitfalls"


@pytest.mark.slow
def test_keras_jax_pitfalls_quick_on_the_cpu(tmp_path, capsys):
    rec, rows, text = _e2e(tmp_path, capsys, "keras-jax")
    assert set(rows) == {"compile_in_timing", "no_sync", "sync_each", "device_put", "small_batch"}
    assert rows["compile_in_timing"].ratio > 2 and rows["compile_in_timing"].significant  # jit compiles in step 1
    assert "not measured here" not in text


def test_keras_torch_first_epoch_and_its_own_words():
    fw = "keras-torch"
    rec = make_record(
        [
            _r(fw, {"kind": "steady", "batch": 10, "sync": "none"}, _scaled(1e-3), {"samples_per_step": 10}),
            _r(fw, {"kind": "steady", "batch": 10, "sync": "each"}, _scaled(2e-3), {"samples_per_step": 10}),
            _r(
                fw,
                {"kind": "fit", "example": "ex2", "epochs": 2},
                _scaled(1e-3),
                {"epoch_1_s": 0.9, "epoch_2_s": 0.3},
                first=3e-3,  # the first epoch's (one-batch) warm-up: 3 ms a step
            ),
        ],
        experiment="pitfalls",
    )
    rows = {r.pitfall: r for r in analyze_pitfalls(rec)}
    assert list(rows) == ["first_epoch", "sync_each"]  # keras-torch's MISTAKES order
    # per step, from every batch: the first epoch's against the later epochs' median, with an interval
    fe = rows["first_epoch"]
    assert fe.ratio == pytest.approx(3.0) and fe.unit == "s per step" and fe.n == 10 and fe.lo > 2
    assert page.methods(fe)[0] == "model.fit's first epoch, per step"
    assert "convert_to_numpy" in page.methods(rows["sync_each"])[0]
    assert not_measured(rec) == [("no_sync", "CPU:0")]


@pytest.mark.slow
def test_keras_torch_pitfalls_quick_on_the_cpu(tmp_path, capsys):
    rec, rows, text = _e2e(tmp_path, capsys, "keras-torch")
    assert {"first_step", "first_epoch", "sync_each", "one_thread", "small_batch"} == set(rows)
    assert "not measured here (no GPU)" in text
