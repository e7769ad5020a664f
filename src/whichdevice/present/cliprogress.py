"""The command line's progress on stderr.

In a terminal: one live line — what is being measured, a bar, the count and the elapsed time —
that fits the terminal's width: the description is cut (with an ellipsis) before the count and
the time are, so at 80 columns the line still says ``14/40 0:00:21``. Gone when done.

Not a terminal (piped, redirected, CI): rich draws nothing live, so a line per finished phase
(the cases of one workload and kind on one device, one after the other), with the count and the
elapsed time: a script's log moves every few seconds instead of nothing for a minute.

Lines printed through :meth:`CliProgress.say` appear above the live line. The provisional answer
(:meth:`CliProgress.show_provisional`) is drawn inside the live display, above the line, and goes
with it when measuring ends: the final answer then stands alone, never below an earlier one
that said something else. Piped, it is printed once, saying that the final answer replaces it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from whichdevice.measure import session
from whichdevice.present.tables import describe_key, key_items
from whichdevice.workloads.fixes import JIT_COMPILE, STEPS_PER_EXECUTION

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

# The columns after the description: a bar, "123/456" and "0:01:23", with their gaps.
BAR_WIDTH_NARROW = 16  # below WIDE_AT columns
BAR_WIDTH = 40
WIDE_AT = 110
COUNT_AND_TIME = 7 + 1 + 7 + 3  # "123/456", "0:01:23", the gaps between the columns
MIN_DESCRIPTION = 12


def description_width(width: int) -> int:
    """The description's columns at a terminal ``width``: what the bar, count and time leave."""
    bar = BAR_WIDTH if width >= WIDE_AT else BAR_WIDTH_NARROW
    return max(MIN_DESCRIPTION, width - bar - COUNT_AND_TIME)


def bar_for(console: Console) -> Progress:
    """A rich progress line for ``console``'s width, gone when done: the description cut to
    fit (ellipsis), never wrapped, so the count and the elapsed time always show; lines set
    as its ``header`` (``_HeadedProgress``) are drawn above it and go with it."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    class _HeadedProgress(Progress):
        """A Progress that draws ``header`` (rich renderables) above its line, in the same live
        region: erased with the line when the transient display stops."""

        header: tuple[Any, ...] = ()

        def get_renderables(self) -> Any:
            yield from self.header
            yield from super().get_renderables()

    width = console.width
    return _HeadedProgress(
        TextColumn(
            "{task.description}",
            table_column=Column(no_wrap=True, overflow="ellipsis", width=description_width(width)),
        ),
        BarColumn(bar_width=BAR_WIDTH if width >= WIDE_AT else BAR_WIDTH_NARROW),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


# The matmul modes as a phase says them ("seed" is the project's name for the article's timing).
_MODE_WORDS = {"seed": "created and read back", "steady": "back-to-back"}


def phase_of(key: str) -> str:
    """A case key's phase, in words: its device, workload and kind ('CPU:0 train steady');
    describe cases are the op trace the GPU prediction reads."""
    parts = key.split("|", 3)
    if len(parts) < 4:
        return key
    workload, _, device, params = parts
    p = dict(x.split("=", 1) for x in key_items(params) if "=" in x)
    if workload == "calibrate" and p.get("probe") == "describe":
        return f"{device} op trace"
    kind = p.get("kind") or _MODE_WORDS.get(p.get("mode", ""), p.get("mode")) or p.get("part") or p.get("probe")
    if workload == "train" and (STEPS_PER_EXECUTION.param in p or JIT_COMPILE.param in p):
        kind = "fixes"
    return f"{device} {workload}" + (f" {kind}" if kind else "")


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class CliProgress:
    """Progress of one measuring command on ``console`` (stderr): a live line in a terminal,
    a line per finished phase otherwise (none with ``quiet``)."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.live = console.is_terminal
        self.quiet = quiet
        self.total: int | None = None
        self.done = 0
        self._t0 = time.monotonic()
        self._phase: str | None = None
        self._phase_done = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> CliProgress:
        if self.live:
            self._bar = bar_for(self.console)
            self._bar.start()
            self._task = self._bar.add_task("starting", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif exc[0] is None:
            self._end_phase()

    # --- what the measuring session calls
    def on_total(self, n: int) -> None:
        # The whole run's total: the plan's cases, grown as later rounds add theirs
        # (measure/session.py), so it is never below the cases already done.
        self.total = n
        if self._bar is not None and self._task is not None:
            # set on the task itself: rich's update() ignores a total of None
            for task in self._bar.tasks:
                if task.id == self._task:
                    task.total = self.total

    def on_start(self, key: str) -> None:
        from rich.markup import escape

        phase = phase_of(key)
        if phase != self._phase:
            self._end_phase()
            self._phase, self._phase_done = phase, 0
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=escape(describe_key(key)))

    def on_result(self, _result: object) -> None:
        self.done += 1
        self._phase_done += 1
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task)

    def say(self, text: str) -> None:
        """A line above the live line (or simply a line); ``text`` is rich markup."""
        self.console.print(text)

    def show_provisional(self, lines: list[tuple[str, str | None]]) -> None:
        """The provisional answer, (text, style) per line, each already fitted to the width: in
        a terminal drawn above the live line and erased with it when measuring ends (the final
        answer replaces it on the screen); piped, printed once as it is (its first line says
        that the final answer replaces it); nothing with ``quiet``."""
        from rich.text import Text

        if self.quiet:
            return
        if self._bar is not None:
            self._bar.header = tuple(Text(t, style=st or "", no_wrap=True, overflow="crop") for t, st in lines)  # type: ignore[attr-defined]  # bar_for's _HeadedProgress
            self._bar.refresh()
            return
        for text, _ in lines:
            self.console.print(text, soft_wrap=True, markup=False, highlight=False)

    def _end_phase(self) -> None:
        """Piped: the phase that just ended, its cases, the count so far and the time."""
        if self.live or self.quiet or self._phase is None or not self._phase_done:
            return
        of = f"/{self.total}" if self.total else " so far"
        n = self._phase_done
        self.console.print(
            f"{self._phase}: {n} case{'s' if n > 1 else ''} done ({self.done}{of}, "
            f"{_clock(time.monotonic() - self._t0)})",
            soft_wrap=True,
            markup=False,
        )
        self._phase_done = 0

    def callbacks(self, **more: Any) -> session.Progress:
        """The measuring session's callbacks for this progress (``more``: its other ones)."""
        return session.Progress(on_total=self.on_total, on_start=self.on_start, on_result=self.on_result, **more)
