"""Several training loops in one torch script: which one the capture times (``spec.entry_call``).

A loop is the steps of one optimizer (with the optimizers that first step inside its first two
steps: a GAN's generator and discriminator are one loop); an optimizer stepping for the first time
after that starts the next loop (a model pre-trained, then another trained). The loops before the
measured one run as the script wrote them, untimed: each of their step ends clears what the
capture read of a first step (the modules called, the batch), so the measured loop's first step
is read afresh. In the pre-flight's survey (``spec.survey``) the script goes on after the measured
loop's steps, and each loop is recorded as it ends (``capturekit.saw_entry``: its model, batch,
steps and seconds; ``stopped`` where the survey stopped following it first), so the plan can
list them and measure the longest-running one.
"""

from __future__ import annotations

import signal
import sys
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from whichdevice.frameworks.common import capturekit

# An optimizer whose first step comes within the loop's first steps is part of it (a GAN's second
# optimizer; a WGAN's generator steps after its critic's first 5 steps).
JOINS_WITHIN = 8
# How long the pre-flight's survey follows the script past the measured loop's steps (or to its
# deadline, if sooner): long enough to see a short script's later loops, short enough that a
# script with one long loop costs the pre-flight little more than its own steps.
SURVEY_EXTRA_S = 5.0


@dataclass
class Loop:
    call: int
    lead: Any  # a weak reference to the optimizer whose steps count the loop's
    members: set[int] = field(default_factory=set)  # ids of its optimizers
    steps: int = 0
    began: float = 0.0
    last: float = 0.0
    model: str | None = None
    batch: int | None = None


@dataclass
class Loops:
    now: Loop | None = None
    said: int = 0  # loops recorded so far (saw_entry)
    measured: int = 0  # the loop the capture times (its call), 0 before it starts
    done_at: float | None = None  # when the survey saw the measured loop's steps handed over
    following: bool = False  # the survey's timer is set: it ends the script SURVEY_EXTRA_S from then


def state(cap: Any) -> Loops:
    if cap.loops is None:
        cap.loops = Loops()
        capturekit.FINISHERS.insert(0, lambda: _said(cap))  # the last loop, said when the script ends
    return cap.loops


def before_step(cap: Any, optimizer: Any) -> bool:
    """An optimizer is about to step: the loop it belongs to found (a new one started where it is
    new past the current loop's first steps). True where this step is the measured loop's."""
    st = state(cap)
    loop = st.now
    if loop is None or (id(optimizer) not in loop.members and loop.steps >= JOINS_WITHIN):
        _said(cap)
        call = loop.call + 1 if loop is not None else 1
        loop = st.now = Loop(call, weakref.ref(optimizer), {id(optimizer)}, began=capturekit.now())
        if call == cap.spec.entry_call:
            st.measured = call
    loop.members.add(id(optimizer))
    return loop.call == cap.spec.entry_call


def after_step(cap: Any, optimizer: Any, optimizers: Any) -> None:
    """An optimizer stepped: its loop's step counted (at its lead's steps). A step of a loop before
    the measured one clears the first step's reading; the survey ends here past its time."""
    st = state(cap)
    loop = st.now
    if loop is None or loop.lead() is not optimizer:
        return
    loop.steps += 1
    loop.last = capturekit.now()
    if loop.model is None or loop.steps <= JOINS_WITHIN:
        loop.model, loop.batch = describe(cap, loop, optimizers)
    if loop.call < cap.spec.entry_call:  # passed over: the measured loop's first step is read afresh
        cap.first_call, cap.modules, cap.tiles = None, [], None
    if not (cap.spec.survey and cap.done) or st.done_at is None:
        return
    if loop.last - st.done_at > SURVEY_EXTRA_S or capturekit.since_start() > cap.spec.deadline_s:
        _unfollow(cap)
        _said(cap, stopped=True)
        capturekit.survey_stopped()


def follow(cap: Any) -> None:
    """The measured loop's steps are handed over in the survey: the script goes on for at most
    SURVEY_EXTRA_S more, also where no optimizer steps again (an evaluation after training), ended
    by a timer (the main thread's SIGALRM, where the script has no handler of its own)."""
    st = state(cap)
    st.done_at = capturekit.now()
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return
    if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
        return
    st.following = True
    signal.signal(signal.SIGALRM, lambda _sig, frame: _timed_out(cap, frame))
    signal.setitimer(signal.ITIMER_REAL, SURVEY_EXTRA_S)
    capturekit.FINISHERS.insert(0, lambda: _unfollow(cap))


def _unfollow(cap: Any) -> None:
    """The script ended first: the timer cleared."""
    if cap.loops is not None and cap.loops.following:
        cap.loops.following = False
        signal.setitimer(signal.ITIMER_REAL, 0)


def _timed_out(cap: Any, frame: Any) -> None:
    """The survey's time is up: the loop under way said, the script ended (only while the script
    itself runs: its own frames on the stack, not whichdevice's closing lines after it)."""
    if not cap.loops.following or not _in_script(frame):
        return
    cap.loops.following = False
    _said(cap, stopped=True)
    capturekit.survey_stopped()


def _in_script(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "_run" and frame.f_code.co_filename.endswith("scriptrun.py"):
            return True
        frame = frame.f_back
    return False


def describe(cap: Any, loop: Loop, optimizers: Any) -> tuple[str | None, int | None]:
    """The loop's model (the modules its optimizers train: those the capture saw called, else the
    script's own top-level ones) and its batch (the DataLoader's, or the rows its model was fed)."""
    held = {id(p) for o in list(optimizers) if id(o) in loop.members for g in o.param_groups for p in g["params"]}
    module = cap.torch.nn.Module
    main = sys.modules.get("__main__")
    found = [m for m in cap.modules if any(id(p) in held for p in m.parameters())]
    if not found and main is not None:
        mine = [v for v in list(vars(main).values()) if isinstance(v, module)]
        found = [m for m in mine if any(id(p) in held for p in m.parameters())]
    names = "+".join(dict.fromkeys(type(m).__name__ for m in found)) or None
    if loop.call > cap.spec.entry_call:  # the capture stands aside after the measured loop: no batch read
        return names, None
    rows = cap.tiles.rows() if cap.tiles is not None else None
    return names, cap.samples or rows


def _said(cap: Any, *, stopped: bool = False) -> None:
    """The loop under way recorded (once) as it ends: a new loop began, or the script ended."""
    st = cap.loops
    loop = st.now if st is not None else None
    if loop is None or loop.call <= st.said or not loop.steps:
        return
    st.said = loop.call
    capturekit.saw_entry(
        {
            "entry": cap.entry or "torch.optim.Optimizer.step",
            "kind": "loop",
            "call": loop.call,
            "model": loop.model,
            "batch": loop.batch,
            "steps": loop.steps,
            "s": round(loop.last - loop.began, 4),
            "measured": loop.call == cap.spec.entry_call,
            **({"stopped": True} if stopped else {}),
        }
    )
