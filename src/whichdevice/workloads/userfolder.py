"""The user's folder left as it was after ``diagnose SCRIPT`` ran their script there.

diagnose runs the script several times (the pre-flight, then once per measuring process) in the
user's working folder, as they run it, so its relative paths work. What the script writes there
(a ``CSVLogger``'s log, a ``ModelCheckpoint``, Lightning's ``lightning_logs/version_N``, a
callback's images) would otherwise replace the user's own files, run after run, without a word.

:class:`Guard` takes a snapshot of the folders the script works in (its working folder and its
own folder) before the first run: each entry's type, size, modification time and inode, and a copy
of each file small enough to keep (``COPY_FILE_MAX``, ``COPY_TOTAL_MAX``, the disk's free space).
After every run of the script (:func:`settle_here`: in the process that started or ran it), what
the script's processes wrote is put back:

- a file the script changed or replaced: the user's copy restored, the script's moved aside;
- a file or folder the script created: moved aside;
- a file or folder the script deleted: restored;
- the folders' own modification times as they were.

Only what the script was seen writing is touched: its processes record each path they write
(``workloads/scriptwrites.py``: Python's audit events, and the native writers each framework
declares, such as torch.save). The user keeps working while diagnose runs, so a change nobody
was seen making is theirs or another program's, or native code of the script's that no record
covers; which of them cannot be told apart from outside. The rule: such a change is left as it
is, and the snapshot takes it in (a later write of the script's is put back to it; each run
starts with a settle, so a change made between runs is in before the script can write over it). When it
happened during a run of the script (its change time inside a run's window, :func:`script_run`,
within ``WINDOW_MARGIN_NS``; a deletion has no time and counts as during one), it is said on the
screen and in the record as changed with no write by the script seen, and the copy from before
goes to ``<record>.before-diagnose/``: if it was the script's native code, nothing of the user's
is lost. A change between runs is no script's: nothing is said. A path the script wrote is the
script's for that run even if the user edited it too during that run: the copy put aside (in
``<record>.script-files/``) holds whichever write came last.

"Aside" is a staging folder in the guard's private temporary folder, keeping the last run's copy
of each path; :meth:`Guard.finish` moves it into the output folder (``<record>.script-files/``,
the earlier copies into ``<record>.before-diagnose/``) and returns what the script wrote and where
it now is, for the screen and the record. A run that is refused (nothing written) drops it
instead (:meth:`Guard.abandon`).

Only folders whose whole listing the snapshot read are compared (``MAX_ENTRIES`` bounds the walk):
in a folder it did not finish reading, nothing is taken for new. Python's own caches and version
control folders are not watched (``SKIP``): ``python train.py`` writes ``__pycache__`` too; nor
are hidden folders (``.keras``, ``.cache``: the frameworks' own caches when the folder is the
user's home), whichdevice's own home, the output folder or the temporary folder.
The guard's folder is named to children in ``ENV``; runs are never concurrent (one script process
at a time), and a lock file orders them anyway.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from whichdevice.core.textsafe import clean
from whichdevice.workloads import scriptwrites

ENV = "WHICHDEVICE_FOLDER_GUARD"
MAX_ENTRIES = 20_000
COPY_FILE_MAX = 64 * 2**20
COPY_TOTAL_MAX = 1024 * 2**20
FREE_MARGIN = 512 * 2**20  # left free on the temporary folder's disk after the copies
SKIP = frozenset(
    {
        "__pycache__",
        ".git",
        ".hg",
        ".svn",
        ".ipynb_checkpoints",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        "node_modules",
        "whichdevice-results",  # the default --out: whichdevice's own, wherever the record goes
    }
)
MANIFEST = "manifest.json"
CHANGES = "changes.jsonl"
WINDOWS = "runs.jsonl"
STAGED = "staged"
EARLIER = "earlier"
BACKUP = "backup"
# A file's change time comes from the kernel's coarse clock, up to a tick (1-10 ms) behind the
# clock a run's window is read with: each window is widened by this much on both sides.
WINDOW_MARGIN_NS = 50_000_000


@dataclass(frozen=True)
class Written:
    """One path the script wrote in the user's folder, and what was done about it."""

    path: str  # as the user sees it: relative to their working folder, or absolute
    what: str  # "changed", "new", "deleted"
    kept_as: str | None  # where the script's copy is now (None: nothing kept, e.g. a deletion)
    restored: bool  # the user's own copy is back (a new path: True once moved away)
    why_not: str = ""  # why the user's copy could not be put back
    # False: no write by the script was seen on it, and it changed during a run of the script:
    # left as it is (``kept_as``: the copy from before it changed, if one was kept)
    seen: bool = True

    def line(self) -> str:
        """One clause for the screen and the record (file names cleaned of control characters)."""
        return clean(self._line(), newlines=False)

    def short(self) -> str:
        """The clause for the screen: the path and what happened to it."""
        if self.seen and not self.restored:
            return f"{self.path} ({self.what}, NOT put back: {self.why_not})"
        return f"{self.path} ({self.what})"

    def _line(self) -> str:
        if not self.seen:
            left = {"new": "left in place", "deleted": "left deleted"}.get(self.what, "left as it is")
            kept = f"; the copy from before: {self.kept_as}" if self.kept_as else ""
            return f"{self.path} ({self.what}; {left}{kept})"
        if self.what == "new" and not self.restored:
            return f"{self.path} (new; NOT moved: {self.why_not})"
        if self.what == "new":
            where = f"moved to {self.kept_as}" if self.kept_as else "removed"
            return f"{self.path} (new: {where})"
        if not self.restored:
            return f"{self.path} ({self.what}; NOT put back: {self.why_not})"
        if self.what == "deleted":
            return f"{self.path} (deleted by the script: put back)"
        kept = f"; the script's copy: {self.kept_as}" if self.kept_as else ""
        return f"{self.path} (yours put back{kept})"


