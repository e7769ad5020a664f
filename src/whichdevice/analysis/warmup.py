"""Warm-up apart from the steady state, and the break-even step count.

A device's total time for ``n`` training steps is modelled as

    T(n) = first + (n - 1) * step

with ``first`` the first step (tracing, compilation, allocation, pipeline start-up: the
warm-up) and ``step`` the steady step (median). The GPU has paid back its extra warm-up
``W = first_gpu - first_cpu`` after ``n`` steps when ``T_gpu(n) < T_cpu(n)``, i.e. when
``(n - 1) * d > W`` with ``d = step_cpu - step_gpu`` the time it saves per step:

    n* = floor(1 + W / d) + 1        (d > 0, W >= 0)

``W < 0`` and ``d > 0``: the GPU is ahead from the first step. ``d <= 0`` (or the steady
difference within the noise): the GPU **never** breaks even — its extra warm-up is never
paid back, whatever the run length. The same works with epochs as the unit (first epoch,
steady epoch), which is how the recorded Keras fits are read.

Trade-off: the model ignores slow drifts after the first step (autotuning that settles
over several steps shows up as spread in ``step``, not in ``first``); for break-even
counts that is the right first-order answer, and the raw steps stay in the record.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from whichdevice.core import stats


@dataclass(frozen=True)
class BreakEven:
    kind: str  # "after" | "immediately" | "never" | "no_gpu" | "no_data"
    n: int | None = None  # units (steps or epochs) after which the GPU's total is lower
    extra_warmup_s: float | None = None  # W = first_gpu - first_cpu
    saving_per_unit_s: float | None = None  # d = step_cpu - step_gpu
    unit: str = "steps"
    within_noise: bool = False


def break_even(
    cpu_first_s: float,
    cpu_step_s: float,
    gpu_first_s: float,
    gpu_step_s: float,
    *,
    significant: bool = True,
    unit: str = "steps",
) -> BreakEven:
    """Smallest ``n >= 1`` with ``T_gpu(n) < T_cpu(n)`` (see the module docstring)."""
    w = gpu_first_s - cpu_first_s
    d = cpu_step_s - gpu_step_s
    if d <= 0 or not significant:
        return BreakEven("never", None, w, d, unit, within_noise=d > 0 and not significant)
    if w < 0:
        return BreakEven("immediately", 1, w, d, unit)
    n = math.floor(1 + w / d) + 1
    return BreakEven("after", n, w, d, unit)


@dataclass(frozen=True)
class EpochSummary:
    """A run read as epochs: the first (warm-up in it) and the steady ones."""

    first_s: float
    steady_s: float  # median of the epochs after the first
    steps_per_epoch: int | None = None


def summarize_epochs(epoch_s: Sequence[float], steps_per_epoch: int | None = None) -> EpochSummary:
    if len(epoch_s) < 2:
        raise ValueError("need at least two epochs: the first (warm-up) and a steady one")
    return EpochSummary(epoch_s[0], stats.median(epoch_s[1:]), steps_per_epoch)
