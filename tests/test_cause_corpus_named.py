"""The two causes of tests/cause_corpus/ the first screen of `diagnose SCRIPT --budget 60` missed
(benchmarks/cause_scripts.md), on real records of the two scripts:

- `sliced_tiny_batch.py`, a tiny MLP at batch 8 from tensors its loop slices: its step re-batched
  by tiling (frameworks/torch/rebatch.py) to 32 and 128 in the baseline's process. The fixed-cost
  cause now says the batch is too small with the per-sample ratio from batch 8 to the largest batch
  measured, its interval and rounds (each round by its fastest tenth: at 2 threads on 2 busy cores
  one round's median step was 17 ms where its fastest was 0.27 ms), and that the step, not the
  script, was re-batched;
- `host_reads.py`, two `.item()` reads a step: on a CPU they cost nothing measurable (hand timing:
  264 vs 267 µs a step), so they are no cause here; the first screen says the reads a step, their
  measured share on this CPU, and that on a GPU each is a sync, under the same heading.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from whichdevice.analysis import significance, suite
from whichdevice.analysis.scriptsteps import ScriptStep, batch_gain, script_steps
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import CaseResult, RunRecord, load_run
from whichdevice.workloads.fixes import params_of
from whichdevice.present.firstscreen import (
    MAX_LINES,
    batch_gain_text,
    cause_text,
    first_screen,
    reads_text,
    screen_lines,
)

DATA = Path(__file__).parent / "data"
SLICED = DATA / "diagnose_script_sliced_tiny_batch_budget60_cpu_2core.json"
READS = DATA / "diagnose_script_host_reads_budget60_cpu_2core_busy.json"
# the same script at --cpu-threads 1 on a busy machine: its batch pair helped
SLICED_T1 = DATA / "diagnose_script_sliced_tiny_batch_threads1_budget60_cpu_2core_busy.json"
ROOT = Path(__file__).resolve().parents[1]


def _bench():
    """benchmarks/cause_scripts.py: its rule per script and its first-screen block."""
    spec = importlib.util.spec_from_file_location("cause_scripts", ROOT / "benchmarks" / "cause_scripts.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def _screen(record: RunRecord, budget: int = MAX_LINES - 2) -> str:
    v = suite_verdict(record, seed_batch=int(str(record.options["batch"])))
    return "\n".join(t for _, t in screen_lines(first_screen(record, v), report="r.html", budget=budget))


def _case(record: RunRecord, batch: int) -> CaseResult:
    """The steady case at ``batch`` that measures no fix but the batch (its parameters as version 4
    laid them out: ``params_of``)."""
    return next(
        r
        for r in record.results
        if (p := params_of(r.spec)).get("batch") == batch and "fix" not in p and p.get("kind") == "steady"
    )


def _tenth(xs: list[float]) -> float:
    return sorted(xs)[int(0.1 * (len(xs) - 1))]


def test_the_sliced_batch_is_too_small_by_its_measured_per_sample_ratio_interval_and_rounds():
    record = load_run(SLICED)
    assert record.options["rebatched"] == "step" and record.options["sweep_batches"] == [8, 32, 128]
    (st,) = script_steps(record)
    g = st.larger
    assert g is not None and (g.batch, g.larger, g.tiled) == (8, 128, True)
    base, top = _case(record, 8), _case(record, 128)
    assert base.timing is not None and top.timing is not None
    # round by round (the batch's turns share the baseline's process), each by its fastest tenth
    rounds = list(zip(base.timing.rounds_s or [], top.timing.rounds_s or []))
    assert len(rounds) == 3 == g.claim.n and g.steps == 30
    ratios = [(_tenth(a) / 8) / (_tenth(k) / 128) for a, k in rounds]
    want = significance.from_round_ratios(ratios)
    assert (g.claim.ratio, g.claim.lo, g.claim.hi) == pytest.approx((want.ratio, want.lo, want.hi))
    assert g.claim.status == "faster" and 12 < g.claim.lo < g.claim.ratio < g.claim.hi < 15
    # the medians' pair (the fix table's) is too noisy to tell: one round's median step was 17 ms
    assert not suite_verdict(record, seed_batch=8).fix("batch").outcome == "helps"
    (cause,) = suite_verdict(record, seed_batch=8).causes
    assert cause.kind == "fixed_cost" and cause.step == st
    assert cause_text(cause).endswith(
        "; the batch is too small: per-sample time falls 13.4× from batch 8 to 128 (95 % CI 12.9–14×, 3 rounds, "
        "30 steps a side, each round by its fastest tenth), on your step re-batched to 128 (its own batch tiled), "
        "not your script"
    )


def test_the_sliced_batch_s_cause_is_on_the_first_screen_at_every_length_and_passes_the_benchmark_rule():
    record = load_run(SLICED)
    bench = _bench()
    (rule,) = [c for c in bench.CASES if c.script == "sliced_tiny_batch"]
    for budget in range(MAX_LINES, 5, -1):
        text = _screen(record, budget)
        assert "per-sample time falls 13.4× from batch 8 to 128 (95 % CI 12.9–14×, 3 rounds" in text, text
        assert "re-batched" in bench.why_block(text), text  # the step, said under the cause itself
        block = bench.why_block(text).lower()
        assert all(w in block for w in rule.words), (budget, block)


def test_where_the_batch_pair_helps_the_fixed_cost_is_its_gain_said_in_the_same_words():
    """At 1 thread the batch pair's medians cleared the rule: the fixed cost is the pair's share
    (1 - 1/gain) and says the batch is too small with the pair's own claim, the one "What to
    change" shows, and that the step was re-batched."""
    record = load_run(SLICED_T1)
    assert record.options["cpu_threads"] == 1 and record.options["preflight_step_s"] < 0.001
    v = suite_verdict(record, seed_batch=8)
    best = v.fix("batch").best
    assert v.fix("batch").outcome == "helps" and best is not None and best.variant == 128
    (cause,) = v.causes
    assert cause.kind == "fixed_cost" and cause.fix == best and cause.step is None
    assert cause.share == pytest.approx(1 - 1 / best.claim.ratio)
    assert cause_text(cause) == (
        "93% of a batch-8 step (Python, dispatch, launches; not per sample); the batch is too small: per-sample "
        "time falls 13.8× from batch 8 to 128 (95 % CI 6.6–28.6×, 2 rounds), on your step re-batched to 128 "
        "(its own batch tiled), not your script"
    )
    text = _screen(record)
    assert "1. Batch 8 → 128: 13.8× faster (95 % CI 6.6–28.6×, 2 rounds)" in text  # the same claim below
    for budget in range(MAX_LINES, 5, -1):
        assert "per-sample time falls 13.8× from batch 8 to 128 (95 % CI 6.6–28.6×, 2 rounds" in _screen(record, budget)


