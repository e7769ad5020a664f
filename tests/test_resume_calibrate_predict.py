"""calibrate and predict: killed with kill -9 in the middle of a real run, then --resume;
--resume with other options, and bad --memory-limit / --case-timeout, refused in one line."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import run_cli

from whichdevice.analysis import deviceprofile
from whichdevice.core.records import CaseSpec
from whichdevice.measure.journal import SUFFIX, Journal


def _start(args):
    return subprocess.Popen(
        [sys.executable, "-m", "whichdevice", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _kill_after_first_result(proc, folder, timeout_s=120):
    """kill -9 the whole run (its process group; the measuring child dies with its parent) once
    its journal holds a finished case; the run must not have finished by then."""
    deadline = time.time() + timeout_s
    while time.time() < deadline and proc.poll() is None:
        journals = list(folder.glob(f"*{SUFFIX}")) if folder.exists() else []
        if journals and '"type": "result"' in journals[0].read_text():
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished (or failed) before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    (journal,) = folder.glob(f"*{SUFFIX}")
    finished = {r.spec.key: r for r in Journal.read(journal).results}
    assert finished
    return journal, finished


def _keys_and_walls(record_path):
    data = json.loads(record_path.read_text())
    keys = [CaseSpec.model_validate(r["spec"]).key for r in data["results"]]
    return data, keys, dict(zip(keys, (r["wall_s"] for r in data["results"])))


@pytest.mark.tf
def test_calibrate_killed_after_its_first_probe_then_resumed(tmp_path, capsys):
    from whichdevice.workloads import calibrate as wl

    out_dir = tmp_path / "res"
    args = [
        "calibrate",
        "--name",
        "resumed-box",
        "--device",
        "CPU:0",
        "--min-time",
        "0.02",
        "--memory-limit",
        "8",
        "--case-timeout",
        "60",
        "--out",
        str(out_dir),
    ]
    journal, finished = _kill_after_first_result(_start(args), out_dir)
    assert not list(out_dir.glob("calibrate-*.json"))  # no record, no profile yet
    assert "resumed-box" not in deviceprofile.saved_names()

    code, out, err = run_cli(["calibrate", "--resume", str(out_dir)], capsys)  # the folder: its journal
    (record,) = [p for p in out_dir.glob("calibrate-*.json") if not p.name.endswith(".profile.json")]
    if code == 1 and "too noisy" in err:  # a busy machine: the record is kept, no profile from noise
        assert "resumed-box" not in deviceprofile.saved_names()
        assert not list(out_dir.glob("*.profile.json")) and not journal.exists()
        assert sorted(_keys_and_walls(record)[1]) == sorted(c.key for c in wl.build_cases("tensorflow", "CPU:0", "cpu"))
        return
    assert code == 0, err
    data, keys, walls = _keys_and_walls(record)
    expected = [c.key for c in wl.build_cases("tensorflow", "CPU:0", "cpu")]
    assert sorted(keys) == sorted(expected)  # every probe exactly once
    assert all(walls[k] == r.wall_s for k, r in finished.items())  # kept as they were, not run again
    assert data["command"][1:] == args  # the original command, not --resume
    assert data["options"]["name"] == "resumed-box" and data["options"]["case_timeout_s"] == 60
    assert data["options"]["memory_limit_gib"] == 8
    # The profile, beside the record and under its name, as a run never interrupted writes it.
    profile_file = record.with_name(record.stem + ".profile.json")
    assert deviceprofile.load(str(profile_file)) == deviceprofile.load("resumed-box")
    assert "whichdevice predict --profile resumed-box" in out
    assert record.with_suffix(".png").exists()
    assert not journal.exists() and not list(out_dir.glob(f"*{SUFFIX}"))  # gone once all is written


@pytest.mark.tf
def test_predict_killed_after_its_first_case_then_resumed_with_the_profile_it_started_with(tmp_path, capsys):
    from whichdevice.workloads import calibrate as wl

    profile_file = tmp_path / "gpu-box.json"
    profile_file.write_text(deviceprofile.dumps(deviceprofile.load("h100")))
    json_file = tmp_path / "res" / "pred.json"
    # batch 8: two cases (its op list, its steady step); killed once the first is journaled
    args = [
        "predict",
        "--profile",
        str(profile_file),
        "--batches",
        "8",
        "--min-time",
        "0.02",
        "--case-timeout",
        "60",
        "--json",
        str(json_file),
    ]
    journal, finished = _kill_after_first_result(_start(args), json_file.parent)
    assert journal == json_file.with_name(f"pred{SUFFIX}") and not json_file.exists()
    original = profile_file.read_text()
    profile_file.unlink()  # the resumed run predicts from the profile as it was read at the start

    code, out, err = run_cli(["predict", "--resume", str(journal)], capsys)
    assert code == 0, err
    data, keys, walls = _keys_and_walls(json_file)
    params = {"model": "seed001"}
    expected = [c.key for c in wl.describe_cases("tensorflow", "CPU:0", params, [8])]
    expected.append(
        CaseSpec(
            workload="train",
            framework="tensorflow",
            device="CPU:0",
            params={**params, "kind": "steady", "batch": 8, "sync": "none"},
        ).key
    )
    assert sorted(keys) == sorted(expected)  # both cases exactly once
    assert all(walls[k] == r.wall_s for k, r in finished.items())  # kept as they were, not run again
    assert all(r["status"] == "ok" for r in data["results"])
    assert data["command"][1:] == args
    assert data["options"]["profile"] == str(profile_file) and data["options"]["profile_json"] == original
    assert data["options"]["batches"] == [8] and data["options"]["model"] == "seed001"
    assert "predicted" in out and "\nAnswer: " in out  # the one per-batch decision (its crossover is in --verbose)
    assert json_file.with_suffix(".png").exists()
    assert not journal.exists()


# ------------------------------------------------------------ refused in one line, nothing written


@pytest.mark.parametrize(
    "argv, option",
    [
        (["calibrate", "--name", "other"], "--name"),
        (["calibrate", "--memory-limit", "4"], "--memory-limit"),
        (["calibrate", "--case-timeout", "30"], "--case-timeout"),
        (["predict", "--profile", "h100"], "--profile"),  # given, even if equal to the default
        (["predict", "--batches", "8"], "--batches"),
        (["predict", "--memory-limit", "4"], "--memory-limit"),
        (["predict", "--quick"], "--quick"),
    ],
)
def test_resume_with_another_option_is_refused(argv, option, tmp_path, capsys):
    journal = Journal.create(
        tmp_path / f"x{SUFFIX}", {"experiment": argv[0], "json_file": str(tmp_path / "x.json"), "options": {}}
    )
    before = journal.path.read_text()
    code, out, err = run_cli(argv + ["--resume", str(journal.path)], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"{option}: --resume reuses the interrupted run's options" in err
    assert journal.path.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == [f"x{SUFFIX}"]


@pytest.mark.parametrize("command", ["calibrate", "predict"])
@pytest.mark.parametrize(
    "args, text",
    [
        (["--memory-limit", "0.1"], "--memory-limit: 0.1 GiB is too small"),
        (["--memory-limit", "lots"], "--memory-limit:"),
        (["--case-timeout", "0"], "--case-timeout:"),
        (["--case-timeout", "soon"], "--case-timeout:"),
    ],
)
def test_bad_limits_are_one_line_exit_2_nothing_written(command, args, text, tmp_path, capsys):
    out_dir = tmp_path / "out"
    code, _, err = run_cli([command, *args, "--out", str(out_dir)], capsys)
    assert code == 2 and text in err and err.count("\n") == 1, err
    assert not out_dir.exists()


def test_a_journal_of_the_other_command_is_refused(tmp_path, capsys):
    journal = Journal.create(tmp_path / f"c{SUFFIX}", {"experiment": "calibrate", "options": {}})
    code, _, err = run_cli(["predict", "--resume", str(journal.path)], capsys)
    assert code == 2 and "journal of `calibrate`, not `predict`" in err
    code, _, err = run_cli(["calibrate", "--resume", str(journal.path)], capsys)  # options it cannot read
    assert code == 2 and "--resume:" in err and "Start a new run" in " ".join(err.split())
    assert journal.path.exists()