@dataclass
class _Settling:
    """One settle's state: the snapshot, the script's writes seen, the runs' times, and the
    folders touched (their times put back) and adopted (a change nobody was seen making stays)."""

    m: dict[str, Any]
    wrote: scriptwrites.Wrote
    runs: list[tuple[int, int]]
    touched: set[str] = field(default_factory=set)
    adopted: set[str] = field(default_factory=set)


def _is_venv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


def _entry(st: os.stat_result) -> dict[str, Any]:
    kind = "dir" if stat.S_ISDIR(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode) else "file"
    return {
        "kind": kind,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ino": st.st_ino,
        "dev": st.st_dev,
        "mode": st.st_mode,
    }


def _streams() -> set[tuple[int, int]]:
    """The files this process's standard output and error are (device, inode)."""
    out = set()
    for fd in (1, 2):
        with contextlib.suppress(OSError, ValueError):
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                out.add((st.st_dev, st.st_ino))
    return out


def _same(a: dict[str, Any], st: os.stat_result) -> bool:
    b = _entry(st)
    if a["kind"] != b["kind"]:
        return False
    if a["kind"] == "dir":
        return True  # a folder's own times follow its entries: compared entry by entry
    return all(a[k] == b[k] for k in ("size", "mtime_ns", "ino"))


