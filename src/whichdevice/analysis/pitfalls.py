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
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from whichdevice.analysis.compare import compare
from whichdevice.analysis.fixes import per_sample
from whichdevice.analysis.values import timing_of
from whichdevice.core.records import CaseResult, RunRecord

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

    @property
    def ratio(self) -> float:
        return self.wrong_s / self.right_s if self.right_s > 0 else float("nan")

    @property
    def on_cpu(self) -> bool:
        return self.device.startswith("CPU")


def _find(results: list[CaseResult], device: str, **want: object) -> CaseResult | None:
    for r in results:
        if r.spec.device != device or r.status != "ok":
            continue
        p = r.spec.params
        if all(p.get(k) == v for k, v in want.items()) and ("threads" in p) == ("threads" in want):
            if "jit_compile" not in want and "jit_compile" in p:
                continue
            return r
    return None


def analyze_pitfalls(record: RunRecord) -> list[PitfallRow]:
    rows: list[PitfallRow] = []
    res = record.results
    devices = sorted({r.spec.device for r in res}, key=lambda d: (not d.startswith("CPU"), d))
    for d in devices:
        found = (
            _first_epoch(res, d),
            _no_sync(res, d),
            _sync_each(res, d),
            _one_thread(record, res, d),
            _xla_one_device(res, d),
            _small_batch(res, d),
        )
        rows += [r for r in found if r is not None]
    order = {p: i for i, p in enumerate(PITFALLS)}
    return sorted(rows, key=lambda r: (order[r.pitfall], devices.index(r.device)))


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
        return PitfallRow("no_sync", d, timing_of(nosync).median_s, m["synced_median_s"], "s per step", sig)
    return None


def _sync_each(res: list[CaseResult], d: str) -> PitfallRow | None:
    """Reading the loss back every step against one sync per block of steps."""
    none10 = _find(res, d, kind="steady", batch=10, sync="none")
    each10 = _find(res, d, kind="steady", batch=10, sync="each")
    if none10 and each10:
        c = compare("right", timing_of(none10), "wrong", timing_of(each10))
        return PitfallRow(
            "sync_each",
            d,
            timing_of(each10).median_s,
            timing_of(none10).median_s,
            "s per step",
            c.significant,
        )
    return None


def _one_thread(record: RunRecord, res: list[CaseResult], d: str) -> PitfallRow | None:
    """One CPU thread against all the cores."""
    allc = _find(res, d, kind="steady", batch=4096, sync="none")
    one = _find(res, d, kind="steady", batch=4096, sync="none", threads=1)
    if allc and one:
        c = compare("right", timing_of(allc), "wrong", timing_of(one))
        return PitfallRow(
            "one_thread",
            d,
            timing_of(one).median_s,
            timing_of(allc).median_s,
            "s per step",
            c.significant,
            threads=_threads(record, d),
        )
    return None


def _xla_one_device(res: list[CaseResult], d: str) -> PitfallRow | None:
    """jit_compile off against on, on one device."""
    off = _find(res, d, kind="fit", example="ex2", jit_compile=False)
    on = _find(res, d, kind="fit", example="ex2", jit_compile=True)
    if off and on:
        c = compare("right", timing_of(on), "wrong", timing_of(off))
        return PitfallRow(
            "xla_one_device",
            d,
            timing_of(off).median_s,
            timing_of(on).median_s,
            "s per step",
            c.significant,
        )
    return None


def _small_batch(res: list[CaseResult], d: str) -> PitfallRow | None:
    """Batch 10 against batch 512, per sample."""
    none10 = _find(res, d, kind="steady", batch=10, sync="none")
    big = _find(res, d, kind="steady", batch=512, sync="none")
    if none10 and big:
        a, b = per_sample(none10), per_sample(big)
        c = compare("right", b, "wrong", a)
        return PitfallRow("small_batch", d, a.median_s, b.median_s, "s per sample", c.significant)
    return None


def _threads(record: RunRecord, device: str) -> int | None:
    """The device's intra-op thread count when it was the framework's default, else None."""
    for s in record.sessions:
        if s.device.name == device and s.cpu_threads_source.startswith("default"):
            return s.cpu_threads_intra
    return None
