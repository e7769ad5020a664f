"""The one rule for "significant" (analysis/significance.py)."""

from __future__ import annotations

import math

import tempfile

import pytest

from conftest import fake_session

from whichdevice.analysis import significance as sig
from whichdevice.core import stats, units
from whichdevice.present.claims import modes_text, ratio_text


def test_t_quantiles_from_the_table_and_beyond():
    assert sig.t975(1) == pytest.approx(12.706)
    assert sig.t975(4.7) == pytest.approx(2.776)  # fractional df rounds down: the wider interval
    assert sig.t975(1000) == pytest.approx(1.96)
    assert sig.t975(0.5) == math.inf


def test_judge_needs_the_whole_ci_beyond_the_noise_threshold():
    assert sig.judge(2.0, 1.8, 2.2, 10).status == "faster"
    assert sig.judge(0.5, 0.45, 0.55, 10).status == "slower"
    assert sig.judge(1.5, 0.9, 1.9, 10).status == "no_change"  # CI contains 1
    # an interval that cannot rule out a 2x change either way is not enough, never "no clear change"
    # (the keras-io weather LSTM's prefetch pair, 0.062-6.7x from 5 samples)
    wide = sig.judge(1.5, 0.9, 2.5, 10)
    assert wide.status == "not_enough" and wide.note is not None and wide.note.kind == "too_wide"
    assert sig.judge(0.65, 0.062, 6.7, 5).status == "not_enough"
    # CI excludes 1 but the change is within the 5 % noise threshold
    assert sig.judge(1.03, 1.01, 1.05, 10).status == "no_change"
    assert sig.judge(1.03, 1.015, 1.05, 10, threshold=0.01).status == "faster"
    # criterion.rs's compare_to_threshold: a point estimate beyond the band is not enough, the
    # interval must not reach into it (1.1x with CI 1.0-1.2x flipped between two runs)
    assert sig.judge(1.1, 1.02, 1.2, 10).status == "no_change"
    assert sig.judge(1 / 1.1, 1 / 1.2, 1 / 1.02, 10).status == "no_change"
    assert sig.judge(1.1, 1.06, 1.2, 10).status == "faster"
    assert sig.judge(1 / 1.1, 1 / 1.2, 1 / 1.06, 10).status == "slower"
    # fewer than 5 samples: not enough, whatever the ratio
    c = sig.judge(3.0, 2.9, 3.1, 4)
    assert c.status == "not_enough" and not c.significant and not c.enough


def test_from_samples_one_sample_is_never_a_claim():
    c = sig.from_samples([0.0644], [0.2, 0.21, 0.19, 0.2, 0.2])
    assert c.status == "not_enough"
    assert c.note == sig.ClaimNote("too_few_samples", 1, 5)
    assert "1 sample: at least 5 needed" in ratio_text(c)


def test_from_samples_clear_change_and_identical_distributions():
    a = [2.0, 2.1, 1.9, 2.05, 1.95, 2.0]
    b = [1.0, 1.05, 0.95, 1.0, 1.02, 0.98]
    c = sig.from_samples(a, b)
    assert c.status == "faster" and c.lo < 2.0 < c.hi and c.n == 6 and c.unit == "samples"
    same = sig.from_samples(a, list(reversed(a)))
    assert same.status == "no_change" and same.lo < 1 < same.hi
    assert sig.from_samples(b, a).status == "slower"


def test_rounds_use_between_process_variation():
    # Within each process A and B are tight and 1.5x apart, but the processes disagree:
    # round 1 says 1.5x, round 2 says 0.8x. Pooled samples alone would call it a change.
    a = [[1.5, 1.51, 1.49, 1.5, 1.5], [0.8, 0.81, 0.79, 0.8, 0.8]]
    b = [[1.0, 1.01, 0.99, 1.0, 1.0], [1.0, 1.01, 0.99, 1.0, 1.0]]
    c = sig.from_rounds(a, b)
    assert c.unit == "rounds" and c.n == 2
    assert not c.significant  # two rounds that disagree cannot tell a change from none
    # Consistent 2x in both rounds: still a change, with 2 rounds.
    a2 = [[2.0, 2.02, 1.98, 2.0, 2.01], [2.1, 2.12, 2.08, 2.1, 2.1]]
    c2 = sig.from_rounds(a2, b)
    assert c2.status == "faster" and c2.lo > 1.05


