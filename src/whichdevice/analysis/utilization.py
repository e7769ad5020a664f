"""Utilization telemetry, analysed: a window's summary, its terminal line and the verdict inputs.

Pure functions of a ``core.telemetry.Telemetry`` (the raw series ``measure.telemetry``'s
sampler recorded): :func:`summarize` (core/telemetry.py) reduces it to a ``TelemetrySummary``, :func:`describe`
turns that into one terminal line, and :func:`others_busy` and :func:`gpu_underfed` are the
verdict inputs.
CPU means are weighted by each sample's interval (the sampler's final sample closes a
usually shorter one), so a window mean equals the busy share of the whole window; Linux
counts CPU time in 10 ms ticks, so window means are precise and single samples are not.
"""

from __future__ import annotations


from whichdevice.core.telemetry import CORE_SATURATED_PERCENT, TelemetrySummary, summarize

__all__ = [
    "CORE_SATURATED_PERCENT",
    "GPU_UNDERFED_PERCENT",
    "gpu_underfed",
    "others_busy",
    "summarize",
]

#: A GPU window whose mean GPU utilization is below this is "under-fed". Source: the
#: PyTorch profiler TensorBoard plugin (pytorch/kineto, tb_plugin,
#: torch_tb_profiler/profiler/data.py, ``RunProfileData._analyze_gpu_metrics``)
#: recommends "increase batch size" for every GPU whose ``gpu_utilization < 0.5``.
#: Its utilization is the fraction of the profiled span with a kernel running, which
#: is what NVML's utilization measures over its own sample period.
GPU_UNDERFED_PERCENT = 50.0

#: Other programs made the machine "busy" during a window when they used at least this share
#: of its cores, and at least :data:`OTHERS_BUSY_MIN_CORES`. Our own choice, from recorded
#: windows: on the quiet 16-core H200 box (tests/data/h200) other programs used at most 0.93
#: cores (5.8 %) in every window, mostly < 0.3 (the 10 ms tick quantization of short windows);
#: on the quiet 2-core VM at most 0.21 cores; on the loaded 2-core VM
#: (tests/data/run_cpu_2core_busy.json) at least 0.75. Only other programs count: the
#: measured workload's own threads saturating every core (torch's intra-op pool) are not a
#: busy machine.
OTHERS_BUSY_SHARE = 0.10
OTHERS_BUSY_MIN_CORES = 0.5

# --------------------------------------------------------------------------- summary


# --------------------------------------------------------------------------- verdict inputs


def others_busy(summary: TelemetrySummary) -> bool | None:
    """True when other programs used at least :data:`OTHERS_BUSY_SHARE` of the cores (and
    :data:`OTHERS_BUSY_MIN_CORES`) during the window: the only case in which a warning may say
    "the machine was busy". ``None`` when the CPU was not sampled. In a record older than the
    children's split (``children_cpu_cores`` None), "others" include this run's own child
    processes: a True there means "other programs or this run's workers"."""
    if summary.others_cpu_cores is None or summary.n_cores == 0:
        return None
    return summary.others_cpu_cores >= max(OTHERS_BUSY_MIN_CORES, OTHERS_BUSY_SHARE * summary.n_cores)


def gpu_underfed(summary: TelemetrySummary) -> bool | None:
    """True when the GPU was busy less than :data:`GPU_UNDERFED_PERCENT` of a GPU window.

    Source of the 50 % threshold: the PyTorch profiler TensorBoard plugin
    (pytorch/kineto, tb_plugin/torch_tb_profiler/profiler/data.py,
    ``RunProfileData._analyze_gpu_metrics``) flags every GPU with
    ``gpu_utilization < 0.5`` and recommends increasing the batch size. Uses the mean
    utilization (the busy share of the window). ``None`` when there are no GPU data.
    """
    if summary.gpu_util_mean_percent is None:
        return None
    return summary.gpu_util_mean_percent < GPU_UNDERFED_PERCENT
