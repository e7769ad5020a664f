"""Errors that reach the user as one line and exit code 2."""

from __future__ import annotations

import errno


class UsageError(ValueError):
    """Bad input from the user: names the argument and says how to fix it.

    The CLI prints ``str(error)`` on one line and exits with code 2, writing nothing; the
    Python API raises it (a ``ValueError``) with the same message.
    """

    exit_code = 2

    def __init__(self, argument: str, problem: str, fix: str) -> None:
        self.argument = argument
        self.problem = problem
        self.fix = fix
        super().__init__(f"{argument}: {problem}. {fix}")


class PageNotDrawn(Exception):
    """The record was written, but its page could not be (a file it writes, a character the
    stream cannot encode): one line naming the record and how to draw it again, exit 1."""

    def __init__(self, record: object, cause: BaseException) -> None:
        self.record = record
        self.cause = cause
        why = type(cause).__name__
        if isinstance(cause, OSError) and cause.strerror:
            full = cause.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
            why = "no space left on the disk" if full else cause.strerror
        super().__init__(
            f"the record is written ({record}), but its page could not be drawn ({why}). "
            f"Draw it with: whichdevice report {record} --out FOLDER"
        )