def test_round_interval_never_narrower_than_the_pooled_samples():
    a = [[2.0, 1.0, 3.0, 2.0, 2.0], [2.0, 1.0, 3.0, 2.0, 2.0]]
    b = [[1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0]]
    pooled = sig.from_samples([x for r in a for x in r], [x for r in b for x in r])
    c = sig.from_rounds(a, b)  # the rounds agree exactly: between-round sd 0
    assert c.lo <= pooled.lo and c.hi >= pooled.hi


def test_one_round_falls_back_to_samples():
    c = sig.from_rounds([[2.0] * 5], [[1.0] * 5])
    assert c.unit == "samples"


def test_median_ci_and_rel_halfwidth():
    assert stats.median_ci([1, 2, 3, 4, 5]) is None  # 5 samples cannot give 95 % by order statistics
    assert stats.median_ci([1, 2, 3, 4, 5, 6]) == (1, 6)
    xs = [100 + i for i in range(40)]
    lo, hi = stats.median_ci(xs)
    assert lo < 119.5 < hi and lo > 100 and hi < 139
    assert stats.median_rel_halfwidth([1.0] * 10) == 0.0
    assert stats.median_rel_halfwidth([1.0, 2.0]) == math.inf


def test_bimodal_process_medians():
    # matmul n=500 at 1.6 ms in some processes and 3.1 ms in others
    m = sig.bimodal([1.6e-3, 3.1e-3, 1.62e-3, 3.05e-3])
    assert m is not None and m.n_low == 2 and m.n_high == 2
    assert "1.6" in modes_text(m) and "3.0" in modes_text(m)
    assert sig.bimodal([1.0, 1.1, 1.05, 0.97]) is None  # one cluster
    assert sig.bimodal([1.0, 1.5], within=[0.3, 0.3]) is None  # gap not 3x the within spread
    assert sig.bimodal([1.0, 2.0], within=[0.02, 0.03]) is not None


def test_bimodal_rounds_say_so():
    a = [[1.6] * 5, [3.1] * 5, [1.6] * 5]
    b = [[1.0] * 5, [1.0] * 5, [1.0] * 5]
    c = sig.from_rounds(a, b)
    assert c.note is not None and c.note.kind == "bimodal" and c.note.modes is not None
    assert "bimodal between rounds (2 rounds at ≈1.6 s, 1 at ≈3.1 s)" in ratio_text(c)


def test_learned_threshold():
    assert sig.learned_threshold([]) == sig.NOISE_THRESHOLD
    assert sig.learned_threshold([0.01, -0.01]) == sig.NOISE_THRESHOLD  # quieter than the default
    t = sig.learned_threshold([0.2, -0.2, 0.2])
    assert t == pytest.approx(math.expm1(0.4))


def test_claim_text_carries_interval_and_count():
    from whichdevice.present.claims import ratio_text

    assert ratio_text(sig.judge(2.9, 2.1, 3.8, 5, unit="rounds")) == "2.9× faster (95 % CI 2.1–3.8×, 5 rounds)"
    assert ratio_text(sig.judge(0.5, 0.4, 0.625, 12)) == "2× slower (95 % CI 1.6–2.5×, 12 samples)"
    assert ratio_text(sig.judge(1.3, 0.8, 1.9, 5)) == "no clear change (1.3×, CI 0.8–1.9×, n=5)"
    wide = "not enough samples (1.8×, CI 0.8–3.1×, n=5; too wide to rule out a 2× change)"
    assert ratio_text(sig.judge(1.79, 0.8, 3.1, 5)) == wide
    one = ratio_text(sig.from_samples([0.0644], [0.2] * 5))
    assert one.startswith("not enough samples") and "n=1" in one