class Guard:
    """The snapshot of the user's folders and what each run changed there (see the module)."""

    def __init__(self, home: Path) -> None:
        self.home = home

    # ------------------------------------------------------------------ the snapshot

    @classmethod
    def start(cls, roots: list[str], exclude: list[str], record: str) -> Guard:
        """Snapshot ``roots`` (the working folder and the script's, absolute), leaving out the
        paths in ``exclude`` (the output folder) and the record's own files (``record``: its
        path; the journal, report and plots are named from its stem beside it), into a new
        private temporary folder."""
        home = Path(tempfile.mkdtemp(prefix="whichdevice-folder-"))
        (home / BACKUP).mkdir()
        (home / STAGED).mkdir()
        guard = cls(home)
        guard._snapshot(roots, exclude, record)
        return guard

    def _snapshot(self, roots: list[str], exclude: list[str], record: str) -> None:
        own = os.environ.get("WHICHDEVICE_HOME") or os.path.expanduser("~/.whichdevice")
        excluded = {os.path.realpath(p) for p in [*exclude, own, str(self.home), tempfile.gettempdir()]}
        ours = [os.path.realpath(os.path.dirname(record)), Path(record).stem]
        dirs, entries, complete = _walk(roots, excluded, ours)
        # whichdevice's own output redirected into the folder (> out.txt): the shell made it before
        # the snapshot and whichdevice writes it; it is the user's command's, not the script's.
        for path in [p for p, e in entries.items() if (e["dev"], e["ino"]) in _streams()]:
            del entries[path]
            excluded.add(os.path.realpath(path))
        copied = self._keep_copies(entries)
        m = {"dirs": dirs, "entries": entries, "complete": complete, "copied_bytes": copied}
        self._write(MANIFEST, json.dumps(m | {"excluded": sorted(excluded), "ours": ours}))
        # the folders whose writes the script's processes record (workloads/scriptwrites.py)
        self._write(scriptwrites.ROOTS, json.dumps(sorted({os.path.realpath(r) for r in roots})))

    def _keep_copies(self, entries: dict[str, dict[str, Any]], already: int = 0) -> int:
        """A copy of each regular file, smallest first, within the caps (``already``: the bytes
        copied before) and the disk's room; the bytes copied."""
        budget = min(COPY_TOTAL_MAX - already, max(shutil.disk_usage(self.home).free - FREE_MARGIN, 0))
        copied = 0
        files = sorted((e["size"], p) for p, e in entries.items() if e["kind"] == "file")
        for size, p in files:
            if size > COPY_FILE_MAX or copied + size > budget:
                break
            b = self.home / BACKUP / uuid.uuid4().hex
            try:
                shutil.copy2(p, b, follow_symlinks=False)
            except OSError:
                continue
            entries[p]["backup"] = str(b)
            copied += size
        return copied

    def _write(self, name: str, text: str) -> None:
        tmp = self.home / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.home / name)

    def _manifest(self) -> dict[str, Any]:
        return json.loads((self.home / MANIFEST).read_text(encoding="utf-8"))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.home / "lock", "a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # ------------------------------------------------------------------ after each run

    def settle(self) -> list[Written]:
        """Put the folders back as the snapshot found them; what the script wrote is staged."""
        if not (self.home / MANIFEST).exists():
            return []
        with self._locked():
            m = self._manifest()
            got = self._settle(m)
            self._write(MANIFEST, json.dumps(m))
            if got:
                with open(self.home / CHANGES, "a", encoding="utf-8") as f:
                    for w in got:
                        f.write(json.dumps(asdict(w)) + "\n")
        return got

    def _stage(self, path: str) -> str:
        """Move ``path`` (the script's file or folder) into the staging folder; its staged path."""
        dest = self.home / STAGED / path.lstrip(os.sep)
        if os.path.lexists(dest):
            if os.path.isdir(dest) and not os.path.islink(dest):
                shutil.rmtree(dest, ignore_errors=True)
            else:
                os.unlink(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, dest)
        return str(dest)

    def _restore(self, path: str, e: dict[str, Any]) -> str:
        """The snapshot's entry at ``path`` again; '' once done, else why not."""
        if e["kind"] == "dir":
            os.makedirs(path, exist_ok=True)
        elif e["kind"] == "link":
            if "target" not in e:
                return "its link target could not be read"
            os.symlink(e["target"], path)
        elif e["kind"] == "special":
            return "it is not a regular file"
        elif "backup" in e:
            shutil.copy2(e["backup"], path, follow_symlinks=False)
        else:
            return f"too large to keep a copy of ({e['size'] / 2**20:.0f} MiB)"
        # the restored entry is a new inode: the snapshot names it, or the next settle would see a change
        e.update({k: v for k, v in _entry(os.lstat(path)).items() if k in ("ino", "mtime_ns", "size")})
        return ""

    def _settle(self, m: dict[str, Any]) -> list[Written]:
        s = _Settling(m, scriptwrites.taken(str(self.home)), self._runs())
        got = self._put_back(s) + self._move_new(s)
        touched, adopted = s.touched, s.adopted
        for d in touched - adopted:
            info = m["dirs"].get(d)
            if info is not None:
                with contextlib.suppress(OSError):
                    os.utime(d, ns=(info["atime_ns"], info["mtime_ns"]), follow_symlinks=False)
        for d in adopted:  # its times are now the user's: what a later put-back restores
            info = m["dirs"].get(d)
            with contextlib.suppress(OSError):
                st = os.lstat(d)
                if info is not None:
                    info.update(mtime_ns=st.st_mtime_ns, atime_ns=st.st_atime_ns)
        return got

    def _put_back(self, s: _Settling) -> list[Written]:
        """Each snapshot entry changed, replaced or deleted: put back if the script was seen
        writing it (parents first, so a deleted folder is back before its files), else taken
        into the snapshot as it now is (:meth:`_left`)."""
        got: list[Written] = []
        entries = s.m["entries"]
        for path in sorted(entries, key=lambda p: p.count(os.sep)):
            e = entries.get(path)
            if e is None:  # forgotten with its folder
                continue
            try:
                st: os.stat_result | None = os.lstat(path)
            except FileNotFoundError:
                st = None
            except OSError:
                continue
            if (st is not None and _same(e, st)) or (st is None and not os.path.isdir(os.path.dirname(path))):
                continue
            if not s.wrote.covers(path):
                got += self._left(s, path, st)
                continue
            kept = self._stage(path) if st is not None else None  # the script's version goes aside
            try:
                why = self._restore(path, e)
            except OSError as err:
                why = f"{err.strerror or err}"
            s.touched.add(os.path.dirname(path))
            got.append(Written(path, "deleted" if st is None else "changed", kept, not why, why))
        return got

    def _left(self, s: _Settling, path: str, st: os.stat_result | None) -> list[Written]:
        """A snapshot entry that changed with no write by the script seen: left as it is, the
        snapshot takes it in; said (with the copy from before kept) when it changed during a run."""
        m = s.m
        s.adopted.add(os.path.dirname(path))
        during = st is None or _during(path, s.runs)  # a deletion has no time of its own
        entries, head = m["entries"], path + os.sep
        copies = [
            p for p in entries if (p == path or p.startswith(head)) and entries[p].get("backup")
        ]  # a folder's too
        kept = [self._keep_earlier(p, entries[p]["backup"]) for p in copies] if during else []
        earlier = str(self.home / EARLIER / path.lstrip(os.sep)) if any(kept) else None
        if st is None:
            self._forget(m, path)
        else:
            self._adopt(m, path)
        return [Written(path, "deleted" if st is None else "changed", earlier, False, seen=False)] if during else []

    def _move_new(self, s: _Settling) -> list[Written]:
        """Each path created in a folder the snapshot read whole: moved aside if the script was
        seen writing it (or, a folder, anything in it); else taken into the snapshot, and said
        when it was made during a run."""
        m, wrote = s.m, s.wrote
        excluded, ours = set(m.get("excluded") or []), list(m.get("ours") or ["", ""])
        got: list[Written] = []
        for d, info in list(m["dirs"].items()):
            if d not in m["dirs"]:
                continue
            try:
                now = set(os.listdir(d))
            except OSError:
                continue
            for name in sorted(now - set(info["names"])):
                p = os.path.join(d, name)
                if _ignored(name, p, excluded, ours) or (name.startswith(".") and os.path.isdir(p)):
                    continue
                if not (wrote.covers(p) or (_is_dir(p) and wrote.inside(p))):
                    during = _during(p, s.runs)
                    self._adopt(m, p)
                    s.adopted.add(d)
                    if during:
                        got.append(Written(p, "new", None, False, seen=False))
                    continue
                try:
                    got.append(Written(p, "new", self._stage(p), True))
                except OSError as err:
                    got.append(Written(p, "new", None, False, f"it could not be moved ({err.strerror or err})"))
                s.touched.add(d)
        return got

    # ------------------------------------------------------------------ changes nobody was seen making

    def _keep_earlier(self, path: str, backup: str) -> str | None:
        """The snapshot's copy of ``path`` set aside as the copy from before (the first one
        only: the copy from before diagnose); its path, or None where there is none."""
        dest = self.home / EARLIER / path.lstrip(os.sep)
        if os.path.lexists(dest):
            return str(dest)
        if not os.path.lexists(backup):
            return None
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(backup, dest)
        return str(dest)

    def _forget(self, m: dict[str, Any], path: str) -> None:
        """``path`` and what was under it, out of the snapshot (their copies removed)."""
        head = path + os.sep
        for p in [p for p in m["entries"] if p == path or p.startswith(head)]:
            b = m["entries"].pop(p).get("backup")
            if b:
                with contextlib.suppress(OSError):
                    os.unlink(b)
        for d in [d for d in m["dirs"] if d == path or d.startswith(head)]:
            del m["dirs"][d]
        parent = m["dirs"].get(os.path.dirname(path))
        if parent is not None:
            parent["names"] = [n for n in parent["names"] if n != os.path.basename(path)]

    def _adopt(self, m: dict[str, Any], path: str) -> None:
        """``path`` as it now is into the snapshot (with a copy, within the caps; a folder with
        what is in it), in place of what the snapshot had there."""
        self._forget(m, path)
        excluded, ours = set(m.get("excluded") or []), list(m.get("ours") or ["", ""])
        e = _stat(path)
        if e is None:
            return
        entries = {path: e}
        if e["kind"] == "dir" and not (_is_venv(path) or os.path.basename(path).startswith(".")):
            dirs, below, _ = _walk([path], excluded, ours, MAX_ENTRIES - len(m["entries"]))
            m["dirs"].update(dirs)
            entries.update(below)
        parent = m["dirs"].get(os.path.dirname(path))
        if parent is not None:
            parent["names"] = sorted({*parent["names"], os.path.basename(path)})
        m["copied_bytes"] = int(m.get("copied_bytes") or 0) + self._keep_copies(
            entries, int(m.get("copied_bytes") or 0)
        )
        m["entries"].update(entries)

    def _runs(self) -> list[tuple[int, int]]:
        """Each run of the script so far as (start, end) in ns, widened by ``WINDOW_MARGIN_NS``; a
        run not ended (its process still running, or killed before it said so) ends now."""
        starts: dict[str, int] = {}
        ends: dict[str, int] = {}
        with contextlib.suppress(OSError):
            for line in (self.home / WINDOWS).read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    w = json.loads(line)
                    starts[w["run"]] = int(w["start_ns"])
                    if w.get("end_ns") is not None:
                        ends[w["run"]] = int(w["end_ns"])
        now = time.time_ns()
        return [(s - WINDOW_MARGIN_NS, ends.get(r, now) + WINDOW_MARGIN_NS) for r, s in starts.items()]

    # ------------------------------------------------------------------ the end

    def finish(self, files_dir: Path, relative_to: str, earlier_dir: Path) -> list[Written]:
        """The last settle, then the staged copies moved into ``files_dir`` (created only when
        there is one), at their paths relative to ``relative_to`` (the working folder; a path
        outside it under ``outside/``), and the copies from before of what changed with no write
        by the script seen into ``earlier_dir`` (the same way); each path, once, with where its
        copy is now. The guard's temporary folder is removed."""
        self.settle()
        out: list[Written] = []
        for w in self._written():
            kept = None
            if w.kept_as and os.path.lexists(w.kept_as):
                rel = _shown(w.path, relative_to)
                folder = files_dir if w.seen else earlier_dir
                dest = folder / (rel if not os.path.isabs(rel) else os.path.join("outside", rel.lstrip(os.sep)))
                dest.parent.mkdir(parents=True, exist_ok=True)
                if os.path.lexists(dest):
                    if dest.is_dir() and not dest.is_symlink():
                        shutil.rmtree(dest, ignore_errors=True)
                    else:
                        dest.unlink()
                shutil.move(w.kept_as, dest)
                kept = _shown(str(dest), relative_to)
            out.append(Written(_shown(w.path, relative_to), w.what, kept, w.restored, w.why_not, w.seen))
        self.close()
        return out

    def abandon(self) -> None:
        """The last settle, and nothing kept: a refused run writes nothing."""
        self.settle()
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)

    def _written(self) -> list[Written]:
        """Each path once as the script's and once as changed with no write by it seen: its
        first change (what the user had), the last copy kept (the script's; the copy from
        before diagnose is the first kept)."""
        by_path: dict[tuple[str, bool], Written] = {}
        try:
            lines = (self.home / CHANGES).read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        for line in lines:
            w = Written(**json.loads(line))
            first = by_path.get((w.path, w.seen))
            if first is None:
                by_path[w.path, w.seen] = w
            else:
                kept = (w.kept_as or first.kept_as) if w.seen else (first.kept_as or w.kept_as)
                by_path[w.path, w.seen] = Written(w.path, first.what, kept, w.restored, w.why_not, w.seen)
        # A path inside a new folder that was moved (or left) as a whole is said with its folder.
        keys = sorted(by_path)
        return [
            by_path[k]
            for k in keys
            if not any(
                k[0].startswith(q[0] + os.sep) and q[1] == k[1] and by_path[q].what == "new" for q in keys if q != k
            )
        ]


