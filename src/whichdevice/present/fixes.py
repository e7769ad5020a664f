"""The words for the fixes analysis measured (analysis/suite.FixVerdict): one sentence per
measured pair, the grid's choice, why a fix was not measured, and a change's title, code line
and caveat from the catalogue (workloads/fixes.py).

The first screen, the fix table, the HTML report and the settings advice all write a fix
through these functions, from the same :class:`~whichdevice.analysis.fixes.Fix` objects, so a
claim reads the same everywhere: its words are ``Claim.text`` (present/claims.ratio_text).
"""

from __future__ import annotations

import dataclasses

from typing import TYPE_CHECKING, Any

from whichdevice import frameworks
from whichdevice.core.stats import MIN_SAMPLES
from whichdevice.core.units import seconds
from whichdevice.present import names
from whichdevice.present.claims import disagree_text, ratio_text, times
from whichdevice.workloads.fixes import BATCH

if TYPE_CHECKING:
    from whichdevice.analysis.fixes import (
        CompileCost,
        Fix,
        FixEntry,
        GridResult,
        NotMeasured,
        PlacementCheck,
        WarmupCheck,
    )
    from whichdevice.analysis.precision import Cpu16Bit
    from whichdevice.analysis.significance import Claim
    from whichdevice.analysis.suite import FixVerdict

_PARTS = {"both": "per training step", "pipeline": "pipeline alone, per batch"}
OUTCOME_WORDS = {
    "helps": "helps",
    "slower": "slower here",
    "no_change": "no clear change",
    "not_measured": "not enough samples",  # measured pairs, none with a claim (suitepage: no pair is 'not measured')
}
NOT_ENOUGH = "not enough samples"  # a fix measured, from too few samples or rounds to tell


def short_claim_text(claim: Claim) -> str:
    """The claim without its note (the report has it), with a one-word tag for it: the first
    screen keeps one line per change. The rest is the fix table's words exactly."""
    text = ratio_text(dataclasses.replace(claim, note=None))
    if claim.note is None or not claim.enough:
        return text
    tag = "bimodal" if claim.note.kind == "bimodal" else "see the report"
    return f"{text[:-1]}; {tag})" if text.endswith(")") else f"{text} ({tag})"


def several_frameworks(fixes: list[FixVerdict]) -> bool:
    return len({f.framework for v in fixes for f in v.fixes}) > 1


def where_words(f: Fix) -> str:
    """The workload a pair was measured on, for people."""
    if f.workload == "pipeline":
        return f"image input pipeline, batch {f.where.get(BATCH.param)}, {_PARTS.get(f.part, f.part)}"
    ctx = {**f.where, f.entry.param: f.baseline} if f.entry.param == BATCH.param else f.where
    return names.workload_name(ctx, framework=f.framework)


def _values(f: Fix) -> tuple[str, str]:
    words = f.entry.words or {}
    return words.get(str(f.baseline), str(f.baseline)), words.get(str(f.variant), str(f.variant))


def fix_line(f: Fix, *, several: bool = False) -> str:
    """'CPU:0 jit_compile False -> True: 1.3× faster (95 % CI 1.2–1.4×, 2 rounds), per sample
    (small MLP, 1,000 samples, batch 10, model.fit)'."""
    who = f"{f.framework} {f.device}" if several else f.device
    b, v = _values(f)
    param = "" if f.workload == "pipeline" or f.entry.words is not None else f"{f.entry.param} "
    per = "" if f.workload == "pipeline" else ", per sample"
    return f"{who} {param}{b} -> {v}: {ratio_text(f.claim)}{per} ({where_words(f)})"


def _count(c: Claim) -> str:
    """'n=3' (samples), or '2 rounds' for a claim short of rounds."""
    return f"{c.n} rounds" if c.unit == "rounds" and c.n > 1 else f"n={c.n}"


