"""Pipeline analysis on hand-made records: XProf's thresholds, wait share, speedups, stages,
the GPU verdict from telemetry, and the rendered report (no TensorFlow needed)."""

import pytest

from conftest import make_record
from whichdevice.analysis import pipeline as ap
from whichdevice.present import pipeline as pp
from whichdevice.core.records import CaseResult, CaseSpec, Timing
from whichdevice.core.telemetry import Telemetry


def _timing(samples, telemetry=None):
    return Timing(
        first_call_s=samples[0] * 3,
        warmup_s=[samples[0] * 3],
        samples_s=list(samples),
        number_per_sample=1,
        overhead_s=1e-5,
        telemetry=telemetry,
    )


def _result(device, part, variant, samples, metrics=None, stage=None, telemetry=None):
    params = {"part": part, "variant": variant, "batch": 32, "images": 256, "image_size": 64}
    if stage:
        params["stage"] = stage
    return CaseResult(
        spec=CaseSpec(workload="pipeline", framework="tensorflow", device=device, params=params),
        status="ok",
        timing=_timing(samples, telemetry),
        metrics=metrics or {},
        wall_s=1.0,
    )


def _loop(device, variant, step_s, wait_s, n=8, telemetry=None):
    samples = [step_s * (1 + 0.01 * (i % 3)) for i in range(n)]
    waits = [wait_s * (1 + 0.01 * (i % 3)) for i in range(n)]
    return _result(
        device,
        "both",
        variant,
        samples,
        telemetry=telemetry,
        metrics={
            "examples_per_step": 32.0,
            "input_wait_s": sum(waits),
            "loop_s": sum(samples),
            "input_wait_median_s": wait_s,
        },
    )


@pytest.mark.parametrize(
    "percent, expected",
    [
        (0.0, "NOT"),
        (4.99, "NOT"),
        (5.0, "MODERATELY"),
        (19.99, "MODERATELY"),
        (20.0, "HIGHLY"),
        (100.0, "HIGHLY"),
    ],
)
def test_xprof_thresholds(percent, expected):
    assert ap.classify_input_bound(percent) == expected


def test_thresholds_are_xprofs():
    assert ap.HIGHLY_INPUT_BOUND_PERCENT == 20.0 and ap.MODERATELY_INPUT_BOUND_PERCENT == 5.0


def test_wait_percent_is_bounded_and_handles_nothing():
    assert ap.input_wait_percent(1.0, 4.0) == 25.0
    assert ap.input_wait_percent(5.0, 4.0) == 100.0
    assert ap.input_wait_percent(-1.0, 4.0) == 0.0
    assert ap.input_wait_percent(1.0, 0.0) == 0.0
    assert str(pp.describe_input_bound(_row(41.25))).startswith("HIGHLY input-bound: 41.2 %")
    assert str(pp.describe_input_bound(_row(1.0))).startswith("not input-bound")
    assert ap.borderline([4.0, 6.0]) and not ap.borderline([6.0, 7.0]) and not ap.borderline([30.0])
    assert "(borderline: 4.0–6.0 % over 2 rounds)" in str(pp.describe_input_bound(_row(5.0, [4.0, 6.0])))


def _row(wait: float, rounds: list[float] | None = None) -> ap.VariantRow:
    """A variant whose loop waited ``wait`` % for its batch (``rounds``: in each round)."""
    bound = ap.classify_input_bound(wait)
    return ap.VariantRow("v", 1, None, None, wait, bound, None, None, None, wait_percent_rounds=rounds or [])


def _ladder_record():
    d = "CPU:0"
    results = [
        _result(d, "model", "serial", [0.010, 0.0101, 0.0102]),
        # five samples per side: no claim rests on fewer (analysis/significance.py)
        _result(d, "pipeline", "serial", [0.040, 0.041, 0.042, 0.040, 0.0405]),
        _loop(d, "serial", 0.050, 0.040),  # 80 % waiting
        _result(d, "pipeline", "prefetch", [0.010, 0.0101, 0.0102, 0.0100, 0.01005]),
        _loop(d, "prefetch", 0.0105, 0.0002),  # 1.9 %
        _result(d, "pipeline", "pyfunc", [0.080, 0.081, 0.082, 0.080, 0.0805]),
        _loop(d, "pyfunc", 0.085, 0.075),
    ]
    for stage, own in (("read", 0.001), ("parse", 0.002), ("augment", 0.050), ("batch", 0.0)):
        floor = 0.010
        results.append(
            _result(
                d,
                "stage",
                "tfrecord",
                [floor + own, floor + own * 1.01, floor + own * 0.99],
                stage=stage,
                metrics={
                    "examples_per_call": 100.0,
                    "floor_s": floor,
                    "floor_q1_s": floor * 0.99,
                    "floor_q3_s": floor * 1.01,
                },
            )
        )
    return make_record(results, experiment="pipeline")


