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

with k the number of kernels, d the per-kernel host cost and C the per-call cost of a
compiled step (``step_call_s``, 0 when not profiled), s the profile's ``sync_s``. Curves T
are interpolated linearly in log-log space between calibrated sizes.

How the framework launches its kernels (``launch_mode``, read from the framework's own
trace, never assumed):

- ``graph`` (TensorFlow ``tf.function``): one kernel per graph op; d = ``dispatch_graph_s``
  when the profile has it, else ``dispatch_eager_s`` (an upper bound, said so).
- ``xla`` (Keras on JAX, ``jit_compile``): the kernels are the compiled HLO's fusions, dots
  and copies (``frameworks/keras_jax/calibration.py``); d as for ``graph``.
- ``eager`` (PyTorch, Keras on PyTorch): one kernel per ATen op, each issued from Python;
  d = ``dispatch_eager_s``, C = 0.

``host_overhead_s`` H, when given, is the per-step host time *measured* on a CPU run of the
same step beyond the model's CPU compute (``prediction.host_overhead``): the Python of the
training loop, autograd's bookkeeping, the optimizer's loop, the compiled call, and the
CPU's own per-kernel dispatch ``host_dispatch_paid_s`` (p). The GPU's host side is then

    host = H / N + k · max(d - p, 0)          (instead of C / N + k · d without H)

with ``steps_per_execution`` N (graph and xla only: N steps in one call; an eager loop pays
its Python every step, N = 1).

Ops the model does not know (``kind="uncovered"``) cost one kernel at the floor f and widen
the band's high edge by ``UNKNOWN_OP_HIGH_S`` each; they are named in the assumptions.

The band returned here is the *model's* band (curve quartiles, extrapolation, unknown ops).
The uncertainty a user sees is calibrated on the model's own validation errors
(``errormodel.py``), which widens it to what the model actually misses by.

Assumptions (each a source of error, measured by the validation in benchmarks/predict.md):

- Host dispatch and device work overlap fully (asynchronous launch); copies and syncs do
  not overlap with anything (a pageable copy and a scalar read both block the host).
- A non-square matmul runs at the rate of the square one with the same FLOPs; a convolution
  at the rate of a matmul with the same FLOPs (marked as an approximation).
- Per-op costs measured in one framework stand for another's (the shipped H100 profile is
  PyTorch eager — noted on every prediction for the other frameworks).
- The per-step host overhead measured on this machine's CPU is the GPU machine's too.
- float32 matmuls run as the framework runs them by default on a GPU with TF32 (``tf32`` in
  the description, read from the framework: on for TensorFlow and JAX, off for PyTorch): the
  TF32 curve for the middle, float32 for the high edge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from whichdevice.analysis.deviceprofile import CurvePoint, DeviceCosts

OpKind = Literal["matmul", "conv", "elementwise", "free", "uncovered"]
LaunchMode = Literal["graph", "xla", "eager"]
PARTS = ("dispatch/launch", "host overhead", "compute", "memory traffic", "transfer", "sync")
# An op the model does not know: the band's high edge moves by this much per op (100 µs:
# the order of a mid-size kernel on either device; a documented default, not a measurement).
UNKNOWN_OP_HIGH_S = 100e-6


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
    launch_mode: LaunchMode = Field(default="graph", description="how the framework launches kernels")
    host_overhead_s: float | None = Field(
        default=None, ge=0, description="per-step host time measured on the CPU run beyond the model's compute"
    )
    host_dispatch_paid_s: float = Field(
        default=0.0, ge=0, description="per-kernel dispatch already inside host_overhead_s (the CPU's own)"
    )
    steps_per_execution: int = Field(default=1, ge=1, description="steps per compiled call (graph/xla)")
    tf32: bool = Field(default=False, description="float32 matmuls run as TF32 on a GPU with it (TF, JAX default)")

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


AssumptionKind = Literal[
    "unknown_ops",  # ops the model does not know, each one kernel at the floor (floor_s, high_s, ops)
    "xla_kernels",  # XLA kernels counted from the CPU compiler's HLO
    "conv_as_matmul",  # convolutions costed as matmuls of equal FLOPs
    "no_elementwise_curve",  # elementwise ops at the floor (floor_s), up to the memory-bandwidth bound
    "spe_eager",  # steps_per_execution has no effect on an eager loop
    "dispatch_upper_bound",  # the eager dispatch figure used in a compiled step (mode)
    "no_step_call",  # no per-call cost of a compiled step in the profile: 0
    "no_sync_cost",  # no sync cost in the profile: 0
    "batch_on_gpu",  # the batch taken to be on the GPU already (copy_s at batch)
    "host_from_cpu",  # the per-step host overhead measured on this CPU, taken for the GPU machine's host
]