def _case(key_n, samples, **metrics):
    from whichdevice.core.records import CaseResult, CaseSpec, Timing

    spec = CaseSpec(workload="matmul", framework="tensorflow", device="CPU:0", params={"n": key_n})
    t = Timing(first_call_s=1.0, warmup_s=[1.0], samples_s=samples, number_per_sample=1, overhead_s=0.0)
    return CaseResult(spec=spec, status="ok", timing=t, wall_s=1.0, metrics=metrics)


def test_rounds_merge_into_one_result_with_raw_rounds():
    from whichdevice.core.records import failed
    from whichdevice.measure.session import merge_rounds

    first = _case(1, [1.0] * 5, input_wait_s=0.2)
    second = _case(1, [2.0] * 5, input_wait_s=0.4)
    m = merge_rounds(first, [second])
    assert m.timing.rounds_s == [[1.0] * 5, [2.0] * 5] and m.timing.samples_s == [1.0] * 5 + [2.0] * 5
    assert m.metrics == {"input_wait_s": 0.2, "round2:input_wait_s": 0.4} and m.wall_s == 2.0
    # a later round that did not run (skipped) ends the rounds: positions stay paired
    skipped = failed(first.spec, "skipped: budget", "skipped", 0.0)
    assert merge_rounds(first, [skipped, second]) == first
    assert merge_rounds(first, []) == first


def test_later_rounds_reverse_each_group_and_pick_the_verdict_cases():
    from whichdevice.core.records import CaseSpec
    from whichdevice.measure.session import decides_verdict, repeat_order

    def t(**p):
        return CaseSpec(workload="train", framework="tensorflow", device="CPU:0", params=p)

    mm = [CaseSpec(workload="matmul", framework="tensorflow", device="CPU:0", params={"n": n}) for n in (1, 10)]
    spe = [t(kind="fit", example="ex2", steps_per_execution=s) for s in (1, 5)]
    steady = [t(kind="steady", batch=b) for b in (8, 10)]
    order = repeat_order(spe + mm + steady)
    assert order == [mm[1], mm[0], steady[1], steady[0], spe[1], spe[0]]
    assert all(decides_verdict(s) for s in mm + spe + steady)
    assert not decides_verdict(t(kind="placement"))
    assert not decides_verdict(t(kind="fit", example="seed002"))
    # the prefetch and mixed-precision fixes are A/B claims too: measured in two rounds
    assert decides_verdict(t(kind="loop", example="ex3", data="tfdata_noprefetch"))
    assert decides_verdict(t(kind="precision", example="seed002", precision="mixed_float16"))


def test_process_spread_widens_one_round_claims():
    a, b = [1.3, 1.31, 1.29, 1.3, 1.3], [1.0, 1.01, 0.99, 1.0, 1.0]
    tight = sig.from_rounds([a], [b])
    assert tight.status == "faster"  # within one process the 1.3x looks sure
    # but on a machine where the same case moves 20 % between processes, it is not
    spread = sig.process_spread([[[1.0] * 5, [1.2] * 5], [[2.0] * 5, [2.5] * 5]])
    assert spread == pytest.approx(0.1289 + 0.75 * (0.1578 - 0.1289), rel=0.02)  # upper quartile
    wide = sig.from_rounds([a], [b], process_sd=spread)
    assert wide.status == "no_change" and wide.lo < 1 < wide.hi
    # a real 3x change survives it
    assert sig.from_rounds([[3 * x for x in a]], [b], process_sd=spread).status == "faster"
    assert sig.process_spread([[[1.0] * 5]]) is None


def _numpy_rounds_request(**extra):
    """numpy's matmul at n = 8 and 64 measured in two rounds (the session's real children)."""
    from whichdevice.measure import session
    from whichdevice.workloads import matmul

    return session.Request(
        "matmul",
        "numpy",
        lambda found, d: matmul.build_cases("numpy", d.name, [8, 64], ["steady"], "float32"),
        {},
        ["test"],
        min_time_s=0.01,
        rounds=2,
        **extra,
    )


