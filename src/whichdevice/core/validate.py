"""Check user input at the boundary: one clear message naming the argument and the fix."""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from whichdevice.core.errors import UsageError


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
            v = int(p)
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


def parse_positive_float(text: str | None, argument: str, example: str, unit: str = "seconds") -> float | None:
    if text is None:
        return None
    try:
        v = float(text)
    except ValueError:
        raise UsageError(
            argument, f"'{text}' is not a number", f"Pass a positive number of {unit}, e.g. {argument} {example}."
        ) from None
    if not math.isfinite(v) or v <= 0:
        raise UsageError(
            argument,
            f"{text} is not a positive number",
            f"Pass a positive number of {unit}, e.g. {argument} {example}.",
        )
    return v


def parse_positive_int(text: str | None, argument: str, example: str, maximum: int = 4096) -> int | None:
    if text is None:
        return None
    try:
        v = int(text)
    except ValueError:
        raise UsageError(argument, f"'{text}' is not a whole number", f"Pass e.g. {argument} {example}.") from None
    if v <= 0 or v > maximum:
        raise UsageError(
            argument, f"{v} is out of range", f"Pass a whole number from 1 to {maximum}, e.g. {argument} {example}."
        )
    return v


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists():
        if p.parent == p:
            break
        p = p.parent
    return p


def check_output_dir(path: Path, argument: str) -> Path:
    """A folder we can create or write into — checked now, created only when writing."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(argument, f"'{path}' exists and is not a folder", f"Pass a folder path to {argument}.")
    base = _nearest_existing(path.absolute())
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
    path = Path(path).expanduser()
    if path.is_dir():
        raise UsageError(argument, f"'{path}' is a folder", f"Pass a file path, e.g. {argument} result.json.")
    check_output_dir(path.parent if str(path.parent) else Path("."), argument)
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
