"""One member of an interleaved group timed a whole epoch (or pass) a turn: a ``model.fit``
variant (``train._Fit``). ``train.time_group`` tells these from steady-step members by
this base class and times them with ``train._time_fits``, A B | B A, one epoch per turn.

Its own module so that both sides import it and neither imports the other for it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whichdevice.core.records import CaseSpec


class EpochTurns(ABC):
    """Built and warmed up on construction (``warmup_s``: the warm-up epoch's step times);
    :meth:`epoch` runs one steady turn and returns its step times."""

    spec: CaseSpec
    b: int  # the batch
    warmup_s: list[float]

    @abstractmethod
    def epoch(self) -> list[float]:
        """One steady turn: its steps' times."""

    @abstractmethod
    def metrics(self, turns: int) -> dict[str, float]:
        """The member's metrics after ``turns`` steady turns."""