def test_a_larger_batch_that_is_no_clear_gain_is_never_said_to_be_too_small():
    record = load_run(READS)  # a DataLoader's script: batches 8, 32, 128 each a run of the script
    (st,) = script_steps(record)
    assert st.larger is not None and not st.larger.tiled and st.larger.claim.status == "not_enough"
    text = _screen(record, 100)
    assert "per-sample time from batch 32 to 128, each round by its fastest tenth: not enough samples (2.8×" in text
    assert "too small" not in text and "re-batched" not in text


def _gain(ratios: list[float], *, tiled: bool = False) -> str:
    """The words of a batch 8 -> 64 comparison whose rounds' per-sample ratios are ``ratios``."""
    from whichdevice.analysis.scriptsteps import BatchGain

    claim = (
        significance.from_round_ratios(ratios)
        if len(ratios) > 1
        else significance.judge(
            ratios[0],
            math.nan,
            math.nan,
            1,
            unit="rounds",
            enough=False,
            note=significance.ClaimNote("too_few_rounds", 1, 2),
        )
    )
    return batch_gain_text(BatchGain(8, 64, claim, 10 * len(ratios), tiled))


def test_the_batch_words_follow_the_claim_never_a_gain_it_did_not_measure():
    assert _gain([6.0, 6.2, 5.9]).startswith("the batch is too small: per-sample time falls 6× from batch 8 to 64")
    slower = _gain([0.5, 0.52, 0.49])
    assert (
        slower.startswith("per-sample time from batch 8 to 64, each round by its fastest tenth: ")
        and "slower" in slower
    )
    one = _gain([6.0], tiled=True)  # one round: its ratio, no interval, not a claim
    assert "not enough samples (6× from n=1" in one and "too small" not in one and "CI" not in one
    assert one.endswith("on your step re-batched to 64 (its own batch tiled), not your script")


