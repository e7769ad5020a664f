"""The paths the user's script writes in its folder, seen from inside the script's own process.

The folder guard (``workloads/userfolder.py``) puts back only what the script wrote: a file the
user edits while diagnose runs is theirs. This module is its witness in the process that runs
the script (``scriptrun.execute``: the script process, or a measuring child's first run), and in
the processes forked from it (a DataLoader's workers), which inherit it:

- Python's audit events (``sys.addaudithook``; CPython 3.8+, the same names in 3.10 to 3.13):
  ``open`` with a write mode or write flags (``open()``, ``os.open``, ``pathlib``'s writes),
  ``os.rename`` (also ``os.replace``), ``os.remove`` (also ``os.unlink``), ``os.rmdir``,
  ``os.mkdir``, ``os.link``, ``os.symlink``, ``os.truncate``, ``os.utime``, ``os.chmod``,
  ``os.chown``, ``os.mkfifo``, ``os.mknod``, ``os.setxattr``, ``os.removexattr``,
  ``shutil.rmtree`` and ``sqlite3.connect``. ``shutil``'s copies and moves raise the ``open`` and
  ``os.*`` events of what they do, with the real destination, so they need no entry of their own;
- the writers that open their file in native code, which raises no audit event: each
  framework's ``env.py`` declares them (``NATIVE_WRITERS``: torch.save's zip writer, h5py's
  files, safetensors' files, TensorFlow's ``tf.io.gfile``, event files and checkpoints), wrapped
  as their module is imported. A declaration is ``(module, attribute, the argument naming the
  path, the argument with its mode or '', kind)``: the call is recorded with the path it is
  given, as ``kind`` (below: ``file``; ``tree`` for a writer given a folder it writes in, a
  summary writer's logdir; ``prefix`` for one given a name its files start with, a TensorFlow
  checkpoint's prefix). A path given as a framework's string tensor is read from it where it
  holds a value (eager); a module-level function already imported elsewhere in its package (a
  public name such as ``tf.io.gfile.rename``) is replaced there too.

Each path is recorded once per process, as ``KIND<TAB>PATH`` in ``<guard>/wrote/<pid>``, only
where it lies under the guard's folders (``<guard>/roots.json``): ``file`` (this path),
``tree`` (this path and everything under it: a removed or renamed folder) or ``prefix`` (every
path that starts so: a SQLite database and its journals). The path is absolute, its folder's
symbolic links resolved as the guard's snapshot names it; a file opened through a link is
recorded under the link's target too. What a native writer not declared here, or another program
the script starts, writes is not seen: the guard leaves such a change as it is and says so.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ROOTS = "roots.json"
WROTE = "wrote"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

# event -> ((position of a path argument, kind, position of its dir_fd or -1, whether the call
# follows a link there: a write through a link changes its target), ...)
EVENTS: dict[str, tuple[tuple[int, str, int, bool], ...]] = {
    "open": ((0, "file", -1, True),),  # only with a write mode or flags (``_writes``)
    "os.rename": ((0, "tree", 2, False), (1, "tree", 3, False)),
    "os.remove": ((0, "file", 1, False),),
    "os.rmdir": ((0, "file", 1, False),),
    "os.mkdir": ((0, "file", 2, False),),
    "os.link": ((1, "file", 3, False),),
    "os.symlink": ((1, "file", 2, False),),
    "os.truncate": ((0, "file", -1, True),),
    "os.utime": ((0, "file", 3, True),),
    "os.chmod": ((0, "file", 2, True),),
    "os.chown": ((0, "file", 3, True),),
    "os.mkfifo": ((0, "file", 2, False),),
    "os.mknod": ((0, "file", 3, False),),
    "os.setxattr": ((0, "file", -1, True),),
    "os.removexattr": ((0, "file", -1, True),),
    "shutil.rmtree": ((0, "tree", 1, False),),
    "sqlite3.connect": ((0, "prefix", -1, False),),
}


class _State(threading.local):
    busy = False  # this thread is inside the hook (its own writes raise events too)


_LOCAL = _State()
_ON: dict[str, Any] = {"active": False, "home": "", "roots": (), "pid": 0, "fd": -1, "seen": set()}
_HOOKED: list[bool] = []
_WRAPPED: set[tuple[str, str]] = set()


def start(home: str) -> None:
    """Record from now on what this process (and what it forks) writes under the guard's
    folders; the hook is added once per process (an audit hook cannot be removed) and idles
    after :func:`stop`."""
    try:
        with open(os.path.join(home, ROOTS), encoding="utf-8") as f:
            roots = tuple(json.load(f))
    except (OSError, ValueError):
        return
    _ON.update(active=True, home=home, roots=roots, pid=0, fd=-1, seen=set())
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED.append(True)
    _wrap_native_writers()


def stop() -> None:
    _ON["active"] = False
    if _ON["fd"] >= 0 and _ON["pid"] == os.getpid():
        with contextlib.suppress(OSError):
            os.close(_ON["fd"])
    _ON.update(fd=-1, pid=0)


def note(path: Any, kind: str = "file", dir_fd: Any = None, follow: bool = True) -> None:
    """Record ``path`` as written by the script (a native writer's wrapper calls this too)."""
    if not _ON["active"] or _LOCAL.busy:
        return
    _LOCAL.busy = True
    try:
        for p in _normal(path, dir_fd, follow):
            if _under_roots(p):
                _record(kind, p)
    except Exception:  # noqa: BLE001 (the witness must never change what the script's call does)
        pass
    finally:
        _LOCAL.busy = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    spec = EVENTS.get(event)
    if spec is None or not _ON["active"]:
        return
    if event == "open" and not _writes(args):
        return
    for pos, kind, fd_pos, follow in spec:
        if pos < len(args):
            note(args[pos], kind, args[fd_pos] if 0 <= fd_pos < len(args) else None, follow)


def _writes(args: tuple[Any, ...]) -> bool:
    """Whether an ``open`` event's mode (``open()``) or flags (``os.open``) write."""
    mode = args[1] if len(args) > 1 else None
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    flags = args[2] if len(args) > 2 else 0
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _normal(path: Any, dir_fd: Any, follow: bool) -> list[str]:
    """``path`` absolute, its folder's links resolved (the snapshot's names); with ``follow`` also
    its own target, when it is a link (a write through it changes the target)."""
    if isinstance(path, int) or path is None:
        return []
    p = os.fsdecode(os.fspath(path))
    if not os.path.isabs(p) and isinstance(dir_fd, int) and dir_fd >= 0:
        p = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), p)
    p = os.path.abspath(p)
    out = [os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))]
    if follow and os.path.islink(p):
        out.append(os.path.realpath(p))
    return out


