"""One way to write a measured ratio: the ratio, its 95 % interval and what it rests on.

Every presenter (terminal, HTML, tables, plots' captions) writes a claimed ratio through
:func:`ratio_text`, so a change reads the same everywhere and never appears without its
interval and its sample/round count (the verdict comes from ``analysis/significance.py``)::

    2.9× faster (95 % CI 2.1–3.8×, 5 rounds)
    2× slower (95 % CI 1.6–2.5×, 12 samples)
    no clear change (1.8×, CI 0.8–3.1×, n=3)
    not enough samples (2.1× from n=1; 1 sample: at least 5 needed)

Ratios are of times, A/B: > 1 means B is faster (analysis/compare.py's convention). The verdict
(faster, slower, no clear change, not enough) and its note are typed in analysis/significance.py;
this module is the only one that words them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

from whichdevice.core.units import percent
from whichdevice.core.units import figure, seconds
from whichdevice.core.units import times as times  # the presenters' one way to write a multiplier

if TYPE_CHECKING:
    from whichdevice.analysis.compare import Comparison
    from whichdevice.analysis.crossover import Crossover
    from whichdevice.analysis.gpudecision import GpuDecision
    from whichdevice.analysis.significance import Claim, ClaimNote, Modes


def batch_figure(x: float) -> str:
    """A crossover's estimated batch (or size): a whole number from 100 ('1,234'), else three
    significant digits ('37.5')."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def modes_text(modes: Modes) -> str:
    """'2 rounds at ≈1.6 ms, 1 at ≈3 ms': the two clusters of a bimodal point."""
    return (
        f"{modes.n_low} round{'s' if modes.n_low > 1 else ''} at ≈{_s(modes.low)}, {modes.n_high} at ≈{_s(modes.high)}"
    )


def _s(v: float) -> str:
    return seconds(v, smallest="µs")


def disagree_text(modes: Modes) -> str:
    """Why a change is not told: a side's processes ran in two modes (too few of them to tell the
    change from the modes)."""
    return (
        f"not enough samples: the processes disagree (bimodal steps, {_s(modes.high)} vs {_s(modes.low)} per step), "
        "the machine's cores were contended"
    )


def note_text(note: ClaimNote | None) -> str:
    """The claim's note in words ('' when it has none)."""
    if note is None:
        return ""
    if note.kind == "no_samples":
        return "no samples"
    if note.kind == "too_few_samples":
        return f"{note.n} sample{'s' if note.n != 1 else ''}: at least {note.needed} needed"
    if note.kind == "too_few_rounds":
        return f"fewer than {note.needed} rounds"
    if note.kind == "near_band":
        return f"its near end short of {note.margin:g}×, which fewer than {note.needed} rounds must clear"
    if note.kind == "one_process":
        return "one process a side: a second round decides it"
    if note.kind == "too_wide":
        return "too wide to rule out a 2× change"
    if note.kind == "disagree" and note.modes is not None:
        return disagree_text(note.modes)
    return f"bimodal between rounds ({modes_text(note.modes)})" if note.modes is not None else "bimodal between rounds"


def ratio_text(claim: Claim | Comparison, *, subject: str = "") -> str:
    """The claim in words. ``subject`` (e.g. 'GPU:0') is put before 'faster'/'slower'.
    A ``Comparison`` is written through its claim::

        2.9× faster (95 % CI 2.1–3.8×, 5 rounds)
        no clear change (1.8×, CI 0.8–3.1×, n=3)
        not enough samples (2.1× from n=1; 1 sample: at least 5 needed)
    """
    c = claim.claim
    note = note_text(c.note)
    who = f"{subject} " if subject else ""
    if c.status == "not_enough" and c.note is not None and c.note.kind in ("too_wide", "near_band"):
        count = f"{c.n} rounds" if c.unit == "rounds" else f"n={c.n}"
        return f"not enough samples ({times(c.ratio)}×, CI {times(c.lo)}–{times(c.hi)}×, {count}; {note})"
    if c.status == "not_enough" and c.note is not None and c.note.kind == "disagree":
        count = f"{c.n} rounds" if c.unit == "rounds" else f"n={c.n}"
        return f"{note} ({times(c.ratio)}× from {count})"
    if c.status == "not_enough":
        why = f"; {note}" if note else ""
        count = f"{c.n} rounds" if c.unit == "rounds" and c.n > 1 else f"n={c.n}"
        shown = f" ({times(c.ratio)}× from {count}{why})" if math.isfinite(c.ratio) else why
        return f"not enough samples{shown}"
    if c.status == "no_change":
        extra = f"; {note}" if note else ""
        return f"no clear change ({times(c.ratio)}×, CI {times(c.lo)}–{times(c.hi)}×, n={c.n}{extra})"
    if c.ratio >= 1:
        lo, hi, word, r = c.lo, c.hi, "faster", c.ratio
    else:
        lo, hi, word, r = 1 / c.hi, 1 / c.lo, "slower", 1 / c.ratio
    unit = c.unit if c.n != 1 else c.unit[:-1]
    text = f"{who}{times(r)}× {word} ({percent(c.confidence)} CI {times(lo)}–{times(hi)}×, {c.n} {unit})"
    return f"{text}; {note}" if note else text


