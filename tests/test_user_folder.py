"""The user's folder left as it was after ``diagnose SCRIPT`` ran their script in it.

Scripts write where they run: a ``CSVLogger``'s log, a checkpoint saved over the user's best one,
a callback's images beside the script, a run folder named by the time, Lightning's
``lightning_logs/version_N``, a checkpoint saved by a bare ``except:`` when the capture stopped
the script. The guard (``workloads/userfolder.py``) puts each changed file back, moves each new
one into the output folder, and the screen and the record say what and where. The fast tests
drive the guard directly, the script's writes made in a forked process that records them as the
script's process does (``_as_script``); the real ones run diagnose on a torch script that writes
all of these (``tests/folder_corpus/torch_writes_files.py``) and on one refused before training.

Only what the script's processes were seen writing is put back: the user keeps working while
diagnose runs, and a file they edit then (their script, their notes) stays as they left it.
"""

from __future__ import annotations

import hashlib
import json
import gc
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from whichdevice.workloads import userfolder

CORPUS = Path(__file__).parent / "folder_corpus"


def _state(root: Path) -> dict[str, tuple]:
    """Every path under ``root`` with its type, content hash and modification time."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            if p.is_symlink():
                out[str(p.relative_to(root))] = ("link", os.readlink(p))
            elif p.is_dir():
                out[str(p.relative_to(root))] = ("dir", st.st_mtime_ns)
            else:
                out[str(p.relative_to(root))] = ("file", hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns)
    return out


def _user_folder(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "log.csv").write_text("the user's log\n")
    (root / "best.pt").write_bytes(b"the user's best weights")
    (root / "sub" / "notes.txt").write_text("keep me")
    (root / "data.bin").write_bytes(os.urandom(4096))
    (root / "link").symlink_to("log.csv")
    return root


def _as_script(writes: Callable[[], None], mid_run: Callable[[], None] | None = None) -> None:
    """One run of "the script": ``writes`` in a forked process that records what it writes as
    the script's process does (``userfolder.recording``), inside a run's window; ``mid_run``, if
    given, runs here (the user, in another process) while that run is still on."""
    r, w = os.pipe()
    r2, w2 = os.pipe()
    with userfolder.script_run():
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the forked child)
            # no collection in the child: a TensorFlow function that an earlier test in this
            # worker left for the collector calls into TF's runtime from its __del__, and TF's
            # threads were not forked (a segmentation fault here hung the suite once)
            gc.disable()
            code = 1
            try:
                os.close(r)
                os.close(w2)
                with userfolder.recording():
                    writes()
                    os.write(w, b"x")
                    os.read(r2, 1)  # the run goes on until the user's edit is done
                code = 0
            finally:
                os._exit(code)
        # the parent keeps only its own ends, so a child that dies gives an end of file, not a wait
        os.close(w)
        os.close(r2)
        got = os.read(r, 1)
        if got and mid_run is not None:
            mid_run()
        try:
            os.write(w2, b"x")
        except BrokenPipeError:
            pass
        _, status = os.waitpid(pid, 0)
    for fd in (r, w2):
        os.close(fd)
    assert got and os.waitstatus_to_exitcode(status) == 0, (
        f"the script's writes failed in the forked process (exit {os.waitstatus_to_exitcode(status)})"
    )


@pytest.fixture
def guard_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    yield tmp_path
    userfolder._CURRENT.clear()


def test_changed_new_and_deleted_paths_are_put_back_and_the_script_copies_kept(guard_env, monkeypatch):
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    before = _state(user)
    record = str(guard_env / "out" / "rec.json")
    userfolder.watch(str(user / "train.py"), record)

    def run_1():  # overwrite, create a file and a folder, delete, replace a link
        (user / "log.csv").write_text("epoch,loss\n0,1.0\n")
        (user / "ckpt-20261207").mkdir()
        (user / "ckpt-20261207" / "w.pt").write_bytes(b"w")
        (user / "sub" / "notes.txt").unlink()
        (user / "link").unlink()
        (user / "link").symlink_to("best.pt")

    def run_2():  # the same log again: the user's stays, the last copy is kept
        (user / "log.csv").write_text("epoch,loss\n0,0.5\n")
        (user / "generated_img_0.png").write_bytes(b"png")

    _as_script(run_1)
    userfolder.settle_here()
    assert _state(user) == before
    _as_script(run_2)
    written = userfolder.finish(record)
    assert _state(user) == before
    files = guard_env / "out" / "rec.script-files"
    assert (files / "log.csv").read_text() == "epoch,loss\n0,0.5\n"
    assert (files / "ckpt-20261207" / "w.pt").read_bytes() == b"w"
    assert (files / "generated_img_0.png").exists()
    by_path = {w.path: w for w in written}
    assert by_path["log.csv"].what == "changed" and by_path["log.csv"].restored
    assert by_path["ckpt-20261207"].what == "new"
    assert by_path[os.path.join("sub", "notes.txt")].what == "deleted"
    assert "link" in by_path and "ckpt-20261207/w.pt" not in by_path  # said with its folder
    line = userfolder.summary(written, "out/")
    assert "Your folder is put back as it was" in line and "log.csv (changed)" in line
    assert not list((guard_env / "tmp").iterdir()), "the guard's temporary folder is removed"


def test_a_refused_run_writes_nothing_and_removes_what_the_script_created(guard_env, monkeypatch):
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    before = _state(user)
    userfolder.watch(str(user / "train.py"), str(guard_env / "out" / "rec.json"))
    _as_script(lambda: ((user / "log.csv").write_text("x"), (user / "new.txt").write_text("x")))
    userfolder.abandon()
    assert _state(user) == before
    assert not (guard_env / "out").exists()
    assert not list((guard_env / "tmp").iterdir())


def test_output_folder_record_files_and_caches_in_the_working_folder_are_not_the_users(guard_env, monkeypatch):
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    record = str(user / "rec.json")  # --json rec.json: the record, journal and report beside the user's files
    userfolder.watch(str(user / "train.py"), record)

    def run():
        (user / "whichdevice-results").mkdir()
        (user / "rec.json").write_text("{}")
        (user / "rec.partial.jsonl").write_text("{}")
        (user / "__pycache__").mkdir()
        (user / ".cache").mkdir()
        (user / "records.csv").write_text("the script's")  # starts like the record's stem: still the script's

    _as_script(run)
    written = userfolder.finish(record)
    assert [w.path for w in written] == ["records.csv"]
    for kept in ("rec.json", "rec.partial.jsonl", "__pycache__", ".cache"):
        assert (user / kept).exists()


def test_a_file_too_large_to_copy_is_said_not_put_back(guard_env, monkeypatch):
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    monkeypatch.setattr(userfolder, "COPY_FILE_MAX", 1000)
    userfolder.watch(str(user / "train.py"), str(guard_env / "out" / "rec.json"))
    # data.bin too large to copy; log.csv small: still put back
    _as_script(lambda: ((user / "data.bin").write_bytes(b"overwritten"), (user / "log.csv").write_text("overwritten")))
    written = userfolder.finish(str(guard_env / "out" / "rec.json"))
    by_path = {w.path: w for w in written}
    assert not by_path["data.bin"].restored and "too large to keep a copy" in by_path["data.bin"].why_not
    assert (user / "log.csv").read_text() == "the user's log\n"
    assert "NOT put back" in userfolder.summary(written, "out/")


def test_a_folder_read_in_part_never_takes_the_users_files_for_new(guard_env, monkeypatch):
    user = guard_env / "proj"
    (user / "big").mkdir(parents=True)
    for i in range(30):
        (user / "big" / f"f{i}").write_text("x")
    (user / "a.txt").write_text("x")
    monkeypatch.chdir(user)
    monkeypatch.setattr(userfolder, "MAX_ENTRIES", 10)
    userfolder.watch(str(user / "train.py"), str(guard_env / "out" / "rec.json"))
    # big/new: in the folder the walk could not read whole
    _as_script(lambda: ((user / "big" / "new").write_text("x"), (user / "a.txt").write_text("changed")))
    written = userfolder.finish(str(guard_env / "out" / "rec.json"))
    assert [w.path for w in written] == ["a.txt"]
    assert len(list((user / "big").iterdir())) == 31  # nothing of the user's moved


def test_control_characters_in_a_file_name_never_reach_the_screen(guard_env, monkeypatch):
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    userfolder.watch(str(user / "train.py"), str(guard_env / "out" / "rec.json"))
    _as_script(lambda: (user / "evil\x1b[2Jname.txt").write_text("x"))
    written = userfolder.finish(str(guard_env / "out" / "rec.json"))
    assert "\x1b" not in userfolder.summary(written, "out/")
    assert all("\x1b" not in n for n in userfolder.notes(written))


# ------------------------------------------------------------------ real: diagnose as a user runs it


def test_diagnose_refused_after_the_script_wrote_leaves_the_folder_and_writes_nothing(tmp_path, monkeypatch, capsys):
    user = _user_folder(tmp_path / "proj")
    (user / "train.py").write_text(
        "open('log.csv', 'w').write('epoch,loss')\nopen('made.txt', 'w').write('x')\nraise ValueError('no data here')\n"
    )
    monkeypatch.chdir(user)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    before = _state(user)
    code, out, err = run_cli(["diagnose", "train.py", "--out", str(tmp_path / "out")], capsys)
    assert code == 2, err
    assert "no data here" in err
    assert _state(user) == before
    assert not (tmp_path / "out").exists()


@pytest.mark.frameworks
def test_diagnose_a_torch_script_that_writes_everywhere_leaves_the_folder_as_it_was(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    user = _user_folder(tmp_path / "proj")
    shutil.copy(CORPUS / "torch_writes_files.py", user / "train.py")
    (user / "generated_img_0.png").write_bytes(b"the user's image")
    (user / "runs").mkdir()
    (user / "runs" / "old").write_text("an earlier run of theirs")
    monkeypatch.chdir(user)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    before = _state(user)
    out = tmp_path / "out"
    code, stdout, err = run_cli(["diagnose", "train.py", "--budget", "20", "--out", str(out)], capsys)
    assert code == 0, err
    assert _state(user) == before
    (record,) = out.glob("diagnose-*.json")
    files = out / f"{record.stem}.script-files"
    assert (files / "log.csv").exists() and (files / "interrupted.pt").exists()
    assert any((files / "runs").iterdir())
    data = json.loads(record.read_text())
    wrote = data["options"]["script_wrote"]
    assert "log.csv" in wrote and "interrupted.pt" in wrote
    assert any(n.startswith("Your script wrote log.csv (yours put back") for n in data["notes"])
    assert "Your script wrote" in err and "Your folder is put back as it was" in err


@pytest.mark.slow
@pytest.mark.tf
def test_diagnose_keras_callbacks_that_write_leave_the_folder_as_it_was(tmp_path, monkeypatch, capsys):
    user = _user_folder(tmp_path / "proj")
    shutil.copy(CORPUS / "keras_callbacks_write.py", user / "train.py")
    (user / "best.keras").write_bytes(b"the user's best model")
    monkeypatch.chdir(user)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    before = _state(user)
    out = tmp_path / "out"
    code, stdout, err = run_cli(["diagnose", "train.py", "--budget", "30", "--out", str(out)], capsys)
    assert code == 0, err
    assert _state(user) == before
    (record,) = out.glob("diagnose-*.json")
    wrote = json.loads(record.read_text())["options"]["script_wrote"]
    assert {"log.csv", "best.keras"} <= set(wrote)


def test_whichdevice_output_redirected_into_the_folder_is_not_the_scripts(tmp_path, monkeypatch):
    """``whichdevice diagnose train.py > out.txt`` in the script's folder: the shell made out.txt
    before the snapshot; whichdevice's own output must stay in it, and it is not listed."""
    import subprocess
    import sys
    import textwrap

    user = _user_folder(tmp_path / "proj")
    code = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent / "src")!r})
        from whichdevice.workloads import userfolder
        userfolder.watch("train.py", {str(tmp_path / "out" / "rec.json")!r})
        print("whichdevice's own output", flush=True)
        with userfolder.script_run(), userfolder.recording():  # as the script's own process records
            open("made.txt", "w").write("by the script")
        written = userfolder.finish({str(tmp_path / "out" / "rec.json")!r})
        print([w.path for w in written], flush=True)
        """
    )
    with open(user / "out.txt", "w") as f:
        subprocess.run(
            [sys.executable, "-c", code], cwd=user, stdout=f, check=True, env={**os.environ, "TMPDIR": str(tmp_path)}
        )
    text = (user / "out.txt").read_text()
    assert "whichdevice's own output" in text and "['made.txt']" in text


# ------------------------------------------------------------------ only what the script wrote


def test_a_file_the_user_edits_during_a_run_is_left_as_they_left_it(guard_env, monkeypatch):
    """The script writes its checkpoint over best.pt and a log while the user, mid-run, edits
    their notes and their script, deletes a file and makes a new one: theirs stay as they left
    them; only the script's writes are put back, and the screen says which is which."""
    user = _user_folder(guard_env / "proj")
    (user / "train.py").write_text("print('v1')\n")
    (user / "old_runs").mkdir()
    (user / "old_runs" / "r1.txt").write_text("an old run")
    monkeypatch.chdir(user)
    record = str(guard_env / "out" / "rec.json")
    userfolder.watch(str(user / "train.py"), record)

    def script():
        (user / "best.pt").write_bytes(b"the script's checkpoint")
        (user / "log.csv").write_text("epoch,loss\n")

    def user_edits():
        (user / "sub" / "notes.txt").write_text("keep me, and this")
        (user / "train.py").write_text("print('v2')\n")
        (user / "data.bin").unlink()
        shutil.rmtree(user / "old_runs")
        (user / "idea.md").write_text("try a larger batch")

    _as_script(script, mid_run=user_edits)
    _as_script(script)  # a second run: the user's edits are the snapshot's now, still theirs
    written = userfolder.finish(record)
    assert (user / "sub" / "notes.txt").read_text() == "keep me, and this"
    assert (user / "train.py").read_text() == "print('v2')\n"
    assert not (user / "data.bin").exists() and (user / "idea.md").read_text() == "try a larger batch"
    assert (user / "best.pt").read_bytes() == b"the user's best weights"
    assert (user / "log.csv").read_text() == "the user's log\n"
    assert sorted(userfolder.wrote(written)) == ["best.pt", "log.csv"]
    left = {w.path: w for w in written if not w.seen}
    assert set(left) == {os.path.join("sub", "notes.txt"), "train.py", "data.bin", "old_runs", "idea.md"}
    assert left["data.bin"].what == "deleted" and left["idea.md"].what == "new"
    assert not (user / "old_runs").exists() and left["old_runs"].what == "deleted"
    before = guard_env / "out" / "rec.before-diagnose"
    assert (before / "sub" / "notes.txt").read_text() == "keep me"  # the copy from before diagnose
    assert (before / "train.py").read_text() == "print('v1')\n"
    assert (before / "old_runs" / "r1.txt").read_text() == "an old run"  # a folder's files too
    assert (guard_env / "out" / "rec.script-files" / "best.pt").read_bytes() == b"the script's checkpoint"
    line = userfolder.summary(written, "out/rec.script-files/", "out/rec.before-diagnose/", limit=8)
    mine, _, theirs = line.partition("Changed during your script's runs with no write by it seen")
    assert "best.pt (changed)" in mine and "notes.txt" not in mine and "train.py" not in mine
    assert "Your folder is put back as it was" not in line  # it is not: the user's edits stay
    assert "left as they are" in theirs and "train.py (changed)" in theirs and "idea.md (new)" in theirs
    assert "out/rec.before-diagnose/" in theirs
    notes = userfolder.notes(written)
    assert any("train.py (changed; left as it is; the copy from before:" in n for n in notes)
    assert not any(n.startswith("Your script wrote train.py") for n in notes)


