"""Files whichdevice creates and reads, opened so that a shared folder cannot turn them into
an attack, and so that a FIFO, a device or an endless file cannot hang or flood the run.

Writing (records, reports, plots, journals):

- a path that exists must be a regular file (not a FIFO, a device node, a folder or a
  symbolic link): anything else is refused (``NotRegularFile``), never replaced;
- a new file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a name planted in advance,
  symbolic link or not, makes the creation fail instead of being followed);
- :func:`atomic_writer` writes into ``.NAME.<random>.wdtmp`` in the target's own folder and
  renames it over the target when complete, so a reader sees the old file or the whole new
  one; on any failure (a full disk included) the temporary file is removed. Temporary files
  a killed run left beside ``NAME`` are removed by the next write of ``NAME`` (a resume).

Every report file one run writes is remembered (:data:`created`) until its record is safely
written (:func:`keep_created`); a run that fails before that removes them
(:func:`discard_created`): no plot or page is left without its record.

Reading (records, journals): :func:`read_capped` opens with ``O_NONBLOCK`` (opening a FIFO
does not wait for a writer), requires a regular file and reads at most ``cap`` bytes.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from whichdevice.core.errors import UsageError

TMP_SUFFIX = ".wdtmp"
READ_CAP = 256 * 2**20  # a record of a long run is a few MiB; 256 MiB is no record of ours
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

# Report files written by this process whose record is not written yet (see discard_created).
created: list[Path] = []


class NotRegularFile(OSError):
    """The target exists and is not a regular file: it is never written over."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def existing_kind(path: Path) -> str | None:
    """None when ``path`` is absent or a regular file (no link followed), else what it is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return None if stat.S_ISREG(st.st_mode) else kind_of(st.st_mode)


def refuse_non_regular(path: Path) -> None:
    what = existing_kind(path)
    if what is not None:
        raise NotRegularFile(errno.EEXIST, f"'{path}' exists and is {what}; whichdevice writes only regular files")


def create_new(path: Path, mode: int = 0o666) -> int:
    """A new file at ``path`` (``O_EXCL | O_NOFOLLOW``): an fd open for writing."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, mode)


