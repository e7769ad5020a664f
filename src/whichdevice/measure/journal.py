"""An append-only journal of a run in progress, so nothing finished is lost.

Every finished case (and every child's session) is appended to ``NAME.partial.jsonl`` as
one JSON line, flushed and fsynced before the run moves on. ``kill -9`` of the whole run
at any moment leaves a readable journal: at worst its last line is cut short, and that
line is ignored on reading. ``--resume JOURNAL`` reads it back, skips the finished cases,
appends the rest to the same journal, and writes the final record; the journal is then
removed. The first line (the header) holds what is needed to resume: the experiment, its
checked options and where the record goes.

A run of several parts (``run --framework a,b``: one journal per framework) has a top-level
journal and part journals whose header names it (``part_of``): only the top-level one is
resumed; a folder given to ``--resume`` means its top-level journals.

Safety: the journal is created with ``O_EXCL | O_NOFOLLOW`` and appended to with
``O_NOFOLLOW`` (a planted link is refused, never followed); it is read as a regular file of
bounded size (a FIFO or a device is refused, not waited on). Its header carries the version
of whichdevice that wrote it, the machine's usable cores, the installed framework versions
and a checksum: a header that was edited, or written by another version, is refused; a
resume on a machine with other cores or other framework versions is allowed but warned
about and noted in the record (``resume_changes``). Paths in the header that sat beside the
journal (the record, its plot, part journals) are taken relative to the journal given to
``--resume``, so a moved or copied folder is resumed where it is. A cut-short last line (a
kill, a full disk) is ignored on reading and cut off before the next append; a failed
append is cut back at once.
"""

from __future__ import annotations

from typing import Any

import contextlib
import hashlib
import json
import os
import platform
import time
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from pydantic import ValidationError

from whichdevice.core import safeio
from whichdevice.core.errors import UsageError
from whichdevice.core.records import CaseResult, Session, impossible, result_upgraded
from whichdevice.core.validate import SettingWarning, usable_cores
from whichdevice.core.version import __version__

SUFFIX = ".partial.jsonl"
FORMAT = 2  # 2: checksum, tool version, machine and framework versions in the header
READ_CAP = 64 * 2**20
_VERSIONED = ("numpy", "tensorflow", "torch", "jax", "keras")


def journal_path(json_file: Path) -> Path:
    return json_file.with_name(json_file.stem + SUFFIX)


@dataclass
class JournalState:
    header: dict[str, Any]
    sessions: list[Session] = field(default_factory=list)
    results: list[CaseResult] = field(default_factory=list)
    path: Path | None = None
    changes: list[str] = field(default_factory=list)  # what differs on this machine since the run started

    @property
    def done(self) -> dict[str, CaseResult]:
        """Finished cases by key (a failed case counts as finished: it is not retried)."""
        return {r.spec.key: r for r in self.results}


def _header(path: Path) -> dict[str, Any]:
    """The header of a journal (an empty dict if the first line is not one, or if the file
    is not a regular file of a journal's size)."""
    try:
        raw = safeio.read_capped(path, "--resume", cap=READ_CAP, what="journal")
        obj = json.loads(raw.split(b"\n", 1)[0].decode("utf-8", errors="replace"))
    except (UsageError, ValueError):
        return {}
    return obj if isinstance(obj, dict) and obj.get("type") == "header" else {}


def _checksum(header: dict[str, Any]) -> str:
    body = {k: v for k, v in header.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]


def installed_versions() -> dict[str, str]:
    """Versions of the frameworks installed here (package metadata: nothing is imported)."""
    found = {}
    for dist in _VERSIONED:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[dist] = metadata.version(dist)
    return found


def machine_facts() -> dict[str, Any]:
    return {"cores": usable_cores(), "host": platform.node()}


# The journal of the run in progress in this process (a top-level one: not a part), so an
# interrupted command can say how to resume it (cli/app.py) without reading the file again.
active: Path | None = None
active_experiment: str | None = None
active_changes: list[str] = []  # what changed since the active (resumed) run started: noted in its record


