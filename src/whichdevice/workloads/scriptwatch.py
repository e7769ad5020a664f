"""What the user's script does beyond its training steps that decides why a run of it gave no
step: read its standard input, start other processes, leave through ``os._exit``. Watched in the
script's own process while it runs (``scriptrun.execute``), each said once through ``tell`` (a
line the parent reads even when the process is killed later), each patch undone afterwards.

- stdin: the script runs several times (the pre-flight, then each case), so it is given no
  standard input: ``sys.stdin`` reads as empty (``input()`` raises ``EOFError`` as at the end of a
  pipe) and the first read is told, with the script's line that read. fd 0 is left as it is (the
  user's terminal, for a subprocess such as ``stty size``);
- processes: ``torch.multiprocessing.spawn``, and the ``multiprocessing`` processes (a Pool, a
  Process) and Python commands or launchers (``subprocess``, ``os.system``) that the user's own
  code starts (a library's, such as torch.compile's workers or a DataLoader's, left out): training
  there runs outside this process, where no capture is installed;
- ``os._exit(code)``: the process ends without unwinding, so ``on_exit`` says how it ended first.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

# Commands whose run is another training process (a Python interpreter or a distributed launcher).
LAUNCHERS = ("python", "torchrun", "accelerate", "deepspeed", "mpirun", "horovodrun", "srun")


class Seen:
    """What the watch saw; ``tell`` gets each finding as ``{"type": "seen", ...}`` once."""

    def __init__(self, script: str, tell: Callable[[dict[str, Any]], None] | None) -> None:
        self.script = script
        self.tell = tell
        self.stdin: str | None = None  # where the script first read its stdin
        self.processes: list[str] = []

    def say(self, **fields: Any) -> None:
        if self.tell is not None:
            with contextlib.suppress(Exception):
                self.tell({"type": "seen", **fields})

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.stdin is not None:
            out["stdin"] = self.stdin
        if self.processes:
            out["processes"] = list(self.processes)
        return out

    def read_stdin(self) -> None:
        if self.stdin is None:
            self.stdin = script_line(self.script)
            self.say(stdin=self.stdin)

    def started(self, what: str | None) -> None:
        if what and what not in self.processes and len(self.processes) < 5:
            self.processes.append(what)
            self.say(processes=list(self.processes))


_STDLIB = os.path.dirname(os.__file__) + os.sep  # its site-packages hold libraries, not the standard library


def _stdlib(name: str) -> bool:
    return name.startswith(_STDLIB) and os.sep + "site-packages" + os.sep not in name[len(_STDLIB) - 1 :]


def from_user(script: str) -> bool:
    """Whether the call now running comes from the user's own code (the script or a module beside
    it), not from a library's: torch.compile's workers and a DataLoader's are no training of theirs."""
    folders = {os.path.dirname(script) + os.sep, os.path.dirname(os.path.realpath(script)) + os.sep}
    f = sys._getframe(2)
    while f is not None:
        name = os.path.abspath(f.f_code.co_filename)
        if name != __file__ and not _stdlib(name) and not name.startswith("<"):
            return name == script or any(name.startswith(d) for d in folders)
        f = f.f_back  # type: ignore[assignment]
    return False


def script_line(script: str) -> str:
    """The script's own line running now (the innermost frame in its file), else its name."""
    f = sys._getframe(1)
    while f is not None:
        if os.path.abspath(f.f_code.co_filename) == script:
            return f"{Path(script).name}:{f.f_lineno}"
        f = f.f_back  # type: ignore[assignment]
    return Path(script).name


class _NoBytes(io.RawIOBase):
    def __init__(self, seen: Seen) -> None:
        self._seen = seen

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        self._seen.read_stdin()
        return 0

    def fileno(self) -> int:
        return 0


