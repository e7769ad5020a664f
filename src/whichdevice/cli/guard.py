"""What the command line does when the world misbehaves, kept out of ``app.py``.

- Signals: SIGTERM (a scheduler's limit, ``kill``), SIGHUP (the terminal went away), in the
  command line's own process Ctrl-C (SIGINT) and Ctrl-\\ (SIGQUIT), and a
  broken output pipe (``| head -1``: Python ignores SIGPIPE and raises ``BrokenPipeError``
  on the next write; :class:`_PipeGuard` turns it into the same interruption) unwind the run
  like Ctrl-C: children killed, the journal kept, a line on stderr with the ``--resume``
  command, exit 128 + the signal's number. The line never reads the journal
  (``journal.active_experiment``), so a damaged journal cannot crash it. A second signal while
  the first unwinds is ignored: the clean-up and the line always finish. Interrupted while the
  page is drawn, the record is complete: the line names it and how to draw its page. Interrupted
  before anything was journaled (the pre-flight), the line says nothing was kept.
- Scratch: the run's temporary files (the runner's job files, the children's own ``TMPDIR``)
  live in ``$WHICHDEVICE_HOME/tmp/run-PID-RANDOM``, removed when the command ends; folders of
  runs killed with ``kill -9`` are removed by the next command. Nothing is left in ``/tmp``.
- Failures of the machine, not of the input: a full disk, a read-only or vanished folder
  while writing, a damaged history database are one line (with the ``--resume`` command
  while the journal is kept), exit 1; the plots and pages of a record that could not be
  written are removed (``safeio.discard_created``).
- Warnings of impossible settings (``validate.SettingWarning``) are one ``warning:`` line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from whichdevice.cli.base import err_console
from whichdevice.core.textsafe import for_encoding

if TYPE_CHECKING:
    import sqlite3

SIGNALS = (signal.SIGTERM, signal.SIGHUP)
# Taken only where the command line owns the process (``python -m whichdevice``, the console
# script): the Python API and the notebook keep Ctrl-C as their caller set it.
OWN_PROCESS_SIGNALS = (signal.SIGINT, signal.SIGQUIT)
NAMES: dict[int, str] = {
    signal.SIGINT: "Interrupted",
    signal.SIGTERM: "Terminated",
    signal.SIGHUP: "Hung up",
    signal.SIGQUIT: "Quit",
}
BAD_PATH = (errno.ENAMETOOLONG, errno.ELOOP)
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class Terminated(KeyboardInterrupt):
    """A signal (or a closed output pipe) unwound like Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


received: int | None = None  # the signal that ended the run (None: Python's own Ctrl-C or none)


def _on_signal(signum: int, frame: Any) -> None:
    # A Terminated, not a bare KeyboardInterrupt, even for SIGINT: CPython kills itself with
    # SIGINT at exit (status -2, no line) when a bare KeyboardInterrupt left code it ran through
    # PyRun_*, whatever sys.exit said; the subclass is not matched there.
    global received
    if received is not None:  # already unwinding: let the clean-up and the line finish
        return
    received = signum
    raise Terminated(signum)


class _EncodingGuard:
    """A text stream that writes what its encoding cannot hold (an ASCII or latin-1 terminal,
    a file name that is not UTF-8) as plain characters (``textsafe.for_encoding``) instead of
    raising ``UnicodeEncodeError`` after the run was measured."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except UnicodeEncodeError:  # the stream encodes the whole text before writing: none of it went out
            self._stream.write(for_encoding(text, getattr(self._stream, "encoding", None)))
            return len(text)

    def write(self, text: str) -> int:
        return self._write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _PipeGuard(_EncodingGuard):
    """``sys.stdout`` whose reader went away: the first ``BrokenPipeError`` becomes an
    interruption (SIGPIPE), the rest of the output is dropped."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._broken = False

    def _broke(self) -> None:
        global received
        self._broken = True
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        if received is None:
            received = signal.SIGPIPE
            raise Terminated(signal.SIGPIPE)

    def write(self, text: str) -> int:
        if self._broken:
            return len(text)
        try:
            return self._write(text)
        except BrokenPipeError:
            self._broke()
            return len(text)

    def flush(self) -> None:
        if self._broken:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._broke()


