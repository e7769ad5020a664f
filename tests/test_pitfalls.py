"""`whichdevice pitfalls`: every mistake measured for real on the CPU at small size, the
analysis' ratio on hand-made records, and bad input."""

import pytest
from conftest import make_record, run_cli

from whichdevice.analysis.pitfalls import PITFALLS, PitfallRow, analyze_pitfalls
from whichdevice.present.pages.pitfalls import verdict
from whichdevice.core.records import CaseResult, CaseSpec, Timing, load_run


def _r(params, samples, metrics=None):
    t = Timing(first_call_s=samples[0], warmup_s=[samples[0]], samples_s=samples, number_per_sample=1, overhead_s=0.0)
    return CaseResult(
        spec=CaseSpec(workload="train", framework="tensorflow", device="CPU:0", params=params),
        status="ok",
        timing=t,
        metrics=metrics or {},
        wall_s=0.0,
    )


def test_ratios_on_a_hand_made_record():
    base = {"model": "seed001"}
    rec = make_record(
        [
            _r(
                {**base, "kind": "steady", "batch": 10, "sync": "none"},
                [1e-3, 1.1e-3, 0.9e-3, 1e-3, 1e-3],  # 5 samples: the least a claim rests on
                {"samples_per_step": 10},
            ),
            _r(
                {**base, "kind": "steady", "batch": 10, "sync": "each"},
                [2e-3, 2.1e-3, 1.9e-3, 2e-3, 2e-3],
                {"samples_per_step": 10},
            ),
            _r({**base, "kind": "steady", "batch": 512, "sync": "none"}, [5e-3] * 5, {"samples_per_step": 512}),
            _r(
                {**base, "kind": "fit", "example": "ex2", "epochs": 3},
                [1e-3] * 3,
                {"epoch_1_s": 0.6, "epoch_2_s": 0.2, "epoch_3_s": 0.21},
            ),
        ],
        experiment="pitfalls",
    )
    rows = {r.pitfall: r for r in analyze_pitfalls(rec)}
    assert set(rows) == {"first_epoch", "sync_each", "small_batch"}
    assert rows["first_epoch"].ratio == pytest.approx(0.6 / 0.205)
    assert rows["sync_each"].ratio == pytest.approx(2.0) and rows["sync_each"].significant
    assert rows["small_batch"].ratio == pytest.approx((1e-3 / 10) / (5e-3 / 512))
    assert "reads 2× the real cost" in verdict(rows["sync_each"])


def test_within_noise_is_not_called_a_distortion():
    r = PitfallRow("no_sync", "CPU:0", 1.0, 1.01, "s per step", significant=False)
    assert "within noise" in verdict(r)


def test_bad_input(tmp_path, capsys):
    code, _, err = run_cli(["pitfalls", "--min-time", "0", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--min-time" in err and not (tmp_path / "o").exists()


@pytest.mark.tf
@pytest.mark.slow  # in CI: test_resume_placement_pitfalls' pitfalls run, killed then resumed, checks all of this
def test_every_pitfall_measured_on_the_cpu(tmp_path, capsys):
    j = tmp_path / "p.json"
    code, out, err = run_cli(
        ["pitfalls", "--quick", "--min-time", "0.02", "--out", str(tmp_path), "--json", str(j)], capsys
    )
    assert code == 0, err
    rec = load_run(j)
    assert all(r.status == "ok" for r in rec.results), [r.error for r in rec.results]
    rows = analyze_pitfalls(rec)
    assert {r.pitfall for r in rows} == set(PITFALLS)
    assert all(r.wrong_s > 0 and r.right_s > 0 for r in rows)
    first = next(r for r in rows if r.pitfall == "first_epoch")
    assert first.ratio > 1  # the first epoch carries tracing: it is slower than a steady one
    one = next(r for r in rec.sessions if r.cpu_threads_source == "--cpu-threads")
    assert one.cpu_threads_intra == 1  # the one-thread pitfall really ran on one thread
    assert "cannot distort" in out.replace("\n", " ")
    code, out2, _ = run_cli(["report", str(j)], capsys)
    assert code == 0 and "first epoch timed" in out2