def _grid_cell(f: Fix) -> str:
    """'2048: 1.2× slower (95 % CI 1.2–1.2×, 10 samples)': each value against the baseline in
    the claim's own words (``ratio_text``), as the first screen and the fix line say that pair."""
    return f"{f.variant}: {ratio_text(f.claim)}"


def grid_lines(g: GridResult, e: FixEntry, *, several: bool = False) -> tuple[str, str]:
    """(the grid's choice in words, the whole grid) for one device."""
    what = e.param
    who = f"{g.framework} {g.device}" if several else g.device
    thin = g.thin
    left_out = (
        f"; {what} {', '.join(str(f.variant) for f in thin)}: not enough samples "
        f"({', '.join(_count(f.claim) for f in thin)}), not considered"
        if thin
        else ""
    )
    cut = _cut_text(g, what)
    grid = f"{who} grid (samples/s vs {what} {g.baseline}): " + "; ".join(_grid_cell(f) for f in g.cells) + cut
    if not any(f.recommended for f in g.cells):  # only smaller values: not the fix
        values = ", ".join(str(f.variant) for f in g.cells)
        return f"{who}: no {what} larger than {g.baseline} measured (only {what} {values}){cut}", grid
    if g.pick is None or g.best is None or g.pick_share is None:
        values = ", ".join(str(f.variant) for f in g.cells)
        return f"{who}: none of {what} {values} beats {g.baseline} significantly{left_out}{cut}", grid
    pick, best = g.pick, g.best
    head = f"{who}: {what} {g.baseline} -> {pick.variant}: {ratio_text(pick.claim)} in samples/s ({where_words(pick)})"
    if g.best_at_cut_edge:  # the edge of what was measured is no "best": larger values were not measured
        share = "" if pick is best else f"; the recommended {what} reaches {g.pick_share:.0%} of the largest measured"
        return f"{head}{share}{left_out}{cut}", grid
    line = (
        f"{head}; best {'measured' if g.cut else 'in the grid'}: {what} {best.variant}, {ratio_text(best.claim)}, so "
        f"the recommended {what} reaches {g.pick_share:.0%} of the best{left_out}{cut}"
    )
    return line, grid


def _cut_text(g: GridResult, what: str) -> str:
    """'; largest measured: batch 128; batch 512, 2048, 8192 not measured (time budget)' for a
    grid whose values above the largest measured one did not run; else ''."""
    if not g.cut:
        return ""
    parts = []
    if g.skipped:
        parts.append(f"{what} {', '.join(str(v) for v in g.skipped)} not measured (time budget)")
    if g.failed:
        parts.append(f"{what} {', '.join(str(v) for v in g.failed)} not measured (failed; see Failed)")
    return f"; largest measured: {what} {g.largest}; " + "; ".join(parts)


def _too_few_text(why: NotMeasured) -> str:
    if why.reason == "contended":
        return _contended_text(why)
    if why.wide:
        count = f"{why.n} rounds" if why.unit == "rounds" else f"{why.n} samples"
        return f"not enough samples: {count}, but their interval is too wide to rule out a 2× change"
    if why.unit == "rounds":
        return f"not enough samples: {why.n} rounds, at least {why.needed} needed to tell a change from none"
    if why.one_process:  # enough steps, but all of them from one process a side
        return f"not enough samples: {why.n} steps, from one process a side; a second round decides it"
    return f"not enough samples: fewer than {MIN_SAMPLES} samples (n={why.n})"


def _contended_text(why: NotMeasured) -> str:
    """'not enough samples: the processes disagree (bimodal steps, 60 ms vs 8 ms per step), the
    machine's cores were contended (2 threads a process on 2 busy cores); the measured alternative,
    CPU threads default → 1: 3.1× faster (...)'."""
    note = why.untold.note if why.untold is not None else None
    text = (
        disagree_text(note.modes)
        if note is not None and note.modes is not None
        else f"{NOT_ENOUGH}: the processes disagree"
    )
    if why.threads_used > 1 and why.cores:  # its own threads could contend with the machine's other work
        text += f" ({why.threads_used} threads a process on {why.cores} busy cores)"
    elif why.threads_used == 1:
        text += " (one thread a process: other processes took its core)"
    t = why.threads
    if t is None:
        return text
    b, v = _values(t)
    return f"{text}; the measured alternative, CPU threads {b} → {v}: {ratio_text(t.claim)}"


