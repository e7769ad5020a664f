"""Start a child process, the one way every part of whichdevice does it.

A child runs ``python -m MODULE ARGS`` with stdin closed (or a pipe the parent writes one line
to: the measuring child's "go"), in its own process group (``start_new_session``), so that
killing it takes everything it started (TensorFlow's helper processes, a probe it runs) with it. While it runs, the parent holds it to a memory limit
(resident memory of the whole group, default 90 % of RAM or of the container's cgroup limit
when lower: the kernel's OOM killer acts there) and to a time limit; on either, or when the
parent itself is interrupted (Ctrl-C, SIGTERM, SIGHUP, a broken pipe), the group is killed and
reaped. When the child ends by itself, its group is killed too (:class:`GroupPopen`), with
any process of its tree seen by the last memory scan that left the group: processes forked
by user code do not outlive it. No child outlives the run.

Two ways to use it:

- :func:`run_module`: start, wait (polling the limits), return a :class:`Finished` — for the
  short helpers (user-model pre-flight, the audit child, the placement probe);
- :class:`Child`: start and poll step by step — for ``measure.runner``, which reads the child's
  streamed results between polls and applies per-case timeouts of its own.

Why here, in ``core/``, and not in ``measure/``: the placement probe is started from inside a
measuring child (the ``workloads`` layer), which must not import ``measure``. One launcher
that every layer may use keeps the guarantees the same everywhere.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

POLL_S = 0.05
_CHILDREN_EVERY = 20  # polls between two scans for the child's own subprocesses
DEFAULT_MEMORY_SHARE = 0.9  # of physical RAM: the default memory limit of a child

# Where a container's memory limit is (cgroup v2, then v1): inside one, the kernel's OOM killer
# acts at that limit, not at the host's RAM that psutil reports.
CGROUP_LIMIT_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def usable_memory() -> int:
    """Physical RAM, or this process's cgroup memory limit when that is lower."""
    total: int = psutil.virtual_memory().total
    for path in CGROUP_LIMIT_FILES:
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():  # "max" (v2) or a huge number (v1) when there is no limit
            return min(total, int(text))
    return total


def default_memory_limit() -> int:
    return int(DEFAULT_MEMORY_SHARE * usable_memory())


def memory_limit_gib(limit_bytes: int | None) -> float:
    """The limit children are held to (``None``: the default), in GiB, for a record's options."""
    return round((limit_bytes or default_memory_limit()) / 2**30, 2)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a child started in its own session and everything it spawned; reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _kill_known(procs: list[psutil.Process]) -> None:
    """SIGKILL processes seen in the child's tree that left its group (``setsid``):
    psutil refuses a pid that has since been reused."""
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass


class GroupPopen(subprocess.Popen[bytes]):
    """A child in its own process group whose group is killed as soon as the child is seen
    to end, for any reason, before it is reaped: processes it forked (a user's model code,
    a framework's helpers) end with it. The group is killed while the child is still a
    zombie, so its id cannot have been reused by anything else."""

    watched: GroupMemory | None = None

    def _end_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.watched is not None:
            _kill_known(self.watched.procs[1:])

    def _exited_unreaped(self, block: bool) -> bool:
        flags = os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG)
        try:
            return os.waitid(os.P_PID, self.pid, flags) is not None
        except ChildProcessError:  # already reaped
            return True

    def poll(self) -> int | None:
        if self.returncode is None and self._exited_unreaped(block=False):
            self._end_group()
        return super().poll()

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if timeout is None:
                self._exited_unreaped(block=True)
            else:
                end = time.monotonic() + timeout
                while not self._exited_unreaped(block=False):
                    if time.monotonic() > end:
                        raise subprocess.TimeoutExpired(self.args, timeout)
                    time.sleep(min(POLL_S, max(0.0, end - time.monotonic())))
            self._end_group()
        return super().wait()