def test_ladder_rows_speedups_and_classes():
    (rep,) = ap.analyze_pipeline(_ladder_record())
    rows = {r.variant: r for r in rep.rows}
    assert [r.variant for r in rep.rows] == ["serial", "prefetch", "pyfunc"]
    assert rows["serial"].input_bound == "HIGHLY" and rows["serial"].wait_percent == pytest.approx(80.0)
    assert rows["prefetch"].input_bound == "NOT"
    assert rows["serial"].pipeline_speedup is None
    assert rows["prefetch"].pipeline_speedup.ratio == pytest.approx(0.0405 / 0.01005, rel=0.02)
    assert rows["prefetch"].pipeline_speedup.winner == "prefetch"
    assert rows["pyfunc"].loop_speedup.winner == "serial"  # slower than the baseline
    assert rows["serial"].examples_per_s == pytest.approx(32 / 0.0405, rel=0.01)
    assert rows["serial"].wait_s + rows["serial"].compute_s == pytest.approx(rows["serial"].loop.median_s)
    assert rep.first.variant == "serial" and rep.fastest.variant == "prefetch"  # typed, then written
    assert rep.pyfunc_vs_tfops is not None and rep.pyfunc_vs_tfops.winner == "tf ops"
    text = " ".join(pp.device_verdict(rep))
    assert "serial: HIGHLY input-bound" in text
    assert "fastest loop: prefetch" in text
    assert "tf.py_function" in text and "slower" in text


def test_slowest_stage_is_the_costly_one_and_floor_is_subtracted():
    (rep,) = ap.analyze_pipeline(_ladder_record())
    assert rep.slowest.stage == "augment"
    costs = {c.stage: c for c in rep.stages}
    assert costs["augment"].seconds_per_example == pytest.approx(0.050 / 100)
    assert costs["batch"].below_floor and costs["batch"].seconds_per_example == 0.0
    assert not costs["augment"].below_floor
    assert ap.slowest_stage([]) is None


def _gpu_telemetry(util):
    n = 5
    return Telemetry(
        period_s=0.05,
        t_s=[0.05 * (i + 1) for i in range(n)],
        cpu_percent_per_core=[[100.0, 100.0]] * n,
        process_cpu_s=0.4,
        wall_s=0.25,
        gpu_index=0,
        gpu_util_percent=[util] * n,
        gpu_mem_used_bytes=[2**30] * n,
        gpu_sm_clock_mhz=[1500] * n,
        gpu_unavailable=None,
        sampler_cost_s=1e-4,
    )


def test_gpu_verdict_says_where_input_runs_and_that_the_gpu_idles():
    d = "GPU:0"
    rec = make_record(
        [_result(d, "pipeline", "serial", [0.04] * 4), _loop(d, "serial", 0.05, 0.04, telemetry=_gpu_telemetry(12.0))],
        experiment="pipeline",
    )
    (rep,) = ap.analyze_pipeline(rec)
    assert rep.work.gpu_state == "waits_for_input"
    line = next(v for v in pp.device_verdict(rep) if "host CPU" in v)
    assert "GPU busy 12 %" in line and "idles waiting for input" in line


def test_gpu_kept_busy_is_said():
    d = "GPU:0"
    rec = make_record([_loop(d, "cache", 0.05, 0.0001, telemetry=_gpu_telemetry(93.0))], experiment="pipeline")
    (rep,) = ap.analyze_pipeline(rec)
    assert rep.work.gpu_state == "busy"
    assert any("kept busy" in v for v in pp.device_verdict(rep))


def test_failed_case_is_shown_not_fatal():
    d = "CPU:0"
    bad = CaseResult(
        spec=CaseSpec(
            workload="pipeline",
            framework="tensorflow",
            device=d,
            params={"part": "both", "variant": "pyfunc", "batch": 32},
        ),
        status="failed",
        error="RuntimeError: boom",
        failure="error",
        wall_s=0.1,
    )
    rec = make_record(
        [_result(d, "pipeline", "serial", [0.04] * 4), _loop(d, "serial", 0.05, 0.01), bad], experiment="pipeline"
    )
    (rep,) = ap.analyze_pipeline(rec)
    py = next(r for r in rep.rows if r.variant == "pyfunc")
    assert py.loop is None and py.failed and "boom" in py.failed[0]


def test_per_step_noise_is_one_note_not_a_warning_per_case():
    rec = _ladder_record()
    kept = ap.block_timed(rec)
    assert {r.spec.params["part"] for r in kept.results} == {"model", "stage"}
    assert "jitter" in pp.step_jitter_note(ap.step_jitter(rec))


def test_report_renders_terminal_png_and_html(tmp_path, capsys):
    from whichdevice.jobs import page
    from whichdevice.core.records import save_run

    rec = _ladder_record()
    png = tmp_path / "p.png"
    page(rec, png, loglog=False)
    out = capsys.readouterr().out
    assert "HIGHLY" in out.upper() and "slowest" in out and "augment" in out
    assert png.stat().st_size > 1000
    html = png.with_suffix(".html").read_text()
    assert "waiting for input" in html or "input wait" in html
    # `report` re-renders a saved record without measuring
    from whichdevice.cli.app import main

    save_run(rec, tmp_path / "rec.json")
    with pytest.raises(SystemExit) as e:
        main(["report", str(tmp_path / "rec.json"), "--html"])
        raise SystemExit(0)
    assert e.value.code == 0
    assert (tmp_path / "rec.png").exists() and (tmp_path / "rec.html").exists()
