"""Fault isolation in the child-process runner, using the fast-starting numpy framework."""

import pytest

from whichdevice.measure import runner
from whichdevice.core.records import CaseSpec
from whichdevice.core.timing import TimingPolicy
from whichdevice.workloads.matmul import build_cases

QUICK = {
    "min_time_s": 0.01,
    "warmup_calls": 0,
    "min_samples": 2,
    "max_samples": 5,
    "target_blocks": 2,
    "max_time_s": 1.0,
}


def _job(sizes=(4, 8, 16)):
    return runner.Job(
        "numpy", "CPU:0", "cpu", build_cases("numpy", "CPU:0", sizes, ["steady"], "float32"), policy=QUICK
    )


def test_all_cases_run():
    out = runner.run_job(_job(), case_timeout_s=60)
    assert out.session is not None and out.session.device.name == "CPU:0"
    assert [r.status for r in out.results] == ["ok"] * 3
    assert out.session.cpu_threads_intra >= 1


@pytest.mark.parametrize(
    "action, reason, kind",
    [
        ("raise", "RuntimeError: injected failure", "error"),
        ("oom", "MemoryError: injected out-of-memory", "out_of_memory"),
        ("abort", "child process died: SIGABRT", "crash"),
    ],
)
def test_one_failing_case_is_recorded_and_the_run_goes_on(monkeypatch, action, reason, kind):
    monkeypatch.setenv("WHICHDEVICE_FAULT", f"{action}:n=8")
    seen = []
    out = runner.run_job(_job(), case_timeout_s=60, on_result=seen.append)
    by_n = {r.spec.params["n"]: r for r in out.results}
    assert set(by_n) == {4, 8, 16}
    assert by_n[4].status == "ok" and by_n[16].status == "ok"
    assert by_n[8].status == "failed" and reason in by_n[8].error and by_n[8].failure == kind
    assert len(seen) == 3


def test_a_case_over_the_memory_limit_is_killed_and_recorded(monkeypatch):
    # The child really allocates (64 MiB at a time, written) until the parent's limit stops it.
    monkeypatch.setenv("WHICHDEVICE_FAULT", "grow:n=8")
    limit = 600 << 20
    out = runner.run_job(_job(), case_timeout_s=60, memory_limit_bytes=limit)
    by_n = {r.spec.params["n"]: r for r in out.results}
    assert by_n[8].status == "failed" and by_n[8].failure == "out_of_memory"
    assert "over the memory limit of 0.586 GiB" in by_n[8].error and by_n[8].wall_s > 0
    assert by_n[4].status == "ok" and by_n[16].status == "ok"


def test_a_case_too_large_for_the_allocator_is_out_of_memory():
    # No injection: n = 2**20 asks numpy for two 4 TiB operands; the allocator refuses.
    job = runner.Job(
        "numpy", "CPU:0", "cpu", build_cases("numpy", "CPU:0", (4, 1 << 20, 16), ["seed"], "float32"), policy=QUICK
    )
    by_n = {r.spec.params["n"]: r for r in runner.run_job(job, case_timeout_s=60).results}
    assert by_n[1 << 20].failure == "out_of_memory" and "Unable to allocate" in by_n[1 << 20].error
    assert by_n[4].status == "ok" and by_n[16].status == "ok"


def test_a_hanging_case_is_killed_at_the_case_timeout(monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_FAULT", "hang:n=8")
    out = runner.run_job(_job(), case_timeout_s=1.5)
    by_n = {r.spec.params["n"]: r for r in out.results}
    assert by_n[8].status == "failed" and by_n[8].failure == "timeout"
    assert "timed out after 1.5 s" in by_n[8].error
    assert by_n[8].wall_s >= 1.5
    assert by_n[16].status == "ok"


def test_a_framework_that_cannot_start_fails_every_case(monkeypatch):
    # A Python that cannot import the child module at all: every case is recorded, none lost.
    monkeypatch.setenv("PYTHONPATH", "/nonexistent")
    from whichdevice.core import process

    monkeypatch.setattr(process.sys, "executable", "/bin/false")
    out = runner.run_job(_job(), case_timeout_s=10)
    assert out.error and "exited with code 1" in out.error
    assert [r.failure for r in out.results] == ["not_started"] * 3


def test_discovery_lists_the_cpu():
    out = runner.run_job(runner.Job("numpy", None, "discover"), case_timeout_s=30)
    assert out.discovery["devices"][0]["name"] == "CPU:0"


def test_case_keys_are_unique_and_stable():
    a = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"n": 1, "mode": "steady"})
    b = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"mode": "steady", "n": 1})
    assert a.key == b.key
    assert TimingPolicy(**QUICK).min_time_s == 0.01