def comparison_text(comp: Comparison) -> str:
    """'GPU:0 3.1× faster (95 % CI 2.9–3.3×, 12 samples)': a change names its faster side;
    'no clear change (...)' and 'not enough samples (...)' do not."""
    return ratio_text(comp, subject=comp.other) if comp.claim.significant else ratio_text(comp)


def crossover_text(cross: Crossover, unit: str = "") -> str:
    """Where the GPU starts to win (analysis/crossover.py), in words."""
    u = f" {unit}" if unit else ""
    if cross.kind == "no_data":
        return "no crossover: not enough successful measurements on both devices"
    if cross.kind == "gpu_everywhere":
        return f"no crossover in range: the GPU wins everywhere (from {cross.high:g}{u})"
    if cross.kind == "cpu_everywhere":
        extra = " (the GPU won at some smaller sizes, within the noise)" if cross.gpu_wins_below else ""
        return f"no crossover in range: the CPU wins everywhere (up to {cross.low:g}{u}){extra}"
    note = "; the sample ranges overlap there, so it is uncertain" if cross.ranges_overlap else ""
    return (
        f"the GPU starts to win at about {figure(cross.estimate)}{u} (between {cross.low:g} and {cross.high:g}){note}"
    )


def _batches(bs: tuple[int, ...]) -> str:
    """'batch 8', 'batch 10–512' (the measured batches from the first to the last); batch 0 is a
    script's own batch where its size could not be read."""
    if bs == (0,):
        return "the script's own batch"
    return f"batch {bs[0]}" if len(bs) == 1 else f"batch {bs[0]}–{bs[-1]}"


_EVERY = {"GPU": "win", "CPU": "lose to this CPU", "too_close": "be too close to call against this CPU"}


def gpu_decision_words(d: GpuDecision, gpu: str) -> str:
    """The predicted answer (analysis/gpudecision.py) in one clause, the same for ``run`` and
    ``predict``: 'An H100 would lose to this CPU at batch 8, be too close to call at batch
    10–512, and win at batch 2048–8192'. Nothing is said of a batch that was not measured."""
    if d.kind == "none":
        return f"Not enough batches were measured to predict an {gpu}"
    if d.kind != "mixed":
        bs = d.measured
        where = (
            f"at {_batches(bs)}, the only batch measured"
            if len(bs) == 1
            else f"at every batch measured ({bs[0]}–{bs[-1]})"
        )
        return f"An {gpu} would {_EVERY[d.kind]} {where}"
    parts = []
    for s in d.spans:
        verb = {"GPU": "win", "CPU": "lose to this CPU", "too_close": "be too close to call"}[s.winner]
        extra = ""
        if s.winner == "GPU" and d.crossing is not None and d.crossing[2] == s.batches[0]:
            extra = f" (the two cross at batch ≈ {batch_figure(d.crossing[0])})"
        parts.append(f"{verb} at {_batches(s.batches)}{extra}")
    joined = ", ".join(parts[:-1]) + f"{',' if len(parts) > 2 else ''} and {parts[-1]}"
    return f"An {gpu} would {joined}"


def cpu_varied_words(varied: tuple[float, int] | None) -> str:
    """'This CPU's times varied 4.8× under load: its least disturbed steps are used, the band
    widened.' ('' when they held steady: analysis/gpudecision.cpu_step)."""
    if varied is None:
        return ""
    return (
        f"This CPU's times varied {times(varied[0])}× under load: its least disturbed steps are used, the band widened."
    )


def gpu_decide_words(d: GpuDecision, *, command: bool = True, brief: bool = False) -> str:
    """What would settle what the prediction cannot, and where it stops ('' when nothing);
    ``command``: with the command that measures the too-close batches on a GPU (``predict``
    prints it on a line of its own instead); ``brief``: the limit of the sweep only (``run``'s
    first screen, whose answer line already names the too-close batches)."""
    out = []
    if d.too_close and not brief:
        spread = ""
        if d.cpu_spread:  # the CPU's median alone is outside the band: its spread makes it close
            spread = f" (at {', '.join(map(str, d.cpu_spread))} a steadier CPU, on a quieter machine, may decide it)"
        how = f": `{d.command}`" if command and d.command else ""
        out.append(f"Too close where the GPU's band overlaps this CPU's band{spread}; a run on the GPU decides{how}")
    if d.unmeasured_above:
        top = d.measured[-1] if d.measured else None
        cut = _batches(d.unmeasured_above)
        out.append(
            f"Measured only up to batch {top}: {cut} not measured (the time budget ended the sweep), "
            "nothing is predicted there"
            if top is not None
            else f"{cut} not measured (the time budget ended the sweep)"
        )
    return ". ".join(out) + ("." if out else "")