def test_rounds_in_fresh_children_end_to_end():
    """measure.session with rounds=2 on numpy's matmul: round 2 in a second child (no budget:
    always a fresh one), every case with two rounds of raw samples, the ratio from them."""
    from whichdevice.analysis.compare import compare
    from whichdevice.measure import session

    rec = session.measure(_numpy_rounds_request())
    assert rec.options["rounds"] == 2
    small, large = rec.results
    assert len(small.timing.rounds_s) == 2 and all(len(r) >= 5 for r in small.timing.rounds_s)
    assert small.timing.samples_s == [x for r in small.timing.rounds_s for x in r]
    c = compare("n=64", large.timing, "n=8", small.timing)
    assert c.claim.unit == "rounds" and c.n == 2 and c.ratio > 1


def test_round_two_in_the_same_child_when_round_one_ends_late(monkeypatch):
    """A late round 1 (here: forced, FRESH_ROUND_SHARE = 0) without a round-2 child waiting
    (forced: as if its import had failed) gets its round 2 from the first child itself, merged
    the same way, and the record says so."""
    from whichdevice.measure import session

    monkeypatch.setattr(session, "FRESH_ROUND_SHARE", 0.0)
    monkeypatch.setattr(session, "_alive", lambda warms, dev: False)
    rec = session.measure(_numpy_rounds_request(budget_s=60.0))
    assert all(len(r.timing.rounds_s) == 2 for r in rec.results)
    assert any("same child process" in n for n in rec.notes)


def test_round_two_runs_in_the_child_started_with_round_one(monkeypatch):
    """Round 2's child is started beside round 1's and runs round 2 — even after a
    late round 1, since it costs no import — then exits by itself; nothing is left behind."""
    from whichdevice.measure import runner, session

    started = []

    def spy(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]

    real = runner.start_warm
    monkeypatch.setattr(runner, "start_warm", spy)
    monkeypatch.setattr(session, "FRESH_ROUND_SHARE", 0.0)
    rec = session.measure(_numpy_rounds_request(budget_s=60.0))
    assert all(len(r.timing.rounds_s) == 2 for r in rec.results)
    assert not any("same child process" in n for n in rec.notes)
    (warm,) = started
    assert warm.child.proc.returncode == 0  # it ran round 2 and ended (an unused one is killed)
    assert not warm.dir.exists()


def test_two_rounds_are_two_modes_only_when_each_is_tight():
    tight = [[1.6, 1.61, 1.59, 1.6, 1.6], [3.1, 3.12, 3.08, 3.1, 3.1]]
    assert sig.rounds_bimodal(tight) is not None
    noisy = [[1.0, 1.6, 2.2, 1.6, 1.3], [1.5, 3.1, 4.5, 3.1, 2.0]]  # each round as wide as the gap
    assert sig.rounds_bimodal(noisy) is None
    assert sig.rounds_bimodal([[1.0] * 5]) is None


