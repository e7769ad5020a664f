"""The first screen of ``run`` and ``diagnose``: the answer, the top causes with their measured
share, the top changes with their measured gain and the line of code to change, and where the
details are — at most 25 lines at 100 columns. Everything else is below it (``--verbose``) or
in the HTML report.

Built from analysis data (fix pairs, the training and pipeline reports); every gain is a claim
of ``analysis/significance.py`` written by ``present/claims.py``. A change whose claim is not
significant is never recommended: it is listed on one line as "no clear gain here".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from whichdevice.analysis import quality, torch_fixes
from whichdevice.analysis.fixes import FixResult, ab_fixes, jit_by_default, per_sample
from whichdevice.analysis.compare import compare, process_sd
from whichdevice.analysis.significance import Claim, from_samples
from whichdevice.analysis.suite import SuiteVerdict
from whichdevice.core.records import CaseResult, RunRecord
from whichdevice.core.units import nbytes, seconds
from whichdevice.present import names
from whichdevice.present.claims import ratio_text

NO_PREDICTION = "Would a GPU help? `whichdevice predict --quick` models it (run traces no ops to model)."
MAX_LINES = 25  # the first screen's budget at 100 columns (issue 17)
GOOD_ENOUGH = 0.90  # a grid's recommended value reaches this share of its best gain (analysis/suite.py)


@dataclass(frozen=True)
class Cause:
    title: str
    share: float  # 0..1 of the step (or epoch) it is measured against
    text: str


@dataclass(frozen=True)
class Change:
    kind: str  # batch, steps_per_execution, data, pyfunc, jit_compile, sync, precision
    title: str
    claim: Claim
    where: str  # the workload it was measured on, in people's words
    code: str  # the line to write
    caveat: str = ""
    source: str | None = None  # the article, for the footnote

    @property
    def gain_text(self) -> str:
        return ratio_text(self.claim)

    @property
    def short_gain_text(self) -> str:
        """The claim without its note (the report has it): the first screen stays one line each."""
        text = ratio_text(dataclasses.replace(self.claim, note=""))
        if not self.claim.note:
            return text
        tag = "bimodal" if "bimodal" in self.claim.note else "see the report"
        return f"{text[:-1]}; {tag})" if text.endswith(")") else f"{text} ({tag})"


@dataclass(frozen=True)
class WarningGroup:
    kind: str
    count: int
    text: str  # what it means and what to do
    items: list[str] = field(default_factory=list)  # the full warnings, for the HTML list


@dataclass(frozen=True)
class FirstScreen:
    title: str
    answer: list[str]
    causes: list[Cause]
    changes: list[Change]
    more: list[Change]  # further changes that help, beyond the first three
    unclear: list[str]  # measured changes with no clear gain
    warnings: list[WarningGroup]
    failures: list[str]
    footnotes: list[str]
    skipped: int = 0  # cases the time budget did not reach (counted apart from failures)
    not_measured: dict[str, str] = field(default_factory=dict)  # a fix's name -> why (torch diagnose)


# ------------------------------------------------------------------ claims from the record


def _find(record: RunRecord, device: str, params: dict) -> CaseResult | None:
    for r in record.results:
        if r.status == "ok" and r.timing is not None and r.spec.device == device and r.spec.params == params:
            return r
    return None


def fix_claim(record: RunRecord, f: FixResult) -> Claim | None:
    """The claim (analysis/significance.py) for one A/B pair: per-sample times, baseline / fix
    (the comparison's own claim when it carries one)."""
    own = getattr(f.comparison, "claim", None)
    if isinstance(own, Claim):
        return own
    base, var = _side(record, f, f.baseline_value), _side(record, f, f.variant_value)
    if base is None or var is None:
        return None
    return compare("before", per_sample(base), "after", per_sample(var), process_sd=process_sd(record)).claim


def _side(record: RunRecord, f: FixResult, value) -> CaseResult | None:
    """The measured case of one side of an A/B pair: the fix's parameter at ``value``, the
    rest its context (dict equality: the parameters' order in the record does not matter)."""
    return _find(record, f.device, {**{k: v for k, v in f.context.items() if k != "framework"}, f.fix: value})


def _pipeline_claim(a, b, spread: float | None) -> Claim:
    """a vs b, no surer than two processes of the run agree (``spread``: compare.process_sd)."""
    if getattr(a, "rounds", None) is not None:
        return compare("a", a, "b", b, process_sd=spread).claim
    return from_samples(a.samples_s, b.samples_s, process_sd=spread)


def _helps(c: Claim | None) -> bool:
    return c is not None and c.significant and c.ratio > 1


def _grid_pick(pairs: list[tuple[FixResult, Claim]]) -> tuple[FixResult, Claim] | None:
    """The smallest value whose significant gain reaches GOOD_ENOUGH of the best one."""
    gains = [(f, c) for f, c in pairs if _helps(c)]
    if not gains:
        return None
    best = max(c.ratio for _, c in gains)
    return next((f, c) for f, c in sorted(gains, key=lambda fc: fc[0].variant_value) if c.ratio >= GOOD_ENOUGH * best)


# ------------------------------------------------------------------ the changes


_CODE = {
    "batch": "model.fit(x, y, batch_size={v})",
    "steps_per_execution": "model.compile(optimizer, loss, steps_per_execution={v})",
    "data": "ds = ds.map(f, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)",
    "pyfunc": "ds = ds.map(augment_in_tf_ops)  # not tf.py_function(augment, ...)",
    "jit_compile": "model.compile(optimizer, loss, jit_compile=True)",
    "sync": "if step % 100 == 0: print(float(loss))  # not every step",
    "precision": 'keras.mixed_precision.set_global_policy("mixed_float16")',
}
# The same change in a framework without Keras' model.fit (only the batch size is measured there).
_CODE_FOR = {
    ("batch", "torch"): "DataLoader(dataset, batch_size={v}, shuffle=True)",
    ("batch", "jax"): "for xb, yb in batches(x, y, size={v}): state = train_step(state, xb, yb)",
}
_TITLE = {
    "batch": "Batch {b} → {v}",
    "steps_per_execution": "steps_per_execution 1 → {v}",
    "data": "Prefetch the input (tf.data)",
    "pyfunc": "TF ops instead of tf.py_function",
    "jit_compile": "Compile the step with XLA (jit_compile)",
    "sync": "Read the loss back every N steps, not every step",
    "precision": "Mixed precision (float16)",
}
# Where advice changes the results, not only the speed (issue 17, item 6).
CAVEATS = {
    "batch": "this changes training: scale the learning rate (×{r:.3g}, with warm-up), check accuracy",
    "steps_per_execution": "callbacks and the progress bar then run once every {v} steps, not every step",
    "precision": "keep the output layer float32; a custom loop needs keras.optimizers.LossScaleOptimizer",
    "jit_compile": "each new input shape compiles again: the first steps get slower",
}
_UNCLEAR_NAME = {
    "batch": "a larger batch",
    "steps_per_execution": "steps_per_execution",
    "data": "prefetch",
    "pyfunc": "TF ops instead of tf.py_function",
    "jit_compile": "jit_compile",
    "sync": "loss read less often",
    "precision": "mixed precision",
}


# The PyTorch fixes (analysis/torch_fixes.py's catalogue), under their parameter's name.
_TITLE.update({f.param: f.title for f in torch_fixes.CATALOGUE})
_CODE.update({f.param: f.code for f in torch_fixes.CATALOGUE})
CAVEATS.update({f.param: f.caveat for f in torch_fixes.CATALOGUE})
_UNCLEAR_NAME.update({f.param: f.short for f in torch_fixes.CATALOGUE})
_CODE_FOR[("sync", "torch")] = torch_fixes.ITEM_CODE


def _change(
    kind: str,
    f: FixResult | None,
    claim: Claim,
    where: str,
    source: str | None,
    framework: str | None = None,
    several: bool = False,
) -> Change:
    """``framework``: the one the change was measured in (its code line follows it), named in the
    title when the run measured several (``run --framework a,b``)."""
    v = f.variant_value if f else ""
    b = f.baseline_value if f else ""
    caveat = CAVEATS.get(kind, "")
    if kind == "batch" and f is not None:
        caveat = caveat.format(r=float(v) / float(b))
    elif caveat:
        caveat = caveat.format(v=v)
    title = _TITLE[kind].format(b=b, v=v) + (f" ({framework})" if framework and several else "")
    code = _CODE_FOR.get((kind, framework or ""), _CODE[kind]).format(v=v)
    return Change(kind, title, claim, where, code, caveat, source)


def _changes(record: RunRecord, v: SuiteVerdict, seed_batch: int) -> tuple[list[Change], list[str]]:
    """Every measured change: the ones that help significantly, best first, and the names of
    the ones with no clear gain."""
    helped: list[Change] = []
    unclear: dict[str, None] = {}
    train = record.model_copy(update={"results": [r for r in record.results if r.spec.workload == "train"]})

    def pairs(fix: str, base, keep=lambda f: True) -> list[tuple[FixResult, Claim]]:
        out = []
        for f in ab_fixes(train, fix, base):
            c = fix_claim(record, f)
            if c is not None and keep(f):
                out.append((f, c))
        return out

    def where(f: FixResult) -> str:
        ctx = dict(f.context)
        return names.workload_name({**ctx, f.fix: f.baseline_value} if f.fix == "batch" else ctx)

    several = len({s.framework.name for s in record.sessions}) > 1

    def framework(f: FixResult) -> str | None:  # which framework a claim was measured in
        if f.context.get("framework"):
            return str(f.context["framework"])
        r = _side(record, f, f.baseline_value)  # one framework has this pair
        return r.spec.framework if r else None

    for kind, base, keep in (
        ("batch", seed_batch, lambda f: f.context.get("kind") == "steady" and f.context.get("sync") == "none"),
        ("steps_per_execution", 1, lambda f: True),
    ):
        got = pairs(kind, base, keep)
        for device in sorted({f.device for f, _ in got}):
            mine = [(f, c) for f, c in got if f.device == device]
            pick = _grid_pick(mine)
            if pick is None:
                unclear[_UNCLEAR_NAME[kind]] = None
                continue
            f, c = pick
            helped.append(
                _change(kind, f, c, f"{device}, {where(f)}", names.source_key(f.context), framework(f), several)
            )
    for kind, base, keep in (
        ("data", "tfdata_noprefetch", lambda f: True),
        ("jit_compile", False, lambda f: not jit_by_default(record, f.device)),  # no change where XLA is the default
        ("sync", "each", lambda f: f.context.get("kind") == "steady"),
        ("precision", "float32", lambda f: True),
        *((f.param, f.baseline, lambda f: True) for f in torch_fixes.CATALOGUE),  # diagnose --framework torch
    ):
        for f, c in pairs(kind, base, keep):
            if _helps(c):
                helped.append(
                    _change(kind, f, c, f"{f.device}, {where(f)}", names.source_key(f.context), framework(f), several)
                )
            else:
                unclear[_UNCLEAR_NAME[kind]] = None
    spread = process_sd(record)  # the run's between-process spread: the fix table's claims use it too

    def pipe_fw(device: str) -> str | None:  # the framework the image pipeline ran in (tf.data: TensorFlow)
        return next(
            (r.spec.framework for r in record.results if r.spec.workload == "pipeline" and r.spec.device == device),
            None,
        )

    for rep in v.pipelines:  # the image pipeline: serial -> prefetch, py_function -> TF ops
        rows = {r.variant: r for r in rep.rows}
        tf_ops, py, serial = rows.get("prefetch"), rows.get("pyfunc"), rows.get("serial")
        pipe_name = f"image input pipeline, batch {rep.rows[0].batch}" if rep.rows else "image input pipeline"
        for kind, a, b in (("pyfunc", py, tf_ops), ("data", serial, tf_ops)):
            if a is None or b is None:
                continue
            # the whole training step (what the user waits for) when measured, else the pipeline alone
            for part, ta, tb in (
                ("per training step", a.loop, b.loop),
                ("pipeline alone, per batch", a.pipeline, b.pipeline),
            ):
                if ta is not None and tb is not None:
                    c = _pipeline_claim(ta, tb, spread)
                    if _helps(c):
                        context = f"{rep.device}, {pipe_name}, {part}"
                        helped.append(_change(kind, None, c, context, "seed003", pipe_fw(rep.device), several))
                    else:
                        unclear[_UNCLEAR_NAME[kind]] = None
                    break
    best: dict[str, Change] = {}  # one change per kind: its best measurement
    for ch in sorted(helped, key=lambda ch: -ch.claim.ratio):
        best.setdefault(ch.kind, ch)
    for k in best:
        unclear.pop(_UNCLEAR_NAME[k], None)
    return list(best.values()), list(unclear)


# ------------------------------------------------------------------ the causes


def _batch_of(ch: Change) -> str:
    return ch.title.split(" ")[1]


def _causes(record: RunRecord, v: SuiteVerdict, changes: list[Change]) -> list[Cause]:
    out: list[Cause] = []
    for ch in changes:
        if ch.kind == "batch":
            share = 1 - 1 / ch.claim.ratio
            out.append(
                Cause(
                    "Fixed cost per step",
                    share,
                    f"{share:.0%} of a batch-{_batch_of(ch)} step (Python, dispatch, launches; not per sample)",
                )
            )
            break
    for ch in changes if not out else []:  # the same per-step cost, seen through model.fit
        if ch.kind == "steps_per_execution":
            share = 1 - 1 / ch.claim.ratio
            out.append(
                Cause(
                    "Keras call overhead",
                    share,
                    f"{share:.0%} of a model.fit step is Keras's per-call overhead",
                )
            )
            break
    for rep in v.pipelines:  # the seed's own pipeline (the first variant, serial map)
        first = next((r for r in rep.rows if r.wait_percent is not None), None)
        if first is not None and first.wait_percent >= 5:
            wait = first.wait_percent
            out.append(
                Cause(
                    "Waiting for input",
                    wait / 100,
                    f"{wait:.0f}% of each step waits for the next batch (image pipeline, "
                    f"{names.PIPELINE_VARIANTS.get(first.variant, first.variant)})",
                )
            )
    for ch in changes:
        if ch.kind == "pyfunc":
            share = 1 - 1 / ch.claim.ratio
            out.append(
                Cause(
                    "Python in the input pipeline",
                    share,
                    f"{share:.0%} of each training step is the tf.py_function"
                    if "training step" in ch.where
                    else f"{share:.0%} of the pipeline's time is the tf.py_function",
                )
            )
    torch = record.options.get("framework") == "torch" or any(s.framework.name == "torch" for s in record.sessions)
    read = ".item()" if torch else ".numpy()"
    for s in v.training.sync_costs:
        if s.significant and s.fraction > 0:
            share = s.cost_s / s.each.median_s
            out.append(
                Cause(
                    "Syncing every step",
                    share,
                    f"{share:.0%} of a batch-{s.params.get('batch')} step is reading the loss back ({read})",
                )
            )
    for row in v.training.runs:
        if row.params.get("kind") != "loop" or row.params.get("example") not in ("ex2", "user"):
            continue
        for d, cell in row.cells.items():
            steps = (cell.metrics or {}).get("steps_per_epoch") if cell.ok else None
            if not cell.ok or not steps:
                continue
            t = cell.timing
            first, steady = t.first_call_s, t.median_s
            share = first / (first + steady * (int(steps) - 1))
            if share >= 0.2:
                out.append(
                    Cause(
                        "Warm-up",
                        share,
                        f"{share:.0%} of the first epoch ({int(steps)} steps) is the first step: {seconds(first)} "
                        f"vs {seconds(steady)} steady",
                    )
                )
            break
    return sorted(out, key=lambda c: -c.share)


# ------------------------------------------------------------------ the answer


def _answer(record: RunRecord, v: SuiteVerdict, prediction: list[str] | None) -> list[str]:
    gpus = sorted(
        {d for d in v.training.devices if d.startswith("GPU")}
        | {d for t in v.matmul for d in t.devices if d.startswith("GPU")}
    )
    if not gpus:
        why = next((n for n in record.notes if "GPU" in n), "")
        reason = why.split("Likely reasons:", 1)[1].strip().rstrip(".") if "Likely reasons:" in why else ""
        reason = reason.split(" (")[0]
        out = ["No GPU here" + (f" ({reason})" if reason else "") + ": everything below was measured on this CPU."]
        if prediction:
            return out + prediction
        model = record.options.get("model") if record.experiment == "diagnose" else None
        fw = str(record.options.get("framework") or "tensorflow")
        if model and fw == "torch":  # predict takes Keras models only: an nn.Module is not modelled
            return out + [
                "Would a GPU help? `whichdevice predict --framework torch --quick` models the seeds' MLP "
                "(not your nn.Module)."
            ]
        if model:  # predict models the user's own model too
            on = f" --framework {fw}" if fw != "tensorflow" else ""
            return out + [f"Would a GPU help? Ask `whichdevice predict --model {model}{on} --quick`."]
        return out + [NO_PREDICTION]
    out = []
    for t in v.training.sweep:
        for d, c in t.crossovers.items():
            out.append(f"Training ({names.model_name(t.group, short=True)}): {_crossover_words(c, 'batch', d)}")
    for t in v.matmul:
        if t.group.get("mode") != "steady":
            continue
        for d, c in t.crossovers.items():
            out.append(f"Matrix multiply: {_crossover_words(c, 'n', d)}")
    return out[:2]


def _crossover_words(c, unit: str, gpu: str) -> str:
    if c.kind == "gpu_everywhere":
        return f"use {gpu}: it is faster at every {unit} measured (from {c.high:g})"
    if c.kind == "cpu_everywhere":
        return f"use the CPU: {gpu} is slower at every {unit} measured (up to {c.low:g})"
    if c.kind == "between":
        sure = " (uncertain: the ranges overlap there)" if c.ranges_overlap else ""
        est = f"{c.estimate:,.0f}" if c.estimate >= 100 else f"{c.estimate:.3g}"
        return f"use the CPU below {unit} ≈ {est}, {gpu} above (between {c.low:g} and {c.high:g}){sure}"
    return c.describe(unit)


# ------------------------------------------------------------------ warnings, one line per kind


# (phrase in analysis/quality.py's warning, kind, the group's line: what it means, what to do)
_WARNING_KINDS = (
    (
        "did not converge",
        "not_converged",
        "point{s} did not settle (the median's 95 % interval stayed wider than ±5 %): the machine was busy — "
        "close other programs and measure again",
    ),
    (
        "individual steps vary",
        "uneven_steps",
        "run{s} with uneven steps (spread > 10 %; the median holds): slow steps point at input stalls, garbage "
        "collection or another busy process",
    ),
    (
        "the spread is",
        "noisy",
        "point{s} noisy (spread > 10 % of the median): the machine was busy or the point is short — close other "
        "programs and measure again",
    ),
    (
        "timer+sync cost",
        "overhead",
        "point{s} so short that the timer itself is > 5 % of the call: an upper bound only",
    ),
)


def aggregate_warnings(record: RunRecord, warnings: list[str] | None = None) -> list[WarningGroup]:
    """The measurement warnings (analysis/quality.py) grouped by kind, with a count; each item
    names its point for people. A warning of a kind not listed here is kept, as 'other'."""
    warnings = quality.timing_warnings(record) if warnings is None else warnings
    labels = {quality._label(r.spec) + ": ": r for r in record.results}
    items: dict[str, list[str]] = {}
    for w in warnings:
        label = next((lab for lab in labels if w.startswith(lab)), None)
        rest = w[len(label) :] if label else w
        kind = next((k for phrase, k, _ in _WARNING_KINDS if phrase in rest), "other")
        if label:
            r = labels[label]
            rest = f"{r.spec.device} {names.workload_name(r.spec.params, r.spec.workload)}: {rest}"
        items.setdefault(kind, []).append(rest)
    out = []
    for _, kind, text in _WARNING_KINDS:
        if kind in items:
            n = len(items[kind])
            out.append(WarningGroup(kind, n, text.format(s="s" if n > 1 else ""), items[kind]))
    if "other" in items:
        n = len(items["other"])
        out.append(WarningGroup("other", n, f"other warning{'s' if n > 1 else ''}", items["other"]))
    return out


def named_failures(record: RunRecord, failures: list[str] | None = None) -> tuple[list[str], list[str]]:
    """analysis/quality.failures' lines with each case named for people: (skipped by the time
    budget, failed otherwise)."""
    failures = quality.failures(record) if failures is None else failures
    labels = {quality._label(r.spec) + " — ": r for r in record.results if r.status == "failed"}
    skipped, failed = [], []
    for f in failures:
        label = next((lab for lab in labels if f.startswith(lab)), None)
        if label is None:
            failed.append(f)
            continue
        r = labels[label]
        name = f"{r.spec.device} {names.workload_name(r.spec.params, r.spec.workload)}"
        (skipped if r.failure == "skipped" else failed).append(f"{name} — {f[len(label) :]}")
    return skipped, failed


# ------------------------------------------------------------------ assembly


def machine_words(record: RunRecord) -> str:
    m = record.machine
    fw = {s.framework.name: s.framework.version for s in record.sessions}  # each framework once, in order
    fws = (" · " + ", ".join(f"{k} {v}" for k, v in fw.items())) if fw else ""
    return f"{m.cpu_model}, {m.cpu_cores_logical} cores, {nbytes(m.ram_bytes)} RAM{fws}"


def first_screen(
    record: RunRecord,
    v: SuiteVerdict,
    *,
    seed_batch: int = 10,
    advice: list[str] | None = None,
    prediction: list[str] | None = None,
) -> FirstScreen:
    changes, unclear = _changes(record, v, seed_batch)
    causes = _causes(record, v, changes)
    answer = _answer(record, v, prediction)
    if advice and not answer[0].startswith("No GPU here"):  # diagnose with a GPU: the device for your model
        answer = ([a for a in advice if a.startswith("Device:")][:1] + answer)[:2]
    when = record.created_at.replace("T", " ")[:16]
    title = f"whichdevice {record.experiment} · {when} UTC · {machine_words(record)}"
    keys = sorted({c.source for c in changes[:3] if c.source})
    footnotes = [f"{names.source_note(k)}" for k in keys]
    return FirstScreen(
        title,
        answer,
        causes[:3],
        changes[:3],
        changes[3:],
        unclear,
        aggregate_warnings(record),
        [f for r, f in zip(_failed(record), quality.failures(record)) if r.failure != "skipped"],
        footnotes,
        sum(r.failure == "skipped" for r in _failed(record)),
        torch_fixes.not_measured(record),
    )


def _failed(record: RunRecord) -> list[CaseResult]:
    """The failed cases, in the order analysis/quality.failures lists them."""
    return [r for r in record.results if r.status == "failed"]


# ------------------------------------------------------------------ the terminal


def _x(r: float) -> str:
    return f"{r:.2g}" if r < 10 else f"{r:.3g}"


_SHORT = {
    "not_converged": "unsettled",
    "uneven_steps": "uneven",
    "noisy": "noisy",
    "overhead": "timer-bound",
    "other": "other",
}


def warnings_line(fs: FirstScreen) -> str:
    """'2 cases failed; 11 skipped (time budget); points: 19 did not settle, 4 noisy'."""
    bits = []
    if fs.failures:
        bits.append(f"{len(fs.failures)} case{'s' if len(fs.failures) > 1 else ''} failed")
    if fs.skipped:
        bits.append(f"{fs.skipped} skipped (raise --budget)")
    if fs.warnings:
        bits.append("points: " + ", ".join(f"{g.count} {_SHORT.get(g.kind, g.kind)}" for g in fs.warnings))
    return "; ".join(bits)


def screen_lines(fs: FirstScreen, *, report: str | None) -> list[tuple[str, str]]:
    """The first screen as (style, text) lines; style '' is plain, 'code' a line never wrapped."""
    out: list[tuple[str, str]] = [("bold", fs.title)]
    out += [("answer", ("Answer: " if i == 0 else "        ") + a) for i, a in enumerate(fs.answer)]
    if fs.causes:
        out += [("", ""), ("head", "Why it is slow (measured share of the time)")]
        out += [("", f"  {i}. {c.title} — {c.text}") for i, c in enumerate(fs.causes, 1)]
    out += [("", ""), ("head", "What to change (measured on this machine, best first)")]
    if not fs.changes:
        out.append(("", "  No measured change helps significantly here."))
    for i, ch in enumerate(fs.changes, 1):
        out.append(("", f"  {i}. {ch.title}: {ch.short_gain_text}"))
        out.append(("code", f"       {ch.code}"))
        if ch.caveat:
            out.append(("caveat", f"       Caveat: {ch.caveat}"))
    tail = []
    if fs.more:
        tail.append("Also helps: " + ", ".join(f"{_UNCLEAR_NAME[c.kind]} {_x(c.claim.ratio)}×" for c in fs.more) + ".")
    if fs.unclear:
        tail.append("No clear gain: " + ", ".join(fs.unclear) + ".")
    if fs.not_measured:
        tail.append("Not measured: " + "; ".join(f"{k} — {v}" for k, v in fs.not_measured.items()) + ".")
    if tail:
        out.append(("dim", "  " + " ".join(tail)))
    out.append(("", ""))
    w = warnings_line(fs)
    if w:
        out.append(("warn", f"Warnings: {w} — see the report."))
    out.append(("", "Every table, the plots and a glossary: --verbose, or the report."))
    if report:
        out.append(("path", f"Report: {report}"))
    return out


_STYLE = {"bold": "bold", "head": "bold", "answer": "bold green", "caveat": "yellow", "warn": "yellow", "dim": "dim"}


def render_terminal(console, fs: FirstScreen, *, report: str | None) -> None:
    """Print the first screen. Paths and code lines are never wrapped by rich (a terminal may
    fold them; a pipe gets them whole); other lines wrap at the terminal's width, or not at
    all when stdout is not a terminal."""
    from rich.markup import escape

    soft = not console.is_terminal
    for style, text in screen_lines(fs, report=report):
        t = escape(text)
        st = _STYLE.get(style)
        console.print(f"[{st}]{t}[/{st}]" if st and text else t, soft_wrap=soft or style in ("code", "path"))
