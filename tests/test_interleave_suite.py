"""The suite's A/B cases timed interleaved in one child.

The groups are derived from the specs' params (keys, specs and the job format unchanged);
the child prepares each member, times the group together and emits one ordinary result per
member. Fast tests use the real child loop (``measure.child.measure_cases``) with a fake group
workload; one real TensorFlow run (marked ``tf``) checks the steady training steps end to end.
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from whichdevice import workloads
from whichdevice.core.records import CaseResult, CaseSpec, Timing
from whichdevice.core.timing import TimingPolicy
from whichdevice.measure import child
from whichdevice.measure.session import decides_verdict, repeat_order
from whichdevice.workloads import suite


def _suite(framework="tensorflow"):
    return suite.suite_cases(framework, "CPU:0", gpu_present=False)


def test_suite_groups_are_the_steady_sweep_with_sync_the_pipeline_loops_and_the_fixes_fits():
    cases = _suite()
    groups = workloads.interleave_groups(cases)
    # a partition of the job's keys, keys as they are (history and compare match by key)
    assert sorted(k for g in groups for k in g) == sorted(c.key for c in cases)
    by_key = {c.key: c for c in cases}
    multi = [[by_key[k] for k in g] for g in groups if len(g) > 1]
    assert len(multi) == 3
    steady, loops, fits = multi
    assert [(s.params["batch"], s.params["sync"]) for s in steady] == [
        *((b, "none") for b in suite.SWEEP_BATCHES),
        (suite.SEED_BATCH, "each"),
    ]
    assert [s.params["variant"] for s in loops] == list(suite.PIPELINE_VARIANTS)
    assert all(s.params["part"] == "both" for s in loops)
    # the fixes' fits: steps_per_execution 1, 5, 20 (the framework's jit default), jit_compile False, True
    named = [next((k, f.params[k]) for k in ("steps_per_execution", "jit_compile") if k in f.params) for f in fits]
    assert named == list(suite.FIX_FITS)
    assert not any("steps_per_execution" in f.params and "jit_compile" in f.params for f in fits)
    assert all(f.params["kind"] == "fit" and f.params["epochs"] == suite.FIX_EPOCHS for f in fits)
    # seed 001 ex2's fit as written, the pipeline alone and the rest stay alone
    alone = [by_key[g[0]] for g in groups if len(g) == 1]
    assert any(s.params.get("kind") == "fit" and s.params.get("example") == "ex2" for s in alone)
    assert not any("steps_per_execution" in s.params or "jit_compile" in s.params for s in alone)
    assert all(s.params.get("kind") != "steady" and s.params.get("part") != "both" for s in alone)


def test_round_two_interleaves_the_same_groups_in_its_reversed_order():
    cases = _suite()
    first = [sorted(g) for g in workloads.interleave_groups(cases) if len(g) > 1]
    again = repeat_order([c for c in cases if decides_verdict(c)])
    second = [g for g in workloads.interleave_groups(again) if len(g) > 1]
    assert sorted(sorted(g) for g in second) == sorted(first)
    steady = next(g for g in second if "kind=steady" in g[0])
    assert steady[0].endswith("sync=each")  # the parent's ABBA order: the round-1 last goes first


def test_cases_that_differ_in_more_than_batch_sync_or_variant_are_not_grouped():
    def steady(**p):
        return CaseSpec(
            workload="train", framework="tensorflow", device="CPU:0", params={"kind": "steady", "model": "seed001", **p}
        )

    a, b = steady(batch=8, sync="none"), steady(batch=32, sync="none")
    other_device = CaseSpec(workload="train", framework="tensorflow", device="GPU:0", params=dict(b.params))
    one_thread = steady(batch=4096, sync="none", threads=1)
    traced = CaseSpec(
        workload="pipeline", framework="tensorflow", device="CPU:0", params={"part": "both", "trace_dir": "/t"}
    )
    traced2 = CaseSpec(
        workload="pipeline",
        framework="tensorflow",
        device="CPU:0",
        params={"part": "both", "trace_dir": "/t", "variant": "x"},
    )
    groups = workloads.interleave_groups([a, other_device, one_thread, b, traced, traced2])
    assert groups == [[a.key, b.key], [other_device.key], [one_thread.key], [traced.key], [traced2.key]]


# --------------------------------------------------------------------------- the child's loop


def _spec(batch, sync="none"):
    return CaseSpec(
        workload="train", framework="numpy", device="CPU:0", params={"kind": "steady", "batch": batch, "sync": sync}
    )


def _timing(x):
    return Timing(first_call_s=x, warmup_s=[x], samples_s=[x] * 5, number_per_sample=1, overhead_s=0.0)


class FakeGroup:
    """A group workload: prepare records the order, time_group calls ``before`` per turn in a
    fixed ABAB order and returns one timing per member (or the exception a member raises)."""

    def __init__(self, fail_prepare=(), fail_time=()):
        self.events = []
        self.fail_prepare, self.fail_time = set(fail_prepare), set(fail_time)

    def prepare(self, spec, fw, policy, overhead_s):
        self.events.append(("prepare", spec.params["batch"]))
        if spec.params["batch"] in self.fail_prepare:
            raise MemoryError("out of memory at this batch")
        return spec.params["batch"]

    def time_group(self, prepared, fw, policy, overhead_s, before=None):
        self.events.append(("time", tuple(prepared)))
        for _ in range(2):
            for j in range(len(prepared)):
                before(j)
        return [
            RuntimeError(f"broke at {b}") if b in self.fail_time else (_timing(b / 1000), {"interleaved_with": 1.0})
            for b in prepared
        ]


def _run(cases, group, monkeypatch, *, expired=lambda: False, round_no=1):
    lines = []
    monkeypatch.setattr(workloads, "group_runner", lambda name: group)
    ctx = child._Context(SimpleNamespace(), TimingPolicy(), 0.0, lines.append)
    # the child asks with the time a group needs (none here: no expected times)
    results = child.measure_cases(cases, ctx, expired=lambda *_: expired(), round_no=round_no)
    json.dumps(lines)  # every line is JSON as the parent reads it
    return results, lines


def test_the_child_prepares_each_member_then_times_the_group_and_emits_ordinary_results(monkeypatch):
    cases = [_spec(8), _spec(10), _spec(10, "each")]
    group = FakeGroup()
    results, lines = _run(cases, group, monkeypatch)
    assert group.events == [("prepare", 8), ("prepare", 10), ("prepare", 10), ("time", (8, 10, 10))]
    assert [r.spec.key for r in results] == [c.key for c in cases]
    assert all(r.status == "ok" and r.timing.rounds_s is None for r in results)
    kinds = [ln["type"] for ln in lines]
    # a start line before every member's set-up and every turn, the results after the last turn
    assert kinds == ["start"] * 3 + ["start"] * 6 + ["result"] * 3
    assert lines[0]["key"] == cases[0].key
    assert [ln["result"]["spec"]["params"]["batch"] for ln in lines if ln["type"] == "result"] == [8, 10, 10]
    assert all(r.wall_s >= 0 for r in results)


def test_a_member_that_fails_is_recorded_and_the_rest_of_the_group_goes_on(monkeypatch, capsys):
    cases = [_spec(8), _spec(32), _spec(8192)]
    group = FakeGroup(fail_prepare={8192}, fail_time={32})
    results, _ = _run(cases, group, monkeypatch)
    assert [r.status for r in results] == ["ok", "failed", "failed"]
    assert group.events[-1] == ("time", (8, 32))  # the failed set-up is not timed
    assert "RuntimeError: broke at 32" in results[1].error
    assert results[2].failure == "out_of_memory"
    assert "MemoryError" in capsys.readouterr().err  # the traceback goes where the parent reads it


def test_no_group_starts_after_the_deadline_and_round_two_leaves_it_out(monkeypatch):
    cases = [_spec(8), _spec(32)]
    results, lines = _run(cases, FakeGroup(), monkeypatch, expired=lambda: True)
    assert [r.failure for r in results] == ["skipped", "skipped"]
    assert [ln["type"] for ln in lines] == ["start", "result", "start", "result"]
    results, lines = _run(cases, FakeGroup(), monkeypatch, expired=lambda: True, round_no=2)
    assert results == [] and lines == []


def test_round_two_results_come_as_round_lines(monkeypatch):
    cases = [_spec(32), _spec(8)]
    results, lines = _run(cases, FakeGroup(), monkeypatch, round_no=2)
    assert [ln["round"] for ln in lines if ln["type"] == "round"] == [2, 2]
    assert not [ln for ln in lines if ln["type"] == "result"]
    assert all(isinstance(r, CaseResult) and r.status == "ok" for r in results)


def test_a_member_whose_set_up_starts_after_the_deadline_is_skipped_the_rest_timed(monkeypatch):
    cases = [_spec(8), _spec(32), _spec(128)]
    calls = iter([False, False, False, True])  # group start, member 1, member 2, member 3
    group = FakeGroup()
    results, _ = _run(cases, group, monkeypatch, expired=lambda: next(calls))
    assert [r.failure for r in results] == [None, None, "skipped"]
    assert group.events[-1] == ("time", (8, 32))


def test_train_steady_group_is_timed_in_turns(monkeypatch):
    # workloads/train.time_group on prepared members (no framework: a fake sync and plain
    # callables): the members' blocks alternate, each gets its metrics and the interleave's.
    from whichdevice.core.timing import Warm
    from whichdevice.workloads import train

    order = []
    warms = [Warm(lambda i=i: order.append(i), [1e-3], 1) for i in range(2)]
    fw = SimpleNamespace(sync=SimpleNamespace(sync=lambda _: None))
    policy = TimingPolicy(min_time_s=1e-4, target_blocks=1, target_rel_halfwidth=None, max_samples=50)
    out = train.time_group(
        [(warms[0], {"samples_per_step": 8.0}), (warms[1], {"samples_per_step": 10.0})], fw, policy, 0.0
    )
    (t8, m8), (t10, m10) = out
    assert m8["samples_per_step"] == 8.0 and m8["interleaved_with"] == 1.0
    assert m8["interleave_rounds"] == len(t8.samples_s) >= 5
    assert t8.rounds_s is None
    switches = sum(a != b for a, b in zip(order, order[1:]))
    assert switches >= len(order) // 2  # turns, not one member's blocks then the other's


class _World:
    """Shared machine state of the fake loops: it slows down 1 % per step (drift)."""

    def __init__(self):
        self.n = 0


class FakeLoop:
    """Stands in for pipeline._Loop: ``step()`` costs ``cost`` times the drift; the first
    ``per_pass`` steps after ``iter(ds)`` (warm-up) wait for their whole step, steady steps for
    a quarter of it — so the metrics show whether warm-up waits leaked into the figures."""

    def __init__(self, cost, world, per_pass=4):
        self.cost, self.world, self.per_pass = cost, world, per_pass
        self.waits, self.warmup_s, self.batch, self.since_iter = [], [], 32, 0
        loop = self

        class Data:
            def __iter__(self):
                loop.since_iter = 0
                return iter(())

        self.ds = Data()
        self.it = iter(self.ds)

    def step(self):
        self.world.n += 1
        self.since_iter += 1
        s = self.cost * (1 + 0.01 * self.world.n)
        self.waits.append(s if self.since_iter <= self.per_pass else s / 4)
        return s

    def prepare(self):
        self.warmup_s = [self.step() for _ in range(self.per_pass)]
        return self

    def metrics(self, samples, waits):
        from whichdevice.workloads.pipeline import _Loop

        return _Loop.metrics(self, samples, waits)


def test_pipeline_loops_in_abba_halves_cancel_drift_and_keep_their_own_input_waits():
    from whichdevice.core import stats
    from whichdevice.workloads import pipeline

    policy = TimingPolicy(min_time_s=1e-3, target_rel_halfwidth=None)
    fw = SimpleNamespace()
    # sequential (as before): serial (2 ms) then prefetch (1 ms) on a machine slowing down
    world = _World()
    seq = []
    for cost in (2e-3, 1e-3):
        loop = FakeLoop(cost, world)
        seq.append(pipeline._steps(loop.step, loop.per_pass, policy, loop.per_pass, 0.0))
    sequential = stats.median(seq[1].samples_s) / stats.median(seq[0].samples_s)

    world = _World()
    loops = [FakeLoop(2e-3, world).prepare(), FakeLoop(1e-3, world).prepare()]
    turns = []
    (ts, ms), (tp, mp) = pipeline.time_group(loops, fw, policy, 0.0, before=turns.append)
    interleaved = stats.median(tp.samples_s) / stats.median(ts.samples_s)
    assert abs(interleaved - 0.5) < abs(sequential - 0.5) / 3  # the drift cancels (ABBA)
    assert turns[:2] == turns[2:][::-1] and sorted(turns[:2]) == [0, 1]
    for t, m in ((ts, ms), (tp, mp)):
        assert len(t.samples_s) >= 4 and t.rounds_s is None and t.number_per_sample == 1
        # only the steady steps' waits, of this loop: a quarter of its loop time exactly
        assert m["input_wait_s"] == pytest.approx(m["loop_s"] / 4) and m["loop_s"] == pytest.approx(sum(t.samples_s))
        assert m["interleaved_with"] == 1.0 and m["steps_per_pass"] == 4.0
        assert t.first_call_s == t.warmup_s[0]


def test_a_failing_loop_does_not_stop_the_others():
    from whichdevice.workloads import pipeline

    world = _World()
    loops = [FakeLoop(2e-3, world).prepare(), FakeLoop(1e-3, world).prepare()]

    def broken():
        raise RuntimeError("py_function raised")

    loops[0].step = broken
    out = pipeline.time_group(loops, SimpleNamespace(), TimingPolicy(min_time_s=1e-3), 0.0)
    assert isinstance(out[0], RuntimeError) and out[1][0].samples_s


@pytest.mark.tf
def test_steady_steps_interleaved_in_a_real_child(tmp_path):
    # One real child (TensorFlow on the CPU): two steady cases of seed 001 at batch 8 (no sync)
    # and 10 (loss read every step), timed together, and two input-pipeline loops (serial map,
    # tf.py_function) in ABBA halves; every line the parent reads is right.
    import subprocess

    cases = [
        CaseSpec(
            workload="train",
            framework="tensorflow",
            device="CPU:0",
            params={"kind": "steady", "model": "seed001", "batch": b, "sync": s},
        )
        for b, s in ((8, "none"), (10, "each"))
    ] + [
        CaseSpec(
            workload="pipeline",
            framework="tensorflow",
            device="CPU:0",
            params={"part": "both", "variant": v, "images": 64, "image_size": 32, "batch": 16, "net": "tiny"},
        )
        for v in ("serial", "pyfunc")
    ]
    job = tmp_path / "job.json"
    out = tmp_path / "out.jsonl"
    job.write_text(
        json.dumps(
            {
                "framework": "tensorflow",
                "device": "CPU:0",
                "cpu_threads": None,
                "policy": {"min_time_s": 0.02, "max_time_s": 0.5, "telemetry_period_s": None},
                "env": {},
                "deadline": None,
                "cases": [c.model_dump(mode="json") for c in cases],
            }
        )
    )
    env = {"CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    import os

    proc = subprocess.run(
        [sys.executable, "-m", "whichdevice.measure.child", str(job), str(out)],
        env={**os.environ, **env},
        capture_output=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    results = [CaseResult.model_validate(x["result"]) for x in lines if x["type"] == "result"]
    assert [r.spec.key for r in results] == [c.key for c in cases]
    for r in results:
        assert r.status == "ok", r.error
        assert r.metrics["interleaved_with"] == 1.0
        assert len(r.timing.samples_s) >= 4 and r.timing.rounds_s is None and r.timing.stop_reason
        assert r.timing.first_call_s > 0
    steady, loops = results[:2], results[2:]
    assert all(r.metrics["samples_per_step"] == r.spec.params["batch"] for r in steady)
    for r in loops:
        assert r.metrics["examples_per_step"] == 16.0 and r.metrics["steps_per_pass"] == 4.0
        assert 0 < r.metrics["input_wait_s"] < r.metrics["loop_s"] == pytest.approx(sum(r.timing.samples_s))
    starts = [x["key"] for x in lines if x["type"] == "start"]
    assert starts[:2] == [c.key for c in cases[:2]] and len(starts) >= 2 + 10 + 2 + 4


def test_a_native_crash_inside_a_group_is_recorded_and_the_run_goes_on(monkeypatch):
    # The real runner and child (numpy: no framework import to wait for). The group's second
    # member aborts the child (SIGABRT, as a crashing native library does) while being set up:
    # the parent records a crash, restarts a child with the cases left, and the case after the
    # group is measured. (numpy has no train step: the unharmed member fails on its own, which is
    # why this test checks results exist, not which member the crash is laid on.)
    from whichdevice.measure import runner
    from whichdevice.workloads.matmul import build_cases

    monkeypatch.setenv("WHICHDEVICE_FAULT", "abort:batch=32")
    steady = [_spec(8), _spec(32)]
    after = build_cases("numpy", "CPU:0", [8], ["steady"], "float32")
    policy = {"min_time_s": 0.01, "telemetry_period_s": None}
    out = runner.run_job(runner.Job("numpy", "CPU:0", "cpu", [*steady, *after], policy=policy), case_timeout_s=60)
    by_key = {r.spec.key: r for r in out.results}
    assert sorted(by_key) == sorted(c.key for c in [*steady, *after])  # one result each
    assert by_key[steady[1].key].failure == "crash" and "SIGABRT" in by_key[steady[1].key].error
    assert by_key[after[0].key].status == "ok"


@pytest.mark.tf
def test_a_crash_in_a_group_is_laid_on_the_member_that_was_running(monkeypatch):
    # TensorFlow's steady steps at batch 8 and 32 form one group; the child aborts (SIGABRT) while
    # setting up batch 32, after batch 8's set-up. The parent lays the crash on batch 32 (the last
    # case the child started), not on the group's first unfinished member, and batch 8 is measured
    # in the restarted child.
    from whichdevice.measure import runner

    monkeypatch.setenv("WHICHDEVICE_FAULT", "abort:batch=32")
    cases = [
        CaseSpec(
            workload="train",
            framework="tensorflow",
            device="CPU:0",
            params={"kind": "steady", "model": "seed001", "batch": b, "sync": "none"},
        )
        for b in (8, 32)
    ]
    policy = {"min_time_s": 0.02, "max_time_s": 0.3, "telemetry_period_s": None}
    out = runner.run_job(runner.Job("tensorflow", "CPU:0", "cpu", cases, policy=policy), case_timeout_s=120)
    by_batch = {r.spec.params["batch"]: r for r in out.results}
    assert by_batch[32].failure == "crash" and "SIGABRT" in by_batch[32].error
    assert by_batch[8].status == "ok", by_batch[8].error


@pytest.mark.tf
def test_fix_fits_are_timed_epoch_by_epoch_in_two_halves():
    # The fixes' model.fit variants (TensorFlow, CPU): each built, compiled and fitted for its
    # warm-up epoch, then its steady epochs in turns A B | B A; every timed batch of every
    # steady epoch kept, one execution of k steps per sample.
    from whichdevice import frameworks
    from whichdevice.workloads import train

    fw = frameworks.load("tensorflow")
    specs = [
        CaseSpec(
            workload="train",
            framework="tensorflow",
            device="CPU:0",
            params={
                "kind": "fit",
                "model": "seed001",
                "example": "ex2",
                "samples": 200,
                "batch": 10,
                "data": "numpy",
                "epochs": 3,
                "steps_per_execution": k,
                "jit_compile": False,
            },
        )
        for k in (1, 5)
    ]
    assert workloads.interleave_groups(specs) == [[s.key for s in specs]]
    prepared = [train.prepare(s, fw, TimingPolicy(), 0.0) for s in specs]
    turns: list[int] = []
    out = train.time_group(prepared, fw, TimingPolicy(), 0.0, before=turns.append)
    assert sorted(turns[:2]) == [0, 1] and turns[2:] == turns[:2][::-1]  # A B | B A
    for (timing, metrics), k in zip(out, (1, 5)):
        assert len(timing.warmup_s) == 20 // k and len(timing.samples_s) == 2 * (20 // k)
        assert timing.first_call_s > max(timing.samples_s)  # the warm-up epoch's first batch traced the step
        assert metrics["samples_per_step"] == 10 * k and metrics["interleaved_with"] == 1.0
        assert metrics["interleave_rounds"] == 2.0 and metrics["jit_compile"] == 0.0