class GroupMemory:
    """Resident memory of a child and its subprocesses (one read of /proc per process)."""

    def __init__(self, pid: int) -> None:
        self.polls = 0
        self.procs: list[psutil.Process] = []
        self.root: psutil.Process | None
        try:
            self.root = psutil.Process(pid)
        except psutil.Error:
            self.root = None

    def rss(self) -> int:
        if self.root is None:
            return 0
        if self.polls % _CHILDREN_EVERY == 0:
            try:
                self.procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                self.procs = [self.root]
        self.polls += 1
        total = 0
        for p in self.procs:
            try:
                total += p.memory_info().rss
            except psutil.Error:  # ended between the scan and the read
                pass
        return total


Stream = int | IO[bytes] | IO[str] | None


class Child:
    """``python -m module *args`` in its own process group, watched for its memory."""

    def __init__(
        self,
        module: str,
        args: list[str],
        *,
        env: dict[str, str] | None = None,
        stdout: Stream = subprocess.DEVNULL,
        stderr: Stream = subprocess.DEVNULL,
        memory_limit_bytes: int | None = None,
        cwd: str | None = None,
        stdin: Stream = subprocess.DEVNULL,
    ) -> None:
        self.limit = memory_limit_bytes or default_memory_limit()
        self.started = time.monotonic()
        self.proc: GroupPopen = GroupPopen(
            [sys.executable, "-m", module, *args],
            env=env,
            stdout=stdout,
            stderr=stderr,
            stdin=stdin,
            cwd=cwd,
            start_new_session=True,  # its own process group, so a kill takes its helpers too
        )
        try:
            _live.add(self)
            self.memory = GroupMemory(self.proc.pid)
            self.proc.watched = self.memory
        except BaseException:  # Ctrl-C right after the start: the group does not outlive us
            kill_group(self.proc)
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def over_memory(self) -> int | None:
        """The group's resident bytes when over the limit, else None."""
        rss = self.memory.rss()
        return rss if rss > self.limit else None

    def kill(self) -> None:
        kill_group(self.proc)

    def __del__(self) -> None:
        # Dropped while running (an exception unwound its owner before it could kill it).
        try:
            if self.proc.returncode is None and self.proc.poll() is None:
                self.kill()
        except Exception:  # interpreter shutdown: atexit's kill_all has run
            pass

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        # Whatever happened in the parent (Ctrl-C included), the group does not outlive it.
        if self.proc.poll() is None:
            self.kill()


# Every child still running, so that none outlives the process that started it: killed at
# exit, or by ``kill_all`` (the Python API on KeyboardInterrupt).
_live: weakref.WeakSet[Child] = weakref.WeakSet()


def kill_all() -> None:
    """Kill the group of every child this process started that is still running."""
    for child in list(_live):
        try:
            if child.proc.poll() is None:
                child.kill()
        except Exception:  # already reaped elsewhere
            pass


atexit.register(kill_all)


@dataclass(frozen=True)
class Finished:
    """How a :func:`run_module` child ended."""

    returncode: int | None  # None: the parent killed it
    wall_s: float
    stopped: str | None = None  # "timeout" or "memory" when the parent killed it
    rss_bytes: int = 0  # the group's resident memory when it was stopped for memory

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_module(
    module: str,
    args: list[str],
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    stdout: Stream = subprocess.DEVNULL,
    stderr: Stream = subprocess.DEVNULL,
    memory_limit_bytes: int | None = None,
    cwd: str | None = None,
) -> Finished:
    """Run ``python -m module *args`` to its end, or kill its group at ``timeout_s`` or over
    the memory limit. Ctrl-C in the parent kills the group and re-raises."""
    with Child(
        module, args, env=env, stdout=stdout, stderr=stderr, memory_limit_bytes=memory_limit_bytes, cwd=cwd
    ) as child:
        while True:
            rc = child.poll()
            if rc is not None:
                return Finished(rc, time.monotonic() - child.started)
            rss = child.over_memory()
            if rss is not None:
                child.kill()
                return Finished(None, time.monotonic() - child.started, "memory", rss)
            if time.monotonic() - child.started > timeout_s:
                child.kill()
                return Finished(None, time.monotonic() - child.started, "timeout")
            time.sleep(POLL_S)
