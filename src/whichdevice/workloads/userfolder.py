"""The user's folder left as it was after ``diagnose SCRIPT`` ran their script there.

diagnose runs the script several times (the pre-flight, then once per measuring process) in the
user's working folder, as they run it, so its relative paths work. What the script writes there
(a ``CSVLogger``'s log, a ``ModelCheckpoint``, Lightning's ``lightning_logs/version_N``, a
callback's images) would otherwise replace the user's own files, run after run, without a word.

:class:`Guard` takes a snapshot of the folders the script works in (its working folder and its
own folder) before the first run: each entry's type, size, modification time and inode, and a copy
of each file small enough to keep (``COPY_FILE_MAX``, ``COPY_TOTAL_MAX``, the disk's free space).
After every run of the script (:func:`settle_here`: in the process that started or ran it), what
changed is put back:

- a file the script changed or replaced: the user's copy restored, the script's moved aside;
- a file or folder the script created: moved aside;
- a file or folder the script deleted: restored;
- the folders' own modification times as they were.

"Aside" is a staging folder in the guard's private temporary folder, keeping the last run's copy
of each path; :meth:`Guard.finish` moves it into the output folder (``<record>.script-files/``)
and returns what the script wrote and where it now is, for the screen and the record. A run that
is refused (nothing written) drops it instead (:meth:`Guard.abandon`).

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
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from whichdevice.core.textsafe import clean

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
STAGED = "staged"
BACKUP = "backup"


@dataclass(frozen=True)
class Written:
    """One path the script wrote in the user's folder, and what was done about it."""

    path: str  # as the user sees it: relative to their working folder, or absolute
    what: str  # "changed", "new", "deleted"
    kept_as: str | None  # where the script's copy is now (None: nothing kept, e.g. a deletion)
    restored: bool  # the user's own copy is back (a new path: True once moved away)
    why_not: str = ""  # why the user's copy could not be put back

    def line(self) -> str:
        """One clause for the screen and the record (file names cleaned of control characters)."""
        return clean(self._line(), newlines=False)

    def short(self) -> str:
        """The clause for the screen: the path and what happened to it."""
        if not self.restored:
            return f"{self.path} ({self.what}, NOT put back: {self.why_not})"
        return f"{self.path} ({self.what})"

    def _line(self) -> str:
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

    def _keep_copies(self, entries: dict[str, dict[str, Any]]) -> int:
        """A copy of each regular file, smallest first, within the caps and the disk's room."""
        budget = min(COPY_TOTAL_MAX, max(shutil.disk_usage(self.home).free - FREE_MARGIN, 0))
        copied = 0
        files = sorted((e["size"], p) for p, e in entries.items() if e["kind"] == "file")
        for i, (size, p) in enumerate(files):
            if size > COPY_FILE_MAX or copied + size > budget:
                break
            b = self.home / BACKUP / str(i)
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
            e.update({k: v for k, v in _entry(os.lstat(path)).items() if k in ("ino", "mtime_ns", "size")})
        else:
            return f"too large to keep a copy of ({e['size'] / 2**20:.0f} MiB)"
        return ""

    def _settle(self, m: dict[str, Any]) -> list[Written]:
        touched: set[str] = set()
        got = self._put_back(m["entries"], touched) + self._move_new(m, touched)
        for d in touched:
            info = m["dirs"].get(d)
            if info is not None:
                with contextlib.suppress(OSError):
                    os.utime(d, ns=(info["atime_ns"], info["mtime_ns"]), follow_symlinks=False)
        return got

    def _put_back(self, entries: dict[str, dict[str, Any]], touched: set[str]) -> list[Written]:
        """Each snapshot entry changed, replaced or deleted: put back (parents first, so a
        deleted folder is back before its files)."""
        got: list[Written] = []
        for path in sorted(entries, key=lambda p: p.count(os.sep)):
            e = entries[path]
            try:
                st: os.stat_result | None = os.lstat(path)
            except FileNotFoundError:
                st = None
            except OSError:
                continue
            if (st is not None and _same(e, st)) or (st is None and not os.path.isdir(os.path.dirname(path))):
                continue
            kept = self._stage(path) if st is not None else None  # the script's version goes aside
            try:
                why = self._restore(path, e)
            except OSError as err:
                why = f"{err.strerror or err}"
            touched.add(os.path.dirname(path))
            got.append(Written(path, "deleted" if st is None else "changed", kept, not why, why))
        return got

    def _move_new(self, m: dict[str, Any], touched: set[str]) -> list[Written]:
        """Each path the script created in a folder the snapshot read whole: moved aside."""
        excluded, ours = set(m.get("excluded") or []), list(m.get("ours") or ["", ""])
        got: list[Written] = []
        for d, info in m["dirs"].items():
            try:
                now = set(os.listdir(d))
            except OSError:
                continue
            for name in sorted(now - set(info["names"])):
                p = os.path.join(d, name)
                if _ignored(name, p, excluded, ours) or (name.startswith(".") and os.path.isdir(p)):
                    continue
                try:
                    got.append(Written(p, "new", self._stage(p), True))
                except OSError as err:
                    got.append(Written(p, "new", None, False, f"it could not be moved ({err.strerror or err})"))
                touched.add(d)
        return got

    # ------------------------------------------------------------------ the end

    def finish(self, files_dir: Path, relative_to: str) -> list[Written]:
        """The last settle, then the staged copies moved into ``files_dir`` (created only when
        there is one), at their paths relative to ``relative_to`` (the working folder; a path
        outside it under ``outside/``); each path the script wrote, once, with where its copy is
        now. The guard's temporary folder is removed."""
        self.settle()
        out: list[Written] = []
        for w in self._written():
            kept = None
            if w.kept_as and os.path.lexists(w.kept_as):
                rel = _shown(w.path, relative_to)
                dest = files_dir / (rel if not os.path.isabs(rel) else os.path.join("outside", rel.lstrip(os.sep)))
                dest.parent.mkdir(parents=True, exist_ok=True)
                if os.path.lexists(dest):
                    if dest.is_dir() and not dest.is_symlink():
                        shutil.rmtree(dest, ignore_errors=True)
                    else:
                        dest.unlink()
                shutil.move(w.kept_as, dest)
                kept = _shown(str(dest), relative_to)
            out.append(Written(_shown(w.path, relative_to), w.what, kept, w.restored, w.why_not))
        self.close()
        return out

    def abandon(self) -> None:
        """The last settle, and nothing kept: a refused run writes nothing."""
        self.settle()
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)

    def _written(self) -> list[Written]:
        """Each path once: its first change (what the user had), the last copy kept."""
        by_path: dict[str, Written] = {}
        try:
            lines = (self.home / CHANGES).read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        for line in lines:
            w = Written(**json.loads(line))
            first = by_path.get(w.path)
            if first is None:
                by_path[w.path] = w
            else:
                by_path[w.path] = Written(w.path, first.what, w.kept_as or first.kept_as, w.restored, w.why_not)
        # A path inside a new folder that was moved as a whole is said with its folder.
        paths = sorted(by_path)
        return [
            by_path[p]
            for p in paths
            if not any(p.startswith(q + os.sep) and by_path[q].what == "new" for q in paths if q != p)
        ]


