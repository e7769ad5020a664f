"""float32 vs Keras mixed precision: step time and final loss side by side, per device.

Pure: the ``precision`` cases of a train (or run) record in, rows out. The speedup is
float32's median step over the policy's (> 1: mixed precision is faster), with the quartile
range and "within noise" when the interquartile ranges overlap (``analysis.compare``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from whichdevice.analysis.compare import Comparison, compare
from whichdevice.analysis.values import timing_of
from whichdevice.core.records import CaseResult, RunRecord, Timing
from whichdevice.workloads.fixes import PRECISION, PRECISION_KIND, params_of

# A precision case's policy, as the catalogue names the precision fix's parameter.
_POLICY = PRECISION.param


@dataclass(frozen=True)
class PrecisionRow:
    device: str
    precision: str
    timing: Timing
    final_loss: float
    samples_per_s: float | None
    vs_float32: Comparison | None  # None for float32 itself or when it is missing


def precision_rows(record: RunRecord) -> list[PrecisionRow]:
    ok = [r for r in record.results if r.status == "ok" and params_of(r.spec).get("kind") == PRECISION_KIND]
    rows = []
    for r in ok:
        base = _float32(ok, r)
        comp = (
            compare("float32", timing_of(base), str(params_of(r.spec)[_POLICY]), timing_of(r))
            if base and base is not r
            else None
        )
        n = r.metrics.get("samples_per_step")
        rows.append(
            PrecisionRow(
                r.spec.device,
                str(params_of(r.spec)[_POLICY]),
                timing_of(r),
                r.metrics.get("final_loss", float("nan")),
                n / timing_of(r).median_s if n and timing_of(r).median_s > 0 else None,
                comp,
            )
        )
    order = {"float32": 0, "mixed_float16": 1, "mixed_bfloat16": 2}
    return sorted(rows, key=lambda x: (not x.device.startswith("CPU"), x.device, order.get(x.precision, 9)))


def _float32(ok: list[CaseResult], r: CaseResult) -> CaseResult | None:
    rest = {k: v for k, v in params_of(r.spec).items() if k != _POLICY}
    for o in ok:
        if (
            o.spec.device == r.spec.device
            and params_of(o.spec).get(_POLICY) == "float32"
            and {k: v for k, v in params_of(o.spec).items() if k != _POLICY} == rest
        ):
            return o
    return None


@dataclass(frozen=True)
class Cpu16Bit:
    """Whether this CPU has fast 16-bit math, from /proc/cpuinfo as the precision cases recorded
    it (metrics cpu_fast_bf16: avx512_bf16/amx_bf16; cpu_fast_fp16: avx512_fp16/amx_fp16)."""

    bf16: bool
    fp16: bool
    # The CPU's policies whose 16-bit type these flags say is fast, measured significantly slower
    # than float32 all the same: the flags name instructions, not the framework's use of them (a
    # Keras mixed_float16 fit measured 224x slower on a CPU with avx512_fp16 and amx_fp16).
    slower_anyway: tuple[PrecisionRow, ...] = ()


# The policy's 16-bit type, by the flag that would make it fast (Cpu16Bit's field).
_POLICY_FLAG = {"mixed_float16": "fp16", "mixed_bfloat16": "bf16"}


def cpu_16bit(record: RunRecord) -> Cpu16Bit | None:
    """What the record says about this CPU's 16-bit math (None: no precision case recorded it)."""
    ms = [
        r.metrics
        for r in record.results
        if r.status == "ok" and params_of(r.spec).get("kind") == PRECISION_KIND and "cpu_fast_bf16" in r.metrics
    ]
    if not ms:
        return None
    c = Cpu16Bit(ms[0]["cpu_fast_bf16"] > 0, ms[0]["cpu_fast_fp16"] > 0)
    slower = tuple(
        row
        for row in precision_rows(record)
        if row.device.startswith("CPU")
        and getattr(c, _POLICY_FLAG.get(row.precision, ""), False)
        and row.vs_float32 is not None
        and row.vs_float32.significant
        and row.vs_float32.ratio < 1
    )
    return dataclasses.replace(c, slower_anyway=slower)