def test_a_change_between_runs_is_the_users_and_the_next_write_of_the_script_is_put_back_to_it(guard_env, monkeypatch):
    """A change made while no run of the script is on is nobody's but the user's: nothing is
    said of it, and when the next run writes that file, the user's new version is restored."""
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    record = str(guard_env / "out" / "rec.json")
    userfolder.watch(str(user / "train.py"), record)
    _as_script(lambda: (user / "runs.txt").write_text("run 1"))
    userfolder.settle_here()
    time.sleep(3 * userfolder.WINDOW_MARGIN_NS / 1e9)  # clear of the run's window
    (user / "log.csv").write_text("the user's log, edited between runs\n")
    time.sleep(3 * userfolder.WINDOW_MARGIN_NS / 1e9)
    _as_script(lambda: (user / "log.csv").write_text("epoch,loss\n"))
    written = userfolder.finish(record)
    assert (user / "log.csv").read_text() == "the user's log, edited between runs\n"
    assert [(w.path, w.what, w.seen) for w in written] == [("log.csv", "changed", True), ("runs.txt", "new", True)]
    assert "with no write by it seen" not in userfolder.summary(written, "out/")


def test_the_user_editing_the_scripts_own_output_during_its_run_leaves_it_the_scripts(guard_env, monkeypatch):
    """A path the script writes during a run is the script's for that run, even where the user
    writes it too then (one file, two writers: no change of it can be told to be the user's
    alone): the copy from before the run is restored, and the copy aside holds the last write."""
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    record = str(guard_env / "out" / "rec.json")
    userfolder.watch(str(user / "train.py"), record)

    def user_appends():
        with open(user / "log.csv", "a") as f:
            f.write("the user's line\n")

    _as_script(lambda: (user / "log.csv").write_text("epoch,loss\n"), mid_run=user_appends)
    written = userfolder.finish(record)
    assert (user / "log.csv").read_text() == "the user's log\n"
    kept = guard_env / "out" / "rec.script-files" / "log.csv"
    assert kept.read_text() == "epoch,loss\nthe user's line\n"
    assert [(w.path, w.seen) for w in written] == [("log.csv", True)]