def _walk(
    roots: list[str], excluded: set[str], ours: list[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], bool]:
    """Each folder under ``roots`` read whole (its names and times) and each entry's stat, breadth
    first up to ``MAX_ENTRIES``; whether every folder was read."""
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
        if seen + len(names) > MAX_ENTRIES:
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


def settle_here() -> None:
    """After a run of the user's script in or under this process: put their folder back, if a
    guard is watching it (``ENV``)."""
    home = os.environ.get(ENV)
    if home and os.path.isdir(home):
        with contextlib.suppress(OSError, ValueError):
            Guard(Path(home)).settle()


def summary(written: list[Written], files_dir: str, limit: int = 4) -> str:
    """One line for the screen: what the script wrote, that the folder is back, where the copies are."""
    if not written:
        return ""
    n = len(written)
    lost = [w for w in written if not w.restored]
    head = f"Your script wrote {n} path{'s' if n != 1 else ''} in your folder"
    back = "put back as it was, except what is marked NOT put back" if lost else "your folder is put back as it was"
    kept = f"; the script's copies are in {files_dir}" if any(w.kept_as for w in written) else ""
    clauses = [w.short() for w in written[:limit]]
    more = f", and {n - limit} more (the record's notes)" if n > limit else ""
    return clean(f"{head}: {'; '.join(clauses)}{more}. {back[0].upper()}{back[1:]}{kept}.", newlines=False)


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


def finish(record: str) -> list[Written]:
    """The command's end: the folder put back, the script's copies in :func:`files_dir`."""
    guard = _stop()
    if guard is None:
        return []
    return guard.finish(files_dir(record), os.getcwd())


def abandon() -> None:
    """A refused command: the folder put back, nothing kept."""
    guard = _stop()
    if guard is not None:
        guard.abandon()


def notes(written: list[Written], limit: int = 50) -> list[str]:
    """The record's notes: each path the script wrote in the user's folder and where it is now."""
    out = [f"Your script wrote {w.line()}." for w in written[:limit]]
    if len(written) > limit:
        out.append(f"Your script wrote {len(written) - limit} more paths in your folder, put back the same way.")
    return out
