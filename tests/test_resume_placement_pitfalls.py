"""`placement` and `pitfalls` resume like `train`: kill -9 of the whole run once its journal
holds what it had finished, then ``--resume`` finishes it (real processes, real TensorFlow)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import run_cli

from whichdevice.analysis.pitfalls import PITFALLS, analyze_pitfalls
from whichdevice.core.records import CaseSpec, load_run
from whichdevice.measure.journal import SUFFIX, Journal


def _start(args, out_dir):
    return subprocess.Popen(
        [sys.executable, "-m", "whichdevice", *args, "--out", str(out_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _kill_once(proc, out_dir, ready, timeout_s=90):
    """kill -9 the whole run (its children too) once its journal satisfies ``ready``; the run
    must not have finished by then, or there would be nothing to resume."""
    deadline = time.time() + timeout_s
    while time.time() < deadline and proc.poll() is None:
        journals = list(out_dir.glob(f"*{SUFFIX}")) if out_dir.exists() else []
        if journals and ready(journals[0].read_text()):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _record(out_dir, experiment):
    (path,) = out_dir.glob(f"{experiment}-*.json")
    data = json.loads(path.read_text())
    return data, [CaseSpec.model_validate(r["spec"]).key for r in data["results"]]


@pytest.mark.tf
def test_placement_killed_before_its_case_then_resumed(tmp_path, capsys):
    """One case per device: no point between two cases, so the run is killed once the
    journal's header is written (the plan), and the resume runs the missing case."""
    out_dir = tmp_path / "res"
    args = ["placement", "--quick", "--steps", "3", "--batch", "16", "--memory-limit", "8", "--case-timeout", "120"]
    proc = _start(args, out_dir)
    _kill_once(proc, out_dir, lambda text: '"type": "header"' in text)
    (journal,) = out_dir.glob(f"*{SUFFIX}")
    state = Journal.read(journal, experiment="placement")
    assert state.results == []  # killed before the case finished
    plan = state.header["options"]
    assert plan["steps"] == 3 and plan["batch"] == 16 and plan["case_timeout_s"] == 120
    assert plan["memory_limit_bytes"] == 8 * 2**30
    code, out, err = run_cli(["placement", "--resume", str(out_dir)], capsys)
    assert code == 0, err
    assert "everything ran on the CPU" in out and "AsString" in out  # rendered as a fresh run is
    data, keys = _record(out_dir, "placement")
    assert keys == [
        CaseSpec(
            workload="train",
            framework="tensorflow",
            device="CPU:0",
            params={"kind": "placement", "model": "seed001", "batch": 16, "steps": 3, "string_op": True},
        ).key
    ]
    (result,) = data["results"]
    assert result["status"] == "ok" and result["metrics"]["profiled_steps"] == 3
    assert data["command"][1:] == args + ["--out", str(out_dir)]  # the original command, not --resume
    o = data["options"]
    assert (o["quick"], o["batch"], o["steps"], o["case_timeout_s"], o["devices"]) == (True, 16, 3, 120, ["CPU:0"])
    assert o["memory_limit_gib"] == 8 and o["model"].startswith("seed001")
    assert not list(out_dir.glob(f"*{SUFFIX}"))  # the journal is gone once the record is written
    assert list(out_dir.glob("placement-*.html"))


