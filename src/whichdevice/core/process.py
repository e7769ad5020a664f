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

On Linux two kernel guarantees close what a scan can miss (a model whose ``build()``
double-forks a ``setsid`` daemon left 17 processes behind): the parent is a *child subreaper*
(``PR_SET_CHILD_SUBREAPER``) while it has children, so a daemon that leaves its group and loses
its parent is re-parented to whichdevice, not to init; each child carries a token in its
environment, and when the child ends every adopted process with its token is killed and
reaped (:func:`_end_adopted`). Each child also gets ``PR_SET_PDEATHSIG`` = SIGKILL, so that
when whichdevice itself dies (``kill -9``, a script that kills it) its children die with it.
Elsewhere both are no-ops.

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
import codecs
import contextlib
import ctypes
import functools
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

import psutil

from whichdevice.core.textsafe import StreamCleaner

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


# ------------------------------------------------------------------ Linux: subreaper, parent-death signal

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
TOKEN_VAR = "WHICHDEVICE_CHILD_TOKEN"  # in each child's environment: "PARENT_PID:N", inherited by its descendants
_ADOPTED_WAIT_S = 1.0  # how long a child's end waits for its group's orphans to reach us


def _find_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


_prctl = _find_prctl()
_tokens = itertools.count(1)
_subreaper = False
_subreaper_since = 0.0  # time.time() when we became the subreaper


def _become_subreaper() -> None:
    """Orphans of our children's trees come to us, not to init, from now on (Linux)."""
    global _subreaper, _subreaper_since
    if _prctl is not None and not _subreaper:
        _subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        _subreaper_since = time.time()


