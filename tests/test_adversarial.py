"""What an adversarial pass found, one test (or more) per numbered item.

Real processes where a process is involved: the run that hangs in an injected fault (n=64)
after finishing n=8 (``WHICHDEVICE_FAULT=hang:n=64``) is interrupted by SIGHUP, by a closed
pipe and by Ctrl-C in the Python API; children that fork are run through core.process. Every
process these tests start carries a marker in its environment, and each real-process test
checks that none outlives it. The whole family of cases with expected/observed is
benchmarks/adversarial.py.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path

import pytest
from conftest import run_cli

from whichdevice.core import safeio, textsafe
from whichdevice.core.errors import UsageError
from whichdevice.core.records import CaseSpec, failed, load_run
from whichdevice.core.validate import SettingWarning, parse_positive_float, parse_positive_int
from whichdevice.measure import journal as jm
from whichdevice.measure.journal import SUFFIX, Journal

QUICK = ["matmul", "--framework", "numpy", "--sizes", "10", "--mode", "steady", "--min-time", "0.02"]
HANG = ["matmul", "--framework", "numpy", "--sizes", "8,64", "--mode", "steady", "--min-time", "0.02"]
MARK = f"wdtest-{uuid.uuid4().hex[:10]}"


def _env(tmp_path: Path, **extra: str) -> dict:
    return {
        **os.environ,
        "WHICHDEVICE_HOME": str(tmp_path / "home"),
        "TMPDIR": str(_watched(tmp_path)),
        "WD_TEST_MARK": MARK,
        **extra,
    }


def _watched(tmp_path: Path) -> Path:
    d = tmp_path / "watched-tmp"
    d.mkdir(exist_ok=True)
    return d


def _alive_marked() -> list[int]:
    """Live (not zombie) processes started by these tests."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            if MARK.encode() in (p / "environ").read_bytes():
                if (p / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(p.name))
        except OSError:
            continue
    return found


def _no_leftovers(tmp_path: Path) -> None:
    time.sleep(0.2)
    assert _alive_marked() == [], "a process of the run outlived it"
    assert os.listdir(_watched(tmp_path)) == [], "something was written to TMPDIR"


def _hang_run(tmp_path: Path, out: Path, **popen) -> subprocess.Popen:
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(
        [sys.executable, "-m", "whichdevice", *HANG, "--out", str(out)],
        env=_env(tmp_path, WHICHDEVICE_FAULT="hang:n=64"),
        text=True,
        **popen,
    )


def _wait_result(out: Path, timeout: float = 90) -> Path:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = list(out.glob(f"*{SUFFIX}")) if out.exists() else []
        if found and '"type": "result"' in found[0].read_text():
            return found[0]
        time.sleep(0.05)
    raise AssertionError("the run journaled no result")


# ------------------------------------------------------------ 1: FIFOs and devices are not replaced


def test_json_onto_a_fifo_or_a_device_is_refused_and_left_as_it_is(tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo")
    code, _, err = run_cli([*QUICK, "--json", str(tmp_path / "fifo")], capsys)
    assert code == 2 and "FIFO" in err and err.count("error:") == 1
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    code, _, err = run_cli([*QUICK, "--json", "/dev/null"], capsys)
    assert code == 2 and "device" in err
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode) and not os.path.exists("/dev/null.png")
    os.mkfifo(tmp_path / "x.png")  # the plot beside the record
    code, _, err = run_cli([*QUICK, "--json", str(tmp_path / "x.json")], capsys)
    assert code == 2 and "x.png" in err
    assert sorted(os.listdir(tmp_path)) == ["fifo", "x.png"]


# ------------------------------------------------------------ 2: planted links are never followed


def test_writes_refuse_a_planted_link_and_use_random_temporary_names(tmp_path, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(victim, tmp_path / "r.html")
    with pytest.raises(safeio.NotRegularFile):
        safeio.write_atomic(tmp_path / "r.html", "x")
    os.symlink(victim, tmp_path / ".p.png.tmp.png")  # the old predictable PNG temp name
    os.symlink(victim, tmp_path / f"j{SUFFIX}")
    with pytest.raises(FileExistsError):  # O_EXCL | O_NOFOLLOW
        Journal.create(tmp_path / f"j{SUFFIX}", {"experiment": "matmul"})
    names = []
    real = safeio.create_new
    monkeypatch.setattr(safeio, "create_new", lambda p, *a: names.append(Path(p).name) or real(p, *a))
    safeio.write_atomic(tmp_path / "p.png", b"png")
    safeio.write_atomic(tmp_path / "p.png", b"png2")
    assert victim.read_text() == "precious" and (tmp_path / "p.png").read_bytes() == b"png2"
    assert len(set(names)) == 2 and all(n.startswith(".p.png.") and n.endswith(".wdtmp") for n in names)
    assert not list(tmp_path.glob("*.wdtmp")) and not list(tmp_path.glob(".*.wdtmp"))
    safeio.keep_created()


def test_a_report_file_written_before_a_record_that_fails_is_removed(tmp_path):
    safeio.write_atomic(tmp_path / "a.png", b"x")
    assert safeio.discard_created() == [tmp_path / "a.png"] and not (tmp_path / "a.png").exists()


# ------------------------------------------------------------ 3: one name per run


def test_record_names_are_unique_within_one_second():
    from whichdevice.cli.common import stamp

    names = {stamp() for _ in range(300)}
    assert len(names) > 290  # 16 random bits: a collision in 300 is possible but rare
    assert all(len(n.split("-")) == 3 for n in names)


# ------------------------------------------ 4, 5, 9: SIGHUP, a copied folder, a torn tail, resume


def test_sighup_then_copied_folder_with_a_torn_tail_resumes_next_to_its_journal(tmp_path, capsys):
    out = tmp_path / "r"
    p = _hang_run(tmp_path, out)
    journal = _wait_result(out)
    p.send_signal(signal.SIGHUP)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 129, err
    assert f"--resume {journal}" in " ".join(err.split()) and "Traceback" not in err
    assert not list((tmp_path / "home" / "tmp").glob("run-*"))  # the run's scratch folder is gone
    _no_leftovers(tmp_path)

    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    before = sorted(os.listdir(out))
    copied = copy / journal.name
    with open(copied, "a") as f:
        f.write('{"type": "result", "resu')  # a write cut short by a full disk or a kill
    code, stdout, err = run_cli(["matmul", "--resume", str(copied)], capsys)
    assert code == 0, err
    record = copy / (journal.name[: -len(SUFFIX)] + ".json")
    assert f"Record: {record}" in stdout
    assert sorted(r["spec"]["params"]["n"] for r in json.loads(record.read_text())["results"]) == [8, 64]
    assert sorted(os.listdir(out)) == before  # the original folder untouched


def test_a_torn_tail_is_cut_before_the_next_append_and_a_glued_line_is_read(tmp_path):
    spec = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"n": 8})
    j = Journal.create(tmp_path / f"t{SUFFIX}", {"experiment": "matmul"})
    with open(j.path, "a") as f:
        f.write('{"type": "result", "resu')
    Journal(j.path).add_result(failed(spec, "x", "error", 0.1))
    assert len(Journal.read(j.path).results) == 1 and j.path.read_text().count("\n") == 2
    lines = j.path.read_text().split("\n")
    lines[1] = '{"type": "ses' + lines[1]  # what older versions left: a line glued on a torn one
    j.path.write_text("\n".join(lines))
    assert len(Journal.read(j.path).results) == 1


