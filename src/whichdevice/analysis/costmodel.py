"""The cost model: a training step's time on a profiled device, from its op list.

Inputs: a ``WorkloadDescription`` (the ops one training step runs, read from the traced
graph: their kind, FLOPs and bytes; the input batch bytes copied per step) and a device's
calibrated ``DeviceCosts`` (deviceprofile.py). Every constant comes from the profile.

The equation, per op i (t = per-call times as the profile measured them, so each includes
one dispatch; f = the profile's ``dispatch_eager_s``, the floor every kernel pays)::

    matmul-like   t_i = T_mm(n_i),  n_i = (FLOPs_i / 2) ** (1/3)   (the square matmul of equal FLOPs)
    elementwise   t_i = T_ew(bytes_i)                               (with an elementwise curve)
                  t_i = f, band up to max(f, bytes_i / B_floor)     (without one; B_floor = a lower
                                                                     bound on memory bandwidth)
    free          0 (no kernel: constants, placeholders, variable reads, reshapes)

    CPU   step = C + sum_i t_i                                       (host and device are one)
    GPU   step = max(C + k * d, sum_i max(f, t_i)) + H2D(input bytes) + s * syncs
                   host dispatch     device work        copies            syncs

with k the number of kernels, d the per-op dispatch (``dispatch_graph_s`` for a compiled
step when the profile has it, else ``dispatch_eager_s``), C the per-call cost of a compiled
step (``step_call_s``, 0 when not profiled) and s the profile's ``sync_s``. Curves T are
interpolated linearly in log-log space between calibrated sizes.

Assumptions (each a source of error, reported with the prediction):

- Host dispatch and device work overlap fully (asynchronous launch); copies and syncs do
  not overlap with anything (a pageable copy and a scalar read both block the host).
- A non-square matmul runs at the rate of the square one with the same FLOPs; a convolution
  at the rate of a matmul with the same FLOPs (marked as an approximation).
- Kernels do not fuse (XLA off): one graph op = one kernel.
- Per-op costs measured in one framework stand for another's (the shipped H100 profile is
  PyTorch eager; a TensorFlow graph issues ops differently — noted on every prediction).

Uncertainty band (low, high): inside a calibrated range the band is the quartiles of the
calibrated points when kept (zero when only medians exist). Beyond the largest calibrated
size the time is extrapolated at the largest point's rate (time proportional to work) and
the low edge allows the rate to keep improving as fast as it did over the last calibrated
decade, per decade extrapolated; below the smallest size the op costs the smallest point's
time, low edge the dispatch floor. Without an elementwise curve the high edge moves memory
traffic at the bandwidth lower bound. A GPU matmul's low edge uses the TF32 curve when the
profile has one (TensorFlow enables TF32 on Ampere and newer by default).

Ops the model does not cover (control flow, nested function calls, custom ops) make the
whole prediction "cannot predict", with the op types named: a step time that silently left
them out would look precise and be wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from whichdevice.analysis.deviceprofile import CurvePoint, DeviceCosts

OpKind = Literal["matmul", "conv", "elementwise", "free", "uncovered"]
PARTS = ("dispatch/launch", "compute", "memory traffic", "transfer", "sync")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpCost(_Frozen):
    """One op of the step as the graph has it."""

    op_type: str
    kind: OpKind
    flops: float = Field(default=0.0, ge=0)
    bytes: float = Field(default=0.0, ge=0, description="bytes read + written")


class WorkloadDescription(_Frozen):
    """What one training step runs, read from the traced graph (not typed by the user)."""

    batch: int = Field(ge=1)
    ops: list[OpCost]
    input_bytes: float = Field(ge=0, description="input batch bytes copied host -> device per step")
    free_ops: int = Field(default=0, ge=0, description="graph ops that launch no kernel")
    compiled: bool = Field(default=True, description="a compiled step (tf.function), not eager ops")
    syncs_per_step: int = Field(default=0, ge=0, description="scalar reads back to the host per step")

    @property
    def kernels(self) -> int:
        return sum(1 for o in self.ops if o.kind != "free")

    @property
    def uncovered(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.ops:
            if o.kind == "uncovered":
                out[o.op_type] = out.get(o.op_type, 0) + 1
        return out


@dataclass(frozen=True)
class Band:
    low: float
    mid: float
    high: float

    def __add__(self, other: Band) -> Band:
        return Band(self.low + other.low, self.mid + other.mid, self.high + other.high)

    @staticmethod
    def of(x: float) -> Band:
        return Band(x, x, x)


ZERO = Band(0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Prediction:
    """A predicted step on one device. ``step`` is None when it cannot be predicted."""

    device: str
    step: Band | None
    parts_s: dict[str, float] = field(default_factory=dict)  # mid values, attribution of the step
    bound: str = ""  # "host dispatch" | "device work" | "" (CPU)
    extrapolated: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    cannot_predict: str | None = None

    @property
    def dominant(self) -> str | None:
        if not self.parts_s:
            return None
        return max(self.parts_s, key=lambda k: self.parts_s[k])


# ---------------- curves ----------------


def interp_loglog(curve: Sequence[CurvePoint], x: float) -> float:
    """Median time at size ``x`` by log-log linear interpolation; clamps outside the range
    (callers handle extrapolation themselves, see ``curve_band``)."""
    if x <= curve[0].x:
        return curve[0].s
    if x >= curve[-1].x:
        return curve[-1].s
    for a, b in zip(curve, curve[1:]):
        if a.x <= x <= b.x:
            w = (math.log(x) - math.log(a.x)) / (math.log(b.x) - math.log(a.x))
            return math.exp(math.log(a.s) + w * (math.log(b.s) - math.log(a.s)))
    raise AssertionError("unreachable: x inside the curve's range")


def _quartile_ratio(curve: Sequence[CurvePoint], x: float) -> tuple[float, float]:
    """(q1/median, q3/median) of the nearest calibrated point, 1 when not kept."""
    p = min(curve, key=lambda c: abs(math.log(c.x) - math.log(x)))
    lo = p.q1_s / p.s if p.q1_s else 1.0
    hi = p.q3_s / p.s if p.q3_s else 1.0
    return min(lo, 1.0), max(hi, 1.0)


def curve_band(curve: Sequence[CurvePoint], x: float, work, floor_s: float) -> tuple[Band, str | None]:
    """Time of one op of size ``x`` from a curve; ``work(x)`` is the work (FLOPs or bytes) at
    size x. Returns the band and, when extrapolating, a short note."""
    first, last = curve[0], curve[-1]
    if x > last.x:
        mid = last.s * work(x) / work(last.x)
        tenth = last.x / 10
        gain = 1.0
        if tenth >= first.x:  # rate gained over the last calibrated decade
            rate_last = work(last.x) / last.s
            rate_tenth = work(tenth) / interp_loglog(curve, tenth)
            gain = max(rate_last / rate_tenth, 1.0)
        decades = math.log10(x / last.x)
        return Band(mid / gain ** max(decades, 0.0), mid, mid), f"beyond the largest calibrated size {last.x:g}"
    if x < first.x:
        return Band(min(floor_s, first.s), first.s, first.s), None  # smaller than the smallest: floor-bound
    mid = interp_loglog(curve, x)
    qlo, qhi = _quartile_ratio(curve, x)
    return Band(mid * qlo, mid, mid * qhi), None


def matmul_n(flops: float) -> float:
    """Side of the square matmul with the same FLOPs (2 n^3)."""
    return (max(flops, 0.0) / 2.0) ** (1.0 / 3.0)


def _mm_work(n: float) -> float:
    return 2.0 * n**3


def _bytes_work(b: float) -> float:
    return b


# ---------------- per-op and per-step ----------------


@dataclass(frozen=True)
class OpTime:
    band: Band
    part: str  # "compute" or "memory traffic"
    note: str | None = None


def op_time(op: OpCost, dev: DeviceCosts) -> OpTime | None:
    """Time of one kernel on ``dev``; None for free ops (and uncovered ones, checked earlier)."""
    f = dev.dispatch_eager_s
    if op.kind in ("matmul", "conv"):
        n = matmul_n(op.flops)
        if n < 1.0:
            return OpTime(Band.of(dev.matmul[0].s), "compute")
        band, note = curve_band(dev.matmul, n, _mm_work, f)
        if dev.kind == "gpu" and dev.matmul_tf32:
            tf32, _ = curve_band(dev.matmul_tf32, n, _mm_work, f)
            band = Band(min(band.low, tf32.low), band.mid, band.high)
        if note:
            note = f"matmul of n≈{n:.0f} {note}"
        return OpTime(band, "compute", note)
    if op.kind == "elementwise":
        b = max(op.bytes, 1.0)
        if dev.elementwise:
            band, note = curve_band(dev.elementwise, b, _bytes_work, f)
            return OpTime(band, "memory traffic", f"elementwise op of {b:.3g} B {note}" if note else None)
        hi = max(f, b / dev.memory_floor_bytes_per_s) if dev.memory_floor_bytes_per_s else f
        return OpTime(Band(f, f, hi), "memory traffic")
    return None


def transfer_time(curve: Sequence[CurvePoint], nbytes: float) -> tuple[Band, str | None]:
    if nbytes <= 0 or not curve:
        return ZERO, None
    return curve_band(curve, nbytes, _bytes_work, curve[0].s)


def predict(work: WorkloadDescription, dev: DeviceCosts, dispatch_mode: str = "eager") -> Prediction:
    """Predicted step time of ``work`` on ``dev`` (see the module docstring for the equation)."""
    name = dev.kind.upper()
    uncovered = work.uncovered
    if uncovered:
        kinds = ", ".join(f"{k} ×{v}" for k, v in sorted(uncovered.items()))
        return Prediction(name, None, cannot_predict=f"the step uses ops the cost model does not cover: {kinds}")
    f = dev.dispatch_eager_s
    assumptions: list[str] = []
    notes: set[str] = set()
    if any(o.kind == "conv" for o in work.ops):
        assumptions.append("convolutions costed as matmuls of equal FLOPs")
    if any(o.kind == "elementwise" for o in work.ops) and not dev.elementwise:
        assumptions.append(
            f"no elementwise curve in the profile: elementwise ops at the {f * 1e6:.1f} µs floor, "
            "band up to the memory-bandwidth lower bound"
        )
    k = work.kernels
    call = dev.step_call_s or 0.0
    if work.compiled and dev.dispatch_graph_s is not None:
        d = dev.dispatch_graph_s
    else:
        d = f
        if work.compiled:
            assumptions.append(
                f"per-op cost is the profile's {dispatch_mode} dispatch figure "
                "(no in-graph figure): likely an upper bound for a compiled step"
            )
    if work.compiled and dev.step_call_s is None:
        assumptions.append("no per-call cost of a compiled step in the profile (taken as 0)")

    device_work = ZERO
    launch_mid = 0.0
    parts = {p: 0.0 for p in PARTS}
    for op in work.ops:
        t = op_time(op, dev)
        if t is None:
            continue
        if t.note:
            notes.add(t.note)
        b = t.band
        if dev.kind == "gpu":
            b = Band(max(f, b.low), max(f, b.mid), max(f, b.high))
        device_work = device_work + b
        floor_part = min(f, b.mid)
        launch_mid += floor_part
        parts[t.part] += b.mid - floor_part

    if dev.kind == "cpu":
        step = device_work + Band.of(call)
        parts["dispatch/launch"] = launch_mid + call
        return Prediction(name, step, parts, "", tuple(sorted(notes)), tuple(assumptions))

    host = Band.of(call + k * d)
    top = Band(max(host.low, device_work.low), max(host.mid, device_work.mid), max(host.high, device_work.high))
    if host.mid >= device_work.mid:
        bound = "host dispatch"
        parts = {p: 0.0 for p in PARTS}
        parts["dispatch/launch"] = host.mid
    else:
        bound = "device work"
        parts["dispatch/launch"] = launch_mid
    copy, note = transfer_time(dev.h2d, work.input_bytes)
    if note:
        notes.add(f"input copy of {work.input_bytes:.3g} B {note}")
    sync = Band.of((dev.sync_s or 0.0) * work.syncs_per_step)
    if work.syncs_per_step and dev.sync_s is None:
        assumptions.append("no sync cost in the profile (taken as 0)")
    parts["transfer"] = copy.mid
    parts["sync"] = sync.mid
    return Prediction(name, top + copy + sync, parts, bound, tuple(sorted(notes)), tuple(assumptions))
