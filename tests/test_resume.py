"""Nothing finished is lost: kill -9 of a whole run at random moments, then --resume."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from conftest import run_cli

from whichdevice.errors import UsageError
from whichdevice.journal import SUFFIX, Journal

SIZES = [8, 16, 24, 32, 48, 64]


def _start(out_dir):
    return subprocess.Popen(
        [sys.executable, "-m", "whichdevice", "matmul", "--framework", "numpy", "--sizes", ",".join(map(str, SIZES)),
         "--min-time", "0.15", "--out", str(out_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_at_a_random_moment_then_resume_completes_every_case_once(tmp_path, capsys, seed):
    out_dir = tmp_path / "res"
    proc = _start(out_dir)
    time.sleep(random.Random(seed).uniform(1.0, 3.5))
    os.killpg(proc.pid, signal.SIGKILL)  # the whole run, as a user's kill -9 or a crash would
    proc.wait()
    journals = list(out_dir.glob(f"*{SUFFIX}"))
    if not journals:  # killed before the journal existed: nothing was finished, nothing to resume
        assert not list(out_dir.glob("*.json")) if out_dir.exists() else True
        return
    before = len(Journal.read(journals[0]).results)
    code, _, err = run_cli(["matmul", "--resume", str(out_dir)], capsys)
    assert code == 0, err
    (record,) = out_dir.glob("matmul-*.json")
    data = json.loads(record.read_text())
    keys = [(r["spec"]["params"]["mode"], r["spec"]["params"]["n"]) for r in data["results"]]
    assert sorted(keys) == sorted((m, n) for m in ("steady", "seed") for n in SIZES)  # each exactly once
    assert all(r["status"] == "ok" for r in data["results"])
    assert not list(out_dir.glob(f"*{SUFFIX}"))  # journal removed once the record is written
    assert before <= len(keys)


def test_truncated_last_line_is_ignored(tmp_path):
    j = Journal.create(tmp_path / f"x{SUFFIX}", {"experiment": "matmul"})
    with open(j.path, "a") as f:
        f.write('{"type": "result", "resu')  # the write a kill interrupted
    state = Journal.read(j.path)
    assert state.results == [] and state.header["experiment"] == "matmul"


def test_bad_resume_targets(tmp_path, capsys):
    with pytest.raises(UsageError, match="no such file"):
        Journal.read(tmp_path / "missing.partial.jsonl")
    with pytest.raises(UsageError, match="holds no unfinished run journals"):
        Journal.read(tmp_path)
    j = Journal.create(tmp_path / f"t{SUFFIX}", {"experiment": "train"})
    with pytest.raises(UsageError, match="journal of `train`"):
        Journal.read(j.path, experiment="matmul")
    code, _, err = run_cli(["matmul", "--resume", str(tmp_path / "nope")], capsys)
    assert code == 2 and "--resume" in err
