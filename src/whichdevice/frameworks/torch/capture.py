"""Capture of a user's PyTorch training script (``whichdevice diagnose SCRIPT.py``).

``install(spec, sink)`` runs in the script's child (``measure/scriptchild.py``) before the script
(contract in ``frameworks/contracts.py``: ``CaptureSpec``, ``CaptureDone``). It imports nothing of
torch: ``capturekit.after_import`` waits for the script's own ``import torch``, then the entry
points are patched (``capture_hooks.py``). The script's loop is timed step by step:

- the entry is ``torch.optim.Optimizer.step`` (torch's global step hooks), or
  ``torch.Tensor.backward`` where no optimizer exists (a manual ``p.data -= lr * p.grad``);
- a step boundary is the end of a step of the first optimizer to step: several networks with
  their optimizers (a GAN) stepping in one iteration are one step;
- the device is synchronized at each boundary on a GPU (never on the CPU), then the clock read;
- the first step runs from the first call of a module with parameters to the first boundary
  (what comes before it, imports and data loading, is ``setup_s``), then the warm-up steps,
  then the timed ones. With its steps (or past its deadline) the capture calls ``sink`` with
  the result and raises ``CaptureDone``.

Per timed step it also counts what the script does: the time its DataLoader's ``__next__`` took
(``data_wait_s``), its host-to-device copies (``h2d``: ``Tensor.to``/``.cuda`` from the
script's code) and its host reads (``syncs``: ``.item()``, ``.tolist()``, ``.numpy()``,
``float(t)``, and ``.cpu()`` of a device tensor). A variant ("batch:64", "autocast", ...) is
applied by the hooks; one that does not fit the script gives ``not_applicable`` at its first
step, with the reason.

Variants the hooks apply per step without rebuilding anything of the script's
(``scriptfixes.Apply.turns`` "switched": autocast on and off) share one run: ``spec.variant`` then each of
``spec.also`` is a member, and the steps after the first are dealt to the members in turn (member
j gets steps j, j + n, ...), each with its own warm-up, timed steps, waits, copies and reads, so
the script's imports and data loading are paid once for all of them and slow drift hits each
alike. One result per member (``member``: its place, as members may share a variant name).

The variants that change what the script built once take turns the same way
(``scriptfixes.TURNS``): from the second step on, each member's turn switches its variant in
and the turn's end switches it back out (``capture_hooks.enter``/``leave``, outside the timed
steps): a DataLoader's batch size, workers or pinning (a DataLoader the capture builds from the
script's own arguments, whose batches the script's loop receives in that member's turns), the
model's memory format, a compiled module. A loader member whose batches could not be its turn's
(a loop that fetches ahead, a trainer's) is handed back at the first step's end (``alone``): the
measuring child runs it in a process of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from whichdevice.frameworks.common import capturekit
from whichdevice.frameworks.contracts import CaptureDone, CaptureSpec
from whichdevice.frameworks.torch import capture_hooks as hooks
from whichdevice.frameworks.torch import loops, rebatch, scriptfixes, steptrace, trainers

ENTRY_STEP, ENTRY_BACKWARD = hooks.ENTRY_STEP, hooks.ENTRY_BACKWARD
_perf = time.perf_counter


@dataclass
class Member:
    """One variant timed in a run: its own steps and counts (``Capture`` points at the current one's)."""

    variant: str
    index: int
    warmup_s: list[float] = field(default_factory=list)
    step_s: list[float] = field(default_factory=list)
    data_wait_s: list[float] = field(default_factory=list)
    h2d: dict[str, int] = field(default_factory=lambda: {"count": 0, "bytes": 0, "pinned": 0})
    syncs: dict[str, float] = field(default_factory=lambda: {"count": 0, "s": 0.0})
    entry_calls: int = 0
    why_not: str | None = None
    samples: int | None = None  # rows of the last batch its steps received
    extra: int = 0  # more warm-up: its first step ran the script's own settings (turns switch from the second)
    # its applier (``scriptfixes.Apply``, None: the script as it runs) and value part, by its typed
    # variant's catalogue key (``CaptureSpec.fixes``) or, in a spec without them, by its name
    applied: tuple[Any, str] | None = None


@dataclass
class Capture:
    """What one child measured so far (one per script run)."""

    spec: CaptureSpec
    sink: Callable[[dict], None]
    torch: Any = None
    entry: str | None = None
    lead: Any = None  # the optimizer whose step ends a step (the first to step)
    optimizers: int = 0  # optimizers the script created
    entry_calls: int = 0  # calls of the entry point in the timed steps (a GAN: 2 a step)
    first_call: float | None = None  # first call of a module with parameters: the first step starts
    last: float | None = None  # the last step boundary
    members: list[Member] = field(default_factory=list)  # the variants this run times, in turn
    live: list[Member] = field(default_factory=list)  # those still measured (a misfit is dropped)
    now: Member | None = None  # the member whose step is under way
    wait_now: float = 0.0  # DataLoader.__next__ time since the last boundary
    timing: bool = False  # the timed steps have begun: copies and reads are counted
    h2d: dict[str, int] = field(default_factory=lambda: {"count": 0, "bytes": 0, "pinned": 0})
    syncs: dict[str, float] = field(default_factory=lambda: {"count": 0, "s": 0.0})
    modules: list[Any] = field(default_factory=list)  # top-level modules with parameters, by first call
    trained: list[Any] = field(default_factory=list)  # those the step trains
    loader: Any = None  # the DataLoader iterated last before a step
    iterator: Any = None  # a weak reference to the last DataLoader iterator that gave a batch
    samples: int | None = None  # rows of the last batch the DataLoader gave
    why_not: str | None = None  # a variant found not to fit before the first step
    trainer: str | None = None  # the trainer whose loop runs the step (trainers.py), None: the script's own loop
    tiles: Any = None  # rebatch.Tiles: the batches a loop slices itself, and their tiling
    loops: Any = None  # loops.Loops: the script's training loops, one after another
    done: bool = False
    turns: bool = False  # several members: the built variants are switched in at their turns (hooks.enter)
    fed: Any = None  # the script's DataLoader whose batches a loader member's Feed replaces
    feeds: dict[int, Any] = field(default_factory=dict)  # each loader member's Feed, by its place
    feed: Any = None  # the Feed of the member whose turn it is, or None: the script's own batches
    compiled: dict[Any, Any] = field(default_factory=dict)  # a compile member's compiled modules
    cudnn_was: bool = False  # the script's cudnn.benchmark, outside a cudnn_benchmark member's turns
    fetches: int = 0  # batches taken from one iterator in the first step (hooks._count_fetch)
    fetched: Any = None  # a weak reference to that iterator
    # steps that took the script's own batches (not a loader member's Feed): what its data holds,
    # said where the script ends before every member's turns are in (script.loop_ended)
    own_steps: int = 0

    @property
    def variant(self) -> str:
        return self.now.variant if self.now is not None else str(self.spec.variant)

    @property
    def step_s(self) -> list[float]:
        return self.now.step_s if self.now is not None else []


def _turn_to(cap: Capture, m: Member) -> bool:
    """``m``'s turn: the hooks count into its copies, reads, entry calls and misfit reason; from
    the second step on, the last member's variant switched out and ``m``'s in (True: done)."""
    was = cap.now
    switch = cap.turns and cap.last is not None and was is not m
    if was is not None:
        was.entry_calls, was.why_not = cap.entry_calls, cap.why_not
        if switch:
            hooks.leave(cap, was)
    cap.now, cap.h2d, cap.syncs = m, m.h2d, m.syncs
    cap.entry_calls, cap.why_not = m.entry_calls, m.why_not
    if switch:
        hooks.enter(cap, m)
    if cap.first_call is not None:
        cap.timing = not _warming(cap, m)
    return switch


def _warm(cap: Capture, m: Member) -> int:
    """``m``'s warm-up steps."""
    return hooks.warmup_steps(cap, m.variant, m) + m.extra


def _warming(cap: Capture, m: Member) -> bool:
    """Whether ``m``'s next step is a warm-up: its own, or one while another member still warms up
    (a compile's tracing leaves compile workers and caches busy; no member's timed steps begin
    before every member's warm-up ended, so none is timed beside another's start-up)."""
    return len(m.warmup_s) < _warm(cap, m) or any(not x.step_s and len(x.warmup_s) < _warm(cap, x) for x in cap.live)


def install(spec: CaptureSpec, sink: Callable[[dict], None]) -> None:
    """Patch torch's entry points for ``spec`` as soon as the script imports torch (at once if it
    is imported already). ``sink`` receives the one result dict."""
    cap = Capture(spec=spec, sink=sink)
    turns = scriptfixes.TURNS
    for i, v in enumerate((spec.variant, *spec.also)):
        why: str | None = None
        typed = spec.fixes[i] if i < len(spec.fixes) else None
        applied = hooks.fix_of(v, typed)
        if i and v != "baseline" and (applied[0] is None or applied[0].name not in turns):
            # set before the script runs: a run of its own
            why = f"'{v}' needs a run of the script of its own (only {', '.join(turns)} take turns)"
        elif i:  # the first member's is said as the script imports torch (hooks.install)
            why = hooks.device_why_not(spec, v, typed)
        if why:
            sink(capturekit.result(spec, status="not_applicable", variant=v, why_not=why, member=i))
            continue
        cap.members.append(Member(v, i, applied=applied))
    cap.live = list(cap.members)
    cap.turns = len(cap.members) > 1
    if cap.turns and _built(cap.members[0]):
        cap.members[0].extra = 1  # its first step runs before the turns switch anything
    _turn_to(cap, cap.members[0])
    capturekit.FINISHERS.append(lambda: _script_ended(cap))  # a short script: the steps it ran
    capturekit.CLOSERS.append(lambda end: _closed(cap, end))  # the script ended anyhow
    capturekit.after_import("torch", lambda torch: hooks.install(torch, cap, _HANDLERS))


# ------------------------------------------------------------------ steps


def first_step(cap: Capture, entry: str, optimizer: Any = None) -> None:
    """The first entry-point call: the entry, and the optimizer whose steps end a step."""
    cap.entry, cap.lead = entry, optimizer
    cap.trainer = trainers.on_stack()
    capturekit.OWNER.append(entry)
    if cap.first_call is None:  # no module called yet (plain tensors, or a closure's forward)
        cap.first_call = _perf()
        cap.timing = (_warm(cap, cap.now) if cap.now is not None else hooks.warmup_steps(cap)) == 0


def _misfit(cap: Capture) -> str | None:
    """Why the member whose step just ended does not fit the script, seen at its first step (or
    said by the hooks during it: the script autocasts already), or None."""
    m = cap.now
    assert m is not None
    if cap.why_not:
        return cap.why_not
    return hooks.why_not(cap, m.variant, m) if not (m.warmup_s or m.step_s) else None


def boundary(cap: Capture) -> None:
    """A step ended: the device synchronized (GPU), the step's time kept as its member's warm-up
    or timed step, the next member's turn; the results sent once every member has its timed steps
    or the deadline passed."""
    if cap.done:
        return
    steptrace.at_boundary(cap)  # the pre-flight's one traced step (the second) begins or ends here
    capturekit.step_ended()
    first = cap.last is None
    if first:  # the end of the first step (its forward has run, also inside an optimizer's closure)
        cap.trained = hooks.trained_modules(cap)
        capturekit.timing(entry=cap.entry, framework="torch")  # the parent learns what a cut pre-flight timed
    m = cap.now
    assert m is not None
    cap.own_steps += cap.feed is None
    back = _hand_back_alone(cap, m) if first and cap.turns else None
    why = back or _misfit(cap)
    after = cap.live[(cap.live.index(m) + 1) % len(cap.live)] if m in cap.live else cap.live[0]
    if why and m in cap.live:
        _drop(cap, m, why)
    if first:
        hooks.after_first_step(cap)  # the variants applied from the second step on
    hooks.sync(cap)
    now = _perf()
    start = cap.last if cap.last is not None else (cap.first_call or now)
    if not why:
        if _warming(cap, m):
            m.warmup_s.append(now - start)
        else:
            m.step_s.append(now - start)
            m.data_wait_s.append(cap.wait_now)
    cap.wait_now = 0.0
    cap.last = now
    if _turn_to(cap, after):  # what the switch took is no member's step
        hooks.sync(cap)
        cap.last = _perf()
    # a fixed count: a torch loop's end is no event the capture sees, so steps past it until the
    # median settles would wait through whatever the script does after its loop
    if all(len(x.step_s) >= cap.spec.steps for x in cap.live):
        _send(cap, "ok", stopped="steps")
    elif all(len(x.step_s) >= 3 for x in cap.live) and capturekit.since_start() > cap.spec.deadline_s:
        _send(cap, "ok", stopped="deadline")


def _drop(cap: Capture, m: Member, why: str) -> None:
    """A member that does not fit the script: said at once and left out of the turns; with none
    left the script is stopped."""
    if len(cap.live) == 1:
        _send(cap, "not_applicable", why_not=why)
    cap.live.remove(m)
    cap.why_not = None
    cap.sink(result(cap, "not_applicable", why, None, m))


def _hand_back_alone(cap: Capture, m: Member) -> str | None:
    """At the first step's end: the members that cannot take turns here (``hooks.alone_why``)
    handed back, said with ``alone`` so that the measuring child runs each in a process of its
    own; a reason if ``m``, whose step just ended, is one of them."""
    cap.fed, cap.fetched = cap.loader, None
    out = None
    for x in list(cap.live):
        why = hooks.alone_why(cap, x.variant)
        if why is None:
            continue
        cap.live.remove(x)
        r = result(cap, "not_applicable", f"it needs a run of the script of its own here: {why}", None, x)
        cap.sink({**r, "alone": True})
        if x is m:
            out = why
    if not cap.live:
        _send(cap, "ok", stopped="steps")
    return out


def _send(cap: Capture, status: str, *, why_not: str | None = None, stopped: str | None = None) -> None:
    """Hand the result to the child and stop the script (``CaptureDone`` passes the script's
    ``except Exception``)."""
    cap.done, cap.timing = True, False  # the hooks stand aside from now on
    if cap.now is not None:
        cap.now.entry_calls = cap.entry_calls
    for m in cap.live if status == "ok" else cap.live[:1]:
        cap.sink(result(cap, status, why_not, stopped, m))
    if cap.spec.survey and status == "ok" and cap.entry == ENTRY_STEP:  # the pre-flight follows the script
        loops.follow(cap)  # on to its other loops, for a few seconds
        return
    hooks.stop_workers(cap)
    raise CaptureDone()


def result(cap: Capture, status: str, why_not: str | None, stopped: str | None, m: Member) -> dict:
    """The result dict of the contract (``capturekit.result``). ``data_wait_s``
    is the time in the DataLoader's ``__next__`` per step, empty when no DataLoader feeds the loop
    (the script makes its batches inside its steps). Beyond the contract, what the parent plans
    from: the DataLoader's settings in the script and its dataset's size (``samples``), whether the model has 2-d convolutions, the
    entry point's calls in the timed steps (a GAN's two optimizers: two a step), the trainer whose
    loop ran the step (Lightning, the HF Trainer; None: the script's own loop)."""
    first = cap.first_call if cap.first_call is not None else _perf()
    feed = cap.feeds.get(m.index)
    fed = feed.settings() if feed is not None else None
    return capturekit.result(
        cap.spec,
        status=status,
        entry=cap.entry,
        variant=m.variant,
        member=m.index,
        why_not=why_not,
        step_s=list(m.step_s),
        warmup_s=list(m.warmup_s),
        samples_per_step=m.samples or cap.samples or rebatch.samples(cap, m.variant),
        batch_size=fed["batch_size"] if fed else (hooks.loader_batch(cap.loader) or rebatch.samples(cap, "baseline")),
        setup_s=max(0.0, first - capturekit.T0),
        data_wait_s=list(m.data_wait_s) if cap.loader is not None else [],
        h2d=dict(m.h2d),
        syncs={"count": int(m.syncs["count"]), "s": float(m.syncs["s"])},
        model="+".join(type(m).__name__ for m in cap.trained) or None,
        entry_calls=m.entry_calls,
        data_source="DataLoader" if cap.loader is not None else None,
        loader=hooks.loader_settings(cap.loader),
        samples=hooks.dataset_size(cap.loader),
        conv2d=hooks.has_conv2d(cap),
        stopped=stopped,
        trainer=cap.trainer,
        cpu_threads=cap.torch.get_num_threads() if cap.torch is not None else None,  # what the steps ran with
        fed=fed,  # a loader member's DataLoader as its turns used it (None: the script's own)
        fetches=cap.fetches,  # batches the loop took from its DataLoader in its first step (2: ahead)
        rebatch="step" if cap.first_call is not None and rebatch.tileable(cap) else None,  # a batch tiles the step
        rebatched="step" if m.variant.startswith(f"{rebatch.TAKES_TURNS}:") and cap.loader is None else None,
        step_trace=steptrace.result(cap),  # the pre-flight's traced step, for the no-GPU prediction
        script_steps=cap.own_steps,  # the script's own batches its loop took so far
        plan_facts=hooks.plan_facts(cap),  # what the script did that the fixes' adapters plan from
    )


def _script_ended(cap: Capture) -> None:
    """The script ended on its own before the timed steps were in: send the steps it ran, if any."""
    if cap.entry is not None and not cap.done:
        cap.live = [m for m in cap.live if m.step_s]
        if cap.live:
            _send(cap, "ok", stopped="script end")


def _closed(cap: Capture, end: dict) -> None:
    """The script ended (``capturekit.CLOSERS``): the turns' workers shut down; if it raised in the
    turn of a member switched in (a step that cannot take its batch size, its compiled module),
    that member handed back (``alone``), so that the measuring child runs the others again without
    it and it in a process of its own, where the error is its own."""
    hooks.close_feeds(cap)
    m = cap.now
    raised = end.get("status") == "script_error" and end.get("exit_code") is None
    if not raised or cap.done or not cap.turns or m is None or cap.last is None or m not in cap.live:
        return
    if _built(m):
        cap.done = True
        why = f"the script raised {end.get('error')} in this variant's turn"
        cap.sink({**result(cap, "not_applicable", why, None, m), "alone": True})


def _built(m: Member) -> bool:
    """Whether ``m``'s variant is switched in and out at its turns (not applied per call)."""
    fix, _ = hooks.member_fix(m)
    return fix is not None and fix.turns == "built" and fix.name in scriptfixes.TURNS


def _not_applicable(cap: Capture, why: str) -> None:
    _send(cap, "not_applicable", why_not=why)


_HANDLERS = hooks.Handlers(first_step=first_step, boundary=boundary, not_applicable=_not_applicable)
