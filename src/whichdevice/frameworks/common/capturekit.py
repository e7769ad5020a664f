"""What every script capture shares (the contract in ``frameworks/contracts.py``).

- :func:`after_import`: run a patch the moment the script's own ``import NAME`` ends (at once if
  it is already imported), so installing a capture imports no framework a script does not use;
- :class:`StepClock`: a loop's step boundaries -> warm-up and timed steps, the wait for data
  between steps, and the result dict of the contract (:func:`result`), handed to the sink once;
- ``T0``: when the script child started (``measure/scriptchild.py`` sets it), from which a
  result's ``setup_s`` (imports and data loading, shown apart) is counted.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from whichdevice.core import stats
from whichdevice.frameworks.contracts import CaptureDone, CaptureSpec

T0 = time.perf_counter()  # the script child's start (scriptchild sets it before the script runs)
# Which capture owns this run once one has started measuring (e.g. "keras.Model.fit"): another
# framework's hooks (torch's backward() inside Keras' torch trainer) then stay out of the way.
OWNER: list[str] = []
# When each watched framework's import finished (seconds since T0; 0.0: imported before the script
# ran, as in a measuring child): the script's set-up less its imports is its data loading.
IMPORTED: dict[str, float] = {}
# Called when the script ends on its own before a capture had all its steps (a short script: 2
# epochs of 8 batches): each hands over the steps it has, if any (``scriptrun.execute``).
FINISHERS: list[Callable[[], None]] = []
# Called with the script's end line however the script ended (its own error too): what a capture
# started beside the script (worker processes it built, paused between turns) ended with it, and
# the variant whose turn it raised in said (``scriptrun.execute``).
CLOSERS: list[Callable[[dict[str, Any]], None]] = []
# How far the script's training got, for the line that says where it stopped (an error, an exit):
# the steps ended so far, and whether the next one had begun (its model called, its tape opened).
PROGRESS: dict[str, int] = {"steps": 0, "begun": 0}
# Every call of a training entry the script made, in order (``saw_entry``): the entry, its call
# number, the model, the batch and the steps it asks for, and whether it was measured. TELL (set
# by ``scriptrun.execute``) writes each as it happens, so a process stopped later still has them.
ENTRIES: list[dict[str, Any]] = []
TELL: list[Callable[[dict[str, Any]], None]] = []
# Each step boundary a capture timed (the first step's start, then each step's end), said through
# TELL as it comes, every one of the first TICKS_ALWAYS, then at most one a TICK_EVERY_S (a fast
# loop's timed steps pay one short write a second): a process stopped at its time limit before its
# capture handed a result over has still said what it timed (``workloads/script.partial_steps``).
# Which entry they time is said apart, once it is known (``timing``). ``source``: which clock
# ticks ("step": the step_began/step_ended of a loop's capture; "fit": a Keras fit's own callback).
TICKS: dict[str, Any] = {"n": 0, "told": float("-inf"), "source": None}
TICKS_ALWAYS = 4
TICK_EVERY_S = 1.0


def survey_stopped() -> None:
    """The pre-flight's survey went past its deadline: said, then the script ends (later training
    calls stay unknown)."""
    for tell in TELL:
        tell({"type": "seen", "survey_stopped": True})
    raise CaptureDone()


def saw_entry(info: dict[str, Any]) -> None:
    """Record one call of a training entry (and say it at once where the child writes lines)."""
    ENTRIES.append(dict(info))
    for tell in TELL:
        try:
            tell({"type": "entry", **info})
        except Exception:  # noqa: BLE001 (a closed output must not stop the script)
            traceback.print_exc(file=sys.__stderr__)


def _tell(obj: dict[str, Any]) -> None:
    for tell in TELL:
        try:
            tell(obj)
        except Exception:  # noqa: BLE001 (a closed output must not stop the script)
            traceback.print_exc(file=sys.__stderr__)


def timing(**about: Any) -> None:
    """Say which training entry the ticks time (its name, and the framework, backend, batch and
    model where the capture knows them)."""
    _tell({"type": "timing", **{k: v for k, v in about.items() if v is not None}})


def tick(source: str = "step", at: float | None = None) -> None:
    """One step boundary of the clock ``source``; another clock's are left out (a Keras fit's
    callback and a framework's own hooks may both see the same step)."""
    if TICKS["source"] not in (None, source):
        return
    TICKS["source"] = source
    t = now() if at is None else at
    TICKS["n"] += 1
    if TICKS["n"] <= TICKS_ALWAYS or t - TICKS["told"] >= TICK_EVERY_S:
        TICKS["told"] = t
        _tell({"type": "tick", "n": TICKS["n"], "at": t - T0})