def not_measured_text(why: NotMeasured, experiment: str = "run") -> str:
    """'not measured: skipped, the time budget ran out (raise --budget)' and the like."""
    if why.reason == "not_in_suite":
        what = "what diagnose measures" if experiment == "diagnose" else "this suite"
        return f"not measured: not part of {what}" + (f"; {why.elsewhere} measures it" if why.elsewhere else "")
    if why.reason == "skipped":
        return "not measured: skipped, the time budget ran out (raise --budget)"
    if why.reason == "cut":
        return "not measured: the plan left it out to keep within the time budget (raise --budget; see the notes)"
    if why.reason == "failed":
        kinds = ", ".join(k.replace("_", " ") for k in why.failures)
        return f"not measured: its cases failed ({kinds}; see Failed)"
    if why.reason in ("too_few_samples", "contended"):
        return _too_few_text(why)
    if why.reason == "default":
        return f"no change to make: {', '.join(why.devices)} already {why.default}"
    if why.reason == "no_gpu":
        return NO_GPU
    if why.reason == "none_larger":
        return f"not measured: no {why.param} larger than {why.above} was measured (only smaller ones)"
    if why.reason in ("fixed_batch", "not_applicable", "script_ended"):
        return _script_text(why)
    return "not measured: one side of the pair did not run"


def script_ended_text(why: NotMeasured) -> str:
    """A variant whose turn in the shared process the script's loop never reached: 'not measured:
    your script's loop ended after 16 steps, before this variant's turn (its data holds fewer steps
    than the turns need)'. Nothing failed: the script ended as written."""
    after = f" after {why.n} steps" if why.n else ""
    return (
        f"not measured: your script's loop ended{after}, before this variant's turn "
        "(its data holds fewer steps than the turns need)"
    )


def _script_text(why: NotMeasured) -> str:
    """Why a script's variant was not measured: what its capture found (a batch its step could not
    be tiled to), its loop ending before its turn, or a batch the script makes itself."""
    if why.reason == "not_applicable":
        return f"not measured: {'; '.join(why.failures)}"
    if why.reason == "script_ended":
        return script_ended_text(why)
    given = f"a {why.rebatches}" if why.rebatches else "the arrays or tf.data given to fit"
    return f"not measured: the script makes its own batches (diagnose changes the batch of {given})"


DEFAULT_ON = "already on by default"
SCRIPT_ENDED = "your script's loop ended before its turn"
NO_GPU = "not measured here (no GPU)"


def short_reason(why: NotMeasured) -> str:
    """The reason in a few words, for the first screen."""
    return {
        "not_in_suite": "not in this suite",
        "skipped": "left out: time budget",  # reached at run time or cut by the plan: one fact, one wording
        "cut": f"left out: time budget; --budget {why.budget} or more measures every fix"
        if why.budget
        else "left out: time budget",
        "failed": "failed",
        "too_few_samples": NOT_ENOUGH,
        "default": DEFAULT_ON,
        "no_pair": "one side did not run",
        "no_gpu": "no GPU here",
        "none_larger": "nothing larger measured",
        "fixed_batch": "the script makes its own batches",
        "not_applicable": "; ".join(why.failures),
        "contended": f"{NOT_ENOUGH}: the processes disagree",
        "script_ended": SCRIPT_ENDED,
    }[why.reason]