def _walk(
    roots: list[str], excluded: set[str], ours: list[str], limit: int | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], bool]:
    """Each folder under ``roots`` read whole (its names and times) and each entry's stat, breadth
    first up to ``limit`` entries (``MAX_ENTRIES``); whether every folder was read."""
    limit = MAX_ENTRIES if limit is None else limit
    dirs: dict[str, dict[str, Any]] = {}
    entries: dict[str, dict[str, Any]] = {}
    todo = list(dict.fromkeys(os.path.realpath(r) for r in roots))
    todo = [d for d in todo if os.path.isdir(d) and d not in excluded]
    seen, complete = 0, True
    while todo:
        d = todo.pop(0)
        try:
            st = os.lstat(d)
            with os.scandir(d) as it:
                names = sorted(e.name for e in it)
        except OSError:
            continue
        if d in dirs:
            continue
        if seen + len(names) > limit:
            complete = False
            continue  # a folder read in part would make its unread entries look new later
        seen += len(names)
        dirs[d] = {"mtime_ns": st.st_mtime_ns, "atime_ns": st.st_atime_ns, "names": names}
        for name in names:
            p = os.path.join(d, name)
            e = None if _ignored(name, p, excluded, ours) else _stat(p)
            if e is None:
                continue
            entries[p] = e
            if e["kind"] == "dir" and not (_is_venv(p) or name.startswith(".")):
                todo.append(p)
    return dirs, entries, complete