def test_the_script_process_records_what_it_writes_and_nothing_it_only_reads(guard_env, monkeypatch):
    """The audit events the script's process records: opens for writing (open, os.open,
    pathlib), renames and replaces, removals, folders made and removed, a SQLite database; a
    file only read, and a path outside the guard's folders, are not recorded."""
    import sqlite3

    from whichdevice.workloads import scriptwrites

    user = _user_folder(guard_env / "proj")
    (user / "tree" / "deep").mkdir(parents=True)
    (user / "tree" / "deep" / "f").write_text("x")
    outside = guard_env / "elsewhere.txt"
    monkeypatch.chdir(user)
    guard = userfolder.watch(str(user / "train.py"), str(guard_env / "out" / "rec.json"))

    def script():
        (user / "log.csv").read_text()
        (user / "best.pt").read_bytes()
        os.close(os.open("made.bin", os.O_WRONLY | os.O_CREAT))
        Path("sub/notes.txt").write_text("y")
        os.replace("data.bin", "data2.bin")
        os.unlink("data2.bin")
        os.mkdir("newdir")
        shutil.rmtree("tree")
        sqlite3.connect("optuna.db").close()
        outside.write_text("not the user's folder")
        with open("link", "a"):  # through the link: its target, log.csv, is written too
            pass

    _as_script(script)
    seen = scriptwrites.taken(str(guard.home))
    root = os.path.realpath(user)
    for name in ("made.bin", "sub/notes.txt", "data.bin", "data2.bin", "newdir", "tree/deep/f", "optuna.db-journal"):
        assert seen.covers(os.path.join(root, name)), name
    assert seen.covers(os.path.join(root, "link")) and seen.covers(os.path.join(root, "log.csv"))
    assert not seen.covers(os.path.join(root, "best.pt")), "read only"
    assert not seen.covers(os.path.realpath(outside)), "outside the guard's folders"
    assert seen.inside(os.path.join(root, "sub")) and not seen.inside(os.path.join(root, "best.pt"))
    assert not scriptwrites.taken(str(guard.home)).files, "the records are consumed once"
    userfolder.abandon()