class NoStdin(io.TextIOBase):
    """The script's ``sys.stdin``: always at its end, each read told to ``seen``."""

    encoding = "utf-8"  # type: ignore[assignment]
    errors = "strict"  # type: ignore[assignment]
    name = "<stdin>"

    def __init__(self, seen: Seen) -> None:
        self._seen = seen
        self.buffer = _NoBytes(seen)

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        self._seen.read_stdin()
        return ""

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        self._seen.read_stdin()
        return ""

    def readlines(self, hint: int = -1) -> list[str]:  # type: ignore[override]
        self._seen.read_stdin()
        return []

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 0


def _name(obj: Any) -> str:
    return str(getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__)


def process_of(p: Any) -> str | None:
    """A ``multiprocessing`` process the script starts, in words (None: a DataLoader's worker)."""
    target = getattr(p, "_target", None)
    module = str(getattr(target, "__module__", "") or "")
    if module.startswith("torch.utils.data"):
        return None
    if module.startswith("torch.multiprocessing"):
        args = getattr(p, "_args", ()) or ()
        return f"torch.multiprocessing.spawn({_name(args[0])})" if args else "torch.multiprocessing.spawn"
    if module == "multiprocessing.pool":
        return "a multiprocessing Pool"
    if module.startswith("concurrent.futures"):
        return "a ProcessPoolExecutor"
    if target is None:
        return f"multiprocessing process {type(p).__name__}"
    return f"multiprocessing.Process(target={_name(target)})"


def command_of(args: Any) -> str | None:
    """A command the script runs, when it is another Python process or a launcher (else None)."""
    try:
        words = shlex.split(args) if isinstance(args, str) else [os.fspath(a) for a in args]
    except (TypeError, ValueError):
        return None
    if not words:
        return None
    first = Path(str(words[0])).name
    if str(words[0]) == sys.executable or first.startswith(LAUNCHERS):
        return " ".join(str(w) for w in words)[:120]
    return None


def script_in(command: str) -> tuple[str, list[str]] | None:
    """The Python file a command runs and its arguments (``python worker.py --lr 1``), if any."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for i, w in enumerate(words):
        if w.endswith(".py"):
            return w, words[i + 1 :]
    return None


@contextlib.contextmanager
def watching(
    script: str, tell: Callable[[dict[str, Any]], None] | None, on_exit: Callable[[int, str], None] | None
) -> Iterator[Seen]:
    """Watch the script while it runs; every patch undone afterwards."""
    import multiprocessing.process as mpp

    seen = Seen(script, tell)
    pid = os.getpid()
    saved_stdin = sys.stdin
    real_exit, real_system = os._exit, os.system
    real_start, real_popen = mpp.BaseProcess.start, subprocess.Popen.__init__

    def start(self: Any) -> None:
        what = process_of(self) if os.getpid() == pid else None
        if what and (what.startswith("torch.multiprocessing") or from_user(script)):
            seen.started(what)
        real_start(self)

    def popen(self: Any, args: Any, *a: Any, **kw: Any) -> None:
        if os.getpid() == pid and from_user(script):
            seen.started(command_of(args))
        real_popen(self, args, *a, **kw)

    def system(command: Any) -> int:
        if os.getpid() == pid and from_user(script):
            seen.started(command_of(str(command)))
        return real_system(command)

    def _exit(status: int) -> NoReturn:
        # A forked child (a DataLoader worker, a Process) leaves through os._exit too: not the script.
        if os.getpid() == pid and on_exit is not None:
            with contextlib.suppress(BaseException):
                on_exit(int(status), script_line(script))
        real_exit(status)

    sys.stdin = NoStdin(seen)
    mpp.BaseProcess.start = start  # type: ignore[method-assign]
    subprocess.Popen.__init__ = popen  # type: ignore[method-assign]
    os.system = system
    os._exit = _exit
    try:
        yield seen
    finally:
        sys.stdin = saved_stdin
        mpp.BaseProcess.start = real_start  # type: ignore[method-assign]
        subprocess.Popen.__init__ = real_popen  # type: ignore[method-assign]
        os.system, os._exit = real_system, real_exit
