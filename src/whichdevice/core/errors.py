"""Errors that reach the user as one line and exit code 2."""

from __future__ import annotations


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
