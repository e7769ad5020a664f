"""``diagnose SCRIPT`` on scripts that ``python`` runs: run as Python runs them (a symlink's real
folder on ``sys.path``, a coding line, a byte-order mark), and refused with the true cause in one
line (argparse's own message, training in another process, an exit or an error mid-training at
the step it came, a script that reads its standard input).

Each pre-flight here is one script process that imports torch's CPU build (a few seconds); the
scripts are tiny loops written into ``tmp_path``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from whichdevice.core.errors import UsageError
from whichdevice.workloads import script, scriptplan, scriptwatch

pytest.importorskip("torch")

LOOP = """\
import os, sys
import torch
m = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(16, 8)
for step in range(1, 200):
{before}
    opt.zero_grad()
    m(x).pow(2).mean().backward()
    opt.step()
{after}
"""


def _loop(tmp_path: Path, before: str = "    pass", after: str = "    pass", name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(LOOP.format(before=before, after=after), encoding="utf-8")
    return path


def _refused(path: Path, *args: str) -> str:
    with pytest.raises(UsageError) as e:
        scriptplan.preflight({"script": str(path), "args": list(args)}, 20.0)
    return " ".join(str(e.value).split())


def _found(path: Path, *args: str) -> dict:
    return scriptplan.preflight({"script": str(path), "args": list(args)}, 20.0)


# ------------------------------------------------------------------ scripts python runs


def test_a_symlinked_script_imports_the_sibling_module_of_its_real_file(tmp_path):
    """`python LINK` puts the folder of the file the link points to on sys.path; diagnose put the
    link's own folder there, and the script's `from helper import model` failed."""
    real, other = tmp_path / "real", tmp_path / "elsewhere"
    real.mkdir()
    other.mkdir()
    (real / "helper.py").write_text("import torch\ndef model():\n    return torch.nn.Linear(8, 1)\n")
    body = LOOP.replace("m = torch.nn.Linear(8, 1)", "from helper import model\nm = model()")
    (real / "train.py").write_text(body.format(before="    pass", after="    pass"))
    (other / "train.py").symlink_to(real / "train.py")
    facts = _found(other / "train.py")
    assert facts["entry"] == "torch.optim.Optimizer.step" and facts["model"] == "Linear"


@pytest.mark.parametrize(
    "head, encoding",
    [("", "utf-8-sig"), ("# -*- coding: latin-1 -*-\n", "latin-1")],
    ids=["bom", "latin-1"],
)
def test_a_bom_or_a_coding_line_is_read_as_python_reads_it(tmp_path, head, encoding):
    """A UTF-8 byte-order mark was a SyntaxError "at scriptrun.py:93" (whichdevice's own file), a
    latin-1 coding line a UnicodeDecodeError "at <frozen codecs>:322"; python runs both."""
    path = tmp_path / "train.py"
    text = head + LOOP.format(before="    pass", after="    name = 'café'")
    path.write_bytes(text.encode(encoding))
    assert _found(path)["entry"] == "torch.optim.Optimizer.step"


def test_a_script_that_does_not_compile_is_named_at_its_own_line_never_at_whichdevices(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import torch\nx = (\n")
    text = _refused(path)
    assert "train.py raised SyntaxError" in text and "at train.py:2" in text, text
    assert "scriptrun" not in text and "frozen" not in text, text


# ------------------------------------------------------------------ the true cause, in one line


ARGS = """\
import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--data-dir", required=True)
p.add_argument("--epochs", type=int, required=True)
p.parse_args()
"""


def test_argparse_says_its_own_message_and_where_the_arguments_go(tmp_path):
    """argparse's "the following arguments are required" was dropped: "raised SystemExit: 2 ... Make
    `python x.py` run here first"."""
    path = tmp_path / "train.py"
    path.write_text(ARGS)
    text = _refused(path)
    assert 'its argument parser said "the following arguments are required: --data-dir, --epochs"' in text, text
    assert "whichdevice diagnose train.py -- --data-dir ... --epochs ..." in text, text
    assert "SystemExit" not in text


def test_cli_argparse_refusal_is_one_line_exit_2_nothing_written(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(ARGS)
    out = tmp_path / "out"
    code, _, err = run_cli(["diagnose", str(path), "--out", str(out), "--", "--data-dir", "d"], capsys)
    assert code == 2, err
    line = " ".join(err.split())
    assert "the following arguments are required: --epochs" in line and "(given: --data-dir d)" in line, line
    assert not out.exists() or not list(out.iterdir())


def test_training_in_a_spawned_process_is_said_with_what_to_do(tmp_path):
    """torch.multiprocessing.spawn trains in a child: "Train through optimizer.step()", which it does."""
    path = tmp_path / "train.py"
    path.write_text(
        "import torch\nimport torch.multiprocessing as mp\n\n"
        "def train(rank):\n"
        "    m = torch.nn.Linear(8, 1)\n"
        "    opt = torch.optim.SGD(m.parameters(), lr=0.01)\n"
        "    for _ in range(3):\n"
        "        opt.zero_grad(); m(torch.randn(4, 8)).sum().backward(); opt.step()\n\n"
        "if __name__ == '__main__':\n"
        "    mp.spawn(train, nprocs=1)\n"
    )
    text = _refused(path)
    assert "train.py trains in another process (it started torch.multiprocessing.spawn(train))" in text, text
    assert "run the training function in the script's own process" in text and "Train through" not in text


def test_training_in_a_python_subprocess_names_the_script_to_diagnose(tmp_path):
    (tmp_path / "worker.py").write_text("print('training')\n")
    path = tmp_path / "train.py"
    path.write_text(
        "import subprocess, sys\nimport torch\n"
        "subprocess.run([sys.executable, 'worker.py', '--lr', '0.1'], cwd=%r, check=True)\n" % str(tmp_path)
    )
    text = _refused(path)
    assert "trains in another process (it started " in text and "worker.py --lr 0.1" in text, text
    assert "Diagnose the script that trains: whichdevice diagnose worker.py -- --lr 0.1" in text, text


def test_os_exit_mid_training_says_the_exit_code_and_step_not_a_larger_budget(tmp_path):
    path = _loop(tmp_path, after="    if step == 4:\n        os._exit(3)")
    text = _refused(path)
    assert "train.py exited with code 3 at its 4th training step (train.py:12)" in text, text
    assert "larger --budget" not in text and "child process died" not in text


def test_sys_exit_mid_training_is_no_success(tmp_path):
    """sys.exit(3) at the 3rd step was taken as success: a one-sample case, the exit code not said."""
    path = _loop(tmp_path, after="    if step == 3:\n        sys.exit(3)")
    text = _refused(path)
    assert "train.py exited with code 3 at its 3rd training step" in text, text
    assert "at least 12 steps" in text and "larger --budget" not in text


def test_sys_exit_0_after_its_steps_still_hands_over_what_was_timed(tmp_path):
    path = _loop(tmp_path, after="    if step == 4:\n        sys.exit(0)")
    facts = _found(path)
    assert facts["entry"] == "torch.optim.Optimizer.step"


def test_an_error_at_the_third_step_says_that_step(tmp_path):
    """An error at the 3rd step read "before its first training step"."""
    path = _loop(tmp_path, before="    if step == 3:\n        raise ValueError('bad batch')")
    text = _refused(path)
    assert "train.py raised ValueError: bad batch at train.py:8 at its 3rd training step" in text, text
    assert "before its first" not in text


def test_an_error_before_any_step_still_says_so(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import torch\nraise KeyError('lr')\n")
    assert "raised KeyError: 'lr' at train.py:2 before its first training step" in _refused(path)


@pytest.mark.parametrize(
    "read",
    ["lr = float(input('lr? '))", "import json; cfg = json.load(sys.stdin)", "lines = [l for l in sys.stdin][0]"],
)
def test_a_script_that_reads_stdin_is_told_stdin_is_not_passed_on(tmp_path, read):
    """input() got EOF and the fix said "Make `python x.py` run", which it does."""
    path = tmp_path / "train.py"
    path.write_text(f"import sys\nimport torch\n{read}\n")
    text = _refused(path)
    assert "train.py reads its standard input (at train.py:3), which diagnose does not pass on" in text, text
    assert "Make `python" not in text


# ------------------------------------------------------------------ the parts, without a script process


def test_ordinals():
    assert [script.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th",
    ]  # fmt: skip


def test_commands_that_are_other_training_processes():
    assert scriptwatch.command_of([sys.executable, "w.py"]) == f"{sys.executable} w.py"
    assert scriptwatch.command_of("torchrun --nproc_per_node 2 train.py") is not None
    assert scriptwatch.command_of(["stty", "size"]) is None and scriptwatch.command_of("git rev-parse HEAD") is None
    assert scriptwatch.script_in("python w.py --lr 1") == ("w.py", ["--lr", "1"])


def test_the_watch_undoes_its_patches():
    import multiprocessing.process as mpp
    import subprocess

    before = (sys.stdin, os._exit, os.system, mpp.BaseProcess.start, subprocess.Popen.__init__)
    with scriptwatch.watching("/x/train.py", None, None) as seen:
        assert sys.stdin.read() == "" and sys.stdin.readline() == ""
        assert seen.stdin is not None
    assert (sys.stdin, os._exit, os.system, mpp.BaseProcess.start, subprocess.Popen.__init__) == before


def test_only_the_users_own_code_starts_training_processes(tmp_path):
    """A library's processes (torch.compile's workers, a DataLoader's) are not the script's training."""
    script_path = str(tmp_path / "train.py")
    here = scriptwatch.from_user.__code__.co_filename
    assert not scriptwatch.from_user(script_path)  # called from this test file, not the script's folder
    assert scriptwatch._stdlib(os.__file__) and not scriptwatch._stdlib(here)
    site = os.path.join(os.path.dirname(os.__file__), "site-packages", "torch", "x.py")
    assert not scriptwatch._stdlib(site)


def test_a_dataloaders_workers_are_no_training_elsewhere(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "if __name__ == '__main__':\n"
        "    dl = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4, num_workers=1)\n"
        "    print(sum(1 for _ in dl))\n"
    )
    text = _refused(path)
    assert "ran to its end without reaching a training entry point" in text and "another process" not in text, text


def test_a_script_that_waits_on_its_spawned_training_past_the_limit_is_told_where_it_trains():
    """The spawned training ran past the pre-flight's limit: the process never ended, and the line
    said it timed out ("Pass a larger --budget"); what the watch saw came before."""
    from whichdevice.core.process import Finished

    run = script.ChildRun(seen={"processes": ["torch.multiprocessing.spawn(main)"]})
    run.finished = Finished(-9, 60.0, stopped="timeout")
    text = str(scriptplan.refusal(run, {"script": "ddp.py"}, 30))
    assert "ddp.py trains in another process (it started torch.multiprocessing.spawn(main))" in text, text
    assert "larger --budget" not in text


def test_argparse_message_is_read_after_its_usage_lines():
    tail = "Traceback ...\nusage: train.py [-h] --data-dir DATA_DIR\ntrain.py: error: unrecognized arguments: --lr 1\n"
    run = script.ChildRun(
        end={"status": "script_error", "error": "SystemExit: 2", "where": "train.py:5", "exit_code": 2, "step": 0},
        stderr_tail=tail,
    )
    text = " ".join(str(scriptplan.refusal(run, {"script": "train.py", "args": ["--lr", "1"]}, 30)).split())
    assert 'its argument parser said "unrecognized arguments: --lr 1"' in text and "(given: --lr 1)" in text, text