def test_devices_are_measured_abba_across_rounds(monkeypatch, tmp_path):
    """Two devices: round 1 of each, then round 2 of each in the reverse order (CPU, GPU | GPU,
    CPU), so a device-vs-device ratio's two rounds straddle the same moments; each round merged
    into its own device's results. The children are faked (no GPU here): only the order and the
    merge are under test."""
    from whichdevice.core.records import CaseResult, CaseSpec, DeviceInfo, FrameworkInfo, Timing
    from whichdevice.measure import experiment, session

    calls: list[tuple[str, int]] = []

    def fake_run_devices(fw, devices, cases_for, **kw):
        (dev,) = devices
        rnd = 1 if "repeat_for" in kw else 2  # round 1 is the one that may ask for a second pass
        calls.append((dev.name, rnd))
        base = 1e-3 if dev.kind == "cpu" else 1e-4
        out = [
            CaseResult(
                spec=spec,
                status="ok",
                timing=Timing(
                    first_call_s=base, warmup_s=[base], samples_s=[base * rnd] * 5, number_per_sample=1, overhead_s=0.0
                ),
                wall_s=0.1,
            )
            for spec in cases_for(dev)
        ]
        return [fake_session(dev)], out, []

    devices = [DeviceInfo(name="CPU:0", kind="cpu"), DeviceInfo(name="GPU:0", kind="gpu")]
    found = experiment.Discovery(FrameworkInfo(name="tensorflow", version="0"), devices, [], 0.0)
    monkeypatch.setattr(experiment, "require_installed", lambda fw: None)
    monkeypatch.setattr(experiment, "run_devices", fake_run_devices)

    def spec(d):
        return CaseSpec(workload="matmul", framework="tensorflow", device=d.name, params={"n": 8, "mode": "steady"})

    req = session.Request("run", "tensorflow", lambda f, d: [spec(d)], {}, ["test"], rounds=2)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rec = session.measure(req, found=found)
    assert not list(tmp_path.iterdir())  # each device's round-2 child (unused here) closed, its files gone
    assert calls == [("CPU:0", 1), ("GPU:0", 1), ("GPU:0", 2), ("CPU:0", 2)]
    assert [r.spec.device for r in rec.results] == ["CPU:0", "GPU:0"]  # the record keeps the devices' order
    for r in rec.results:
        first, second = r.timing.rounds_s
        assert second[0] == 2 * first[0]  # round 2 merged into its own device's case


def test_confidence_is_written_as_measured_never_rounded_up():
    assert [units.percent(c) for c in (0.95, 0.975, 0.9995, 1 - 0.05 / 40, 0.99999)] == [
        "95 %",
        "97.5 %",
        "99.95 %",
        "99.8 %",
        "99.9 %",
    ]


def test_run_spread_is_the_unchanged_cases_spread_not_the_size_of_a_change():
    import random

    rng = random.Random(1)
    noise = [rng.gauss(0.0, 0.1) for _ in range(40)]
    assert sig.run_spread(noise[:9]) is None  # too few cases to tell
    assert 0.07 < sig.run_spread(noise) < 0.13
    # half the cases really 2x slower: the spread stays near the unchanged half's (a MAD around
    # the median would be about half the change, 0.35, and hide it)
    half = [x + (math.log(2) if i % 2 else 0.0) for i, x in enumerate(noise)]
    assert sig.run_spread(half) < 0.25


def test_claims_made_together_hold_together():
    # Forty claims, each 1.12x with a 95 % CI of 1.06-1.18x: each alone is a change...
    one = sig.judge(1.12, 1.06, 1.18, 5, unit="rounds")
    assert one.significant
    forty = sig.together([one] * 40)
    # ...but not all forty at once: each is now a 99.875 % interval (Bonferroni)
    assert all(c.confidence == pytest.approx(1 - 0.05 / 40) for c in forty)
    assert not any(c.significant for c in forty)
    assert "99.8 % CI" in ratio_text(sig.judge(2.0, 1.8, 2.2, 10, confidence=forty[0].confidence))
    # a clear 2x change survives both the Bonferroni widening and a 10 % between-run spread
    clear = sig.judge(2.0, 1.9, 2.1, 5, unit="rounds")
    assert all(c.significant for c in sig.together([clear] * 40, run_sd=0.1))
    # the between-run spread alone widens a lone claim
    (lone,) = sig.together([sig.judge(1.3, 1.2, 1.4, 5, unit="rounds")], run_sd=0.15)
    assert lone.confidence == 0.95 and lone.lo < 1.05 and not lone.significant
    # claims without enough samples are left as they are
    few = sig.judge(3.0, 2.9, 3.1, 4)
    assert sig.together([few, clear])[0] is few