def _is_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _during(path: str, runs: list[tuple[int, int]], most: int = 1000) -> bool:
    """Whether ``path`` (a folder: anything in it, up to ``most`` entries, past which it counts
    as during) last changed inside a run of the script (its change time, ``st_ctime_ns``)."""
    try:
        times = [os.lstat(path).st_ctime_ns]
    except OSError:
        return True
    if _is_dir(path):
        for folder, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                if len(times) > most:
                    return True
                with contextlib.suppress(OSError):
                    times.append(os.lstat(os.path.join(folder, name)).st_ctime_ns)
    return any(start <= t <= end for t in times for start, end in runs)


def _stat(path: str) -> dict[str, Any] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    e = _entry(st)
    if e["kind"] == "link":
        with contextlib.suppress(OSError):
            e["target"] = os.readlink(path)
    elif e["kind"] == "file" and not stat.S_ISREG(st.st_mode):
        e["kind"] = "special"  # a FIFO or socket: never read, never copied
    return e


def _ignored(name: str, path: str, excluded: set[str], ours: list[str]) -> bool:
    """Not the user's: a cache or version-control folder, whichdevice's own folders, the
    record's files beside it (``ours``: its folder and stem) and atomic writes in progress."""
    if name in SKIP or name.endswith(".wdtmp") or os.path.realpath(path) in excluded:
        return True
    folder, stem = ours
    return (
        bool(stem) and name.startswith((f"{stem}.", f"{stem}-")) and os.path.realpath(os.path.dirname(path)) == folder
    )