def test_the_interrupt_line_never_reads_the_journal(tmp_path, capsys):
    from whichdevice.cli import guard

    p = tmp_path / f"bad{SUFFIX}"
    p.write_text("{{{ not a journal\n" * 3)
    monkey = (jm.active, jm.active_experiment)
    jm.active, jm.active_experiment = p, "matmul"
    try:
        assert guard.interrupted_code(130) == 130
    finally:
        jm.active, jm.active_experiment = monkey
    assert f"whichdevice matmul --resume {p}" in " ".join(capsys.readouterr().err.split())


# ------------------------------------------------------------ 5, 6: full disk


def test_a_failed_append_is_cut_back(tmp_path, monkeypatch):
    spec = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"n": 8})
    j = Journal.create(tmp_path / f"f{SUFFIX}", {"experiment": "matmul"})
    real = os.write

    def half(fd, data):
        real(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half)
    with pytest.raises(OSError):
        j.add_result(failed(spec, "x", "error", 0.1))
    monkeypatch.setattr(os, "write", real)
    assert j.path.read_text().endswith("\n") and Journal.read(j.path).results == []


def _tmpfs(folder: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the fault-injected test above covers the journal)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")


def test_full_disk_while_writing_the_report_keeps_the_record_and_says_how_to_draw_it(tmp_path):
    """The record is written first: a disk that fills while the page is drawn costs
    the page, not the measurements; one line names the record and how to draw the page."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    _tmpfs(mnt, "80k")  # the journal and the record fit, the PNG and the HTML page do not
    try:
        r = subprocess.run(
            [sys.executable, "-m", "whichdevice", *QUICK, "--out", str(mnt)],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        (record,) = mnt.glob("*.json")
        assert r.returncode == 1, r.stderr
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and "no space left" in errors[0] and "Traceback" not in r.stderr
        assert f"whichdevice report {record}" in " ".join(r.stderr.split()) and f"Record: {record}" in r.stdout
        assert os.listdir(mnt) == [record.name]  # no journal (the record is complete), no half page
        assert load_run(record).results[0].status == "ok"
        subprocess.run(["mount", "-o", "remount,size=2m", str(mnt)], check=True)
        r = subprocess.run(
            [sys.executable, "-m", "whichdevice", "report", str(record), "--out", str(mnt)],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        assert sorted(p.suffix for p in mnt.iterdir()) == [".html", ".json", ".png"]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    _no_leftovers(tmp_path)


# ------------------------------------------------------------ 7: processes forked by a child

FORKER = """
import subprocess, sys, time
a = subprocess.Popen(["sleep", "300"])
b = subprocess.Popen(["sleep", "301"], start_new_session=True)
print(a.pid, b.pid, flush=True)
time.sleep(1.5)
"""


def test_processes_a_child_forked_end_with_it(tmp_path, monkeypatch):
    from whichdevice.core.process import run_module

    (tmp_path / "forker_mod.py").write_text(FORKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("WD_TEST_MARK", MARK)
    with open(tmp_path / "pids", "w") as out:
        done = run_module("forker_mod", [], timeout_s=30, stdout=out)
    assert done.returncode == 0
    time.sleep(0.2)
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2
    assert _alive_marked() == []  # the grandchild in the group and the one that left it (setsid)


# ------------------------------------------------------------ 8: the API and Ctrl-C

API = """
import faulthandler, signal
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for the stacks if the call hangs
import whichdevice
try:
    whichdevice.matmul(sizes="8,64", modes="steady", framework="numpy", min_time_s=0.02, case_timeout_s=120)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
"""


def _terminal_sigint() -> None:
    """SIGINT as a terminal's Ctrl-C delivers it: default and unblocked in the child, whatever the test
    process inherited (a background job ignores it; test_resume does the same). Two CI rehearsals at this
    stop's code saw the call sleep on through the signal inside the full suite, never alone."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_api_keyboard_interrupt_stops_the_measuring_child(tmp_path):
    p = subprocess.Popen(
        [sys.executable, "-c", API],
        env=_env(tmp_path, WHICHDEVICE_FAULT="hang:n=64"),
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "stderr.txt").open("w"),
        text=True,
        preexec_fn=_terminal_sigint,
    )

    def child_running() -> bool:
        return any(pid != p.pid for pid in _alive_marked())

    end = time.monotonic() + 60
    while not child_running() and time.monotonic() < end:
        time.sleep(0.05)
    assert child_running()
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    try:
        out = p.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:  # seen in CI rehearsals: say where it waits, and leave nothing behind
        masks = [ln for ln in Path(f"/proc/{p.pid}/status").read_text().splitlines() if ln.startswith("Sig")]
        p.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        for pid in _alive_marked():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        p.communicate(timeout=30)
        err = (tmp_path / "stderr.txt").read_text(errors="replace")
        pytest.fail(
            f"the API call did not end within 60 s of Ctrl-C; its signal masks {masks}; its stacks:\n{err[-4000:]}"
        )
    assert "KeyboardInterrupt" in out
    _no_leftovers(tmp_path)


# ------------------------------------------------------------ 9: a reader that quits early