def _home() -> Path:
    return Path(os.environ.get("WHICHDEVICE_HOME") or Path.home() / ".whichdevice")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_scratch(base: Path) -> None:
    """Scratch folders of runs that were killed (their process is gone)."""
    with contextlib.suppress(OSError):
        for d in base.glob("run-*"):
            try:
                pid = int(d.name.split("-")[1])
            except (IndexError, ValueError):
                continue
            if not _pid_alive(pid):
                shutil.rmtree(d, ignore_errors=True)


# Where a library would otherwise write into the user's home (matplotlib's font cache):
# under WHICHDEVICE_HOME, unless the user chose a place.
CACHES = {"MPLCONFIGDIR": "matplotlib"}


def _keras_home(folder: str) -> str | None:
    """A KERAS_HOME for the run in its scratch folder, unless the user set one
    (importing Keras wrote ~/.keras/keras.json in a fresh home, even for a torch model or a
    refused input). The user's own keras.json is copied in, so the model's settings (backend,
    floatx, image data format) are theirs; every other entry of their Keras folder (datasets,
    models) is linked, so what Keras downloaded before is found and not fetched again."""
    if os.environ.get("KERAS_HOME"):
        return None
    base = os.path.expanduser("~")
    real = Path(base if os.access(base, os.W_OK) else "/tmp") / ".keras"  # keras/src/backend/config.py
    mine = Path(folder) / "keras"
    try:
        mine.mkdir()
    except OSError:
        return None
    with contextlib.suppress(OSError):
        for entry in real.iterdir():
            if entry.name == "keras.json":
                shutil.copyfile(entry, mine / entry.name)
            else:
                (mine / entry.name).symlink_to(entry)
    return str(mine)


# A child's temporary folder is BASE/run-PID-XXXXXXXX/whichdevice-XXXXXXXX (43 bytes below
# BASE), and a Unix socket made in it (multiprocessing's; a torch DataLoader worker passes each
# batch through one at pymp-XXXXXXXX/listener-XXXXXXXX, 32 bytes more) holds at most 107 bytes.
# Past that the worker's sending thread fails unseen and the loop waits for a batch that never
# comes ("DataLoader timed out after 30 seconds" on every pass, measured under a 56-byte
# WHICHDEVICE_HOME; fine under ~/.whichdevice).
_SOCKET_PATH_MAX = 107
_BELOW_BASE = 43 + 32


def _scratch_base() -> Path:
    """WHICHDEVICE_HOME/tmp, or, when that is too deep for a socket in a child's temp folder, a
    folder of ours in the system's temporary folder (removed with the run all the same)."""
    base = _home() / "tmp"
    if len(os.fsencode(base)) + _BELOW_BASE <= _SOCKET_PATH_MAX:
        return base
    return Path(tempfile.gettempdir()) / f"whichdevice-{os.getuid()}"


def _scratch() -> Callable[[], None]:
    """A scratch folder for this run's temporary files (ours and the children's), and the
    libraries' caches under WHICHDEVICE_HOME."""
    base = _scratch_base()
    try:
        base.mkdir(parents=True, exist_ok=True)
        _remove_stale_scratch(base)
        folder = tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=base)
    except OSError:
        return lambda: None  # no home to write to: the system's temporary folder, as before
    saved = {k: os.environ.get(k) for k in ("TMPDIR", "KERAS_HOME", *CACHES)}
    saved_dir = tempfile.tempdir
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder
    keras_home = _keras_home(folder)
    if keras_home is not None:
        os.environ["KERAS_HOME"] = keras_home
    for var, name in CACHES.items():
        if not os.environ.get(var):
            cache = _home() / "cache" / name
            try:
                cache.mkdir(parents=True, exist_ok=True)
            except OSError:  # matplotlib would make a temporary one and fail to remove it at exit
                cache = Path(folder) / name
            os.environ[var] = str(cache)

    def restore() -> None:
        tempfile.tempdir = saved_dir
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(folder, ignore_errors=True)
        if base != _home() / "tmp":  # ours in the system's temporary folder: gone when empty
            with contextlib.suppress(OSError):
                base.rmdir()

    return restore