@pytest.mark.parametrize(
    "framework", ["torch", pytest.param("tensorflow", marks=pytest.mark.tf), "keras-jax", "keras-torch"]
)
def test_each_declared_native_writer_is_found_in_the_installed_library(framework):
    """A native writer a framework declares (torch.save's zip writer, h5py's files, safetensors',
    tf.io.gfile's files and renames, TensorFlow's summary writer and checkpoint saver) must name a function that exists, with the arguments named, in the installed version: else
    its writes would go unseen without a word. Checked in a fresh process (TensorFlow's import)."""
    import subprocess
    import sys

    from whichdevice import frameworks

    from whichdevice.workloads import scriptwrites

    writers = frameworks.declared(framework, "NATIVE_WRITERS", ())
    assert writers, f"{framework} declares no native writer"
    for module, attr, path_arg, mode_arg, kind in writers:
        assert kind in scriptwrites.KINDS, (module, attr, kind)
    # One child checks every writer in order (a child per writer imported TensorFlow a dozen times,
    # three minutes of the suite): the first module not installed exits 3, the first wrong
    # signature fails naming its writer, as the child per writer did.
    check = (
        "import importlib, inspect, sys\n"
        f"for module, attr, path_arg, mode_arg in {[w[:4] for w in writers]!r}:\n"
        "    try:\n        m = importlib.import_module(module)\n    except ImportError:\n"
        "        print(module, file=sys.stderr)\n        sys.exit(3)\n"
        "    o = m\n    for a in attr.split('.'):\n        o = getattr(o, a)\n"
        "    names = inspect.signature(o).parameters\n"
        "    assert all(a in names for a in path_arg.split(',')), (module, attr, list(names))\n"
        "    assert mode_arg in names or not mode_arg, (module, attr, list(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=300)
    if done.returncode == 3:
        pytest.skip(f"{done.stderr.strip()} is not installed")
    assert done.returncode == 0, done.stderr[-2000:]


# A whole torch diagnose (about a minute): the fast tests above cover the rule on the guard itself,
# and test_diagnose_a_torch_script_that_writes_everywhere_leaves_the_folder_as_it_was a real run.
@pytest.mark.slow
@pytest.mark.frameworks
def test_diagnose_puts_back_the_scripts_checkpoint_and_leaves_what_the_user_edited_meanwhile(
    tmp_path, monkeypatch, capsys
):
    """A torch script saves its checkpoint over the user's best.pt (torch.save writes from
    native code: its declared writer records it) while the user edits their notes and the script
    itself mid-run: the checkpoint is put back, the user's edits stay, and the screen and record
    say the script wrote only what it wrote."""
    pytest.importorskip("torch")
    user = _user_folder(tmp_path / "proj")
    shutil.copy(CORPUS / "torch_checkpoint_while_user_edits.py", user / "train.py")
    pause = tmp_path / "paused"
    monkeypatch.chdir(user)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FOLDER_TEST_PAUSE", str(pause))
    edited = {"notes": "keep me, and what I wrote while it ran", "train": ""}

    def the_user():  # edits once the script's first run is on, then lets it go on
        deadline = time.time() + 300
        while not pause.exists() and time.time() < deadline:
            time.sleep(0.05)
        (user / "sub" / "notes.txt").write_text(edited["notes"])
        edited["train"] = (user / "train.py").read_text() + "# the user's comment\n"
        (user / "train.py").write_text(edited["train"])
        Path(f"{pause}.go").touch()

    user_thread = threading.Thread(target=the_user, daemon=True)
    user_thread.start()
    out = tmp_path / "out"
    code, stdout, err = run_cli(["diagnose", "train.py", "--budget", "20", "--out", str(out)], capsys)
    user_thread.join(5)
    assert code == 0, err
    assert pause.exists() and Path(f"{pause}.go").exists(), "the user's edit came during the script's first run"
    assert (user / "sub" / "notes.txt").read_text() == edited["notes"]
    assert (user / "train.py").read_text() == edited["train"]
    assert (user / "best.pt").read_bytes() == b"the user's best weights"
    assert (user / "log.csv").read_text() == "the user's log\n"
    (record,) = out.glob("diagnose-*.json")
    data = json.loads(record.read_text())
    assert sorted(data["options"]["script_wrote"]) == ["best.pt", "log.csv"]
    assert (out / f"{record.stem}.script-files" / "best.pt").exists()
    said = " ".join(err.split()).partition("Your script wrote ")[2]
    mine, _, theirs = said.partition("Changed during your script's runs with no write by it seen")
    assert mine.startswith("2 paths in your folder: best.pt (changed); log.csv (changed).")
    assert "notes.txt" not in mine and "train.py" not in mine
    assert "notes.txt (changed)" in theirs and "train.py (changed)" in theirs, err
    assert (out / f"{record.stem}.before-diagnose" / "sub" / "notes.txt").read_text() == "keep me"


# ------------------------------------------------------------------ writers in native code, declared


def test_a_declared_native_writer_given_a_folder_has_everything_under_it_put_back(guard_env, monkeypatch):
    """A writer whose files no audit event shows (here another program writes them, as a C++
    thread would) declared as a ``tree``: what it writes under the folder it is given is put
    back, in a folder the user already has. Its package was imported before the run (as in a
    measuring child) and its public name bound the function then: that name is wrapped too; and
    a path given as a framework's string tensor is read from the tensor."""
    import sys

    from whichdevice import frameworks

    pkg = guard_env / "lib" / "fakewriter"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from fakewriter._native import write_logs\n")
    (pkg / "_native.py").write_text(
        "import os, subprocess\n"
        "def write_logs(logdir, every=1):\n"
        "    d = os.fsdecode(logdir.numpy() if hasattr(logdir, 'numpy') else logdir)\n"
        "    subprocess.run(['sh', '-c', 'mkdir -p \"$0\" && echo event > \"$0/events.out\"', d], check=True)\n"
    )
    monkeypatch.syspath_prepend(str(guard_env / "lib"))
    import fakewriter

    real = frameworks.declared

    def declared(name, attr, default):
        if attr == "NATIVE_WRITERS" and name == frameworks.FRAMEWORKS[0]:
            return (("fakewriter._native", "write_logs", "logdir", "", "tree"),)
        return real(name, attr, default)

    monkeypatch.setattr(frameworks, "declared", declared)

    class StringTensor:  # TensorFlow hands its C++ writer the path as one
        def __init__(self, value: bytes) -> None:
            self.value = value

        def numpy(self) -> bytes:
            return self.value

    user = _user_folder(guard_env / "proj")
    (user / "logs").mkdir()
    (user / "logs" / "old_run").write_text("the user's earlier run")
    monkeypatch.chdir(user)
    before = _state(user)
    record = str(guard_env / "out" / "rec.json")
    userfolder.watch(str(user / "train.py"), record)
    _as_script(lambda: (fakewriter.write_logs("logs/train"), fakewriter.write_logs(StringTensor(b"tb"))))
    written = userfolder.finish(record)
    assert _state(user) == before
    assert sorted((w.path, w.seen) for w in written) == [("logs/train", True), ("tb", True)]
    files = guard_env / "out" / "rec.script-files"
    assert (files / "logs" / "train" / "events.out").read_text() == "event\n"
    sys.modules.pop("fakewriter", None)
    sys.modules.pop("fakewriter._native", None)


@pytest.mark.tf
def test_tensorflow_event_files_checkpoints_and_gfile_writes_are_put_back(tmp_path):
    """TensorFlow's writers in C++, as a script calls them after TensorFlow was imported (a
    measuring child imports it before the script runs): a summary writer's event files under
    its logdir, a checkpoint's files under its prefix in a folder the user has, its
    ``checkpoint`` file renamed into place, tf.io.gfile's folders, renames and removals; the
    folder is as it was, each path said as the script's."""
    import subprocess
    import sys
    import textwrap

    user = _user_folder(tmp_path / "proj")
    (user / "ckpts").mkdir()
    (user / "ckpts" / "mine").write_text("the user's checkpoint")
    before = _state(user)
    code = textwrap.dedent(
        f"""
        import json, os, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent / "src")!r})
        from whichdevice.workloads import userfolder
        import tensorflow as tf
        userfolder.watch("train.py", {str(tmp_path / "out" / "rec.json")!r})
        with userfolder.script_run(), userfolder.recording():  # as the script's own process records
            w = tf.summary.create_file_writer("tblogs/run1")
            with w.as_default():
                tf.summary.scalar("loss", 1.0, step=0)
            w.flush()
            tf.train.Checkpoint(v=tf.Variable([1.0])).save("ckpts/ckpt")
            tf.io.gfile.makedirs("made/sub")
            tf.io.gfile.rename("log.csv", "log2.csv")
        written = userfolder.finish({str(tmp_path / "out" / "rec.json")!r})
        print(json.dumps(sorted((w.path, w.what, w.seen) for w in written)))
        """
    )
    env = {**os.environ, "TMPDIR": str(tmp_path), "WHICHDEVICE_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", code], cwd=user, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _state(user) == before
    said = {tuple(w) for w in json.loads(done.stdout.strip().splitlines()[-1])}
    assert {("tblogs", "new", True), ("made", "new", True), ("log.csv", "deleted", True)} <= said
    assert {("ckpts/checkpoint", "new", True), ("ckpts/ckpt-1.index", "new", True)} <= said
    assert all(seen for _, _, seen in said), said


@pytest.mark.slow
@pytest.mark.tf
def test_diagnose_a_keras_tensorboard_callback_and_tf_checkpoints_leave_the_folder_as_it_was(
    tmp_path, monkeypatch, capsys
):
    user = _user_folder(tmp_path / "proj")
    shutil.copy(CORPUS / "keras_tensorboard_writes.py", user / "train.py")
    for folder in ("logs", "ckpts"):  # the user's earlier runs: the script writes new files beside them
        (user / folder).mkdir()
        (user / folder / "old_run").write_text("an earlier run of theirs")
    monkeypatch.chdir(user)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    before = _state(user)
    out = tmp_path / "out"
    code, stdout, err = run_cli(["diagnose", "train.py", "--budget", "30", "--out", str(out)], capsys)
    assert code == 0, err
    assert _state(user) == before
    (record,) = out.glob("diagnose-*.json")
    wrote = set(json.loads(record.read_text())["options"]["script_wrote"])
    assert {"logs/train", "ckpts/checkpoint", "ckpts/ckpt-1.index"} <= wrote
    assert any((out / f"{record.stem}.script-files" / "logs" / "train").iterdir())
    assert "with no write by it seen" not in err


@pytest.mark.slow
@pytest.mark.frameworks
def test_diagnose_a_torch_script_saving_safetensors_leaves_the_folder_as_it_was(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    user = _user_folder(tmp_path / "proj")
    shutil.copy(CORPUS / "torch_safetensors_writes.py", user / "train.py")
    (user / "weights").mkdir()
    (user / "weights" / "old.safetensors").write_bytes(b"the user's weights")
    monkeypatch.chdir(user)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    before = _state(user)
    out = tmp_path / "out"
    code, stdout, err = run_cli(["diagnose", "train.py", "--budget", "30", "--out", str(out)], capsys)
    assert code == 0, err
    assert _state(user) == before
    (record,) = out.glob("diagnose-*.json")
    assert json.loads(record.read_text())["options"]["script_wrote"] == ["weights/model.safetensors"]
    assert "with no write by it seen" not in err