def test_steady_windows_carry_utilization_telemetry():
    out = runner.run_job(_job(sizes=(64,)), case_timeout_s=60)
    (r,) = out.results
    tel = r.timing.telemetry
    assert tel is not None and len(tel.t_s) >= 1
    assert tel.gpu_unavailable  # a CPU window: no GPU asked for
    assert 0 <= max(max(c) for c in tel.cpu_percent_per_core) <= 100


def test_cases_past_the_deadline_are_recorded_as_skipped():
    import time

    job = _job()
    job.deadline = time.time() - 1  # already over budget
    out = runner.run_job(job, case_timeout_s=60)
    assert [r.status for r in out.results] == ["skipped"] * 3  # not measured: no failure
    assert all("budget" in r.error and r.failure == "skipped" for r in out.results)


def test_the_default_memory_limit_follows_a_lower_container_limit(tmp_path, monkeypatch):
    v2 = tmp_path / "memory.max"
    from whichdevice.core import process

    monkeypatch.setattr(process, "CGROUP_LIMIT_FILES", (str(v2), str(tmp_path / "absent")))
    v2.write_text("max\n")  # no container limit: physical RAM
    import psutil

    assert process.usable_memory() == psutil.virtual_memory().total
    v2.write_text(f"{2 << 30}\n")
    assert process.usable_memory() == 2 << 30
    assert process.default_memory_limit() == int(0.9 * (2 << 30))


def _out_lines(tmp_path):
    return "".join(p.read_text() for p in tmp_path.glob("whichdevice-*/out*.jsonl"))


def test_the_child_takes_no_sample_before_the_parents_go(tmp_path, monkeypatch):
    # The parent's work while the child imports (matplotlib) must be over before the
    # child times anything: while the hook runs, long after numpy's import, the child has not
    # even said hello (its timer overhead is measured after the go).
    import time

    monkeypatch.setattr(runner.tempfile, "tempdir", str(tmp_path))
    during = []

    def hook():
        time.sleep(1.5)
        during.append(_out_lines(tmp_path))

    out = runner.run_job(_job(), case_timeout_s=60, while_starting=hook)
    assert during == [""]
    assert [r.status for r in out.results] == ["ok"] * 3


def test_a_warm_child_runs_the_job_it_is_handed_and_leaves_nothing(tmp_path, monkeypatch):
    import os
    import time

    monkeypatch.setattr(runner.tempfile, "tempdir", str(tmp_path))
    warm = runner.start_warm("numpy", "cpu", None)
    time.sleep(1.0)  # it has imported and waits on its stdin, using no CPU
    assert warm.child.poll() is None and _out_lines(tmp_path) == ""
    out = runner.run_job(_job(), case_timeout_s=60, warm=warm)
    assert [r.status for r in out.results] == ["ok"] * 3
    assert out.session is not None
    assert warm.child.poll() is not None and not warm.dir.exists()
    assert not list(tmp_path.iterdir())
    with pytest.raises(ProcessLookupError):
        os.kill(warm.child.pid, 0)


def test_a_warm_child_for_another_job_is_closed_and_a_fresh_child_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(runner.tempfile, "tempdir", str(tmp_path))
    warm = runner.start_warm("numpy", "cpu", 1)  # one thread: not the job's (all cores)
    out = runner.run_job(_job(), case_timeout_s=60, warm=warm)
    assert [r.status for r in out.results] == ["ok"] * 3
    assert warm.child.poll() is not None and not list(tmp_path.iterdir())


def test_an_unused_warm_child_is_closed():
    warm = runner.start_warm("numpy", "cpu", None)
    warm.close()
    assert warm.child.poll() is not None and not warm.dir.exists()
