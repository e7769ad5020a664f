"""The CPU's thread count as a fix of a script's diagnose: one thread (and the physical cores
where the framework's default is every logical core) against the default, each count in a
process of its own whose environment sets it before the framework's import, its claim read
through the same pairing and significance rule as every A/B fix (``workloads/fixes.CPU_THREADS``)."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from whichdevice.core.errors import UsageError
from whichdevice.present.fixes import entry_code
from whichdevice.core.records import CaseSpec
from whichdevice.workloads import fixes, script, scriptplan

TORCH_FACTS = {
    "framework": "torch",
    "entry": "torch.optim.Optimizer.step",
    "batch": 64,
    "step_s": 0.01,
    "first_step_s": 0.1,
    "setup_s": 3.0,
    "model": "Net",
    "data_source": "DataLoader",
    "samples": 4096,
    "loader": {},
    "conv2d": False,
}


@pytest.fixture
def two_cores(monkeypatch):
    """A machine of 2 logical cores, 2 physical (this one): the default is 2 threads for both."""
    import os

    import psutil

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 2)


def _thread_cases(framework: str, device: str, facts: dict) -> list:
    sizing = scriptplan.size(facts, 600.0)
    user = scriptplan.user_params({"script": "train.py"}, facts)
    return [
        c for c in scriptplan.cases(framework, device, user, sizing) if c.variant and c.variant.fix == "cpu_threads"
    ]


def test_the_plan_pairs_one_thread_with_the_default_on_the_cpu(two_cores):
    pair = _thread_cases("torch", "CPU:0", TORCH_FACTS)
    assert [c.variant.value for c in pair] == ["default", 1]
    assert [script.variant_of(c) for c in pair] == ["baseline", "threads:1"]
    # the default side runs in the round's shared process, the count in a process of its own
    assert script.group_key(pair[0]) is not None and script.group_key(pair[1]) is None
    assert _thread_cases("torch", "GPU:0", TORCH_FACTS) == []  # the CPU's threads: a CPU run's fix
    # a pair the catalogue recognizes: the only parameter they differ in is the fix's
    assert all(fixes.CPU_THREADS.cases("train", fixes.params_of(c)) for c in pair)
    assert not any(f.cases("train", fixes.params_of(pair[1])) for f in fixes.FIXES if f.key in ("batch", "sync"))


def test_a_keras_fit_times_the_default_side_as_a_member_of_its_own(two_cores):
    facts = {"framework": "tensorflow", "entry": "keras.Model.fit", "batch": 32, "step_s": 0.005}
    facts |= {"first_step_s": 0.8, "setup_s": 6.0, "model": "Sequential", "data": "arrays"}
    pair = _thread_cases("tensorflow", "CPU:0", facts)
    assert [script.variant_of(c) for c in pair] == ["threads:default", "threads:1"]
    assert script.group_key(pair[0]) is not None and script.group_key(pair[1]) is None


def test_keras_on_jax_has_no_thread_setting_and_gets_no_pair(two_cores):
    assert scriptplan.thread_counts("keras-jax") == []
    assert scriptplan.thread_counts("tensorflow") == [1] and scriptplan.thread_counts("torch") == [1]


def test_the_physical_cores_are_tried_where_the_default_is_every_logical_core(monkeypatch):
    import os

    import psutil

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 8 if logical else 4)
    assert scriptplan.thread_counts("tensorflow") == [1, 4]  # TensorFlow's default: all 8
    assert scriptplan.thread_counts("torch") == [1]  # torch's default is the 4 physical cores already


def test_each_framework_gets_its_own_variables_before_import():
    assert script.threads_env("torch", 1) == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert script.threads_env("keras-torch", 2) == {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    assert script.threads_env("tensorflow", 1) == {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}
    assert script.threads_env("keras-jax", 1) == {}


def test_a_thread_variant_runs_in_a_fresh_process_with_its_environment(monkeypatch):
    seen = []

    def fake_child(job, spec, captures, *, timeout_s, env=None, memory_limit_bytes=None):
        seen.append((spec.variant, env))
        return script.ChildRun()

    monkeypatch.setattr(script, "run_child", fake_child)
    monkeypatch.setattr(script, "run_here", lambda *a: pytest.fail("a thread count must not run in this process"))
    monkeypatch.setattr(script, "_RAN_HERE", [])
    p = {"script": "t.py", "kind": "steady", "sync": "none"}
    case = CaseSpec(workload="train", framework="torch", device="CPU:0", params=p, variant=fixes.CPU_THREADS.variant(1))
    # the child's thread count is the case's typed variant's (its catalogue entry's thread_count)
    script._run(p, script._spec(p, "CPU:0", script.variant_of(case), cases=(case,)), "torch")
    assert seen == [("threads:1", {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})]


def test_the_code_line_is_what_users_write():
    e = fixes.CPU_THREADS
    assert e.code.format(v=1) == "torch.set_num_threads(1)"
    assert entry_code(e, "tensorflow").format(v=1).startswith("tf.config.threading.set_intra_op_parallelism_threads(1)")
    assert e.method == "ab" and e.baseline == "default" and e.repeat


@pytest.mark.frameworks
def test_a_torch_script_child_steps_at_one_thread(tmp_path):
    """The variant's child really trains at one thread (the capture reads torch's own count)."""
    pytest.importorskip("torch")
    from tests.test_torch_capture import CORPUS

    spec = script.CaptureSpec("threads:1", 1, 3, "cpu", 60.0)
    run = script.run_child(
        {"script": str(CORPUS / "torch_optimizer_tensors.py"), "args": []},
        spec,
        ["torch"],
        timeout_s=120,
        env={"CUDA_VISIBLE_DEVICES": "", **script.threads_env("torch", 1)},
    )
    r = run.results[0]
    assert r["status"] == "ok" and r["variant"] == "threads:1" and len(r["step_s"]) == 3, run.stderr_tail[-800:]
    assert r["cpu_threads"] == 1


def _case(threads, samples, rounds=1):
    from whichdevice.core.records import CaseResult, CaseSpec, Timing

    p = {"script": "/x/t.py", "entry": "torch.optim.Optimizer.step", "kind": "steady", "sync": "none", "batch": 32}
    p |= {"user_batch": 32, "fix": "cpu_threads", "cpu_threads": threads}
    spec = CaseSpec(workload="train", framework="torch", device="CPU:0", params=p)
    k = len(samples) // rounds  # the samples split into ``rounds`` processes' rounds (1: one process)
    split = [samples[i * k : (i + 1) * k] for i in range(rounds)] if rounds > 1 else None
    t = Timing(
        first_call_s=samples[0],
        warmup_s=[samples[0]],
        samples_s=samples,
        number_per_sample=1,
        overhead_s=0,
        rounds_s=split,
    )
    return CaseResult(spec=spec, status="ok", timing=t, wall_s=0, metrics={"samples_per_step": 32})


def test_the_claim_goes_through_the_significance_rule_and_only_where_planned():
    from tests.conftest import make_record
    from whichdevice.analysis.suite import suite_verdict

    def verdict(results):
        got = [f for f in suite_verdict(make_record(results, "diagnose")).fixes if f.entry.key == "cpu_threads"]
        return got[0] if got else None

    slow, fast = [0.30, 0.31, 0.29, 0.30, 0.32, 0.30], [0.03, 0.031, 0.029, 0.03, 0.032, 0.03]
    # from one process a side: not enough (one process lands in one mode of a busy machine)
    assert verdict([_case("default", slow), _case(1, fast)]).outcome != "helps"
    v = verdict([_case("default", slow, rounds=2), _case(1, fast, rounds=2)])
    assert v.outcome == "helps" and v.best.claim.ratio == pytest.approx(10.0, rel=0.05) and v.best.variant == 1
    noisy = verdict([_case("default", [0.3, 0.1, 0.5, 0.2, 0.4]), _case(1, [0.31, 0.11, 0.49, 0.21, 0.41])])
    assert noisy.outcome != "helps"  # no clear change: never a recommendation
    from whichdevice.core.records import CaseSpec

    plain = CaseSpec(workload="train", framework="torch", device="CPU:0", params={"kind": "steady", "sync": "none"})
    other = _case("default", slow).model_copy(update={"spec": plain})
    assert verdict([other]) is None  # a record whose plan never had it: no verdict, no "not measured" line


def test_the_thread_count_measured_holds_against_the_scripts_own_setting():
    """A script that calls torch.set_num_threads(8) itself kept its 8 threads in the one-thread
    case, so the pair timed 8 threads on both sides."""
    torch = pytest.importorskip("torch")
    from whichdevice.frameworks.torch import capture_hooks

    before, setter = torch.get_num_threads(), torch.set_num_threads
    try:
        capture_hooks.hold_threads(torch, 1)
        torch.set_num_threads(8)  # the script's own line
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads = setter
        setter(before)


def test_the_preflight_runs_at_the_run_s_cpu_threads(monkeypatch, tmp_path, capsys):
    """The pre-flight's step prices every case: timed at 2 threads on 2 busy cores (76 ms a step)
    for a run whose cases ran at --cpu-threads 1 (0.27 ms), it left the batch sweep out of
    --budget 60. It now runs at the run's count."""
    assert scriptplan._cpu_env(1)["OMP_NUM_THREADS"] == "1"
    assert "OMP_NUM_THREADS" not in scriptplan._cpu_env()  # no --cpu-threads: the framework's default
    seen: list[object] = []

    def preflight_run(*args, **kwargs):
        seen.append(args[-1])
        raise UsageError("the pre-flight", "stopped by the test", "nothing to do")

    monkeypatch.setattr(scriptplan, "_preflight_run", preflight_run)
    with pytest.raises(UsageError):
        scriptplan.preflight({"script": "s.py", "args": []}, 60.0, cpu_threads=1)
    assert seen == [1]
    path = tmp_path / "s.py"
    path.write_text("print('never run')\n")
    code, _out, _err = run_cli(
        ["diagnose", str(path), "--budget", "60", "--cpu-threads", "1", "--out", str(tmp_path)], capsys
    )
    assert code == 2 and seen == [1, 1]  # diagnose hands its --cpu-threads to the pre-flight