def closed_output() -> bool:
    """True when the command was started with its standard output closed (``>&-``, as cron
    can): Python then has no ``sys.stdout``, and a file the run opens could take descriptor 1.
    Said in one line (on stderr, when that is open), exit 2, before anything runs."""
    if sys.stdout is not None:
        return False
    err_console.print(
        "error: standard output is closed (as `>&-` leaves it). "
        "Send it somewhere instead, e.g. >/dev/null or >whichdevice.log.",
        soft_wrap=True,
    )
    return True


def unusable_home() -> bool:
    """True, with one line, when the WHICHDEVICE_HOME the user set cannot hold the run's
    scratch folder and caches (a file, a read-only or vanished folder): said before
    anything runs, exit 2. Unset, a home that cannot be used falls back to the system's
    temporary folder."""
    if not os.environ.get("WHICHDEVICE_HOME"):
        return False
    home = _home()
    try:
        for folder in (home / "tmp", home / "cache"):
            folder.mkdir(parents=True, exist_ok=True)
            if not os.access(folder, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))
    except OSError as e:
        why = e.strerror or type(e).__name__
        if e.filename and str(e.filename) != str(home):
            why = f"{e.filename}: {why}"
        err_console.print(
            f"error: WHICHDEVICE_HOME: '{escape(str(home))}' cannot be used ({escape(why)}). "
            "Set it to a folder you can write to, or unset it (the default is ~/.whichdevice).",
            soft_wrap=True,
        )
        return True
    return False


def install(*, scratch: bool = True, own_process: bool = False) -> Callable[[], None]:
    """Signal handlers (``own_process``: Ctrl-C and Ctrl-\\ too, kept to the process's end), the
    output pipe's guard, the scratch folder (for a command) and the warning line; returns the
    function that undoes them."""
    global received
    received = None
    run = sys.modules.get("whichdevice.jobs.running")
    if run is not None:
        run.all_failed = None  # type: ignore[attr-defined]
        run.written = None  # type: ignore[attr-defined]
    previous = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    if own_process:  # never undone: a Ctrl-C while the command exits must not end it by the signal
        for s in OWN_PROCESS_SIGNALS:
            signal.signal(s, _on_signal)
    restore_streams = _guard_streams()
    restore_scratch = _scratch() if scratch else (lambda: None)
    saved_show = warnings.showwarning

    def show(message: Any, category: type, *args: Any, **kwargs: Any) -> None:
        if category.__name__ == "SettingWarning":
            err_console.print(f"warning: {escape(str(message))}", soft_wrap=True)
        else:
            saved_show(message, category, *args, **kwargs)

    warnings.showwarning = show

    def undo() -> None:
        if received is None:  # after a signal ours stay: a second SIGTERM must not kill the hint
            for s, handler in previous.items():
                signal.signal(s, handler)
        warnings.showwarning = saved_show
        restore_streams()
        restore_scratch()
        journal = sys.modules.get("whichdevice.measure.journal")
        if journal is not None:  # the command is over: its journal is no longer in use
            journal.release_locks()

    return undo


def _guard_streams() -> Callable[[], None]:
    """stdout behind the pipe's guard, stderr behind the encoding's; returns the undo."""
    saved_stdout, saved_stderr = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, _PipeGuard):
        sys.stdout = _PipeGuard(sys.stdout)  # type: ignore[assignment]
    if sys.stderr is not None and not isinstance(sys.stderr, _EncodingGuard):
        sys.stderr = _EncodingGuard(sys.stderr)  # type: ignore[assignment]

    def restore() -> None:
        if isinstance(sys.stdout, _PipeGuard) and not sys.stdout._broken:
            sys.stdout = saved_stdout
        if isinstance(sys.stderr, _EncodingGuard):
            sys.stderr = saved_stderr

    return restore


