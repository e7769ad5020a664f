"""Each benchmarking mistake's distortion: the wrong figure, the right one, their ratio.

Pure: a ``pitfalls`` record in, rows out. ``ratio = wrong / right``: 1 means the mistake did
not distort the figure here; 2 means it reads twice the real cost; 0.3 means it reads a
third of it (too fast). A ratio whose two figures' interquartile ranges overlap is marked
"within noise" (``analysis.compare``).

The mistakes (seed 002 "benchmarking mistakes", ANCHORS.md):

- ``first_epoch``: the first epoch (tracing, allocation, pipeline start-up) vs the median of
  the later epochs.
- ``no_sync``: the clock read right after the call without synchronizing the device vs the
  same per-step clock after a sync, interleaved in one loop. It cannot distort on a CPU (TensorFlow returns after the work is done).
- ``sync_each``: ``.numpy()`` after every step vs once per block of steps.
- ``one_thread``: the CPU limited to one thread (torch.utils.benchmark's default
  ``num_threads=1``) vs all cores, on a batch-4096 step (work enough to share).
- ``xla_one_device``: Keras ``jit_compile="auto"`` turns XLA off on a CPU-only machine and on
  where a GPU is visible: ``jit_compile=False`` vs ``True`` on the same device shows how much of a
  CPU-vs-GPU gap the compile path alone can make.
- ``small_batch``: per-sample time at the seed's batch 10 vs batch 512.

torch and JAX (which mistakes a framework has: its ``pitfalls`` part's ``MISTAKES``):

- ``first_step`` (torch): the first iteration of seed 001 ex2's loop, timed alone, vs the
  median of its later steps (the loop runs first in its child: the process's one-time costs).
- ``compile_in_timing``: a 100-step loop whose first step compiles (``torch.compile``; JAX's
  ``jit``), its time per step vs its steady steps' median.
- ``num_workers`` (torch): a DataLoader with ``num_workers=0`` vs 2 workers, per step.
- ``device_put`` (JAX): ``jax.device_put`` of the batch at every step vs a batch put once.
- ``no_sync``, ``sync_each`` (``.item()`` / ``float(loss)`` every step), ``one_thread``,
  ``small_batch``: as above, with the framework's own calls.

Each row carries the ratio's 95 % interval (``lo``, ``hi``) and the samples it rests on (``n``)
where the method gives one; a framework's GPU-only mistakes on a CPU are :func:`not_measured`.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Any

from whichdevice.analysis import significance
from whichdevice.analysis.compare import Comparison, compare
from whichdevice.analysis.fixes import per_sample
from whichdevice.analysis.values import timing_of
from whichdevice.core import stats
from whichdevice.core.records import CaseResult, RunRecord
from whichdevice.workloads.fixes import JIT_COMPILE

PITFALLS = ("first_epoch", "no_sync", "sync_each", "one_thread", "xla_one_device", "small_batch")


@dataclass(frozen=True)
class PitfallRow:
    """One benchmarking mistake on one device: the wrong figure against the right one, in
    seconds per ``unit`` (epoch, step or sample), and whether they differ beyond the noise.
    ``epochs``: how many epochs the first-epoch pitfall had; ``threads``: the CPU's default
    intra-op thread count when the session recorded it. present/pages/pitfalls.py words it."""

    pitfall: str
    device: str
    wrong_s: float
    right_s: float
    unit: str  # what one figure is: "s per epoch", "s per step", "s per sample"
    significant: bool
    epochs: int = 0
    threads: int | None = None
    workers: int = 0  # the num_workers pitfall's right figure's workers
    detail: str = ""  # a setting of the wrong figure's case the page names (torch.compile's backend)
    lo: float | None = None  # the ratio's 95 % interval (None: the method gives none)
    hi: float | None = None
    n: int = 0  # the samples (or rounds: ``n_unit``) the ratio rests on, the fewer side's
    n_unit: str = "samples"
    enough: bool = True  # False: too few samples or rounds for a claim either way (significance.py)
    framework: str = "tensorflow"

    @property
    def ratio(self) -> float:
        return self.wrong_s / self.right_s if self.right_s > 0 else float("nan")

    @property
    def on_cpu(self) -> bool:
        return self.device.startswith("CPU")

    @property
    def no_claim(self) -> tuple[str, int] | None:
        """Why no claim either way is made from this row, never "no distortion": ``("few",
        fewest)`` when it rests on fewer samples or rounds than a claim needs, ``("wide", 0)`` when
        its interval cannot rule out a 2x change either way, ``("not_enough", 0)`` when the rule
        found too few (significance.py's thresholds); None: the row makes a claim."""
        fewest = significance.MIN_ROUNDS_NO_CHANGE if self.n_unit == "rounds" else significance.MIN_SAMPLES
        if self.n and self.n < fewest:
            return ("few", fewest)
        wide = significance.WIDE_FACTOR
        if self.lo is not None and self.hi is not None and (self.lo < 1 / wide or self.hi > wide):
            return ("wide", 0)
        return None if self.enough else ("not_enough", 0)


def _find(results: list[CaseResult], device: str, **want: object) -> CaseResult | None:
    for r in results:
        if r.spec.device != device or r.status != "ok":
            continue
        p = r.spec.params
        if all(p.get(k) == v for k, v in want.items()) and ("threads" in p) == ("threads" in want):
            if JIT_COMPILE.param not in want and JIT_COMPILE.param in p:
                continue
            return r
    return None


def framework_of(record: RunRecord) -> str:
    """The framework the record's cases ran on (TensorFlow for a record without results)."""
    return record.results[0].spec.framework if record.results else "tensorflow"


def mistakes(framework: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the framework's mistakes in the page's order, the GPU-only ones): its ``pitfalls`` part."""
    from whichdevice import frameworks

    if "pitfalls" not in frameworks.PARTS.get(framework, ()):
        return PITFALLS, ()
    part = frameworks.part(framework, "pitfalls")
    return part.MISTAKES, part.GPU_ONLY


def _timing_style(framework: str) -> str:
    """How the framework's first steps and compiles are timed, as its env.py declares
    (``PITFALLS_TIMING``): ``epochs`` (TensorFlow: the first epoch's total against the later
    ones'; the default), ``eager`` (torch: every step timed, a first step, torch.compile's own
    case) or ``jit`` (JAX: every step timed, the jitted loop's first step compiles)."""
    from whichdevice import frameworks

    return frameworks.declared(framework, "PITFALLS_TIMING", "epochs")


def analyze_pitfalls(record: RunRecord) -> list[PitfallRow]:
    rows: list[PitfallRow] = []
    res = record.results
    fw = framework_of(record)
    style = _timing_style(fw)
    devices = sorted({r.spec.device for r in res}, key=lambda d: (not d.startswith("CPU"), d))
    for d in devices:
        found = (
            _first_epoch(res, d) if style == "epochs" else _first_epoch_steps(res, d),
            _no_sync(res, d),
            _sync_each(res, d),
            _one_thread(record, res, d),
            _xla_one_device(res, d),
            _small_batch(res, d),
            _first_step(res, d, style),
            _compile_in_timing(res, d, style),
            _num_workers(res, d),
            _device_put(res, d),
        )
        rows += [dataclasses.replace(r, framework=fw) for r in found if r is not None]
    names = mistakes(fw)[0]
    order = {p: i for i, p in enumerate(names + tuple(p for p in PITFALLS if p not in names))}
    return sorted(rows, key=lambda r: (order[r.pitfall], devices.index(r.device)))


def not_measured(record: RunRecord) -> list[tuple[str, str]]:
    """(mistake, device) for each GPU-only mistake of the record's framework on a CPU device:
    said "not measured here (no GPU)", never measured as if it applied."""
    gpu_only = mistakes(framework_of(record))[1]
    cpus = sorted({r.spec.device for r in record.results if r.spec.device.startswith("CPU")})
    return [(m, d) for m in gpu_only for d in cpus]


def _interval(c: Comparison) -> dict[str, Any]:
    """wrong / right's interval and sample count from ``compare("right", ..., "wrong", ...)``
    (whose ratio is right / wrong)."""
    lo = 1 / c.ratio_hi if c.ratio_hi > 0 else None
    hi = 1 / c.ratio_lo if c.ratio_lo > 0 else None
    return {"lo": lo, "hi": hi, "n": c.n, "n_unit": c.claim.unit, "enough": c.enough}


def _against_steady(wrong: float, samples: list[float]) -> dict[str, Any]:
    """A single wrong figure against the median of ``samples``: the ratio's interval from the
    median's 95 % interval (order statistics), significant when it lies wholly beyond the noise."""
    ci = stats.median_ci(samples)
    if ci is None or ci[0] <= 0 or len(samples) < significance.MIN_SAMPLES:
        return {"significant": False, "n": len(samples), "enough": False}
    lo, hi = wrong / ci[1], wrong / ci[0]
    t = significance.NOISE_THRESHOLD
    sig = lo > 1 + t or hi < 1 / (1 + t)
    return {"significant": sig, "lo": lo, "hi": hi, "n": len(samples)}


def _first_epoch(res: list[CaseResult], d: str) -> PitfallRow | None:
    """The first epoch against the later ones (they include the one-time start-up)."""
    fit = _find(res, d, kind="fit", example="ex2")
    if fit is not None:
        epochs = [fit.metrics[f"epoch_{i}_s"] for i in range(1, 100) if f"epoch_{i}_s" in fit.metrics]
        if len(epochs) >= 2:
            rest = epochs[1:]
            # Epochs are single numbers: the spread test needs the later epochs' range.
            sig = epochs[0] > max(rest) or epochs[0] < min(rest)
            return PitfallRow(
                "first_epoch",
                d,
                epochs[0],
                statistics.median(rest),
                "s per epoch",
                sig,
                epochs=len(epochs),
            )
    return None


def _no_sync(res: list[CaseResult], d: str) -> PitfallRow | None:
    """A clock read after each call without a device sync against the same clock after one."""
    nosync = _find(res, d, kind="nosync", batch=10)
    if nosync and "synced_median_s" in nosync.metrics:
        m = nosync.metrics
        sig = not (m["synced_q1_s"] <= timing_of(nosync).q3_s and timing_of(nosync).q1_s <= m["synced_q3_s"])
        n = min(len(timing_of(nosync).samples_s), int(m.get("steps", 0)) // 2) or len(timing_of(nosync).samples_s)
        return PitfallRow("no_sync", d, timing_of(nosync).median_s, m["synced_median_s"], "s per step", sig, n=n)
    return None


def _per_step(name: str, d: str, right: CaseResult | None, wrong: CaseResult | None, **more: Any) -> PitfallRow | None:
    """The ``wrong`` case's step against the ``right`` one's, compared; None when one is missing."""
    if not (right and wrong):
        return None
    c = compare("right", timing_of(right), "wrong", timing_of(wrong))
    return PitfallRow(
        name,
        d,
        timing_of(wrong).median_s,
        timing_of(right).median_s,
        "s per step",
        c.significant,
        **more,
        **_interval(c),
    )


def _sync_each(res: list[CaseResult], d: str) -> PitfallRow | None:
    """Reading the loss back every step against one sync per block of steps."""
    none10 = _find(res, d, kind="steady", batch=10, sync="none")
    return _per_step("sync_each", d, none10, _find(res, d, kind="steady", batch=10, sync="each"))


def _one_thread(record: RunRecord, res: list[CaseResult], d: str) -> PitfallRow | None:
    """One CPU thread against all the cores."""
    allc = _find(res, d, kind="steady", batch=4096, sync="none")
    one = _find(res, d, kind="steady", batch=4096, sync="none", threads=1)
    return _per_step("one_thread", d, allc, one, threads=_threads(record, d))


def _xla_one_device(res: list[CaseResult], d: str) -> PitfallRow | None:
    """jit_compile off against on, on one device."""
    on = _find(res, d, kind="fit", example="ex2", jit_compile=True)
    return _per_step("xla_one_device", d, on, _find(res, d, kind="fit", example="ex2", jit_compile=False))


def _small_batch(res: list[CaseResult], d: str) -> PitfallRow | None:
    """Batch 10 against batch 512, per sample."""
    none10 = _find(res, d, kind="steady", batch=10, sync="none")
    big = _find(res, d, kind="steady", batch=512, sync="none")
    if none10 and big:
        a, b = per_sample(none10), per_sample(big)
        c = compare("right", b, "wrong", a)
        return PitfallRow("small_batch", d, a.median_s, b.median_s, "s per sample", c.significant, **_interval(c))
    return None


def _threads(record: RunRecord, device: str) -> int | None:
    """The device's intra-op thread count when it was the framework's default, else None."""
    for s in record.sessions:
        if s.device.name == device and s.cpu_threads_source.startswith("default"):
            return s.cpu_threads_intra
    return None


# ---------------- torch and JAX ----------------


def _first_step(res: list[CaseResult], d: str, style: str) -> PitfallRow | None:
    """torch: the loop's first step timed alone against its later steps' median."""
    loop = _find(res, d, kind="loop", example="ex2")
    if loop is None or style != "eager" or loop.timing is None:
        return None
    t = loop.timing
    return PitfallRow(
        "first_step",
        d,
        t.first_call_s,
        stats.median(t.samples_s),
        "s per step",
        **_against_steady(t.first_call_s, t.samples_s),
    )


def _first_epoch_steps(res: list[CaseResult], d: str) -> PitfallRow | None:
    """torch's and JAX's model.fit: the first epoch's time per step against the later epochs'
    median step (every batch timed: an interval from the steps, not from two epoch totals)."""
    fit = _find(res, d, kind="fit", example="ex2")
    if fit is None or fit.timing is None or not fit.timing.warmup_s:
        return None
    t = fit.timing
    wrong = sum(t.warmup_s) / len(t.warmup_s)
    epochs = sum(1 for k in fit.metrics if k.startswith("epoch_") and k.endswith("_s"))
    return PitfallRow(
        "first_epoch",
        d,
        wrong,
        stats.median(t.samples_s),
        "s per step",
        epochs=epochs,
        **_against_steady(wrong, t.samples_s),
    )


def _compile_in_timing(res: list[CaseResult], d: str, style: str) -> PitfallRow | None:
    """A loop whose first step compiles (torch.compile's pitfall case; JAX's jitted loop), its
    time per step against its steady steps' median."""
    case = (
        _find(res, d, kind="pitfall", mistake="compile")
        if style != "jit"
        else _find(res, d, kind="loop", example="ex2")
    )
    if case is None or case.timing is None or style == "epochs":
        return None
    t = case.timing
    steps = [*t.warmup_s, *t.samples_s]
    wrong = sum(steps) / len(steps)
    backend = case.spec.params.get("backend")
    return PitfallRow(
        "compile_in_timing",
        d,
        wrong,
        stats.median(t.samples_s),
        "s per step",
        detail=f"backend={backend}" if backend else "",
        **_against_steady(wrong, t.samples_s),
    )


def _num_workers(res: list[CaseResult], d: str) -> PitfallRow | None:
    """torch: a DataLoader in the training process (num_workers=0) against worker processes."""
    zero = _find(res, d, kind="pitfall", mistake="num_workers", workers=0)
    some = next(
        (
            r
            for r in res
            if r.spec.device == d
            and r.status == "ok"
            and r.spec.params.get("mistake") == "num_workers"
            and r.spec.params.get("workers") not in (0, None)
        ),
        None,
    )
    if zero is None or some is None:
        return None
    c = compare("right", timing_of(some), "wrong", timing_of(zero))
    return PitfallRow(
        "num_workers",
        d,
        timing_of(zero).median_s,
        timing_of(some).median_s,
        "s per step",
        c.significant,
        workers=int(str(some.spec.params["workers"])),
        **_interval(c),
    )


def _device_put(res: list[CaseResult], d: str) -> PitfallRow | None:
    """JAX: jax.device_put of the batch every step against a batch put on the device once."""
    put = _find(res, d, kind="pitfall", mistake="device_put", batch=10)
    once = _find(res, d, kind="steady", batch=10, sync="none")
    if put is None or once is None:
        return None
    c = compare("right", timing_of(once), "wrong", timing_of(put))
    return PitfallRow(
        "device_put", d, timing_of(put).median_s, timing_of(once).median_s, "s per step", c.significant, **_interval(c)
    )