def _stop_subreaper() -> None:
    global _subreaper
    if _prctl is not None and _subreaper:
        _subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) != 0


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` giving the child SIGKILL when its parent dies (Linux; only from the main
    thread: the kernel sends it when the *thread* that forked the child ends)."""
    prctl = _prctl
    if prctl is None or threading.current_thread() is not threading.main_thread():
        return None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the line above: die now
            os._exit(1)

    return preexec


def _token_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return None
    key = TOKEN_VAR.encode() + b"="
    for item in env.split(b"\0"):
        if item.startswith(key):
            return item[len(key) :].decode(errors="replace")
    return None


def _adopted(token: str | None, group: int | None, ours: set[int], seen: frozenset[int] = frozenset()) -> list[int]:
    """Our children, other than the ones we started, that carry ``token`` (any of ours: None),
    belong to process group ``group`` (a member killed with the group, now our zombie) or were
    seen in the child's tree by the memory scan (``seen``: killed, now our zombies)."""
    mine = f"{os.getpid()}:"
    found = []
    try:
        children = psutil.Process().children()
    except psutil.Error:
        return []
    for p in children:
        if p.pid in ours:
            continue
        t = _token_of(p.pid)
        if t is not None and (t == token if token is not None else t.startswith(mine)):
            found.append(p.pid)
        elif p.pid in seen or (group is not None and _pgid(p.pid) == group) or _orphan_zombie(p):
            found.append(p.pid)
    return found


def _orphan_zombie(p: psutil.Process) -> bool:
    """A dead process handed to us, that we did not start, born while we were the subreaper: an
    orphan of a child's tree that died before any scan saw it (its environment, and so its token,
    is gone). Left unreaped it stays a zombie of this process (a torch scale worker's helper was
    found so by tests/test_scale.py)."""
    try:
        return p.status() == psutil.STATUS_ZOMBIE and p.create_time() >= _subreaper_since - 0.05
    except psutil.Error:
        return False


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _end_adopted(token: str | None, group: int | None = None, seen: set[int] | None = None) -> None:
    """Kill and reap every process adopted from a child's tree (``token``; every child's: None):
    daemons that left the child's group and lost their parent. Waits up to ``_ADOPTED_WAIT_S``
    for the group's members, killed just before, to die and hand their own orphans to us."""
    if not _subreaper:
        return
    end = time.monotonic() + _ADOPTED_WAIT_S
    while True:
        found = _adopted(token, group, _started_pids(), frozenset(seen or ()))
        for pid in found:
            _kill_tree(pid)
        if not found and not (group is not None and _group_alive(group)):
            return
        if time.monotonic() > end:
            return
        time.sleep(0.01)


def _kill_tree(pid: int) -> None:
    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        procs = []
    _kill_known(procs)
    try:
        os.waitpid(pid, 0)  # adopted: ours to reap
    except ChildProcessError:
        pass


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


_popens: weakref.WeakSet[GroupPopen] = weakref.WeakSet()


def _started_pids() -> set[int]:
    """The children we started ourselves and have not reaped (never reaped by the sweep)."""
    return {p.pid for p in list(_popens) if p.returncode is None}


def kill_group(proc: subprocess.Popen[Any]) -> None:
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
    token: str | None = None  # TOKEN_VAR in its environment: what it left behind carries it

    def _end_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        seen = self.watched.procs[1:] if self.watched is not None else []
        _kill_known(seen)
        if self.token is not None:
            _end_adopted(self.token, self.pid, {p.pid for p in seen})
            if not _started_pids() - {self.pid}:
                _stop_subreaper()  # no child left: the Python API's host process is as it was

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
        _become_subreaper()
        token = f"{os.getpid()}:{next(_tokens)}"
        self.proc: GroupPopen = GroupPopen(
            [sys.executable, "-m", module, *args],
            env={**(os.environ if env is None else env), TOKEN_VAR: token},
            stdout=stdout,
            stderr=stderr,
            stdin=stdin,
            cwd=cwd,
            start_new_session=True,  # its own process group, so a kill takes its helpers too
            preexec_fn=_die_with_parent(os.getpid()),
        )
        self.proc.token = token
        _popens.add(self.proc)
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


class JsonLines:
    """The JSON lines a child appends to ``path`` (a measuring child's stream, a scale worker's
    points), read as the file grows: a line not yet ended by its newline waits for the next read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0
        self.buffer = ""

    def read(self) -> Iterator[dict[str, Any]]:
        """The lines completed since the last read, each parsed."""
        with open(self.path, encoding="utf-8") as f:
            f.seek(self.pos)
            chunk = f.read()
            self.pos = f.tell()
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split("\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)


def stderr_tail(path: Path, start: int = 0, limit: int = 300) -> str:
    """The line saying what failed that a child wrote to stderr after byte ``start`` (where the
    unfinished case began: an earlier case's traceback is not this case's reason)."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    # Native crashes end with a stack dump ("@ 0x7f.. symbol", "*** Check failure stack
    # trace ***"): the line that says what failed comes before it.
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(("@ ", "***"))]
    telling = [ln for ln in lines if "Check failed" in ln or "Error" in ln or "error" in ln]
    return (telling or lines or [""])[-1][:limit]


# Every child still running, so that none outlives the process that started it: killed at
# exit, or by ``kill_all`` (the Python API on KeyboardInterrupt).
_live: weakref.WeakSet[Child] = weakref.WeakSet()


def kill_all() -> None:
    """Kill the group of every child this process started that is still running, and every
    process adopted from their trees."""
    for child in list(_live):
        try:
            if child.proc.poll() is None:
                child.kill()
        except Exception:  # already reaped elsewhere
            pass
    try:
        _end_adopted(None)
    except Exception:  # interpreter shutdown
        pass


atexit.register(kill_all)

_P = ParamSpec("_P")
_T = TypeVar("_T")


def stops_children_on_interrupt(fn: Callable[_P, _T]) -> Callable[_P, _T]:
    """Ctrl-C (KeyboardInterrupt) in an API call: every measuring child this process started
    is killed with its group before the interrupt reaches the caller — a notebook
    that catches it keeps no child measuring in the background."""

    @functools.wraps(fn)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            kill_all()
            raise

    return call


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


# ------------------------------------------------------------------ a child's output, passed through

_PUMP_JOIN_S = 5.0  # after the child ends: how long its last output may take to arrive


@contextlib.contextmanager
def passed_through() -> Iterator[tuple[int, int]]:
    """Two descriptors to give a child as its stdout and stderr (``run_module(stdout=...,
    stderr=...)``): what it writes reaches this process's stdout and stderr as it comes, as
    text with no escape sequence (``textsafe.StreamCleaner``: an audited script's
    window title, screen clear or clipboard write (OSC 52) reached the user's terminal)."""
    ends, pumps = [], []
    try:
        for name in ("stdout", "stderr"):
            read_end, write_end = os.pipe()
            ends.append(write_end)
            pump = threading.Thread(target=_pump, args=(read_end, name), daemon=True, name=f"pass-{name}")
            pump.start()
            pumps.append(pump)
        yield ends[0], ends[1]
    finally:
        for fd in ends:
            os.close(fd)
        for pump in pumps:
            pump.join(_PUMP_JOIN_S)


def _pump(fd: int, name: str) -> None:
    cleaner = StreamCleaner()
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    with os.fdopen(fd, "rb", buffering=0) as f:
        while chunk := f.read(65536):
            _emit(name, cleaner.feed(decode(chunk)))
    _emit(name, cleaner.feed(decode(b"", final=True)) + cleaner.close())


def _emit(name: str, text: str) -> None:
    stream = getattr(sys, name)
    if not text or stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (Exception, KeyboardInterrupt):  # a reader gone (cli/guard's Terminated too): the rest is dropped
        pass