def test_batch_gain_pairs_rounds_and_takes_the_largest_batch():
    record = load_run(SLICED)
    base, b32, b128 = _case(record, 8), _case(record, 32), _case(record, 128)
    assert batch_gain(base, [b32, b128]).larger == 128  # type: ignore[union-attr]
    assert batch_gain(base, [b32]).claim.n == 2  # type: ignore[union-attr]  # batch 32 had 2 rounds
    assert batch_gain(base, []) is None  # nothing larger measured: nothing to compare


def test_host_reads_on_a_cpu_are_said_with_their_count_and_share_and_what_they_are_on_a_gpu():
    record = load_run(READS)
    (st,) = script_steps(record)
    assert st.reads == 2.0 and st.reads_counted and not st.read_bound  # 0.04 % of the step here
    v = suite_verdict(record, seed_batch=32)
    assert v.gpu_reads == [st] and "host_reads" not in [c.kind for c in v.causes]  # no cause on this CPU
    line = reads_text(st)
    assert line == (
        "Host reads: 2 a step (.item() and the like), 0% of the step on this CPU (9.68 µs of 22.9 ms, 30 steps in "
        "3 processes), not why it is slow here; on a GPU each read waits for the work queued before it (a sync "
        "per read), which a run on a CPU does not time."
    )
    assert "faster" not in line and "×" not in line  # no speed-up claimed
    bench = _bench()
    (rule,) = [c for c in bench.CASES if c.script == "host_reads"]
    for budget in range(MAX_LINES, 5, -1):
        text = _screen(record, budget)
        block = bench.why_block(text)
        assert "2 a step" in block and "sync per read" in block, (budget, text)
        assert all(w in block.lower() for w in rule.words)


def _step(**kw: object) -> ScriptStep:
    base: dict = {"device": "CPU:0", "framework": "torch", "step_s": 0.001, "steps": 20, "data_wait_s": None}
    return ScriptStep(**{**base, "reads_counted": True, **kw})  # type: ignore[arg-type]


def test_host_reads_are_said_only_every_step_on_a_cpu_and_not_twice():
    assert suite.reads_on_a_gpu([_step(reads=1.0, read_s=1e-6)]) != []
    assert suite.reads_on_a_gpu([_step(reads=0.5, read_s=1e-6)]) == []  # a read every other step
    gpu = _step(device="GPU:0", reads=2.0, read_s=1e-6)
    assert suite.reads_on_a_gpu([gpu]) == []  # a GPU step's reads are timed there, sync included
    assert suite.reads_on_a_gpu([_step(reads=2.0, read_s=1e-6), gpu]) == []
    assert suite.reads_on_a_gpu([_step(reads=2.0, reads_counted=False)]) == []  # not counted: no measurement
    # reads that reach their share are the numbered cause, with what they are on a GPU said there
    heavy = _step(reads=2.0, read_s=2e-4)
    assert heavy.read_bound and suite.reads_on_a_gpu([heavy]) == []
    (cause,) = suite._script_causes([heavy], [])
    assert cause.kind == "host_reads" and cause_text(cause).endswith(
        "on a GPU each read waits for the work queued before it (a sync per read), which a run on a CPU does not time"
    )
    (on_gpu,) = suite._script_causes([_step(device="GPU:0", reads=2.0, read_s=2e-4)], [])
    assert "on a GPU each read" not in cause_text(on_gpu)