def _journal() -> tuple[Path | None, str]:
    """The open journal of this run and its experiment, without reading the file."""
    journal = sys.modules.get("whichdevice.measure.journal")  # loaded by any command that journals
    path = getattr(journal, "active", None)
    name = getattr(journal, "active_experiment", None) or "run"
    try:
        exists = path is not None and path.exists()
    except OSError:
        exists = False
    return (path if exists else None), name


def resume_hint() -> str:
    path, name = _journal()
    if path is None:
        return ""
    return (
        f" The finished cases are kept in {escape(str(path))}; finish the run with: "
        f"whichdevice {escape(name)} --resume {escape(str(path))}"
    )


def _written_hint() -> str:
    """For a run interrupted after its record was written (while its page was drawn): where the
    record is, and how to draw its page."""
    run = sys.modules.get("whichdevice.jobs.running")
    path = getattr(run, "written", None)
    if path is None:
        return ""
    where = escape(str(path))
    return f" The record is complete: {where}; draw its page with: whichdevice report {where}"


def interrupted_code(default: int, *, measuring: bool = False) -> int:
    """Exit code and the line for an interruption (Ctrl-C is ``default``, 130); ``measuring``: a
    command that measures, whose line says so when nothing was kept."""
    what = NAMES.get(received, "Output closed") if received is not None else "Interrupted"
    hint = resume_hint() or _written_hint()
    if not hint and measuring and received != signal.SIGPIPE:
        hint = " Nothing was measured yet; nothing is kept."
    if received == signal.SIGPIPE:
        what = "Output closed (the program reading it quit)"
        if not hint:  # `whichdevice --help | head`: nothing lost, nothing to say
            return 128 + received
    err_console.print(f"{what}.{hint}", soft_wrap=True)
    return 128 + received if received is not None else default


def _discard() -> None:
    safeio = sys.modules.get("whichdevice.core.safeio")
    if safeio is not None:
        safeio.discard_created()


def os_error(e: OSError) -> int:
    """One line for an ``OSError`` that reached the top; the exit code."""
    _discard()
    where = e.filename if e.filename is not None else ""
    shown = str(where) if len(str(where)) <= 160 else str(where)[:80] + "…" + str(where)[-60:]
    if e.errno in BAD_PATH:
        err_console.print(f"error: '{escape(shown)}' cannot be used ({escape(e.strerror or '')}).", soft_wrap=True)
        return 2
    if isinstance(e, BrokenPipeError):
        return interrupted_code(141)
    what = "no space left on the disk" if e.errno in FULL else (e.strerror or type(e).__name__)
    target = f" writing '{escape(shown)}'" if shown else ""
    hint = resume_hint()
    fix = " Free some space, then" if e.errno in FULL else " Fix that, then"
    if hint:
        hint = hint.replace("; finish the run with:", f";{fix.lower()} finish the run with:")
    err_console.print(f"error: {escape(what)}{target}; nothing half-written is left.{hint}", soft_wrap=True)
    return 1


def database_error(e: sqlite3.Error) -> int:
    history = sys.modules.get("whichdevice.measure.history")
    path = history.db_path() if history is not None else _home() / "history.sqlite"
    err_console.print(
        f"error: the run history '{escape(str(path))}' cannot be read ({escape(str(e))}). "
        f"Move it aside (mv '{escape(str(path))}' '{escape(str(path))}.bak'): a new one is started; "
        "the JSON records are untouched.",
        soft_wrap=True,
    )
    return 1


def all_failed() -> int:
    """0, or 1 with one line when every case of the record the command wrote failed."""
    run = sys.modules.get("whichdevice.jobs.running")
    text = getattr(run, "all_failed", None)
    if not text:
        return 0
    run.all_failed = None  # type: ignore[union-attr]
    err_console.print(f"error: {escape(text)}", soft_wrap=True)
    return 1