def test_a_reader_that_quits_early_loses_nothing(tmp_path):
    """`whichdevice ... | head -1`: the page is printed once the record is written and the
    journal closed (jobs/running.page_after_record), so the reader quitting costs nothing —
    `run | head -3` was seen exiting 141 with the record unwritten."""
    out = tmp_path / "o"
    p = subprocess.Popen(
        [sys.executable, "-m", "whichdevice", *QUICK, "--out", str(out)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.readline()  # `| head -1`
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert p.returncode in (0, 141), err  # 141: the pipe closed before the last write
    (record,) = out.glob("matmul-*.json")
    assert load_run(record).results and not list(out.glob(f"*{SUFFIX}"))
    assert "--resume" not in err and "Traceback" not in err
    _no_leftovers(tmp_path)


def test_a_record_that_cannot_be_written_prints_no_page(tmp_path, capsys, monkeypatch):
    """The other side of page_after_record: when writing the record fails, the page (which
    would point at files that are gone) is not printed; the error line says how to resume."""
    from whichdevice.core import records as rec_mod

    def full(*a, **k):
        raise OSError(28, "No space left on device", str(tmp_path / "o" / "x.json"))

    monkeypatch.setattr(rec_mod, "save_run", full)
    code, out, err = run_cli([*QUICK, "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and "Report:" not in out and "Record:" not in out
    assert "no space left" in err and "--resume" in " ".join(err.split())


# ------------------------------------------------------------ 10: impossible settings, changed machines


def test_more_threads_than_cores_warns():
    cores = len(os.sched_getaffinity(0))
    with pytest.warns(SettingWarning, match="more than the"):
        assert parse_positive_int(str(cores + 1), "--cpu-threads", "4") == cores + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_positive_int(str(cores), "--cpu-threads", "4")


def test_resume_on_a_machine_with_other_cores_or_versions_warns_and_says_what(tmp_path):
    j = Journal.create(tmp_path / f"m{SUFFIX}", {"experiment": "matmul"})
    lines = j.path.read_text().split("\n")
    header = json.loads(lines[0])
    header["machine"]["cores"] = 96
    header["versions"]["numpy"] = "0.1"
    header["checksum"] = jm._checksum(header)
    j.path.write_text("\n".join([json.dumps(header), *lines[1:]]))
    with pytest.warns(SettingWarning) as seen:
        state = Journal.read(j.path)
    assert any("96 usable cores" in c for c in state.changes) and any("numpy was 0.1" in c for c in state.changes)
    assert len(seen) == len(state.changes) == 2


def test_an_edited_or_foreign_journal_header_is_refused(tmp_path, capsys):
    j = Journal.create(tmp_path / f"e{SUFFIX}", {"experiment": "matmul", "options": {"sizes": [8]}})
    text = j.path.read_text()
    j.path.write_text(text.replace('"sizes": [8]', '"sizes": [99999]'))
    code, _, err = run_cli(["matmul", "--resume", str(j.path)], capsys)
    assert code == 2 and "edited" in err
    header = json.loads(text.split("\n")[0])
    header["tool_version"] = "0.0.1"
    header["checksum"] = jm._checksum(header)
    j.path.write_text(json.dumps(header) + "\n")
    code, _, err = run_cli(["matmul", "--resume", str(j.path)], capsys)
    assert code == 2 and "0.0.1" in err


# ------------------------------------------------------------ 11: control characters


def test_no_control_sequence_from_outside_reaches_the_terminal(tmp_path, capsys):
    from conftest import make_record, timing_of

    from whichdevice.core.records import CaseResult, save_run

    esc = "\x1b]0;OWNED\x07\x1b[2J\x9b31m\x1bc"
    spec = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"n": 8, "mode": "steady"})
    record = make_record(
        [
            CaseResult(spec=spec, status="ok", timing=timing_of(0.01), wall_s=0.1, metrics={"flops_per_call": 1024.0}),
            failed(spec.model_copy(update={"params": {"n": 16, "mode": "steady"}}), f"boom {esc}", "error", 0.1),
        ]
    ).model_copy(update={"notes": [f"a note {esc}"], "command": ["whichdevice", f"matmul{esc}"]})
    save_run(record, tmp_path / "r.json")
    code, out, err = run_cli(["report", str(tmp_path / "r.json"), "--out", str(tmp_path / "o")], capsys)
    assert code == 0, err
    assert not any(c in out + err for c in "\x1b\x07\x9b")
    code, out, err = run_cli(["train", "--model", f"{esc}.py:build"], capsys)
    assert code == 2 and "\x1b" not in err and "\x07" not in err
    assert textsafe.clean(f"a{esc}b\tc\n") == "ab\tc\n"


# ------------------------------------------------------------ inputs


@pytest.mark.parametrize(
    "args, argument",
    [
        (["--sizes", "١٢"], "--sizes"),
        (["--sizes", "１０"], "--sizes"),
        (["--sizes", "9" * 5000], "--sizes"),
        (["--cpu-threads", "٤"], "--cpu-threads"),
        (["--case-timeout", "1e300"], "--case-timeout"),
        (["--memory-limit", "1e30"], "--memory-limit"),
    ],
)
def test_numbers_at_the_limits_and_non_ascii_digits(tmp_path, capsys, args, argument):
    os.chdir(tmp_path)
    code, _, err = run_cli([*QUICK, *args], capsys)
    assert code == 2 and argument in err and err.count("error:") == 1, err
    assert os.listdir(tmp_path) == []


def test_float_parsing_refuses_what_python_would_accept():
    for text in ("１", "0x1p3", "1e309", "1e-400", "nan", "1e300"):
        with pytest.raises(UsageError):
            parse_positive_float(text, "--min-time", "0.2")
    assert parse_positive_float("0.25", "--min-time", "0.2") == 0.25


def test_non_regular_and_huge_records_and_journals_are_refused_at_once(tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo.json")
    with open(tmp_path / "big.json", "wb") as f:
        f.truncate(2**30)
    os.symlink(tmp_path / "loop2.json", tmp_path / "loop1.json")
    os.symlink(tmp_path / "loop1.json", tmp_path / "loop2.json")
    t0 = time.monotonic()
    for target, words in (
        (tmp_path / "fifo.json", "FIFO"),
        ("/dev/zero", "device"),
        (tmp_path / "big.json", "MiB"),
        (tmp_path / "loop1.json", "symbolic links"),
        ("x" * 5000 + ".json", "too long"),
    ):
        code, _, err = run_cli(["report", str(target)], capsys)
        assert code == 2 and words in err and err.count("error:") == 1, err
    os.mkfifo(tmp_path / f"j{SUFFIX}")
    code, _, err = run_cli(["matmul", "--resume", str(tmp_path / f"j{SUFFIX}")], capsys)
    assert code == 2 and "FIFO" in err
    code, _, err = run_cli(["matmul", "--resume", str(tmp_path)], capsys)  # a folder with only a FIFO journal
    assert code == 2 and "no unfinished" in err
    for target, words in ((tmp_path / "fifo.json", "FIFO"), ("/dev/zero", "device"), (tmp_path / "big.json", "MiB")):
        code, _, err = run_cli(["audit", str(target), "--out", str(tmp_path / "a")], capsys)  # SCRIPT
        assert code == 2 and words in err and "SCRIPT" in err, err
    assert not (tmp_path / "a").exists()
    assert time.monotonic() - t0 < 20  # nothing waited on a writer or read a gigabyte


@pytest.mark.parametrize(
    "literal", ['"samples_s": [NaN]', '"samples_s": [Infinity]', '"samples_s": [-0.5]', '"samples_s": [0.0]']
)
def test_records_with_impossible_times_are_refused(tmp_path, capsys, literal):
    from conftest import make_record, timing_of

    from whichdevice.core.records import CaseResult, save_run

    spec = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={"n": 8, "mode": "steady"})
    save_run(make_record([CaseResult(spec=spec, status="ok", timing=timing_of(0.01), wall_s=0.1)]), tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    data["results"][0]["timing"]["samples_s"] = "MARKER"
    (tmp_path / "r.json").write_text(json.dumps(data).replace('"samples_s": "MARKER"', literal))
    code, _, err = run_cli(["report", str(tmp_path / "r.json")], capsys)
    assert code == 2 and "RESULT" in err and err.count("error:") == 1, err


def test_a_damaged_history_database_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path))
    (tmp_path / "history.sqlite").write_bytes(b"not a database " * 100)
    code, _, err = run_cli(["history"], capsys)
    assert code == 1 and "history.sqlite" in err and err.count("error:") == 1 and "Traceback" not in err


# ============================================================ Reliability III


def _brute_median_ci(xs: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """The definition, rank by rank (the code before the sorted-samples speed-up)."""
    import math

    s, n, best = sorted(xs), len(xs), None
    for j in range(1, n // 2 + 1):
        if sum(math.comb(n, i) for i in range(j, n - j + 1)) / 2**n < confidence:
            break
        best = (s[j - 1], s[n - j])
    return best


def test_median_interval_is_the_binomial_one_and_scales():
    """43.3: the interval grew as n⁴ (1,000 samples 7.8 s); now the same interval in milliseconds."""
    import random

    from whichdevice.core import stats

    rng = random.Random(43)
    for n in [*range(0, 80), 101, 250]:
        xs = [rng.lognormvariate(0, 0.3) for _ in range(n)]
        for confidence in (0.95, 0.99, 0.5):
            assert stats.median_ci(xs, confidence) == _brute_median_ci(xs, confidence), (n, confidence)
    xs = [rng.random() for _ in range(1000)]
    t0 = time.process_time()
    lo, hi = stats.median_ci(xs)
    assert time.process_time() - t0 < 0.5
    s = sorted(xs)
    assert (lo, hi) == (s[468], s[531])  # ranks 469 and 532 of 1,000 (Conover's table, 95 %)
    big = [rng.random() for _ in range(200_001)]  # beyond the exact sums: the float walk
    assert stats.median_ci(big) is not None


def _many_samples_record(path: Path, n: int) -> Path:
    from conftest import make_record

    from whichdevice.core.records import CaseResult, Timing, save_run

    rows = []
    for size, dev in ((64, "CPU:0"), (64, "GPU:0"), (256, "CPU:0"), (256, "GPU:0")):
        base = 1e-4 * size / (4 if dev == "GPU:0" else 1)
        xs = [base * (1 + 0.01 * ((i * 7919) % 101) / 101) for i in range(n)]
        spec = CaseSpec(workload="matmul", framework="numpy", device=dev, params={"n": size, "mode": "steady"})
        t = Timing(
            first_call_s=base,
            warmup_s=[base],
            samples_s=xs,
            number_per_sample=1,
            overhead_s=0.0,
            stop_reason="sample cap",
        )  # a capped point: its interval is drawn in the warnings
        rows.append(CaseResult(spec=spec, status="ok", timing=t, wall_s=1.0, metrics={"flops_per_call": 2.0 * size**3}))
    save_run(make_record(rows), path)
    return path


def test_report_and_compare_of_3000_samples_per_point_are_quick(tmp_path, capsys):
    """43.3: a record of 3,000 samples per point did not finish `report` in 100 s."""
    rec = _many_samples_record(tmp_path / "r.json", 3000)
    t0 = time.process_time()
    code, out, err = run_cli(["report", str(rec), "--markdown"], capsys)
    assert code == 0, err
    code, out, err = run_cli(["compare", str(rec), str(rec)], capsys)
    assert code == 0, err
    assert time.process_time() - t0 < 10


def _wd(args: list, tmp_path: Path, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whichdevice", *args],
        cwd=tmp_path,
        env=_env(tmp_path, COLUMNS="120", **extra),
        capture_output=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_an_ascii_terminal_and_a_name_that_is_not_utf8_lose_nothing(tmp_path):
    """43.4: on PYTHONIOENCODING=ascii every page crashed at the first '·' or '—'; an --out whose
    name is not UTF-8 crashed writing the HTML after measuring, and no record was written."""
    p = _wd([*QUICK, "--out", "o"], tmp_path, PYTHONIOENCODING="ascii")
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-600:]
    p.stdout.decode("ascii")  # plain characters only
    assert b"Record: " in p.stdout and len(list((tmp_path / "o").glob("*.json"))) == 1
    rec = next((tmp_path / "o").glob("*.json"))
    p = _wd(["report", str(rec), "--markdown"], tmp_path, PYTHONIOENCODING="latin-1")
    assert p.returncode == 0 and b"Traceback" not in p.stderr
    odd = os.fsdecode(b"o\xff")
    p = _wd([*QUICK, "--out", odd], tmp_path)
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-600:]
    written = sorted(f.suffix for f in (tmp_path / odd).iterdir())
    assert written == [".html", ".json", ".png"]  # no journal left: the run is complete
    _no_leftovers(tmp_path)


def test_a_page_that_cannot_be_drawn_keeps_the_record(tmp_path, capsys, monkeypatch):
    """43.4: the record is written before the page; a page that fails says where the record is."""
    from whichdevice.jobs import running

    def broken(*a, **k):
        raise UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(running, "page", broken)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    code, out, err = run_cli([*QUICK, "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and err.count("error:") == 1 and "whichdevice report" in err, err
    records = list((tmp_path / "o").glob("*.json"))
    assert len(records) == 1 and f"Record: {records[0]}" in out
    assert load_run(records[0]).results and not list((tmp_path / "o").glob(f"*{SUFFIX}"))


def test_stdout_closed_is_one_line(tmp_path):
    """43.7: `whichdevice ... >&-` (stdout closed, as in cron) ended in a traceback."""
    p = subprocess.run(
        f"{sys.executable} -m whichdevice {' '.join(QUICK)} --out o >&-",
        shell=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=False,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("error:") == 1 and "standard output" in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()


def _holds_open(pid: int, path: Path, timeout: float = 60) -> bool:
    """Whether process ``pid`` opens ``path`` (its lock) within ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            return False
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                    return True
            except OSError:
                continue
        time.sleep(0.05)
    return False


def test_a_second_resume_of_one_journal_is_refused_before_it_measures(tmp_path):
    """43.5: two `--resume` of one journal side by side both measured and both wrote the record
    (or the second failed at the end on a journal the first had removed)."""
    out = tmp_path / "o"
    first = _hang_run(tmp_path, out)
    try:
        journal = _wait_result(out)
        t0 = time.monotonic()
        p = _wd(["matmul", "--resume", str(journal)], tmp_path, timeout=60)  # while the run goes on
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("error:") == 1 and "--resume" in err and "in use" in err, err
        assert time.monotonic() - t0 < 30 and '"type": "session"' not in err
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
        resuming = subprocess.Popen(
            [sys.executable, "-m", "whichdevice", "matmul", "--resume", str(journal)],
            cwd=tmp_path,
            env=_env(tmp_path, WHICHDEVICE_FAULT="hang:n=64"),  # this one hangs again, holding the journal
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert _holds_open(resuming.pid, journal), "the resume never opened its journal"
        p = _wd(["matmul", "--resume", str(journal)], tmp_path, timeout=60)
        assert p.returncode == 2 and "in use" in p.stderr.decode(), p.stderr.decode()
        resuming.send_signal(signal.SIGTERM)
        resuming.communicate(timeout=60)
        p = _wd(["matmul", "--resume", str(journal)], tmp_path, timeout=120)  # now alone: it finishes
        assert p.returncode == 0, p.stderr.decode()[-500:]
        assert len(list(out.glob("*.json"))) == 1 and not journal.exists()
    finally:
        for proc in (first, locals().get("resuming")):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    _no_leftovers(tmp_path)


DAEMON = """
import os, sys, time
pid = os.fork()
if pid == 0:  # the classic daemon: fork, setsid, fork again, the middle one exits
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "300"])
    os._exit(0)
os.waitpid(pid, 0)
print("daemon started", flush=True)
"""


def test_a_double_forked_setsid_daemon_ends_with_the_child(tmp_path, monkeypatch):
    """43.1: a model whose build() starts a daemon (double fork + setsid) left processes behind:
    the clean-up covered the process group and what the last one-second scan saw."""
    from whichdevice.core import process

    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_CHILD_SUBREAPER is Linux only")
    (tmp_path / "daemon_mod.py").write_text(DAEMON)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("WD_TEST_MARK", MARK)
    for _ in range(3):
        with open(tmp_path / "said", "w") as out:
            done = process.run_module("daemon_mod", [], timeout_s=30, stdout=out)
        assert done.returncode == 0 and "daemon started" in (tmp_path / "said").read_text()
        assert _alive_marked() == [], "the daemon outlived the child"
    assert not [p for p in psutil_children() if p.status() == "zombie"], "an adopted process was not reaped"


def psutil_children():
    import psutil

    return psutil.Process().children()


ORPHANED = """
import sys
from whichdevice.core.process import run_module
print("started", flush=True)
run_module("sleeper_mod", [], timeout_s=300)
"""


def test_children_die_when_whichdevice_is_killed(tmp_path):
    """43.1: a script that SIGKILLs whichdevice left the audit child running until its own
    timeout (600 s by default): every child now has PR_SET_PDEATHSIG."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux only")
    (tmp_path / "sleeper_mod.py").write_text("import time\ntime.sleep(300)\n")
    env = _env(tmp_path, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    parent = subprocess.Popen([sys.executable, "-c", ORPHANED], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "started"
        end = time.monotonic() + 30
        while len(_alive_marked()) < 2 and time.monotonic() < end:
            time.sleep(0.05)
        assert len(_alive_marked()) == 2  # whichdevice and its child
    finally:
        parent.kill()
        parent.communicate()
    end = time.monotonic() + 10
    while _alive_marked() and time.monotonic() < end:
        time.sleep(0.05)
    left = _alive_marked()
    for pid in left:  # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert left == [], "the child outlived whichdevice"


@pytest.mark.parametrize("nb", ["list", "deep"])
def test_hostile_notebooks_are_one_line(tmp_path, capsys, nb):
    """43.7: a notebook cell whose source is a list of numbers, or a notebook nested 100,000
    levels deep, ended in a traceback."""
    path = tmp_path / f"{nb}.ipynb"
    if nb == "list":
        cell = {"cell_type": "code", "source": [1, 2, 3], "metadata": {}, "outputs": []}
        path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run_cli(["audit", str(path), "--out", str(tmp_path / "a")], capsys)
    assert code == 2 and err.count("error:") == 1 and "SCRIPT" in err and "Traceback" not in err, err
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("kind", ["a file", "under a file", "cache is a file"])
def test_an_unusable_whichdevice_home_is_one_line(tmp_path, capsys, monkeypatch, kind):
    """43.7: an unusable WHICHDEVICE_HOME ended every run with matplotlib's 'Exception ignored
    in atexit callback' traceback."""
    (tmp_path / "f").write_text("")
    home = {"a file": tmp_path / "f", "under a file": tmp_path / "f" / "h", "cache is a file": tmp_path / "h"}[kind]
    if kind == "cache is a file":
        home.mkdir()
        (home / "cache").write_text("")
    monkeypatch.setenv("WHICHDEVICE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli([*QUICK, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.count("error:") == 1 and "WHICHDEVICE_HOME" in err, err
    assert not (tmp_path / "o").exists()


def test_keras_writes_its_config_into_the_run_not_the_home(tmp_path, monkeypatch):
    """43.8: importing Keras created ~/.keras/keras.json in a fresh HOME, even for a torch model
    and for a refused input. The run gets its own KERAS_HOME; the user's keras.json is copied in
    and their downloads are linked."""
    from whichdevice.cli import guard

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    monkeypatch.setenv("HOME", str(fresh))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "wd"))
    undo = guard.install()
    try:
        keras_home = Path(os.environ["KERAS_HOME"])
        assert keras_home.parent == Path(os.environ["TMPDIR"]) and keras_home.is_dir()  # in the run's scratch
        done = subprocess.run(
            [sys.executable, "-c", "import keras.src.backend.config as c; print(c.keras_home())"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and done.stdout.strip() == str(keras_home), done.stderr[-300:]
    finally:
        undo()
    assert os.listdir(fresh) == [] and "KERAS_HOME" not in os.environ and not keras_home.exists()
    (fresh / ".keras" / "datasets").mkdir(parents=True)
    (fresh / ".keras" / "keras.json").write_text('{"floatx": "float16"}')
    undo = guard.install()
    try:
        keras_home = Path(os.environ["KERAS_HOME"])
        assert (keras_home / "keras.json").read_text() == '{"floatx": "float16"}'
        assert (keras_home / "datasets").resolve() == (fresh / ".keras" / "datasets").resolve()
    finally:
        undo()
    assert (fresh / ".keras" / "datasets").is_dir()  # the scratch's removal did not follow the link


EVIL_OUTPUT = r"""
import sys
print("plain line")
print("title \x1b]0;OWNED\x07 clear \x1b[2J\x1bc clip \x1b]52;c;ZXZpbA==\x07 end")
sys.stdout.write("cut \x1b]0;SPLIT"); sys.stdout.flush()
sys.stdout.write("TITLE\x07 after\n"); sys.stdout.flush()
sys.stdout.write("progress 50%\r"); sys.stdout.flush()
print("progress 100%")
print("err \x1b[31mred\x1b[0m \x9b2J", file=sys.stderr)
"""


def test_the_audit_passes_the_scripts_text_through_without_control_sequences(tmp_path):
    """43.10: `audit` passed the script's output through raw: terminal-title, screen-clear and
    clipboard-write (OSC 52) sequences reached the user's terminal."""
    (tmp_path / "evil.py").write_text(EVIL_OUTPUT)
    p = _wd(["audit", "evil.py", "--out", "a", "--no-rerun"], tmp_path, timeout=180)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, err[-500:]
    for seq in ("\x1b", "\x07", "\x9b"):
        assert seq not in out and seq not in err
    assert "plain line" in out and "title  clear  clip  end" in out and "cut  after" in out
    assert "progress 50%\rprogress 100%" in out and "err red" in err  # text, newlines and \r pass
    assert len(list((tmp_path / "a").glob("audit-*.json"))) == 1
    _no_leftovers(tmp_path)


def test_stream_cleaner_holds_a_sequence_cut_across_pieces():
    from whichdevice.core.textsafe import StreamCleaner

    text = "a\x1b]0;T\x07b\x1b[2Jc\x1b]52;c;Zm9v\x1b\\d\x9b31me\n\x1bcf\x1b"
    for size in (1, 2, 3, 7, len(text)):
        c = StreamCleaner()
        got = "".join(c.feed(text[i : i + size]) for i in range(0, len(text), size)) + c.close()
        assert got == "abcde\nf", (size, got)


def test_report_writes_nothing_beside_the_record_unless_asked(tmp_path, capsys):
    """43.8: `whichdevice report RECORD` wrote an HTML and PNGs beside the record on every call
    (-report.html, -report-2.html, ...), into a reference folder or a read-only checkout."""
    rec = _many_samples_record(tmp_path / "r.json", 20)
    for _ in range(2):
        code, out, err = run_cli(["report", str(rec)], capsys)
        assert code == 0 and "Matrix multiply" in out and "Report:" not in out and "Plot:" not in out, err
    assert os.listdir(tmp_path) == ["r.json"]
    code, out, _ = run_cli(["report", str(rec), "--html"], capsys)
    assert code == 0 and sorted(os.listdir(tmp_path)) == ["r.html", "r.json", "r.png"]
    assert f"Report: {tmp_path / 'r.html'}" in out


THREAD_LEFT_RUNNING = """
import threading, time
def build():
    threading.Thread(target=time.sleep, args=(600,)).start()  # not a daemon: Python waits for it at exit
    raise ValueError("my model is not ready")
"""

MEMORY_HOG = """
import time
HELD = []
def build():
    HELD.append(b"x" * (1536 * 2**20))  # 1.5 GiB, touched
    time.sleep(300)  # held past the pre-flight's own timeout: only a limit ends it early
    raise ValueError("held memory for 300 s")
"""


def test_the_preflight_does_not_wait_on_a_thread_the_user_left_running(tmp_path):
    """43.6: a non-daemon thread in build() cost the pre-flight its whole time limit (180 s), and
    the message blamed the time."""
    pytest.importorskip("torch")
    (tmp_path / "m.py").write_text(THREAD_LEFT_RUNNING)
    t0 = time.monotonic()
    p = _wd(["diagnose", "--framework", "torch", "--model", "m.py:build", "--budget", "20"], tmp_path, timeout=150)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("error:") == 1 and "my model is not ready" in err, err[-800:]
    assert time.monotonic() - t0 < 90
    _no_leftovers(tmp_path)


def test_the_memory_limit_holds_the_preflight_and_is_named(tmp_path):
    """43.2: with --memory-limit 2 the pre-flight held 5.9 GB for 180 s, and the error blamed the
    time. Now the run's limit holds the pre-flight, and the line says the memory limit stopped it.

    What stopped it is read from the line, not from the clock: "stopped by --memory-limit" is
    said only where the parent killed the pre-flight over the limit (core.process.Finished.stopped
    is "memory"). The function holds its memory for 300 s, past the pre-flight's timeout at
    --budget 150 (0.6 x 150 + 30 = 120 s), which would otherwise stop it and name the time. The
    wall bound (60 s, torch's import included, on a loaded 2-core machine) is half that timeout."""
    pytest.importorskip("torch")
    (tmp_path / "m.py").write_text(MEMORY_HOG)
    args = ["diagnose", "--framework", "torch", "--model", "m.py:build", "--memory-limit", "0.75", "--budget", "150"]
    t0 = time.monotonic()
    p = _wd(args, tmp_path, timeout=150)
    took = time.monotonic() - t0
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("error:") == 1, err[-800:]
    assert "error: --model:" in err and "stopped by --memory-limit 0.75 GiB" in err and "held memory" not in err, err
    assert "timed out" not in err, err[-800:]
    assert "--batch or --samples" in err and "after --" not in err, err[-800:]  # the options it has, not a script's
    assert took < 60, f"{took:.1f} s: the pre-flight's timeout (120 s), not the memory limit, may have stopped it"
    _no_leftovers(tmp_path)


# ------------------------------------------------------------ A new family: processes that try to escape
# Each module runs as a child through core.process (as the pre-flight, a measuring child and the
# audit child do) and leaves a process behind in its own way; none may outlive the child.

_SLEEP = 'os.execvp("sleep", ["sleep", "300"])'
ESCAPES = {
    "double fork + setsid, at once": f"""
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        {_SLEEP}
    os._exit(0)
""",
    "triple fork, setsid twice": f"""
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            {_SLEEP}
        os._exit(0)
    os._exit(0)
""",
    "setpgid: a group of its own, same session": f"""
import os
if os.fork() == 0:
    os.setpgid(0, 0)
    if os.fork() == 0:
        {_SLEEP}
    os._exit(0)
""",
    "ignores SIGTERM and SIGHUP": """
import os, signal, subprocess
subprocess.Popen(["sh", "-c", "trap '' TERM HUP; exec sleep 300"], start_new_session=True)
""",
    "nohup sh -c 'sleep &' (the shell exits)": """
import subprocess
subprocess.run(["sh", "-c", "nohup setsid sleep 300 >/dev/null 2>&1 &"], check=True)
""",
    "20 daemons in a loop": f"""
import os
for _ in range(20):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            {_SLEEP}
        os._exit(0)
""",
    "from a thread, start_new_session": """
import subprocess, threading
t = threading.Thread(target=lambda: subprocess.Popen(["sleep", "300"], start_new_session=True))
t.start(); t.join()
""",
    "a detached parent that forks the daemon later": f"""
import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(0.3)  # after the child has ended
    if os.fork() == 0:
        {_SLEEP}
    os._exit(0)
""",
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_no_process_escapes_the_child_that_started_it(tmp_path, monkeypatch, name):
    from whichdevice.core import process

    if not sys.platform.startswith("linux"):
        pytest.skip("the subreaper is Linux only")
    (tmp_path / "escape_mod.py").write_text(ESCAPES[name])
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("WD_TEST_MARK", MARK)
    done = process.run_module("escape_mod", [], timeout_s=30)
    assert done.returncode == 0
    left = _alive_marked()
    for pid in left:  # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"{len(left)} processes escaped"


def test_an_audited_script_that_starts_a_daemon_leaves_nothing(tmp_path):
    """43.1: an audited script doing a double fork + setsid left one process behind."""
    (tmp_path / "s.py").write_text("import os\n" + ESCAPES["double fork + setsid, at once"] + "\nprint('done')\n")
    p = _wd(["audit", "s.py", "--out", "a", "--no-rerun"], tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr.decode()[-500:]
    _no_leftovers(tmp_path)


@pytest.mark.parametrize("option", ["--out", "--json"])
def test_an_output_path_with_a_line_break_is_refused(tmp_path, capsys, monkeypatch, option):
    """43.10: a newline in --out broke the `grep '^Record: '` contract."""
    monkeypatch.chdir(tmp_path)
    value = str(tmp_path / ("a\nb" if option == "--out" else "a\nb.json"))
    code, _, err = run_cli([*QUICK, option, value], capsys)
    assert code == 2 and err.count("error:") == 1 and option in err and "line break" in err, err
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------ The argument really at fault

KERAS_MODEL = """
import keras, tensorflow as tf

def build():
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return m

def graph_loss(y_true, y_pred):
    tf.debugging.assert_less(tf.reduce_max(y_pred), -1e9, message="my loss refuses these predictions")
    return tf.reduce_mean(y_pred)

def python_loss(y_true, y_pred):
    raise ValueError("my loss is not ready")

def build_graph_loss():
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    m.compile(optimizer="sgd", loss=graph_loss)
    return m

def build_python_loss():
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    m.compile(optimizer="sgd", loss=python_loss)
    return m
"""

KERAS_DATA = """
import numpy as np, tensorflow as tf

def empty():
    return tf.data.Dataset.from_tensor_slices((np.zeros((0, 4), "float32"), np.zeros((0,), "int64")))

def good():
    return tf.data.Dataset.from_tensor_slices((np.zeros((64, 4), "float32"), np.zeros((64,), "int64"))).batch(8)
"""


def _keras_preflight(tmp_path: Path, build: str, data: str | None):
    from whichdevice.frameworks.common import modelscript
    from whichdevice.frameworks.common.userload import UserFileError

    (tmp_path / "km.py").write_text(KERAS_MODEL)
    (tmp_path / "kd.py").write_text(KERAS_DATA)
    try:  # what the script diagnose --model writes does first
        modelscript.prepare(str(tmp_path / "km.py"), build, data=(str(tmp_path / "kd.py"), data) if data else None)
    except UserFileError as e:
        return e
    raise AssertionError("the pre-flight passed")


def test_an_empty_data_set_names_data_not_the_model(tmp_path):
    e = _keras_preflight(tmp_path, "build", "empty")
    assert e.argument == "--data"
    assert "your --data function empty() returned an empty dataset" in e.problem
    assert "StopIteration" not in e.problem


@pytest.mark.parametrize(
    ("build", "said"),
    [("build_graph_loss", "my loss refuses these predictions"), ("build_python_loss", "my loss is not ready")],
)
def test_a_loss_that_raises_shows_its_own_error_and_names_the_compile(tmp_path, build, said):
    e = _keras_preflight(tmp_path, build, "good")
    assert e.argument == "--model", str(e)
    assert said in e.problem and "your loss" in e.problem and "'km.py' line" in e.problem
    assert "Graph execution error" not in str(e)
    assert "compile()" in e.fix and "--data" not in e.fix


TORCH_MODELS = """
import torch

class ToCuda(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.l(x.cuda())

class Greedy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 3)

    def forward(self, x):
        if x.shape[0] > 2:  # the step at the run's batch: 4 TiB, more than any machine
            torch.empty(2**40, dtype=torch.float32)
        return self.l(x)

def cuda_forward():
    return ToCuda()

def greedy():
    return Greedy()
"""


def _torch_preflight(tmp_path: Path, build: str):
    from whichdevice.frameworks.common.userload import UserFileError
    from whichdevice.frameworks.torch import modelscript

    (tmp_path / "tm.py").write_text(TORCH_MODELS)
    try:  # what the script diagnose --model writes does first
        modelscript.prepare(str(tmp_path / "tm.py"), build, input_shape=(4,), classes=3, samples=64, batch=16)
    except UserFileError as e:
        return e
    raise AssertionError("the pre-flight passed")


def test_cuda_in_forward_names_the_models_code_not_the_input_shape(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: .cuda() works")
    e = _torch_preflight(tmp_path, "cuda_forward")
    assert e.argument == "--model", str(e)
    assert "forward moves tensors to CUDA" in e.problem and "'tm.py' line 10, in forward" in e.problem
    assert "x.device" in e.fix and "--input-shape" not in e.fix


def test_an_out_of_memory_step_names_memory_not_the_classes(tmp_path):
    pytest.importorskip("torch")
    e = _torch_preflight(tmp_path, "greedy")
    assert e.argument == "--batch", str(e)
    assert "at batch 16 ran out of memory" in e.problem
    assert "--memory-limit" in e.fix and "--classes" not in str(e)


FD_EATER = """
import os
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError as e:
    print("out of descriptors after", len(held), e.errno)
print("done")
"""


def _low_fd_limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (512, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def test_an_audited_script_that_uses_up_its_file_descriptors_is_recorded(tmp_path):
    """43.7: the audit child itself crashed (its next import could not open a file) and left no
    state: now it is recorded, one note says so, and the script's own run is audited."""
    (tmp_path / "s.py").write_text(FD_EATER)
    p = subprocess.run(
        [sys.executable, "-m", "whichdevice", "audit", "s.py", "--out", "a", "--no-rerun"],
        cwd=tmp_path,
        env=_env(tmp_path, COLUMNS="200"),
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        preexec_fn=_low_fd_limit,
    )
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, err[-800:]
    assert "Traceback" not in err and "left no state" not in out
    notes = [ln for ln in out.splitlines() if "ran out of file descriptors" in ln]
    assert len(notes) == 1 and "512" in notes[0], out
    record = json.loads(next((tmp_path / "a").glob("*.json")).read_text())
    assert record["exit_code"] == 0 and record["script_s"] is not None
    assert any("ran out of file descriptors" in n for n in record["notes"])


# ------------------------------------------------------------ A hang inside a budget


def test_a_hang_in_a_budgeted_job_ends_with_the_budget_and_says_it_hung(monkeypatch):
    """43.10: a case that hung spent the 60 s case timeout inside a 20 s budget; now a budgeted
    job's case timeout is what the budget left (at least MIN_BUDGETED_CASE_S, here 1 s)."""
    from whichdevice.measure import runner
    from whichdevice.workloads.matmul import build_cases

    monkeypatch.setenv("WHICHDEVICE_FAULT", "hang:n=8")
    monkeypatch.setattr(runner, "MIN_BUDGETED_CASE_S", 1.0, raising=False)
    quick = {"min_time_s": 0.01, "warmup_calls": 0, "min_samples": 2, "max_samples": 5, "target_blocks": 2}
    cases = build_cases("numpy", "CPU:0", (8, 16), ["steady"], "float32")
    job = runner.Job("numpy", "CPU:0", "cpu", cases, policy=quick, deadline=time.time() + 2.0)
    t0 = time.monotonic()
    out = runner.run_job(job, case_timeout_s=60)
    took = time.monotonic() - t0
    hung = next(r for r in out.results if r.spec.params["n"] == 8)
    assert hung.status == "failed" and hung.failure == "timeout", hung
    assert took < 20 and hung.wall_s < 10, (took, hung.wall_s)
    assert "the case hung" in hung.error and "--budget" not in hung.error and "--case-timeout" not in hung.error


def test_cases_skipped_after_a_hang_do_not_ask_for_more_budget():
    """43.10: the answer said 'the time budget ran out before them (raise --budget)' when a case
    had hung and taken the budget: it names the case that did not end instead."""
    from whichdevice.analysis.suite import answer_cases, suite_verdict
    from whichdevice.present.firstscreen import first_screen, warnings_line

    record = load_run(Path(__file__).parent / "data" / "run_cpu_2core.json")
    deciding = {id(r) for r in answer_cases(record)}
    first_other = next(i for i, r in enumerate(record.results) if id(r) not in deciding)
    results = []
    for i, r in enumerate(record.results):
        if id(r) in deciding:
            r = failed(r.spec, "skipped: the time budget (--budget) ran out before this case", "skipped", 0.0)
        elif i == first_other:
            r = failed(
                r.spec,
                "timed out after 17 s (all the time budget had left when it began): the case hung",
                "timeout",
                17.0,
            )
        results.append(r)
    record = record.model_copy(update={"results": results})
    fs = first_screen(record, suite_verdict(record))
    assert fs.answer[0].startswith("Not measured"), fs.answer
    assert "did not end" in fs.answer[0] and "timed out after 17 s" in fs.answer[0]
    assert "raise --budget" not in fs.answer[0] and "raise --budget" not in warnings_line(fs)


def test_medians_of_a_many_sample_record_sort_each_point_once():
    """43.3 (rest): analysis/significance._median sorted its samples at every call (0.4 s of a
    3,000-sample report); it now uses the kept sorted list, which holds a 118-point record."""
    import random

    from whichdevice.analysis import significance
    from whichdevice.core import stats

    rng = random.Random(3)
    points = [[rng.random() for _ in range(3000 + i % 2)] for i in range(118)]
    stats._SORTED.clear()
    stats._sorted_held = 0
    for xs in points:
        s = sorted(xs)
        k = len(s)
        plain = s[k // 2] if k % 2 else 0.5 * (s[k // 2 - 1] + s[k // 2])
        assert significance._median(xs) == plain
    assert all(tuple(xs) in stats._SORTED for xs in points), "a point's sorted samples were not kept"


# ------------------------------------------------------------ the script's pre-flight under the run's limits

HOLDS_AT_IMPORT = """
import time
import numpy as np

held = np.ones(int(1.5 * 2**30) // 8)  # 1.5 GiB, touched, before anything trains
time.sleep(300)  # held past the pre-flight's own timeout: only a limit ends it early
"""


def test_memory_limit_stops_the_script_preflight_and_is_named(tmp_path, capsys, monkeypatch):
    """--memory-limit holds the pre-flight's script process as it holds the measuring cases: a
    script that holds 1.5 GiB at import is stopped under --memory-limit 1, and the line names the
    limit and the fix, before anything is measured or written.

    What stopped it is read from the line, not from the clock: "stopped by --memory-limit" is
    said only where the parent killed the process over the limit (core.process.Finished.stopped
    is "memory"), and the GiB it held then is at the limit or over. The script holds its memory for
    300 s, past the pre-flight's timeout at --budget 150 (0.6 x 150 + 30 = 120 s), so a limit
    that did not hold would end the run at that timeout, with the time named. The wall bound
    is 4x what CI took at load 10-15 on 2 cores (9.7-15 s) and half that timeout."""
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WD_TEST_MARK", MARK)
    script = tmp_path / "greedy_import.py"
    script.write_text(HOLDS_AT_IMPORT)
    out = tmp_path / "out"
    args = ["diagnose", str(script), "--memory-limit", "1", "--budget", "150", "--out", str(out)]
    started = time.monotonic()
    code, stdout, err = run_cli(args, capsys)
    took = time.monotonic() - started
    assert code == 2, err
    line = " ".join(err.split())
    assert "stopped by --memory-limit 1 GiB in the pre-flight" in line, err
    held = re.search(r"its process held (\d+\.\d+) GiB", line)
    assert held is not None and float(held.group(1)) >= 1.0, line  # stopped while it held the memory
    assert "timed out" not in line and "Raise it (e.g. --memory-limit" in line and "Traceback" not in err
    assert took < 60, f"{took:.1f} s: the pre-flight's timeout (120 s), not the memory limit, may have stopped it"
    assert not out.exists() or not list(out.iterdir())
    time.sleep(0.2)
    assert _alive_marked() == []


# ------------------------------------------------------------ every interruption keeps what was measured


def _as_a_terminal_sends_it() -> None:
    """SIGINT default and unblocked in the child, as a terminal's Ctrl-C finds it (a background
    job, or a test runner, may have it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGQUIT})


@pytest.mark.parametrize(
    ("signals", "code", "word"),
    [
        ((signal.SIGQUIT,), 131, "Quit"),  # Ctrl-\: it died by the signal, silently
        ((signal.SIGINT,) * 6, 130, "Interrupted"),  # Ctrl-C pressed again while the first one unwinds
    ],
    ids=["sigquit", "ctrl-c-again"],
)
def test_ctrl_backslash_and_a_second_ctrl_c_keep_the_journal_and_say_how_to_resume(tmp_path, signals, code, word):
    out = tmp_path / "r"
    p = _hang_run(tmp_path, out, preexec_fn=_as_a_terminal_sends_it)
    journal = _wait_result(out)
    for sig in signals:
        p.send_signal(sig)
        time.sleep(0.03)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    line = " ".join(err.split())
    assert f"{word}. The finished cases are kept in {journal}" in line, err
    assert f"whichdevice matmul --resume {journal}" in line and "Traceback" not in err
    assert journal.exists() and not list(out.glob("*.json"))  # no record that no line names
    _no_leftovers(tmp_path)


SLOW_IMPORT = """
import time
time.sleep(60)  # the script's own loading, long before any training step
"""


def test_ctrl_c_in_the_preflight_says_nothing_was_kept_and_leaves_nothing(tmp_path):
    script = tmp_path / "slow_start.py"
    script.write_text(SLOW_IMPORT)
    out = tmp_path / "out"
    p = subprocess.Popen(
        [sys.executable, "-m", "whichdevice", "diagnose", str(script), "--out", str(out)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_a_terminal_sends_it,
    )
    end = time.monotonic() + 60
    while time.monotonic() < end and not any(
        "whichdevice.measure.scriptchild" in " ".join(_cmdline(pid)) for pid in _alive_marked()
    ):
        time.sleep(0.05)  # the pre-flight's script process has started
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "Interrupted. Nothing was measured yet; nothing is kept.", err
    assert not out.exists() or not list(out.iterdir())
    _no_leftovers(tmp_path)


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def test_ctrl_c_while_the_page_is_drawn_names_the_complete_record(tmp_path, capsys, monkeypatch):
    """The record is written and the journal closed before the page is drawn: interrupted there,
    the line names the record (listed in the history) and how to draw its page; no half page."""
    from whichdevice.jobs import running

    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))

    def interrupted(*a, **k):
        safeio.write_atomic(tmp_path / "r" / "page.html", "half")
        raise KeyboardInterrupt

    monkeypatch.setattr(running, "page", interrupted)
    code, out, err = run_cli([*QUICK, "--out", str(tmp_path / "r")], capsys)
    assert code == 130, err
    (record,) = (tmp_path / "r").glob("*.json")
    line = " ".join(err.split())
    assert f"Interrupted. The record is complete: {record}; draw its page with: whichdevice report {record}" in line
    assert not (tmp_path / "r" / "page.html").exists() and not list((tmp_path / "r").glob(f"*{SUFFIX}"))
    from whichdevice.measure import history

    assert [Path(e.path).name for e in history.entries()] == [record.name]  # listed where its line names it


TINY_TORCH = """
import torch

torch.manual_seed(0)
X, Y = torch.randn(4096, 32), torch.randn(4096, 1)
w = torch.zeros(32, 1, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
for epoch in range(5):
    for i in range(0, len(X), 64):
        loss = ((X[i : i + 64] @ w - Y[i : i + 64]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT], ids=lambda s: s.name)
def test_diagnose_interrupted_after_its_first_case_keeps_the_journal(tmp_path, sig):
    """Ctrl-C after round 1's first case takes the same path as SIGTERM and SIGHUP: the journal
    kept, the --resume command, exit 128 + the signal, and no record that no line names."""
    pytest.importorskip("torch")
    script = tmp_path / "tiny.py"
    script.write_text(TINY_TORCH)
    out = tmp_path / "out"
    p = subprocess.Popen(
        [sys.executable, "-m", "whichdevice", "diagnose", str(script), "--budget", "20", "--out", str(out)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_a_terminal_sends_it,
    )
    journal = _wait_result(out, timeout=180)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert f"whichdevice diagnose --resume {journal}" in " ".join(err.split()) and "Traceback" not in err
    assert journal.exists() and not list(out.glob("*.json"))
    _no_leftovers(tmp_path)