def verdict_lines(v: FixVerdict, *, several: bool = False, with_grid: bool = True) -> list[str]:
    """The fix table's "measured effect" lines for one fix."""
    e = v.entry
    lines: list[str] = []
    if e.method == "grid":
        for g in v.grids:
            line, grid = grid_lines(g, e, several=several)
            lines += [line, grid] if with_grid else [line]
    else:
        lines += [fix_line(f, several=several) for f in v.fixes]
    for c in v.checks:
        lines.append(check_line(c))
    on = dict.fromkeys(f"{f.framework} {f.device}" if several else f.device for f in v.default_on)
    if on:
        lines.append(f"{', '.join(on)}: already the default here ({e.default_words[1]}): no change for you")
    note = cpu_16bit_text(v.cpu_16bit)
    if note:
        lines.append(note)
    return lines


def compile_cost_line(c: CompileCost) -> str:
    """torch.compile's compile as the one-time cost it is, with its break-even (warm-up's words)."""
    eager = f" (an eager step {seconds(c.eager_step_s)})" if c.eager_step_s else ""
    if not c.finished:
        bound = (
            f"; it pays back only after more than {c.min_steps:,.0f} steps even if compiled steps were free"
            if c.min_steps
            else ""
        )
        return f"{c.device}: compiling took more than {seconds(c.compile_s)} here (stopped at its bound){bound}{eager}"
    be = c.break_even
    if be is None:
        return f"{c.device}: compiling took {seconds(c.compile_s)} here (a one-time cost)"
    if be.kind == "after":
        return (
            f"{c.device}: compiling took {seconds(c.compile_s)} here (a one-time cost); at {seconds(be.saving_per_unit_s)} "
            f"saved per step{eager} it pays back after {be.n:,} steps"
        )
    why = (
        "its steps are not significantly faster"
        if be.within_noise or (be.saving_per_unit_s or 0) > 0
        else "its steps are slower"
    )
    return f"{c.device}: compiling took {seconds(c.compile_s)} here (a one-time cost); it never pays back: {why}"


def check_line(c: PlacementCheck | WarmupCheck | CompileCost) -> str:
    if c.check == "compile":
        return compile_cost_line(c)
    if c.check == "placement":
        if c.device.startswith("GPU"):
            text = (
                f"{len(c.cpu_ops)} op types ran on the CPU in the GPU step: " + ", ".join(c.cpu_ops)
                if c.cpu_ops
                else "every op that does work ran on the GPU"
            )
        else:
            text = (
                "everything ran on the CPU (a CPU run); this build has no GPU kernel for "
                f"{', '.join(c.fallbacks) or 'none of the step ops'}, which would run on the CPU in a GPU run"
            )
        copies = f"; {c.copies} copies between devices per step" if c.copies else ""
        return f"{c.device}: {text}{copies}"
    head = f"{c.device}: first step {seconds(c.first_s)} vs steady {seconds(c.steady_s)} ({times(c.ratio)}×)"
    if c.ratio <= 1:  # a first step faster than the steady median overstates nothing
        return f"{head}: the first step was not slower than the steady ones here, so no warm-up cost was seen"
    return f"{head}: a one-step or first-epoch timing overstates the steady cost this much"


def change_title(f: Fix, *, several: bool = False) -> str:
    title = f.entry.change.format(b=f.baseline, v=f.variant)
    return title + (f" ({f.framework})" if several else "")


def change_code(f: Fix) -> str:
    """The line the user writes for a measured change (:func:`entry_code`)."""
    tiled = frameworks.declared(f.framework, "STEP_BATCH_CODE", None) if f.where.get("rebatch") == "step" else None
    if f.kind == BATCH.key and tiled:  # a loop that slices its own batches: the slice, not a DataLoader
        return str(tiled).format(v=f.variant)
    return entry_code(f.entry, f.framework, f.where.get("trainer")).format(v=f.variant)


