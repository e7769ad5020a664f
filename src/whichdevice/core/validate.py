"""Check user input at the boundary: one clear message naming the argument and the fix."""

from __future__ import annotations

import math
import os
import stat
import tempfile
import warnings
from pathlib import Path
from typing import overload

from whichdevice.core.errors import UsageError
from whichdevice.core.safeio import existing_kind


def parse_int_list(text: str | None, argument: str, *, maximum: int, example: str) -> list[int] | None:
    """'1,10,100' -> [1, 10, 100]; every value a positive integer <= ``maximum``."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise UsageError(argument, "is empty", f"Pass comma-separated positive integers, e.g. {argument} {example}.")
    values = []
    for p in parts:
        if not p:
            raise UsageError(
                argument, f"'{text}' has an empty item", f"Remove the extra comma, e.g. {argument} {example}."
            )
        try:
            v = _ascii_int(p)
        except ValueError:
            raise UsageError(
                argument,
                f"'{p}' is not a whole number",
                f"Pass comma-separated positive integers, e.g. {argument} {example}.",
            ) from None
        if v <= 0:
            raise UsageError(argument, f"{v} is not positive", f"Every value must be >= 1, e.g. {argument} {example}.")
        if v > maximum:
            raise UsageError(
                argument, f"{v} is larger than the supported maximum {maximum}", f"Pass values up to {maximum}."
            )
        values.append(v)
    return sorted(set(values))


@overload
def parse_choice_list(text: str, argument: str, choices: tuple[str, ...]) -> list[str]: ...
@overload
def parse_choice_list(text: None, argument: str, choices: tuple[str, ...]) -> None: ...
@overload
def parse_choice_list(text: str | None, argument: str, choices: tuple[str, ...]) -> list[str] | None: ...
def parse_choice_list(text: str | None, argument: str, choices: tuple[str, ...]) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip().lower() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(argument, "is empty", f"Pass one or more of: {', '.join(choices)}.")
    for it in items:
        if it not in choices:
            raise UsageError(
                argument, f"'{it}' is not one of {', '.join(choices)}", f"Pass one or more of: {', '.join(choices)}."
            )
    return list(dict.fromkeys(items))


def parse_choice(text: str, argument: str, choices: tuple[str, ...]) -> str:
    v = text.strip().lower()
    if v not in choices:
        raise UsageError(
            argument,
            f"'{text}' is not one of {', '.join(choices)}",
            f"Use {argument} {choices[0]} (or another of those).",
        )
    return v


def _ascii_int(text: str) -> int:
    """``int`` of ASCII digits only: Python also reads '١٢' or '１２' as 12, which then shows
    up in file names and records as something else than what was typed."""
    t = text.strip()
    if not t.isascii() or not t.lstrip("+-").isdigit() or len(t) > 40:
        raise ValueError(text)
    return int(t)


_FLOAT_CHARS = frozenset("0123456789+-.eE_")
# Beyond these a run never ends (or a float conversion overflows later): a week of seconds.
MAXIMUM = {"seconds": 7 * 86400.0, "GiB": 2.0**20}


@overload
def parse_positive_float(
    text: str, argument: str, example: str, unit: str = "seconds", maximum: float | None = None
) -> float: ...
@overload
def parse_positive_float(
    text: None, argument: str, example: str, unit: str = "seconds", maximum: float | None = None
) -> None: ...
@overload
def parse_positive_float(
    text: str | None, argument: str, example: str, unit: str = "seconds", maximum: float | None = None
) -> float | None: ...
def parse_positive_float(
    text: str | None, argument: str, example: str, unit: str = "seconds", maximum: float | None = None
) -> float | None:
    if text is None:
        return None
    maximum = maximum if maximum is not None else MAXIMUM.get(unit, 1e12)
    try:
        t = text.strip()
        if not t.isascii():
            raise ValueError(text)
        v = float(t) if set(t.lower()) <= _FLOAT_CHARS or t.lower() in ("nan", "inf", "-inf", "+inf") else None
        if v is None:
            raise ValueError(text)
    except (ValueError, OverflowError):
        raise UsageError(
            argument, f"'{text}' is not a number", f"Pass a positive number of {unit}, e.g. {argument} {example}."
        ) from None
    if not math.isfinite(v) or v <= 0:
        raise UsageError(
            argument,
            f"{text} is not a positive number",
            f"Pass a positive number of {unit}, e.g. {argument} {example}.",
        )
    if v > maximum:
        raise UsageError(
            argument,
            f"{text} {unit} is more than the supported maximum {maximum:g}",
            f"Pass at most {maximum:g} {unit}, e.g. {argument} {example}.",
        )
    return v


@overload
def parse_positive_int(text: str, argument: str, example: str, maximum: int = 4096) -> int: ...
@overload
def parse_positive_int(text: None, argument: str, example: str, maximum: int = 4096) -> None: ...
@overload
def parse_positive_int(text: str | None, argument: str, example: str, maximum: int = 4096) -> int | None: ...
def parse_positive_int(text: str | None, argument: str, example: str, maximum: int = 4096) -> int | None:
    if text is None:
        return None
    try:
        v = _ascii_int(text)
    except ValueError:
        raise UsageError(argument, f"'{text}' is not a whole number", f"Pass e.g. {argument} {example}.") from None
    if v <= 0 or v > maximum:
        raise UsageError(
            argument, f"{v} is out of range", f"Pass a whole number from 1 to {maximum}, e.g. {argument} {example}."
        )
    if argument == "--cpu-threads":
        warn_threads(v)
    return v


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, e.g. a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class SettingWarning(UserWarning):
    """A setting that is allowed but cannot do what it says (the CLI prints one line)."""


def warn_threads(threads: int) -> None:
    """More threads than cores: allowed (oversubscription is a thing to measure), said."""
    cores = usable_cores()
    if threads > cores:
        warnings.warn(
            SettingWarning(
                f"--cpu-threads {threads} is more than the {cores} cores this machine gives the run: "
                f"the threads will share cores and the CPU times will be slower than with --cpu-threads {cores}"
            ),
            stacklevel=3,
        )


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists():
        if p.parent == p:
            break
        p = p.parent
    return p


def _one_line_path(path: object, argument: str) -> None:
    """A path with a line break would split the ``Record: PATH`` line scripts grep for."""
    if "\n" in str(path) or "\r" in str(path):
        raise UsageError(
            argument,
            f"'{_short(path)}' holds a line break, so the lines naming what is written there could not be read back",
            f"Pass a path without one in {argument}.",
        )


def check_output_dir(path: Path, argument: str) -> Path:
    """A folder we can create or write into — checked now, created only when writing."""
    _one_line_path(path, argument)
    try:
        return _check_output_dir(Path(path).expanduser(), argument)
    except OSError as e:  # a name too long, a symlink loop, a permission on the way
        raise UsageError(
            argument,
            f"'{_short(path)}' cannot be used ({e.strerror})",
            f"Pass a folder you can write to in {argument}.",
        ) from None


def _short(path: object, n: int = 120) -> str:
    text = str(path)
    return text if len(text) <= n else text[: n // 2] + "…" + text[-n // 2 :]


def _check_output_dir(path: Path, argument: str) -> Path:
    if path.exists() and not path.is_dir():
        raise UsageError(argument, f"'{path}' exists and is not a folder", f"Pass a folder path to {argument}.")
    base = _nearest_existing(path.absolute())
    for p in [path.absolute(), *path.absolute().parents]:
        if p == base:
            break
        if os.path.lexists(p):  # there, but not followable: a dangling link or a link loop
            raise UsageError(
                argument,
                f"'{p}' is a broken or looping symbolic link",
                f"Pass a folder you can write to in {argument}.",
            )
    if not base.is_dir():
        raise UsageError(
            argument, f"'{path}' cannot be created: '{base}' is a file", f"Pass a folder path to {argument}."
        )
    if not os.access(base, os.W_OK | os.X_OK):
        raise UsageError(argument, f"'{base}' is not writable", f"Pass a folder you can write to in {argument}.")
    try:  # os.access says yes to root, on read-only file systems and in /proc: try it (leaves nothing)
        os.rmdir(tempfile.mkdtemp(prefix=".whichdevice-probe-", dir=base))
    except OSError as e:
        raise UsageError(
            argument,
            f"cannot create folders in '{base}' ({e.strerror})",
            f"Pass a folder you can write to in {argument}.",
        ) from None
    return path


def check_output_file(path: Path, argument: str) -> Path:
    """A new path or an existing regular file (never a FIFO, a device, a symbolic link) in
    a folder we can write to; the same for the plot and page beside it (.png, .html)."""
    _one_line_path(path, argument)
    path = Path(path).expanduser()
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise UsageError(
            argument,
            f"'{_short(path)}' cannot be used ({e.strerror})",
            f"Pass a file path, e.g. {argument} result.json.",
        ) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(argument, f"'{path}' is a folder", f"Pass a file path, e.g. {argument} result.json.")
    check_output_dir(path.parent if str(path.parent) else Path("."), argument)
    for p in (path, path.with_suffix(".png"), path.with_suffix(".html")):
        try:
            what = existing_kind(p)
        except OSError as e:
            raise UsageError(argument, f"'{_short(p)}' cannot be used ({e.strerror})", "Pass another path.") from None
        if what is not None:
            raise UsageError(
                argument,
                f"'{p}' exists and is {what}; whichdevice writes only regular files",
                f"Pass a new file path, e.g. {argument} result.json.",
            )
    return path


def parse_shape(text: str | None, argument: str = "--input-shape") -> tuple[int, ...] | None:
    """``--input-shape 28,28,1`` -> (28, 28, 1): positive whole numbers, order and repeats kept."""
    if text is None:
        return None
    parse_int_list(text, argument, maximum=1_000_000, example="100 (or 28,28,1)")  # each part checked
    return tuple(int(p) for p in text.split(","))


MIN_MEMORY_LIMIT_GIB = 0.5  # a framework's import alone takes a few hundred MiB


def parse_memory_limit(text: str | None, argument: str = "--memory-limit") -> int | None:
    """``--memory-limit GIB`` -> bytes (None: the runner's default, 90 % of RAM)."""
    gib = parse_positive_float(text, argument, "8", unit="GiB")
    if gib is None:
        return None
    if gib < MIN_MEMORY_LIMIT_GIB:
        raise UsageError(
            argument,
            f"{text} GiB is too small to run a framework",
            f"Pass at least {MIN_MEMORY_LIMIT_GIB:g} GiB, e.g. {argument} 8 (default: 90% of RAM).",
        )
    return int(gib * 2**30)