def _under_roots(p: str) -> bool:
    return any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in _ON["roots"])


def _record(kind: str, path: str) -> None:
    pid = os.getpid()
    if _ON["pid"] != pid:  # the first record here, or a forked process's: a file of its own
        _ON.update(pid=pid, seen=set())
        folder = os.path.join(_ON["home"], WROTE)
        os.makedirs(folder, exist_ok=True)
        _ON["fd"] = os.open(os.path.join(folder, str(pid)), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    if (kind, path) in _ON["seen"]:
        return
    _ON["seen"].add((kind, path))
    os.write(_ON["fd"], f"{kind}\t{path}\n".encode("utf-8", "surrogateescape"))


# ------------------------------------------------------------------ native writers


# A declared native writer: (module, attribute, the argument naming the path (several, comma
# separated: a rename's source and destination), the argument with its mode or '' for a writer
# that always writes, kind: "file", "tree" or "prefix").
Writer = tuple[str, str, str, str, str]
KINDS = ("file", "tree", "prefix")


def _wrap_native_writers() -> None:
    """Each framework's declared native writer (``Writer``) wrapped as its module is imported
    (at once if it is)."""
    from whichdevice import frameworks
    from whichdevice.frameworks.common import capturekit

    for name in frameworks.FRAMEWORKS:
        declared: tuple[Writer, ...] = frameworks.declared(name, "NATIVE_WRITERS", ())
        for module, attr, path_arg, mode_arg, kind in declared:
            if (module, attr) in _WRAPPED:
                continue
            _WRAPPED.add((module, attr))
            install = functools.partial(_wrap, attr, path_arg, mode_arg, kind)
            capturekit.after_import(module, install, timed=False)


def _wrap(attr: str, path_arg: str, mode_arg: str, kind: str, module: Any) -> None:
    *owners, last = attr.split(".")
    owner = module
    for o in owners:
        owner = getattr(owner, o)
    original: Callable[..., Any] = getattr(owner, last)
    sig = inspect.signature(original)

    @functools.wraps(original)
    def writer(*args: Any, **kwargs: Any) -> Any:
        if _ON["active"]:
            with contextlib.suppress(Exception):
                given = sig.bind_partial(*args, **kwargs).arguments
                mode = given.get(mode_arg) if mode_arg else None
                if not mode_arg or not isinstance(mode, str) or any(c in mode for c in "wax+"):
                    for name in path_arg.split(","):
                        note(_path_value(given.get(name)), kind)
        return original(*args, **kwargs)

    setattr(owner, last, writer)
    if not owners:  # a function: the names other modules of its package imported it under
        _rebind(module.__name__.partition(".")[0], original, writer)


def _rebind(package: str, original: Any, writer: Any) -> None:
    """``writer`` in place of ``original`` wherever a module of ``package`` already imported it
    (``from x import f``, and a framework's public API modules, bind the function itself: a
    module imported after the wrap gets the wrapper anyway)."""
    head = package + "."
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == package or name.startswith(head)):
            continue
        names = getattr(mod, "__dict__", None)
        if not isinstance(names, dict):
            continue
        for key, value in list(names.items()):
            if value is original:
                names[key] = writer


