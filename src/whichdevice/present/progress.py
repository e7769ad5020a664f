"""Progress of a Python API call: the CLI shows a bar while a 30 s measurement runs;
the API showed nothing. In a terminal (plain Python, IPython) the same rich bar as the CLI, on
stderr and gone when done; in a Jupyter notebook one output line updated in place (an IPython
display handle: no widget library needed), left as "done: N cases in S s".

    with ApiProgress("matmul") as p:
        record = session.measure(request, progress=p.callbacks())
"""

from __future__ import annotations

import html
import sys
import time
from typing import TYPE_CHECKING, Any

from whichdevice.measure import session
from whichdevice.present.tables import describe_key

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def in_notebook() -> bool:
    """True in a Jupyter kernel (IPython's ZMQ shell), False in a terminal or plain Python."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class ApiProgress:
    """Counts finished cases out of the total; ``enabled=False`` shows nothing."""

    MIN_INTERVAL_S = 0.25  # a notebook redraw at most 4× per second
    live = False  # no live terminal line to print a provisional answer above (cli/run.py)

    def __init__(self, title: str, *, enabled: bool = True) -> None:
        self.title = title
        self.enabled = enabled
        self.total: int | None = None
        self.done = 0
        self.current = "starting"
        self._t0 = time.monotonic()
        self._shown = 0.0
        self._handle: Any = None  # IPython's display handle (IPython ships no type information)
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    # --- context
    def __enter__(self) -> ApiProgress:
        if not self.enabled:
            return self
        if in_notebook():
            from IPython.display import HTML, display

            self._handle = display(HTML(self._html()), display_id=True)  # type: ignore[no-untyped-call]  # IPython is untyped
        else:
            from rich.console import Console

            from whichdevice.present.cliprogress import bar_for

            self._bar = bar = bar_for(Console(stderr=True, highlight=False))  # the CLI's line, cut to fit
            bar.start()
            self._task = bar.add_task(f"{self.title}: starting", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self._handle is not None:
            self._draw(force=True, final=exc[0] is None)

    # --- the measuring session's callbacks
    def callbacks(self, **more: Any) -> session.Progress:
        """The session's callbacks; ``more``: its others (``while_child_starts``, ``on_provisional``)."""
        return session.Progress(on_total=self._on_total, on_start=self._on_start, on_result=self._on_result, **more)

    def _on_total(self, n: int) -> None:
        self.total = n
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=n)
        self._draw()

    def _on_start(self, key: str) -> None:
        self.current = describe_key(key)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=f"{self.title}: {self.current}"[:90])
        self._draw()

    def _on_result(self, _result: object) -> None:
        self.done += 1
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task)
        self._draw()

    # --- the notebook line
    def text(self, final: bool = False) -> str:
        elapsed = time.monotonic() - self._t0
        if final:
            return f"whichdevice {self.title}: done, {self.done} cases in {elapsed:.0f} s"
        of = f"/{self.total}" if self.total else ""
        return f"whichdevice {self.title}: {self.done}{of} cases, {elapsed:.0f} s — {self.current}"

    def _html(self, final: bool = False) -> str:
        frac = (self.done / self.total) if self.total else 0.0
        bar = "" if final else f' <progress value="{frac:.3f}" max="1" style="width:12rem"></progress>'
        return f'<div class="whichdevice-report"><code>{html.escape(self.text(final))}</code>{bar}</div>'

    def _draw(self, force: bool = False, final: bool = False) -> None:
        if self._handle is None:
            return
        now = time.monotonic()
        if not force and now - self._shown < self.MIN_INTERVAL_S:
            return
        self._shown = now
        from IPython.display import HTML

        self._handle.update(HTML(self._html(final)))  # type: ignore[no-untyped-call]  # IPython is untyped