def _shown(path: str, relative_to: str) -> str:
    rel = os.path.relpath(path, relative_to)
    return path if rel.startswith("..") else rel


@contextlib.contextmanager
def script_run() -> Iterator[None]:
    """A run of the user's script (a process started for it, or a measuring child's own run):
    its window, from before it starts to after it ended, for the guard watching (``ENV``)."""
    home = os.environ.get(ENV)
    if not home or not os.path.isdir(home):
        yield
        return
    # What changed since the last run is the user's (no run was on): taken in first, so that a
    # write of this run's over it is put back to their version, not to the one before diagnose.
    settle_here()
    start = time.time_ns()
    run = {"run": f"{os.getpid()}-{start}", "start_ns": start}
    _append(os.path.join(home, WINDOWS), run)  # a run whose end is never said lasts to the settle
    try:
        yield
    finally:
        _append(os.path.join(home, WINDOWS), {**run, "end_ns": time.time_ns()})


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """In the process that runs the user's script: what it writes is recorded for the guard
    watching (``ENV``; workloads/scriptwrites.py)."""
    home = os.environ.get(ENV)
    if not home or not os.path.isdir(home):
        yield
        return
    scriptwrites.start(home)
    try:
        yield
    finally:
        scriptwrites.stop()


def _append(path: str, obj: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(obj) + "\n").encode())
        finally:
            os.close(fd)


def settle_here() -> None:
    """After a run of the user's script in or under this process: put their folder back, if a
    guard is watching it (``ENV``)."""
    home = os.environ.get(ENV)
    if home and os.path.isdir(home):
        with contextlib.suppress(OSError, ValueError):
            Guard(Path(home)).settle()


