"""The run's scratch folder is shallow enough for a Unix socket in a child's temp folder: a torch
DataLoader worker hands each batch over through one, and under a deep WHICHDEVICE_HOME (pytest's,
a CI runner's) its path passed 107 bytes and every pass timed out after 30 s."""

import os
import tempfile

from whichdevice.cli import guard


def test_a_deep_home_puts_the_scratch_in_the_system_temp_folder(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 60) / "wdhome"
    monkeypatch.setenv("WHICHDEVICE_HOME", str(deep))
    base = guard._scratch_base()
    assert not str(base).startswith(str(deep))
    restore = guard._scratch()
    try:
        child_tmp = tempfile.mkdtemp(prefix="whichdevice-")  # as the runner makes a child's
        socket = os.path.join(child_tmp, "pymp-abcdefgh", "listener-abcdefgh")
        assert len(os.fsencode(socket)) <= 107, socket
    finally:
        restore()
    assert not base.exists() or base.is_dir()  # removed when empty; another run may hold it
    assert not list(deep.glob("tmp/run-*"))


def test_a_short_home_keeps_the_scratch_in_it(tmp_path, monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_HOME", "/tmp/wdh")
    assert str(guard._scratch_base()) == "/tmp/wdh/tmp"