def restart_ticks(source: str) -> None:
    """A clock that times the entry from here on (a Keras fit measured): earlier ticks were no
    training steps of it (a model called before its fit)."""
    TICKS.update(n=0, told=float("-inf"), source=source)
    _tell({"type": "tick", "n": 0, "at": since_start()})


def step_began() -> None:
    PROGRESS["begun"] = 1
    if not TICKS["n"]:
        tick()


def step_ended() -> None:
    PROGRESS["steps"] += 1
    PROGRESS["begun"] = 0
    tick()


def step_reached(*, exited: bool = False) -> int:
    """The training step the script was in when it raised or exited (1: the first; 0: before any
    began). A step's time runs from the previous step's end, so an error after the 3rd step's end
    came in the 4th; an exit there comes after the 3rd, where the script's loop put it, and is
    said as at the 3rd (unless the 4th's model had been called)."""
    steps, begun = PROGRESS["steps"], PROGRESS["begun"]
    if exited or not steps:
        return steps + begun
    return steps + 1


# A loop's timed steps: at least ``spec.steps``, then more until their median settles — its 95 %
# distribution-free interval within SETTLE_REL of it — while the timed steps together stay under
# SETTLE_S and number under SETTLE_FACTOR x ``spec.steps``. A fixed count sized for a 50 ms step
# leaves a 0.5 ms step's median at the mercy of a few scheduler hiccups (10 steps, 5 ms in all, on a
# busy 2-core machine); sized by the step, a tiny step gets hundreds of samples for the same
# fraction of a second, and a slow one (10 steps past SETTLE_S already) no more than before.
SETTLE_REL = 0.05
SETTLE_S = 0.25
SETTLE_FACTOR = 20


def settled(step_s: list[float], steps: int) -> bool:
    """Whether a loop has timed enough steps: ``steps`` at least, then until the median settles or
    the steps' time or count reaches its bound (``SETTLE_*``)."""
    n = len(step_s)
    if n < steps:
        return False
    if n >= SETTLE_FACTOR * max(steps, 1) or sum(step_s) >= SETTLE_S:
        return True
    return stats.median_rel_halfwidth(step_s) <= SETTLE_REL


def now() -> float:
    return time.perf_counter()


def since_start() -> float:
    return time.perf_counter() - T0


