"""The user's folder left as it was after ``diagnose SCRIPT`` ran their script in it.

Scripts write where they run: a ``CSVLogger``'s log, a checkpoint saved over the user's best one,
a callback's images beside the script, a run folder named by the time, Lightning's
``lightning_logs/version_N``, a checkpoint saved by a bare ``except:`` when the capture stopped
the script. The guard (``workloads/userfolder.py``) puts each changed file back, moves each new
one into the output folder, and the screen and the record say what and where. The fast tests
drive the guard directly; the real ones run diagnose on a torch script that writes all of these
(``tests/folder_corpus/torch_writes_files.py``) and on one refused before training.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
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
    # one run: overwrite, create a file and a folder, delete, replace a link
    (user / "log.csv").write_text("epoch,loss\n0,1.0\n")
    (user / "ckpt-20261207").mkdir()
    (user / "ckpt-20261207" / "w.pt").write_bytes(b"w")
    (user / "sub" / "notes.txt").unlink()
    (user / "link").unlink()
    (user / "link").symlink_to("best.pt")
    userfolder.settle_here()
    assert _state(user) == before
    # a second run writes the same log again: the user's stays, the last copy is kept
    (user / "log.csv").write_text("epoch,loss\n0,0.5\n")
    (user / "generated_img_0.png").write_bytes(b"png")
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
    (user / "log.csv").write_text("x")
    (user / "new.txt").write_text("x")
    userfolder.abandon()
    assert _state(user) == before
    assert not (guard_env / "out").exists()
    assert not list((guard_env / "tmp").iterdir())


def test_output_folder_record_files_and_caches_in_the_working_folder_are_not_the_users(guard_env, monkeypatch):
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    record = str(user / "rec.json")  # --json rec.json: the record, journal and report beside the user's files
    userfolder.watch(str(user / "train.py"), record)
    (user / "whichdevice-results").mkdir()
    (user / "rec.json").write_text("{}")
    (user / "rec.partial.jsonl").write_text("{}")
    (user / "__pycache__").mkdir()
    (user / ".cache").mkdir()
    (user / "records.csv").write_text("the script's")  # starts like the record's stem: still the script's
    written = userfolder.finish(record)
    assert [w.path for w in written] == ["records.csv"]
    for kept in ("rec.json", "rec.partial.jsonl", "__pycache__", ".cache"):
        assert (user / kept).exists()


def test_a_file_too_large_to_copy_is_said_not_put_back(guard_env, monkeypatch):
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    monkeypatch.setattr(userfolder, "COPY_FILE_MAX", 1000)
    userfolder.watch(str(user / "train.py"), str(guard_env / "out" / "rec.json"))
    (user / "data.bin").write_bytes(b"overwritten")
    (user / "log.csv").write_text("overwritten")  # small: still put back
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
    (user / "big" / "new").write_text("x")  # in the folder the walk could not read whole
    (user / "a.txt").write_text("changed")
    written = userfolder.finish(str(guard_env / "out" / "rec.json"))
    assert [w.path for w in written] == ["a.txt"]
    assert len(list((user / "big").iterdir())) == 31  # nothing of the user's moved


def test_control_characters_in_a_file_name_never_reach_the_screen(guard_env, monkeypatch):
    user = _user_folder(guard_env / "proj")
    monkeypatch.chdir(user)
    userfolder.watch(str(user / "train.py"), str(guard_env / "out" / "rec.json"))
    (user / "evil\x1b[2Jname.txt").write_text("x")
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