LEFT = (
    "Changed during your script's runs with no write by it seen, so left as they are (your own edits, another "
    "program's, or native code of the script's that whichdevice does not watch)"
)


def summary(written: list[Written], files_dir: str, earlier_dir: str = "", limit: int = 4) -> str:
    """One line for the screen: what the script wrote, that it is put back, where the copies are;
    then what changed during its runs with no write by it seen, left as it is."""
    mine, left = [w for w in written if w.seen], [w for w in written if not w.seen]
    out = []
    if mine:
        n = len(mine)
        lost = [w for w in mine if not w.restored]
        head = f"Your script wrote {n} path{'s' if n != 1 else ''} in your folder"
        back = "your folder is put back as it was" if not left else "those are put back as they were"
        back = "put back as it was, except what is marked NOT put back" if lost else back
        kept = f"; the script's copies are in {files_dir}" if any(w.kept_as for w in mine) else ""
        clauses = [w.short() for w in mine[:limit]]
        more = f", and {n - limit} more (the record's notes)" if n > limit else ""
        out.append(f"{head}: {'; '.join(clauses)}{more}. {back[0].upper()}{back[1:]}{kept}.")
    if left:
        clauses = [w.short() for w in left[:limit]]
        more = f", and {len(left) - limit} more (the record's notes)" if len(left) > limit else ""
        kept = f" The copies from before are in {earlier_dir}." if earlier_dir and any(w.kept_as for w in left) else ""
        out.append(f"{LEFT}: {'; '.join(clauses)}{more}.{kept}")
    return clean(" ".join(out), newlines=False)


# The command's guard: started before the script's first run (the pre-flight, or a resumed
# measurement's first case), finished once the measurement ends, however it ends.
_CURRENT: list[Guard] = []


def watch(script: str, record: str) -> Guard:
    """Watch the working folder and the script's (the link's folder and its target's) for this
    command, once; every process started from here on settles it after a run (``ENV``)."""
    if _CURRENT:
        return _CURRENT[0]
    out_dir = os.path.dirname(os.path.abspath(record))
    roots = [os.getcwd(), os.path.dirname(os.path.abspath(script)), os.path.dirname(os.path.realpath(script))]
    # The output folder is whichdevice's, unless it is one of the user's own (--json rec.json in
    # the working folder): then only the record's files in it are (``_ignored``).
    own = [] if os.path.realpath(out_dir) in {os.path.realpath(r) for r in roots} else [out_dir]
    guard = Guard.start(roots, own, os.path.abspath(record))
    _CURRENT.append(guard)
    os.environ[ENV] = str(guard.home)
    return guard


def _stop() -> Guard | None:
    os.environ.pop(ENV, None)
    return _CURRENT.pop() if _CURRENT else None


def files_dir(record: str) -> Path:
    """Where the script's copies of what it wrote are kept: beside the record."""
    p = Path(record)
    return p.with_name(p.stem + ".script-files")


def earlier_dir(record: str) -> Path:
    """Where the copies from before of what changed with no write by the script seen are kept."""
    p = Path(record)
    return p.with_name(p.stem + ".before-diagnose")


def finish(record: str) -> list[Written]:
    """The command's end: the folder put back, the script's copies in :func:`files_dir`."""
    guard = _stop()
    if guard is None:
        return []
    return guard.finish(files_dir(record), os.getcwd(), earlier_dir(record))


def wrote(written: list[Written]) -> list[str]:
    """The paths the script was seen writing (the record's ``script_wrote``)."""
    return [w.path for w in written if w.seen]


def abandon() -> None:
    """A refused command: the folder put back, nothing kept."""
    guard = _stop()
    if guard is not None:
        guard.abandon()


def notes(written: list[Written], limit: int = 50) -> list[str]:
    """The record's notes: each path the script wrote in the user's folder and where it is now;
    each that changed during its runs with no write by it seen, left as it is."""
    mine, left = [w for w in written if w.seen], [w for w in written if not w.seen]
    out = [f"Your script wrote {w.line()}." for w in mine[:limit]]
    if len(mine) > limit:
        out.append(f"Your script wrote {len(mine) - limit} more paths in your folder, put back the same way.")
    out += [f"{LEFT}: {w.line()}." for w in left[:limit]]
    if len(left) > limit:
        out.append(f"{LEFT}: {len(left) - limit} more paths.")
    return out