class AfterImport(importlib.abc.MetaPathFinder):
    """Stays first on ``sys.meta_path`` until the module is really imported: a ``find_spec`` that
    only asks whether it exists (TensorFlow asks for ``keras`` so) must not end the watch. The
    audit's finders (``common/audit.AfterImportFinder``) are this one with a state."""

    def __init__(self, name: str, install: Callable[..., None], timed: bool = True) -> None:
        self.name = name
        self.install = install
        self.busy = False
        self.timed = timed  # its import time counts in the script's set-up (``IMPORTED``)

    def watching(self) -> bool:
        return not self.busy

    def installs(self, module: Any, *more: Any) -> None:
        """Call the patch on the imported module; one that fails must not stop the script: the
        capture (or audit) sees less, and the traceback says why on the real stderr."""
        try:
            self.install(module, *more)
        except Exception:
            traceback.print_exc(file=sys.__stderr__)

    def find_spec(self, fullname, path, target=None):  # type: ignore[no-untyped-def]
        if fullname != self.name or not self.watching():
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return spec
        loader, finder = spec.loader, self
        orig_exec = loader.exec_module

        def exec_module(module):  # type: ignore[no-untyped-def]
            orig_exec(module)
            if finder.timed:
                IMPORTED.setdefault(finder.name, since_start())
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
                finder.installs(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def after_import(name: str, install: Callable[[Any], None], timed: bool = True) -> None:
    """Call ``install(module)`` once ``import name`` has finished (now, if it already has).
    ``timed``: the import is a framework's, whose time is part of the script's set-up
    (``IMPORTED``); a module watched for another reason (a file writer) is not."""
    if name in sys.modules:
        if timed:
            IMPORTED.setdefault(name, 0.0)
        AfterImport(name, install, timed).installs(sys.modules[name])
    else:
        sys.meta_path.insert(0, AfterImport(name, install, timed))


def result(
    spec: CaptureSpec,
    *,
    status: str = "ok",
    entry: str | None = None,
    variant: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A result dict of the contract, every field present (defaults: nothing measured)."""
    out: dict[str, Any] = {
        "status": status,
        "entry": entry,
        "variant": variant or spec.variant,
        "applied": status == "ok",
        "why_not": None,
        "step_s": [],
        "warmup_s": [],
        "samples_per_step": None,
        "batch_size": None,
        "setup_s": None,
        "data_wait_s": [],
        "h2d": {"count": 0, "bytes": 0, "pinned": 0},
        "syncs": {"count": 0, "s": 0.0},
        "model": None,
    }
    out.update(fields)
    return out


class StepClock:
    """A user's loop timed at its step boundaries: ``begin()`` where a step's work starts (a
    GradientTape opened, a compiled step called), ``end()`` where it is done (the optimizer
    applied its gradients). A step's time runs from the previous step's end to this one's, so
    it holds the loop's own work between steps (fetching the next batch) as the user's epoch
    does; that part alone is ``data_wait_s``. ``sync`` is called before each reading (a GPU's
    queued work finished). After ``warmup + steps`` steps, or past the deadline with at least
    two timed steps, ``end()`` hands the result to the sink and raises ``CaptureDone``."""

    def __init__(
        self,
        spec: CaptureSpec,
        sink: Callable[[dict], None],
        entry: str,
        sync: Callable[[], None] | None = None,
        info: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.spec, self.sink, self.entry = spec, sink, entry
        self.sync = sync or (lambda: None)
        self.info = info or (lambda: {})
        self.ends: list[float] = []
        self.waits: list[float] = []
        self.began: float | None = None
        self.first_begin: float | None = None
        self.done = False
        FINISHERS.append(self.flush)
        timing(entry=entry)

    def flush(self) -> None:
        """The script ended first: hand over the steps timed so far (at least one past the warm-up)."""
        if not self.done and len(self.ends) > self.spec.warmup_steps:
            self.finish()

    def begin(self, at: float | None = None) -> None:
        if self.began is not None:
            return  # inside a step already (a second tape, a nested call)
        t = now() if at is None else at
        step_began()
        self.began = t
        if self.first_begin is None:
            self.first_begin = t
        elif self.ends:
            self.waits.append(t - self.ends[-1])

    def end(self) -> None:
        self.sync()
        t = now()
        step_ended()
        if self.first_begin is None:
            self.first_begin = t
        self.ends.append(t)
        self.began = None
        timed = len(self.ends) - self.spec.warmup_steps
        late = since_start() > self.spec.deadline_s and timed >= 3
        if late or (timed >= self.spec.steps and settled(self.steps()[-timed:], self.spec.steps)):
            self.finish()

    def steps(self) -> list[float]:
        start = self.first_begin if self.first_begin is not None else T0
        edges = [start, *self.ends]
        return [b - a for a, b in zip(edges, edges[1:])]

    def finish(self) -> None:
        self.done = True
        all_steps = self.steps()
        w = min(self.spec.warmup_steps, max(0, len(all_steps) - 1))
        self.sink(
            result(
                self.spec,
                entry=self.entry,
                warmup_s=all_steps[:w],
                step_s=all_steps[w:],
                setup_s=(self.first_begin or now()) - T0,
                data_wait_s=self.waits[w:],
                **self.info(),
            )
        )
        raise CaptureDone()