def open_append(path: Path) -> int:
    """An existing regular file for appending, no link followed."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | _NOFOLLOW | _NONBLOCK | os.O_CLOEXEC)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, f"'{path}' is {kind_of(st.st_mode)}, not a journal")
    return fd


def remove_stale_temps(path: Path) -> None:
    """Temporary files a killed write of ``path`` left beside it (also the names whichdevice
    used in older versions: ``.NAME.*.tmp`` and ``.NAME.tmp.png``)."""
    name = glob.escape(path.name)
    patterns = (f".{name}.*{TMP_SUFFIX}", f".{name}.*.tmp", f".{name}.tmp.png")
    with contextlib.suppress(OSError):
        for p in [q for pattern in patterns for q in path.parent.glob(pattern)]:
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(p).st_mode):
                    p.unlink()


@contextlib.contextmanager
def atomic_writer(path: Path | str, *, remember: bool = True) -> Iterator[IO[bytes]]:
    """A binary file that replaces ``path`` when the block ends without error.

    ``path`` must be absent or a regular file. The data goes to a new ``.NAME.<random>.wdtmp``
    (``O_EXCL | O_NOFOLLOW``) in the same folder, is fsynced and renamed over ``path``."""
    path = Path(path)
    refuse_non_regular(path)
    remove_stale_temps(path)
    for _ in range(16):
        tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}{TMP_SUFFIX}")
        try:
            fd = create_new(tmp)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 16 collisions of 48 random bits
        raise FileExistsError(errno.EEXIST, f"cannot create a temporary file beside '{path}'")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        refuse_non_regular(path)  # planted while we wrote: still not replaced
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if remember:
        created.append(path)


def write_atomic(path: Path | str, data: str | bytes, *, remember: bool = True) -> None:
    """``data`` at ``path``, atomically. Text is UTF-8; a character UTF-8 cannot hold (the lone
    surrogate Python makes of a file name's byte that is not UTF-8) is written as its escape
    (``\\udcff``) instead of failing after the run was measured."""
    with atomic_writer(path, remember=remember) as f:
        f.write(data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data)


def keep_created() -> None:
    """The record is written: the report files that go with it stay."""
    created.clear()


def discard_created() -> list[Path]:
    """The run failed before its record was written: remove the report files it wrote."""
    gone = []
    while created:
        p = created.pop()
        with contextlib.suppress(OSError):
            p.unlink()
            gone.append(p)
    return gone


def exists_quietly(path: Path | str) -> bool:
    """Whether ``path`` names anything, for a string a user typed: False, not an exception,
    for a name too long for the file system, one with a NUL byte, or one we may not look at."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def is_file_quietly(path: Path | str) -> bool:
    """``Path.is_file`` that says False for a name the file system refuses (too long, a NUL)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_dir_quietly(path: Path | str) -> bool:
    """``Path.is_dir`` that says False for a name the file system refuses or we may not look at
    (a read of it then refuses it with its own message)."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def read_capped(path: Path | str, argument: str, *, cap: int = READ_CAP, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes; a ``UsageError`` naming
    ``argument`` for anything else (absent, a FIFO or device, too large, a symlink loop, a
    name too long, unreadable)."""
    p = Path(path)
    fd = _open_to_read(p, argument, what)
    try:
        _refuse_non_regular_or_large(os.fstat(fd), p, argument, cap=cap, what=what)
        os.set_blocking(fd, True)
        data = _read_past(fd, cap)
        if len(data) > cap:  # a file that grows while read (or a /proc file that reports size 0)
            raise UsageError(argument, f"'{p}' is larger than {cap / 2**20:.0f} MiB", f"Pass a whichdevice {what}.")
        return data
    except OSError as e:
        raise UsageError(argument, f"cannot read '{p}' ({e.strerror})", f"Pass a readable {what}.") from None
    finally:
        os.close(fd)


def _open_to_read(p: Path, argument: str, what: str) -> int:
    """A descriptor of ``p`` opened without blocking (a FIFO does not hang the open); a
    ``UsageError`` naming ``argument`` when it cannot be opened."""
    try:
        return os.open(p, os.O_RDONLY | _NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UsageError(argument, f"no such file '{p}'", f"Pass the {what} path.") from None
    except ValueError:  # a NUL byte in the name: no file can have it
        raise UsageError(
            argument, f"no such file '{p}' (the name holds a NUL byte)", f"Pass the {what} path."
        ) from None
    except IsADirectoryError:
        raise UsageError(argument, f"'{p}' is a folder", f"Pass the {what} inside it.") from None
    except OSError as e:
        raise UsageError(argument, f"cannot open '{p}' ({e.strerror})", f"Pass a readable {what}.") from None


def _refuse_non_regular_or_large(st: os.stat_result, p: Path, argument: str, *, cap: int, what: str) -> None:
    """A ``UsageError`` unless ``st`` is a regular file of at most ``cap`` bytes."""
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(argument, f"'{p}' is a folder", f"Pass the {what} inside it.")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(argument, f"'{p}' is {kind_of(st.st_mode)}", f"Pass a regular {what}.")
    if st.st_size > cap:
        raise UsageError(
            argument,
            f"'{p}' is {st.st_size / 2**20:.0f} MiB, more than a whichdevice {what} can be ({cap / 2**20:.0f} MiB)",
            f"Pass the {what} a whichdevice command wrote.",
        )


def _read_past(fd: int, cap: int) -> bytes:
    """The bytes of ``fd`` up to its end or ``cap + 1`` bytes, whichever comes first: more
    than ``cap`` says the file is larger than its size said."""
    chunks = []
    total = 0
    while total <= cap:
        chunk = os.read(fd, min(2**20, cap + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
