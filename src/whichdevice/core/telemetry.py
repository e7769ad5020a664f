"""The utilization telemetry record: the raw series of one timing window and its summary.

Only the schema lives here (it is part of the records, ``core.records.Timing.telemetry``):

* :class:`Telemetry`, the frozen raw series a sampler produced for one window;
* :class:`TelemetrySummary`, the numbers reports and verdicts use.

The sampler that fills a :class:`Telemetry` (a thread reading per-core CPU and, through
NVML, the GPU) is ``measure.telemetry``; :func:`summarize` reduces a window to its summary
(presenters and analysis both read it); the verdict inputs are ``analysis.utilization``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "CORE_SATURATED_PERCENT",
    "GPU_NOT_REQUESTED",
    "Telemetry",
    "TelemetrySummary",
]

#: ``Telemetry.gpu_unavailable`` when the sampler was not asked to watch a GPU.
GPU_NOT_REQUESTED = "GPU telemetry not requested"


# --------------------------------------------------------------------------- records


class Telemetry(BaseModel):
    """Raw utilization series of one timing window (what goes into the records).

    ``t_s[i]`` is when sample ``i`` was taken, in seconds after ``start()``;
    ``cpu_percent_per_core[i]`` is the busy % of each logical core between sample
    ``i - 1`` (or ``start()``) and sample ``i``. The GPU series are parallel to
    ``t_s`` or all ``None``; when they are ``None``, ``gpu_unavailable`` says why.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    period_s: float
    t_s: list[float]
    cpu_percent_per_core: list[list[float]]
    #: CPU seconds (user + system, all threads) this process used during the window,
    #: the sampler's own ticks included.
    process_cpu_s: float
    #: CPU seconds (user + system) this process's child processes used during the window
    #: (a DataLoader's workers, a compiler's helpers): so the rest of the machine's busy time
    #: is other programs'. ``None`` in records written before it was measured (they cannot
    #: tell this run's own children from other programs).
    children_cpu_s: float | None = None
    wall_s: float
    gpu_index: int | None
    gpu_util_percent: list[float] | None
    gpu_mem_used_bytes: list[int] | None
    gpu_sm_clock_mhz: list[int] | None
    #: ``None`` when GPU data were read; :data:`GPU_NOT_REQUESTED` when no GPU was
    #: asked for; otherwise ``"GPU telemetry unavailable: <reason>"``.
    gpu_unavailable: str | None
    #: Median seconds one sampling tick took, on the sampler's clock. Wall time: when
    #: other Python threads hold the GIL it includes waiting for it, so it bounds the
    #: tick's cost from above rather than measuring the CPU it took.
    sampler_cost_s: float

    @model_validator(mode="after")
    def _series_are_parallel(self) -> Telemetry:
        # Records are reloaded from JSON; catch a truncated or hand-edited series here
        # rather than as an IndexError in a plot.
        n = len(self.t_s)
        if len(self.cpu_percent_per_core) != n:
            raise ValueError(f"cpu_percent_per_core has {len(self.cpu_percent_per_core)} samples, t_s has {n}")
        gpu = (self.gpu_util_percent, self.gpu_mem_used_bytes, self.gpu_sm_clock_mhz)
        if any(s is None for s in gpu) != all(s is None for s in gpu):
            raise ValueError("GPU series must be all present or all None")
        if gpu[0] is not None:
            if any(len(s) != n for s in gpu):  # type: ignore[arg-type]
                raise ValueError(f"GPU series must have {n} samples like t_s")
            if self.gpu_unavailable is not None:
                raise ValueError("gpu_unavailable must be None when GPU series are present")
        elif self.gpu_unavailable is None:
            raise ValueError("gpu_unavailable must give a reason when GPU series are absent")
        return self