def _set_active(path: Path, header: dict[str, Any]) -> None:
    global active, active_experiment
    active = Path(path)
    active_experiment = str(header.get("experiment") or "run")


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._tail_checked = False

    @classmethod
    def create(cls, path: Path, header: dict[str, Any]) -> Journal:
        j = cls(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        full = {
            "type": "header",
            **header,
            "format": FORMAT,
            "tool_version": __version__,
            "machine": machine_facts(),
            "versions": installed_versions(),
        }
        full["checksum"] = _checksum(full)
        fd = safeio.create_new(path)  # O_EXCL | O_NOFOLLOW: never another run's journal, never a link
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(full) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        j._tail_checked = True
        if not header.get("part_of"):
            _lock(path, "--resume")  # a --resume of this journal while the run goes on is refused
            _set_active(path, full)
            active_changes.clear()
        return j

    def _append(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj) + "\n").encode("utf-8")
        fd = safeio.open_append(self.path)
        try:
            size = os.fstat(fd).st_size
            if not self._tail_checked:
                size = _cut_torn_tail(fd, size)
                self._tail_checked = True
            try:
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                os.fsync(fd)
            except BaseException:  # a full disk, a signal: no half line left behind
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def add_result(self, result: CaseResult) -> None:
        self._append({"type": "result", "result": result.model_dump(mode="json")})

    def add_session(self, session: Session) -> None:
        self._append({"type": "session", "session": session.model_dump(mode="json")})

    def finish(self) -> None:
        global active, active_experiment
        self.path.unlink(missing_ok=True)
        _unlock(self.path)
        if active == self.path:
            active = active_experiment = None

    @staticmethod
    def read(
        path: Path | str, argument: str = "--resume", experiment: str | None = None, part: bool = False
    ) -> JournalState:
        """Read a journal; a cut-short last line (the run was killed mid-write) is ignored.
        A part journal (header ``part_of``) is refused unless ``part``: its run resumes it."""
        p = _the_journal(Path(path), argument)
        state = _parse_journal(_read_raw(p, argument), p, argument)
        _check_header(state.header, p, argument)
        state.header = _rebase(state.header, p)
        top = state.header.get("part_of")
        if top and not part:
            _refuse_part(p, top, argument)
        if experiment and state.header.get("experiment") != experiment:
            raise UsageError(
                argument,
                f"'{p}' is a journal of `{state.header.get('experiment')}`, not `{experiment}`",
                f"Resume it with `whichdevice {state.header.get('experiment')} --resume`.",
            )
        if not top and not part:
            _lock(p, argument)  # before anything is measured: one resume of a journal at a time
            state.changes = _changes(state.header)
            for change in state.changes:
                warnings.warn(SettingWarning(change), stacklevel=2)
            _set_active(p, state.header)
            active_changes[:] = state.changes
        return state


# Descriptors holding an exclusive lock (flock) on the journals of this process's run, by path:
# a second ``--resume`` of the same journal, or one while the run that wrote it goes on, is
# refused before it measures (two resumes side by side both measured, then both wrote
# the record, or one failed at the end on a journal the other had removed). Released by
# ``finish`` or when the process ends, however it ends; kill -9 included.
_held: dict[Path, int] = {}


def _lock(p: Path, argument: str) -> None:
    try:
        import fcntl
    except ImportError:  # not a POSIX system: no lock, as before
        return
    key = p.absolute()
    if key in _held:
        return
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return  # the reading that follows says what is wrong with the file
    if not _flock_within(fd, fcntl, _LOCK_WAIT_S):
        os.close(fd)
        raise UsageError(
            argument,
            f"'{p}' is in use by another whichdevice that is running or resuming it now",
            "Wait for that one to finish (it writes the record), or stop it, then resume again.",
        ) from None
    _held[key] = fd


# A run killed a moment ago still holds its journal's lock until the kernel has torn down its
# children (a forked child holds the parent's descriptors until it ends): a resume typed right
# after a kill -9 waits this long for that before it says the journal is in use.
_LOCK_WAIT_S = 3.0


def _flock_within(fd: int, fcntl: Any, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)


def release_locks() -> None:
    """Release every journal lock this process holds (a command's end: cli/guard.py)."""
    for p in list(_held):
        _unlock(p)