@dataclass(frozen=True)
class Assumption:
    """What a prediction takes for granted, with its figures (present/prediction.py words it)."""

    kind: AssumptionKind
    floor_s: float = 0.0
    high_s: float = 0.0
    ops: tuple[tuple[str, int], ...] = ()  # unknown_ops: (op type, count), sorted
    mode: str = ""  # dispatch_upper_bound: the profile's dispatch mode
    copy_s: float = 0.0  # batch_on_gpu: the copy it would add per step
    batch: int = 0  # batch_on_gpu: at this batch


@dataclass(frozen=True)
class Extrapolation:
    """An op beyond the largest calibrated size of its curve: the band is widened there."""

    what: Literal["matmul", "elementwise", "input_copy"]
    size: float  # matmul: n; elementwise and input copy: bytes
    largest: float  # the curve's largest calibrated x


CannotPredict = Literal["no_ops", "host_unmeasured"]


@dataclass(frozen=True)
class Prediction:
    """A predicted step on one device. ``step`` is None when it cannot be predicted."""

    device: str
    step: Band | None
    parts_s: dict[str, float] = field(default_factory=dict)  # mid values, attribution of the step
    bound: str = ""  # "host dispatch" | "device work" | "" (CPU)
    extrapolated: tuple[Extrapolation, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    cannot_predict: CannotPredict | None = None

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


def curve_band(
    curve: Sequence[CurvePoint], x: float, work: Callable[[float], float], floor_s: float
) -> tuple[Band, float | None]:
    """Time of one op of size ``x`` from a curve; ``work(x)`` is the work (FLOPs or bytes) at
    size x. Returns the band and, when extrapolating, the curve's largest calibrated x."""
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
        return Band(mid / gain ** max(decades, 0.0), mid, mid), last.x
    if x < first.x:
        return Band(min(floor_s, first.s), first.s, first.s), None  # smaller than the smallest: floor-bound
    mid = interp_loglog(curve, x)
    qlo, qhi = _quartile_ratio(curve, x)
    return Band(mid * qlo, mid, mid * qhi), None


def matmul_n(flops: float) -> float:
    """Side of the square matmul with the same FLOPs (2 n^3)."""
    return float((max(flops, 0.0) / 2.0) ** (1.0 / 3.0))


def _mm_work(n: float) -> float:
    return 2.0 * n**3


def _bytes_work(b: float) -> float:
    return b


# ---------------- per-op and per-step ----------------


@dataclass(frozen=True)
class OpTime:
    band: Band
    part: str  # "compute" or "memory traffic"
    extrapolated: Extrapolation | None = None


def op_time(op: OpCost, dev: DeviceCosts, tf32: bool = False) -> OpTime | None:
    """Time of one kernel on ``dev``; None for free ops. ``tf32``: the framework runs float32
    matmuls in TF32 on a GPU that has it (the TF32 curve is the middle, float32 the high edge)."""
    f = dev.dispatch_eager_s
    if op.kind in ("matmul", "conv"):
        n = matmul_n(op.flops)
        if n < 1.0:
            return OpTime(Band.of(dev.matmul[0].s), "compute")
        band, largest = curve_band(dev.matmul, n, _mm_work, f)
        if dev.kind == "gpu" and dev.matmul_tf32:
            fast, _ = curve_band(dev.matmul_tf32, n, _mm_work, f)
            if tf32:
                band = Band(min(band.low, fast.low), fast.mid, max(band.high, fast.high))
            else:
                band = Band(min(band.low, fast.low), band.mid, band.high)
        return OpTime(band, "compute", Extrapolation("matmul", n, largest) if largest is not None else None)
    if op.kind == "uncovered":  # a documented default: one kernel at the floor, band widened
        return OpTime(Band(f, f, f + UNKNOWN_OP_HIGH_S), "compute")
    if op.kind == "elementwise":
        b = max(op.bytes, 1.0)
        if dev.elementwise:
            band, largest = curve_band(dev.elementwise, b, _bytes_work, f)
            return OpTime(
                band, "memory traffic", Extrapolation("elementwise", b, largest) if largest is not None else None
            )
        hi = max(f, b / dev.memory_floor_bytes_per_s) if dev.memory_floor_bytes_per_s else f
        return OpTime(Band(f, f, hi), "memory traffic")
    return None


def transfer_time(curve: Sequence[CurvePoint], nbytes: float) -> tuple[Band, float | None]:
    if nbytes <= 0 or not curve:
        return ZERO, None
    return curve_band(curve, nbytes, _bytes_work, curve[0].s)


def _op_assumptions(work: WorkloadDescription, dev: DeviceCosts) -> list[Assumption]:
    """What the prediction of ``work``'s ops on ``dev`` takes for granted (ops it does not
    know, XLA's kernels, convolutions, a missing elementwise curve)."""
    f = dev.dispatch_eager_s
    assumptions: list[Assumption] = []
    uncovered = work.uncovered
    if uncovered:
        assumptions.append(
            Assumption("unknown_ops", floor_s=f, high_s=UNKNOWN_OP_HIGH_S, ops=tuple(sorted(uncovered.items())))
        )
    if work.launch_mode == "xla":
        assumptions.append(Assumption("xla_kernels"))
    if any(o.kind == "conv" for o in work.ops):
        assumptions.append(Assumption("conv_as_matmul"))
    if any(o.kind == "elementwise" for o in work.ops) and not dev.elementwise:
        assumptions.append(Assumption("no_elementwise_curve", floor_s=f))
    return assumptions


def _device_work(
    work: WorkloadDescription, dev: DeviceCosts
) -> tuple[Band, float, dict[str, float], set[Extrapolation]]:
    """The ops' device time (each op at least the launch floor on a GPU), the floors' sum, the
    time above the floor per part, and the curves' notes."""
    f = dev.dispatch_eager_s
    notes: set[Extrapolation] = set()
    device_work = ZERO
    launch_mid = 0.0
    parts = {p: 0.0 for p in PARTS}
    for op in work.ops:
        t = op_time(op, dev, work.tf32)
        if t is None:
            continue
        if t.extrapolated is not None:
            notes.add(t.extrapolated)
        b = t.band
        if dev.kind == "gpu":
            b = Band(max(f, b.low), max(f, b.mid), max(f, b.high))
        device_work = device_work + b
        floor_part = min(f, b.mid)
        launch_mid += floor_part
        parts[t.part] += b.mid - floor_part
    return device_work, launch_mid, parts, notes


def predict(work: WorkloadDescription, dev: DeviceCosts, dispatch_mode: str = "eager") -> Prediction:
    """Predicted step time of ``work`` on ``dev`` (see the module docstring for the equation)."""
    name = dev.kind.upper()
    if not work.ops:
        return Prediction(name, None, cannot_predict="no_ops")
    f = dev.dispatch_eager_s
    assumptions = _op_assumptions(work, dev)
    k = work.kernels
    mode = work.launch_mode if work.compiled or work.launch_mode != "graph" else "eager"
    n_exec = work.steps_per_execution if mode != "eager" else 1
    if work.steps_per_execution > 1 and mode == "eager":
        assumptions.append(Assumption("spe_eager"))
    call = 0.0 if mode == "eager" else (dev.step_call_s or 0.0)
    if mode != "eager" and dev.dispatch_graph_s is not None:
        d = dev.dispatch_graph_s
    else:
        d = f
        if mode != "eager":
            assumptions.append(Assumption("dispatch_upper_bound", mode=dispatch_mode))
    if mode != "eager" and dev.step_call_s is None and work.host_overhead_s is None:
        assumptions.append(Assumption("no_step_call"))
    measured = work.host_overhead_s is not None
    h = work.host_overhead_s or 0.0
    overhead = h / n_exec if measured else call / n_exec
    d_extra = max(d - work.host_dispatch_paid_s, 0.0) if measured else d

    device_work, launch_mid, parts, notes = _device_work(work, dev)

    if dev.kind == "cpu":
        step = device_work + Band.of(call / n_exec)
        parts["dispatch/launch"] = launch_mid + call / n_exec
        return Prediction(name, step, parts, "", _in_order(notes), tuple(assumptions))

    host = Band.of(overhead + k * d_extra)
    top = Band(max(host.low, device_work.low), max(host.mid, device_work.mid), max(host.high, device_work.high))
    if host.mid >= device_work.mid:
        bound = "host dispatch"
        parts = {p: 0.0 for p in PARTS}
        parts["dispatch/launch"] = k * d_extra + (0.0 if measured else overhead)
        parts["host overhead"] = overhead if measured else 0.0
    else:
        bound = "device work"
        parts["dispatch/launch"] = launch_mid
    copy, largest = transfer_time(dev.h2d, work.input_bytes)
    if largest is not None:
        notes.add(Extrapolation("input_copy", work.input_bytes, largest))
    sync = Band.of((dev.sync_s or 0.0) * work.syncs_per_step)
    if work.syncs_per_step and dev.sync_s is None:
        assumptions.append(Assumption("no_sync_cost"))
    parts["transfer"] = copy.mid
    parts["sync"] = sync.mid
    return Prediction(name, top + copy + sync, parts, bound, _in_order(notes), tuple(assumptions))


def _in_order(notes: set[Extrapolation]) -> tuple[Extrapolation, ...]:
    return tuple(sorted(notes, key=lambda e: (e.what, e.size, e.largest)))