def entry_code(e: FixEntry, framework: str, trainer: object = None) -> str:
    """A fix's line, ``{v}`` unformatted: the catalogue's, or the framework's own where it declares
    one (``FIX_CODE``; keras-*: Keras' own code), or where a trainer's loop ran the script's step (the case's ``trainer``), that trainer's
    setting for it (``TrainingArguments(bf16=True)``, not ``torch.autocast``), as its framework
    declares; a fix the trainer has no setting for keeps the framework's line."""
    trainers: dict[str, Any] = frameworks.declared(framework, "TRAINERS", {}) if trainer else {}
    lines = trainers.get(str(trainer), {}).get("code", {})
    own: dict[str, str] = frameworks.declared(framework, "FIX_CODE", {})
    return str(lines.get(e.key) or own.get(e.key, e.code))


def entry_how(e: FixEntry, on_page: set[str]) -> str:
    """A fix's "how": the framework's own where the page is of one framework that declares one
    (``FIX_HOW``: a TensorFlow page names TensorFlow's thread setting, not torch's), else the
    catalogue's, which names each framework's."""
    if len(on_page) == 1:
        (fw,) = on_page
        own: dict[str, str] = frameworks.declared(fw, "FIX_HOW", {})
        return own.get(e.key, e.how)
    return e.how


def change_caveat(f: Fix) -> str:
    e = f.entry
    if not e.caveat:
        return ""
    return e.caveat.format(v=f.variant, r=_ratio(f.variant, f.baseline))


def _ratio(variant: object, baseline: object) -> object:
    """variant / baseline for a caveat's ``{r}`` (a larger batch scales the learning rate), else 'N'."""
    try:
        return float(variant) / float(baseline)  # type: ignore[arg-type]
    except (TypeError, ValueError, ZeroDivisionError):
        return _N()


class _N:
    """A placeholder value in a caveat that speaks of no particular measurement: 'N'."""

    def __format__(self, spec: str) -> str:
        return "N"


def general_caveat(e: FixEntry) -> str:
    """The caveat with no measured value ('every N steps'), for the fix table's how column."""
    return e.caveat.format(v=_N(), r=_N())


def cpu_16bit_text(c: Cpu16Bit | None) -> str | None:
    """What this CPU's 16-bit math means for a mixed-precision measurement made on it."""
    if c is None:
        return None
    if c.bf16 and c.fp16:
        return (
            "This CPU has fast bfloat16 and float16 math (avx512_bf16/amx_bf16 and avx512_fp16/amx_fp16)."
            + _slower_anyway_text(c)
        )
    missing = [
        n
        for n, ok in (("bfloat16 (no avx512_bf16/amx_bf16)", c.bf16), ("float16 (no avx512_fp16/amx_fp16)", c.fp16))
        if not ok
    ]
    return (
        "This CPU has no fast 16-bit math for " + " or ".join(missing) + " in /proc/cpuinfo: its 16-bit "
        "arithmetic is not accelerated, so a difference measured here comes from elsewhere (less memory "
        "traffic, different kernels), not from 16-bit compute units; tensor-core GPUs are where mixed "
        "precision is designed to pay — measure it there." + _slower_anyway_text(c)
    )


def _slower_anyway_text(c: Cpu16Bit) -> str:
    """The line that reconciles 'this CPU has fast float16 math' with a policy measured
    significantly slower than float32 on it (its ratio is the one beside the line: the fix's
    pair or the precision table's column, not restated): the flags say the instructions exist,
    the measurement says this model's ops do not run on them (a path on them would not be slower
    than float32); kernels without a 16-bit path convert each value to float32 and back."""
    if not c.slower_anyway:
        return ""
    policies = ", ".join(dict.fromkeys(r.precision for r in c.slower_anyway))
    types = " and ".join(dict.fromkeys(r.precision.removeprefix("mixed_") for r in c.slower_anyway))
    return (
        f" Yet {policies} measured significantly slower than float32 on this CPU: a path on those instructions "
        f"would not be slower than float32, so this model's {types} ops do not run on them here (the "
        f"framework's CPU kernels without a {types} path convert each value to float32 and back, an emulation "
        "that costs more than float32 itself) — keep float32 on this CPU."
    )