def _unlock(p: Path) -> None:
    fd = _held.pop(p.absolute(), None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _the_journal(p: Path, argument: str) -> Path:
    """The journal ``--resume`` names: the file, or a folder's one top-level journal."""
    if not safeio.is_dir_quietly(p):
        return p
    found = sorted(f for f in p.glob(f"*{SUFFIX}") if _header(f) and not _header(f).get("part_of"))
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise UsageError(
            argument, f"'{p}' holds {what} unfinished run journals (*{SUFFIX})", "Pass the journal file itself."
        )
    return found[0]


def _read_raw(p: Path, argument: str) -> bytes:
    """The journal's bytes (a regular file of bounded size)."""
    try:
        return safeio.read_capped(p, argument, cap=READ_CAP, what="journal")
    except UsageError as e:
        if e.problem.startswith("no such file"):
            raise UsageError(
                argument, f"no such file '{p}'", f"Pass the {SUFFIX} file an interrupted run left."
            ) from None
        raise


def _corrupt(p: Path, line_no: int, argument: str) -> UsageError:
    return UsageError(argument, f"'{p}' is corrupt at line {line_no}", "It cannot be resumed; start a new run.")


def _parse_journal(raw: bytes, p: Path, argument: str) -> JournalState:
    """The header, results and sessions of a journal's lines; an unterminated last line (a
    write that was cut short) is ignored when it cannot be read."""
    lines = raw.decode("utf-8", errors="replace").split("\n")
    torn = lines.pop()  # "" when the file ends with a newline; else a write that was cut short
    state: JournalState | None = None
    for i, line in enumerate([*lines, torn] if torn.strip() else lines):
        obj = _parse(line)
        if i >= len(lines) and (obj is None or state is None):  # the unterminated last line
            break
        if obj is None:
            raise _corrupt(p, i + 1, argument) from None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if i == 0:
            if kind != "header":
                raise UsageError(argument, f"'{p}' is not a whichdevice journal", f"Pass a {SUFFIX} file.")
            state = JournalState(header=obj, path=p)
            continue
        assert state is not None
        try:
            _add_entry(state, kind, obj)
        except (KeyError, TypeError, AttributeError, ValueError, ValidationError):
            raise _corrupt(p, i + 1, argument) from None
    if state is None:
        raise UsageError(argument, f"'{p}' is empty", "It cannot be resumed; start a new run.")
    return state


def _add_entry(state: JournalState, kind: object, obj: Any) -> None:
    """One journaled result or session into ``state`` (other lines are skipped); raises on an
    entry that does not validate."""
    if kind == "result":
        # a result journaled by an older version: before failure kinds (schema 1) it gets its kind
        # from its text; before the skipped status (schema 4) a skipped case said "failed"
        result = CaseResult.model_validate(result_upgraded(obj["result"]))
        if impossible(result) is not None:
            raise ValueError(impossible(result))
        state.results.append(result)
    elif kind == "session":
        state.sessions.append(Session.model_validate(obj["session"]))


def _refuse_part(p: Path, top: str, argument: str) -> None:
    """A part journal given to ``--resume``: its run is resumed as a whole, or is gone."""
    if not Path(top).exists():
        raise UsageError(argument, f"'{p}' is left over from a run that has finished ('{top}' is gone)", "Delete it.")
    raise UsageError(
        argument, f"'{p}' is one part of the interrupted run '{top}'", f"Resume the whole run: --resume {top}."
    )


def _parse(line: str) -> Any:
    """One journal line, as JSON decodes it (the caller checks it is an object of a known
    type); a line where a resume appended onto a cut-short line (the bug of older versions
    of whichdevice) is read from its last complete object. None: unreadable."""
    try:
        return json.loads(line)
    except ValueError:
        pass
    at = line.rfind('{"type": ')
    if at > 0:
        with contextlib.suppress(ValueError):
            return json.loads(line[at:])
    return None


def _cut_torn_tail(fd: int, size: int) -> int:
    """Cut a last line that has no newline (a write a kill or a full disk interrupted);
    return the new size."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    pos = size
    while pos > 0:
        start = max(0, pos - 65536)
        chunk = os.pread(fd, pos - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            keep = start + nl + 1
            os.ftruncate(fd, keep)
            return keep
        pos = start
    return size  # no complete line at all: the header itself is torn; reading refuses it


def _check_header(header: dict[str, Any], p: Path, argument: str) -> None:
    written_by = header.get("tool_version")
    if header.get("format") != FORMAT or "checksum" not in header:
        raise UsageError(
            argument,
            f"'{p}' is a journal of another format ({header.get('format') or 'no checksum'}, written by "
            f"whichdevice {written_by or 'before 0.1'}; this whichdevice reads format {FORMAT})",
            "Finish it with that version, or start a new run.",
        )
    if header.get("checksum") != _checksum(header):
        raise UsageError(
            argument,
            f"'{p}' has a header that was edited after the run wrote it (its checksum does not match)",
            "Resume only journals as whichdevice wrote them; start a new run.",
        )
    if written_by != __version__:
        raise UsageError(
            argument,
            f"'{p}' was written by whichdevice {written_by}; this is {__version__}",
            f"Finish it with whichdevice {written_by}, or start a new run.",
        )


def _rebase(header: dict[str, Any], journal: Path) -> dict[str, Any]:
    """Paths that sat beside the record, taken relative to the journal given to ``--resume``:
    the folder it is in now, and its stem if it was renamed."""
    json_file = header.get("json_file")
    if not isinstance(json_file, str):
        return header
    old = Path(json_file)
    new_stem = journal.name[: -len(SUFFIX)] if journal.name.endswith(SUFFIX) else journal.stem
    new_dir = journal.absolute().parent
    if old.parent == new_dir and old.stem == new_stem:
        return header

    def move(value: object) -> object:
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        if isinstance(value, list):
            return [move(v) for v in value]
        if isinstance(value, str) and value.startswith("/") and Path(value).parent == old.parent:
            name = Path(value).name
            if name.startswith(old.stem):
                name = new_stem + name[len(old.stem) :]
            return str(new_dir / name)
        return value

    return {k: (v if k in ("checksum", "machine", "versions", "files") else move(v)) for k, v in header.items()}


def _changes(header: dict[str, Any]) -> list[str]:
    """What differs between the machine that started the run and this one."""
    out = []
    then = header.get("machine") or {}
    now = machine_facts()
    if then.get("cores") not in (None, now["cores"]):
        out.append(
            f"the interrupted run started with {then['cores']} usable cores and this machine gives "
            f"{now['cores']}: CPU times before and after the resume are not comparable"
        )
    if then.get("host") not in (None, now["host"]):
        out.append(f"the interrupted run started on host '{then['host']}' and is resumed on '{now['host']}'")
    old, new = header.get("versions") or {}, installed_versions()
    for dist in sorted(set(old) | set(new)):
        if old.get(dist) != new.get(dist):
            out.append(
                f"{dist} was {old.get(dist) or 'not installed'} when the run started and is "
                f"{new.get(dist) or 'not installed'} now: cases before and after the resume ran different versions"
            )
    return out