def test_two_rounds_too_few_to_tell_a_change_read_not_enough_samples_never_no_clear_change():
    """`run --budget 30` gave steps_per_execution 1 -> 20 two rounds of 5 samples; its
    3.3x gain read "no clear change (CI 0.79-13.5x)": the interval rested on 2 rounds (one degree
    of freedom), and the sample-count rule counts samples, not rounds. From the README's recorded
    run: the same pair, 2.3x from 2 rounds of 5 samples."""
    from pathlib import Path

    from whichdevice.analysis.compare import process_sd
    from whichdevice.analysis.fixes import per_sample
    from whichdevice.core.records import load_run

    record = load_run(Path(__file__).parent / "data" / "run_cpu_2core_budget300.json")
    spe = {r.spec.params.get("steps_per_execution"): per_sample(r) for r in record.results if r.status == "ok"}
    c = sig.from_rounds(spe[1].rounds, spe[20].rounds, process_sd=process_sd(record))
    assert c.unit == "rounds" and c.n == 2 and c.ratio > 2
    assert c.status == "not_enough" and c.note is not None and c.note.kind == "too_few_rounds"
    text = ratio_text(c)
    assert text.startswith("not enough samples (2.3× from 2 rounds") and "no clear change" not in text
    # the same rounds, three of them: then the interval can tell, and "no clear change" may be said
    three = sig.from_rounds([*spe[1].rounds, spe[1].rounds[0]], [*spe[20].rounds, spe[20].rounds[0]])
    assert three.n == 3 and three.status != "not_enough"
    # two rounds whose ratio is 1.0 but whose interval reaches past the noise band (0.92-1.1x) cannot
    # tell a 10 % change from none either: not enough (the H200's "no clear change (1x, CI 0.71-1.5x, n=2)")
    flat = sig.from_rounds([[1.0, 1.01, 0.99, 1.0, 1.0], [1.2] * 5], [[1.0] * 5, [1.2, 1.21, 1.19, 1.2, 1.2]])
    assert flat.n == 2 and flat.status == "not_enough" and flat.lo < 1 / 1.05
    # two rounds that agree to the digit: the interval lies inside the band, no change measured
    same = sig.from_rounds([[1.0, 1.001, 0.999, 1.0, 1.0]] * 2, [[1.0, 1.0, 1.001, 0.999, 1.0]] * 2)
    assert same.n == 2 and same.status == "no_change" and 1 / 1.05 <= same.lo and same.hi <= 1.05


def test_a_change_from_few_rounds_is_claimed_only_where_its_near_end_clears_the_margin():
    """From 2-5 rounds a change whose interval's near end lies within 1.25x is not enough: the
    corpus's claims at 1.1-1.2x ("one thread 2x, CI 1.2-3.4x, 3 rounds") read "no clear change" or
    "not enough" in the next run of the same command. From 6 rounds the rank interval holds."""

    def rounds(centres):
        return [[c * (1 + 0.01 * k) for k in range(5)] for c in centres]

    base = rounds([1.0, 1.0])
    # 2 rounds, 1.18x and 1.19x: beyond the noise band, its near end below 1.25x
    near = sig.from_rounds(base, rounds([1 / 1.18, 1 / 1.19]))
    assert near.status == "not_enough" and near.note is not None and near.note.kind == "near_band"
    assert 1.05 < near.lo < sig.FEW_ROUNDS_MARGIN  # without the margin: "faster"
    text = ratio_text(type("C", (), {"claim": near})())
    assert "short of 1.25×" in text and "fewer than 6 rounds" in text and "CI" in text
    # a change far beyond the margin stands from 2 rounds
    far = sig.from_rounds(base, rounds([1 / 3.0, 1 / 3.1]))
    assert far.status == "faster" and far.lo > sig.FEW_ROUNDS_MARGIN
    # from 6 rounds a near end inside the margin is claimed as judged
    six = sig.from_rounds(rounds([1.0] * 6), rounds([1 / 1.2, 1 / 1.21, 1 / 1.19, 1 / 1.2, 1 / 1.22, 1 / 1.18]))
    assert six.status == "faster" and six.lo < sig.FEW_ROUNDS_MARGIN
    # slower claims are held the same way
    slow = sig.from_rounds(rounds([1 / 1.18, 1 / 1.19]), base)
    assert slow.status == "not_enough" and slow.note is not None and slow.note.kind == "near_band"