def _path_value(path: Any) -> Any:
    """A path as given; a framework's string tensor (TensorFlow converts a writer's path to one)
    read for its value where it holds one (eager: a graph's placeholder has none, and stays
    unrecorded)."""
    if isinstance(path, (str, bytes, os.PathLike)) or not hasattr(path, "numpy"):
        return path
    value = path.numpy()
    return value if isinstance(value, (str, bytes)) else None


# ------------------------------------------------------------------ the guard's side


@dataclass
class Wrote:
    """What the script's processes were seen writing since the last look (:func:`taken`)."""

    files: set[str] = field(default_factory=set)
    trees: set[str] = field(default_factory=set)
    prefixes: set[str] = field(default_factory=set)

    def covers(self, path: str) -> bool:
        """Whether the script was seen writing ``path`` (itself, a folder above it removed or
        renamed, or a prefix it starts with)."""
        if path in self.files or any(path.startswith(p) for p in self.prefixes):
            return True
        p = path
        while True:
            if p in self.trees:
                return True
            up = os.path.dirname(p)
            if up == p:
                return False
            p = up

    def inside(self, folder: str) -> bool:
        """Whether the script was seen writing anything under ``folder``."""
        head = folder.rstrip(os.sep) + os.sep
        return any(p.startswith(head) for p in (*self.files, *self.trees, *self.prefixes))


def taken(home: str) -> Wrote:
    """Every path recorded under the guard ``home`` since the last call; the records are consumed."""
    out = Wrote()
    folder = os.path.join(home, WROTE)
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as f:
                lines = f.read().decode("utf-8", "surrogateescape").splitlines()
            os.unlink(path)
        except OSError:
            continue
        for line in lines:
            kind, _, p = line.partition("\t")
            {"file": out.files, "tree": out.trees, "prefix": out.prefixes}.get(kind, out.files).add(p)
    return out