class TelemetrySummary(BaseModel):
    """Summary of a :class:`Telemetry` window; ``None`` where there is nothing to summarize."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_samples: int
    n_cores: int
    #: Mean busy % over all cores and the window (interval-weighted).
    cpu_mean_percent: float | None
    #: Mean busy % of each core over the window (interval-weighted).
    cpu_per_core_mean_percent: list[float]
    #: Cores whose mean busy % is at least ``analysis.utilization.CORE_SATURATED_PERCENT``.
    cores_saturated: int
    #: Cores' worth of CPU this process used: process_cpu_s / wall_s (1.0 = one core).
    process_cpu_cores: float | None
    #: Cores' worth its child processes used (``None``: not measured, an older record).
    children_cpu_cores: float | None = None
    #: Cores' worth every other program used: the machine's busy time less this run's (this
    #: process, and its children where measured), never below 0. ``None`` when the CPU was not
    #: sampled. Where ``children_cpu_cores`` is ``None`` it includes this run's children.
    others_cpu_cores: float | None = None
    wall_s: float
    gpu_index: int | None
    gpu_util_mean_percent: float | None
    gpu_util_median_percent: float | None
    gpu_mem_max_bytes: int | None
    gpu_sm_clock_median_mhz: float | None
    gpu_unavailable: str | None


#: A core whose mean busy share over the window is at least this is "saturated". Our
#: own choice, not a cited rule: at 90 % the core has under 10 % headroom left, and a
#: thread that is always runnable measures 97-100 % on this project's 2-core test
#: machine (10 ms tick quantization and brief preemptions keep it off 100 %), so 90 %
#: catches it while a core doing bursty work (a training loop waiting on its kernels)
#: stays below.
CORE_SATURATED_PERCENT = 90.0

# Floating-point slack for threshold comparisons on weighted means; far below psutil's
# 0.1 % resolution.
_ROUNDING_PERCENT = 1e-9


def _interval_weights(t_s: Sequence[float]) -> list[float]:
    """Length of the interval each sample covers: (previous sample or start, this sample]."""
    weights = [b - a for a, b in zip([0.0, *t_s[:-1]], t_s)]
    if sum(weights) <= 0.0:  # degenerate clock (e.g. a frozen fake): fall back to plain means
        return [1.0] * len(t_s)
    return weights


def summarize(t: Telemetry) -> TelemetrySummary:
    """Reduce a window's series to the numbers reports and verdicts use.

    CPU means are weighted by each sample's interval, so the last, usually shorter,
    interval (the final sample taken by ``stop()``) does not count as a full period and
    the mean equals the busy share of the whole window. GPU statistics are plain means
    and medians: NVML's readings already average over the driver's own sample period.
    """
    n = len(t.t_s)
    per_core: list[float] = []
    if n:
        w = _interval_weights(t.t_s)
        w_sum = math.fsum(w)
        n_cores = len(t.cpu_percent_per_core[0])
        per_core = [
            math.fsum(wi * sample[c] for wi, sample in zip(w, t.cpu_percent_per_core)) / w_sum for c in range(n_cores)
        ]
    has_gpu = bool(n) and t.gpu_util_percent is not None
    cpu_mean = statistics.fmean(per_core) if per_core else None
    own_s = t.process_cpu_s + (t.children_cpu_s or 0.0)
    return TelemetrySummary(
        n_samples=n,
        n_cores=len(per_core),
        cpu_mean_percent=cpu_mean,
        cpu_per_core_mean_percent=per_core,
        # The tolerance keeps a core that read exactly 90 % in every sample saturated
        # although its weighted mean may round to 89.99999999999999.
        cores_saturated=sum(1 for p in per_core if p >= CORE_SATURATED_PERCENT - _ROUNDING_PERCENT),
        process_cpu_cores=t.process_cpu_s / t.wall_s if t.wall_s > 0 else None,
        children_cpu_cores=t.children_cpu_s / t.wall_s if t.wall_s > 0 and t.children_cpu_s is not None else None,
        # The machine's busy cores less this run's own: what other programs used.
        others_cpu_cores=(
            max(0.0, cpu_mean / 100 * len(per_core) - own_s / t.wall_s)
            if cpu_mean is not None and t.wall_s > 0
            else None
        ),
        wall_s=t.wall_s,
        gpu_index=t.gpu_index,
        gpu_util_mean_percent=statistics.fmean(t.gpu_util_percent) if has_gpu else None,  # type: ignore[arg-type]
        gpu_util_median_percent=statistics.median(t.gpu_util_percent) if has_gpu else None,  # type: ignore[arg-type]
        gpu_mem_max_bytes=max(t.gpu_mem_used_bytes) if has_gpu else None,  # type: ignore[arg-type]
        gpu_sm_clock_median_mhz=float(statistics.median(t.gpu_sm_clock_mhz)) if has_gpu else None,  # type: ignore[arg-type]
        gpu_unavailable=t.gpu_unavailable,
    )
