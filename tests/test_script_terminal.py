"""A training script that asks its terminal for its size at import (kuangliu/pytorch-cifar's
utils.py runs ``stty size``) runs under ``diagnose SCRIPT`` as it runs in the user's shell: the
parent names its terminal and the script's stdin is that terminal while it runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from whichdevice.workloads import scriptrun


@pytest.fixture
def no_terminal_stdin():
    """fd 0 a pipe (as in the measuring child), restored after the test."""
    saved = os.dup(0)
    r, w = os.pipe()
    os.dup2(r, 0)
    os.close(r)
    try:
        yield
    finally:
        os.close(w)
        os.dup2(saved, 0)
        os.close(saved)


def test_the_script_reads_the_named_terminal_and_the_child_gets_its_stdin_back(monkeypatch, no_terminal_stdin):
    master, slave = os.openpty()
    try:
        monkeypatch.setenv(scriptrun.TTY_VAR, os.ttyname(slave))
        assert not os.isatty(0)
        with scriptrun._terminal_stdin():
            assert os.isatty(0)
            size = subprocess.run(["stty", "size"], capture_output=True, text=True, check=False)
            assert size.returncode == 0 and len(size.stdout.split()) == 2, size.stderr
        assert not os.isatty(0)
    finally:
        os.close(master)
        os.close(slave)


def test_without_a_named_terminal_stdin_is_left_alone(monkeypatch, no_terminal_stdin):
    monkeypatch.delenv(scriptrun.TTY_VAR, raising=False)
    with scriptrun._terminal_stdin():
        assert not os.isatty(0)


def test_the_parent_names_its_terminal_only_when_it_has_one(monkeypatch):
    monkeypatch.delenv(scriptrun.TTY_VAR, raising=False)
    monkeypatch.setattr(sys, "stdin", open(os.devnull))  # noqa: SIM115 (closed with the test)
    scriptrun.remember_terminal()
    assert scriptrun.TTY_VAR not in os.environ
    sys.stdin.close()
