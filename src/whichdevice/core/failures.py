"""Why a case failed, as one of a few kinds, so reports can say it plainly and advise.

A failed ``CaseResult`` carries its ``failure`` kind (schema version 2) next to the error
text. The kind is decided where the failure is seen: the child classifies the exception a
case raised (``of_exception``), the parent classifies a child that died, hung, or went over
the memory limit. ``of_text`` re-derives a kind from an error text alone; it reads records
written before the kind existed (schema version 1).

Out-of-memory is one kind whatever the allocator: Python's ``MemoryError``, TensorFlow's
``ResourceExhaustedError`` ("OOM when allocating tensor ... by allocator GPU_0_bfc" on a
GPU, "... allocator cpu" on the CPU), torch's ``OutOfMemoryError`` ("CUDA out of memory")
and CPU allocator error, XLA/JAX's ``RESOURCE_EXHAUSTED``, and the parent's memory limit.
The case's device says whose memory ran out.
"""

from __future__ import annotations

import re
from typing import Literal

FailureKind = Literal["error", "crash", "timeout", "out_of_memory", "not_started", "skipped"]

# Exception class names frameworks use for an allocation that failed.
_OOM_TYPES = frozenset({"MemoryError", "ResourceExhaustedError", "OutOfMemoryError"})
# What their messages say (TensorFlow, torch CUDA and CPU allocators, XLA, numpy, the memory limit).
_OOM_TEXT = re.compile(
    r"OOM when allocating|out of memory|RESOURCE_EXHAUSTED|can't allocate memory|not enough memory"
    r"|Unable to allocate|MemoryError|ResourceExhaustedError|OutOfMemoryError",
    re.IGNORECASE,
)

# Prefixes of the texts the parent writes (runner.py) and the child's budget skip (child.py).
TIMEOUT_PREFIX = "timed out"
SKIPPED_PREFIX = "skipped:"
NOT_STARTED_PREFIX = "not run:"
CRASH_PREFIXES = ("child process died", "child process exited")
MEMORY_LIMIT_PREFIX = "out of memory: the case's processes used"
# A member of a script's shared process whose turn the script's own loop never reached: its data
# ran out first (workloads/script.py writes it, analysis/suite.py reads it). Not measured, not failed.
SCRIPT_ENDED_PREFIX = "not measured: your script's loop ended"
# A case stopped at the limit the time budget had left when it began (runner.py): the budget ran out
# in it, as it runs out before a skipped case.
BUDGET_LIMIT_WORDS = "(all the time budget had left when it began)"


def budget_ran_out(status: str, failure: str | None, error: str | None) -> bool:
    """Whether the time budget ended a case: skipped before it began, or stopped at what was left."""
    return status == "skipped" or (failure == "timeout" and BUDGET_LIMIT_WORDS in str(error or ""))


def of_exception(e: BaseException) -> FailureKind:
    """The kind of an exception a case raised in the child (a variant that does not apply to the
    user's script, ``workloads.script.NotApplicable``: skipped, not failed)."""
    if type(e).__name__ == "NotApplicable":
        return "skipped"
    if any(t.__name__ in _OOM_TYPES for t in type(e).__mro__) or _OOM_TEXT.search(str(e)[:2000]):
        return "out_of_memory"
    return "error"


def of_text(error: str | None) -> FailureKind:
    """The kind an error text shows (records of schema version 1, written before kinds)."""
    text = (error or "").strip()
    if text.startswith(SKIPPED_PREFIX):
        return "skipped"
    if text.startswith(NOT_STARTED_PREFIX) or text.startswith(f"{TIMEOUT_PREFIX}: the framework did not start"):
        return "not_started"
    if text.startswith(TIMEOUT_PREFIX):
        return "timeout"
    if text.startswith(MEMORY_LIMIT_PREFIX):
        return "out_of_memory"
    if text.startswith(CRASH_PREFIXES):
        return "crash"
    head = text.split(":", 1)[0]
    if head in _OOM_TYPES or _OOM_TEXT.search(text):
        return "out_of_memory"
    return "error"