@pytest.mark.tf
def test_pitfalls_killed_after_a_finished_case_then_resumed(tmp_path, capsys):
    from whichdevice.workloads import pitfalls as wl

    out_dir = tmp_path / "res"
    args = ["pitfalls", "--quick", "--min-time", "0.02", "--case-timeout", "120"]
    proc = _start(args, out_dir)
    _kill_once(proc, out_dir, lambda text: '"type": "result"' in text)
    (journal,) = out_dir.glob(f"*{SUFFIX}")
    finished = {r.spec.key: r for r in Journal.read(journal, experiment="pitfalls").results}
    main, one = wl.build_cases("tensorflow", "CPU:0", quick=True, is_cpu=True)
    assert finished and len(finished) < len(main) + len(one)  # an intermediate point
    code, out, err = run_cli(["pitfalls", "--resume", str(journal)], capsys)
    assert code == 0, err
    data, keys = _record(out_dir, "pitfalls")
    assert sorted(keys) == sorted(c.key for c in main + one)  # each case exactly once
    assert keys[-1] == one[0].key  # in the order a fresh run gives: the one-thread case last
    assert all(r["status"] == "ok" for r in data["results"]), [r["error"] for r in data["results"]]
    walls = {k: r["wall_s"] for k, r in zip(keys, data["results"])}
    assert all(walls[k] == r.wall_s for k, r in finished.items())  # kept as they were, not run again
    assert data["command"][1:] == args + ["--out", str(out_dir)]
    o = data["options"]
    assert (o["quick"], o["min_time_s"], o["case_timeout_s"], o["cpu_threads"]) == (True, 0.02, 120, None)
    sources = sorted(s["cpu_threads_source"].split(":")[0] for s in data["sessions"])
    assert sources == ["--cpu-threads", "default"]  # both children's sessions, as in a fresh run
    assert not list(out_dir.glob(f"*{SUFFIX}"))
    assert list(out_dir.glob("pitfalls-*.html"))
    # What test_pitfalls.test_every_pitfall_measured_on_the_cpu checks of a fresh run (slow now:
    # a second whole pitfalls run), checked here on the resumed one, which renders as a fresh run.
    (j,) = out_dir.glob("pitfalls-*.json")
    rows = analyze_pitfalls(load_run(j))
    assert {r.pitfall for r in rows} == set(PITFALLS)
    assert all(r.wrong_s > 0 and r.right_s > 0 for r in rows)
    first = next(r for r in rows if r.pitfall == "first_epoch")
    assert first.ratio > 1  # the first epoch carries tracing: it is slower than a steady one
    one = next(s for s in data["sessions"] if s["cpu_threads_source"] == "--cpu-threads")
    assert one["cpu_threads_intra"] == 1  # the one-thread pitfall really ran on one thread
    assert "cannot distort" in out.replace("\n", " ")
    code, out2, _ = run_cli(["report", str(j)], capsys)
    assert code == 0 and "first epoch timed" in out2


@pytest.mark.parametrize(
    "args, option",
    [
        (["placement", "--steps", "5"], "--steps"),
        (["placement", "--memory-limit", "4"], "--memory-limit"),
        (["pitfalls", "--quick"], "--quick"),
        (["pitfalls", "--case-timeout", "60"], "--case-timeout"),
    ],
)
def test_resume_with_another_option_is_refused(tmp_path, capsys, monkeypatch, args, option):
    monkeypatch.chdir(tmp_path)  # default output folders would land here
    code, out, err = run_cli([*args, "--resume", str(tmp_path / f"x{SUFFIX}")], capsys)
    assert code == 2 and err.startswith(f"error: {option}:") and err.strip().count("\n") == 0, err
    assert "--resume" in err and "Traceback" not in out + err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "args, option",
    [
        (["placement", "--memory-limit", "lots"], "--memory-limit"),
        (["placement", "--case-timeout", "0"], "--case-timeout"),
        (["placement", "--resume", "/nonexistent/p.partial.jsonl"], "--resume"),
        (["pitfalls", "--memory-limit", "0.1"], "--memory-limit"),
        (["pitfalls", "--case-timeout", "-1"], "--case-timeout"),
        (["pitfalls", "--resume", "/nonexistent"], "--resume"),
    ],
)
def test_bad_new_options_are_one_line_exit_2(tmp_path, capsys, monkeypatch, args, option):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(args, capsys)
    assert code == 2 and err.startswith("error: ") and option in err and err.strip().count("\n") == 0, err
    assert list(tmp_path.iterdir()) == []


def test_resume_of_another_commands_journal_is_refused(tmp_path, capsys):
    j = Journal.create(tmp_path / f"train-1{SUFFIX}", {"experiment": "train", "options": {}})
    for command in ("placement", "pitfalls"):
        code, _, err = run_cli([command, "--resume", str(j.path)], capsys)
        assert code == 2 and "journal of `train`" in err
    assert j.path.exists()  # not touched


@pytest.mark.tf
@pytest.mark.parametrize("command", ["placement", "pitfalls"])
def test_unknown_gpu_is_refused_before_a_journal_is_written(tmp_path, capsys, command):
    out_dir = tmp_path / "out"
    code, _, err = run_cli([command, "--device", "GPU:9", "--out", str(out_dir)], capsys)
    assert code == 2 and "--device: GPU:9 does not exist on this machine" in err
    assert not out_dir.exists()  # no journal left to resume: nothing was started
