"""Utilization telemetry sampled beside a steady-state timing window.

A :class:`Sampler` runs a daemon thread that, every ``period_s`` seconds, reads

* per-core CPU utilization (busy % of each logical core since the previous reading,
  the same formula as ``psutil.cpu_percent(percpu=True)``),
* on NVIDIA GPUs, through NVML (``nvidia-ml-py``, imported as ``pynvml``): GPU
  utilization, device memory used and SM clock,

and, once for the whole window, the CPU seconds of this process (user + system, all
threads). The result is a frozen :class:`Telemetry` (the raw series, for records and
plots); :func:`summarize` reduces it to a :class:`TelemetrySummary`, :func:`describe`
turns that into one terminal line, and :func:`gpu_underfed`,
:func:`input_threads_saturated` and :func:`pipeline_cpu_bound` are the verdict inputs.

Method and trade-offs
---------------------
* A thread, not a process: a tick is one read of ``/proc/stat`` (plus three NVML
  queries when a GPU is watched). Measured on a 2-core VM (benchmarks/TELEMETRY.md):
  ~0.4 ms of CPU per tick including the thread's wake-up, 0.8 % of one core at the
  default 50 ms, and the matmul / training timings beside it moved by less than their
  IQR; at 5 ms the slowdown became visible (2-6 %). A thread does hold the GIL during
  a tick, but TensorFlow releases the GIL inside its kernels, and a separate process
  would cost more to start than the whole window of a small workload.
* Ticks are scheduled at ``start + k * period_s`` on the sampler's clock; a tick that
  is late (the machine is saturated) is skipped rather than caught up, so there are
  never more than ``wall_s / period_s + 1`` samples and no bursts of near-empty
  intervals.
* ``stop()`` takes one final sample, so the CPU series covers the whole window and even
  a window shorter than one period has a sample. CPU means are therefore weighted by
  each sample's interval (see :func:`summarize`): the mean equals the busy fraction of
  the whole window.
* Linux counts CPU time in clock ticks (10 ms), so a single 50 ms per-core reading is
  quantized to about 20 %; window means are precise, single samples are not.
* GPU utilization is NVML's "percent of time over the past sample period during which
  one or more kernels was executing", where the driver's own sample period is 1/6 s to
  1 s depending on the product: 50 ms readings overlap, so the GPU series is smoother
  than it looks. It is device-wide (other processes' kernels count), and memory used
  is device-wide too (TensorFlow's allocator pool, not the live tensors).
* The GPU index is NVML's, which follows PCI bus order and ignores
  ``CUDA_VISIBLE_DEVICES``; mapping a framework's device to it is the caller's job.
* GPU telemetry never raises: a missing ``pynvml``, a machine without the NVIDIA
  driver, a bad index, or a failing read all end in ``Telemetry.gpu_unavailable``
  with the reason, and the CPU telemetry is still returned.

This module does not import TensorFlow; ``pynvml`` is imported lazily, only when a GPU
is asked for.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import psutil
from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "CORE_SATURATED_PERCENT",
    "DEFAULT_PERIOD_S",
    "GPU_NOT_REQUESTED",
    "GPU_UNDERFED_PERCENT",
    "CpuSource",
    "GpuSource",
    "NvmlGpuSource",
    "PsutilCpuSource",
    "Sampler",
    "Telemetry",
    "TelemetrySummary",
    "describe",
    "gpu_underfed",
    "input_threads_saturated",
    "pipeline_cpu_bound",
    "summarize",
]

#: Default sampling period. 50 ms gives ~20 samples in a 1 s timing window (enough for
#: a mean and a strip plot) at a cost of well under 1 % of one core.
DEFAULT_PERIOD_S = 0.05

#: A core whose mean busy share over the window is at least this is "saturated". Our
#: own choice, not a cited rule: at 90 % the core has under 10 % headroom left, and a
#: thread that is always runnable measures 97-100 % on this project's 2-core test
#: machine (10 ms tick quantization and brief preemptions keep it off 100 %), so 90 %
#: catches it while a core doing bursty work (a training loop waiting on its kernels)
#: stays below.
CORE_SATURATED_PERCENT = 90.0

#: A GPU window whose mean GPU utilization is below this is "under-fed". Source: the
#: PyTorch profiler TensorBoard plugin (pytorch/kineto, tb_plugin,
#: torch_tb_profiler/profiler/data.py, ``RunProfileData._analyze_gpu_metrics``)
#: recommends "increase batch size" for every GPU whose ``gpu_utilization < 0.5``.
#: Its utilization is the fraction of the profiled span with a kernel running, which
#: is what NVML's utilization measures over its own sample period.
GPU_UNDERFED_PERCENT = 50.0

#: ``Telemetry.gpu_unavailable`` when the sampler was not asked to watch a GPU.
GPU_NOT_REQUESTED = "GPU telemetry not requested"

_UNAVAILABLE_PREFIX = "GPU telemetry unavailable: "

# Floating-point slack for threshold comparisons on weighted means; far below psutil's
# 0.1 % resolution.
_ROUNDING_PERCENT = 1e-9


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
            raise ValueError(
                f"cpu_percent_per_core has {len(self.cpu_percent_per_core)} samples, t_s has {n}"
            )
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
    #: Cores whose mean busy % is at least :data:`CORE_SATURATED_PERCENT`.
    cores_saturated: int
    #: Cores' worth of CPU this process used: process_cpu_s / wall_s (1.0 = one core).
    process_cpu_cores: float | None
    wall_s: float
    gpu_index: int | None
    gpu_util_mean_percent: float | None
    gpu_util_median_percent: float | None
    gpu_mem_max_bytes: int | None
    gpu_sm_clock_median_mhz: float | None
    gpu_unavailable: str | None


# --------------------------------------------------------------------------- sources


class CpuSource(Protocol):
    """What the sampler reads CPU utilization from (injectable for tests)."""

    def per_core_percent(self) -> list[float]:
        """Busy % of each core since the previous call (the first call sets the baseline)."""
        ...

    def process_cpu_s(self) -> float:
        """CPU seconds this process has used so far (user + system, all threads)."""
        ...


class GpuSource(Protocol):
    """What the sampler reads GPU utilization from (injectable for tests)."""

    def read(self) -> tuple[float, int, int]:
        """Return (utilization %, memory used in bytes, SM clock in MHz)."""
        ...


def _busy_percent(before: Any, after: Any) -> float | None:
    """Busy % of one core between two ``psutil.cpu_times`` readings, psutil's formula.

    Returns ``None`` (psutil returns 0.0) when none of the core's counters moved.
    """
    # Per-field deltas are clamped at 0, as psutil does: some kernels let a counter step
    # back. Fields are read by name, not through a new namedtuple: this runs per core
    # per tick.
    delta = {f: max(0.0, a - b) for f, a, b in zip(after._fields, after, before)}
    # On Linux "guest" time is already counted in "user" / "nice" (psutil's comment).
    all_s = sum(delta.values()) - delta.get("guest", 0.0) - delta.get("guest_nice", 0.0)
    if all_s <= 0.0:
        return None
    busy_s = all_s - delta["idle"] - delta.get("iowait", 0.0)
    return round(min(100.0, max(0.0, 100.0 * busy_s / all_s)), 1)


class PsutilCpuSource:
    """CPU readings from psutil and the OS.

    Per-core busy % is computed from ``psutil.cpu_times(percpu=True)`` deltas with the
    same formula as ``psutil.cpu_percent(percpu=True)``, with two deliberate differences:

    * The previous reading is kept here rather than in psutil's module-level state, so
      another caller of ``psutil.cpu_percent`` (or a second sampler) cannot shift our
      intervals.
    * Linux accounts busy time in 10 ms ticks. When a core's counters have not moved
      since the previous reading (likely at periods under ~10 ms), psutil reports 0 %,
      which made a saturated core read about 50 % at a 5 ms period. Here the core repeats
      its previous value and keeps its old baseline, so the next reading covers both
      intervals and the window mean stays right.

    Process CPU comes from ``time.process_time()`` (user + system of all threads, in
    nanoseconds on Linux) rather than ``psutil.Process().cpu_times()``, which counts
    in 10 ms clock ticks.
    """

    def __init__(self) -> None:
        self._baseline: list[Any] | None = None
        self._previous_percent: list[float] = []

    def per_core_percent(self) -> list[float]:
        now = psutil.cpu_times(percpu=True)
        if self._baseline is None or len(self._baseline) != len(now):
            # First call (or a core went on/offline): only a baseline, no interval yet.
            self._baseline = list(now)
            self._previous_percent = [0.0] * len(now)
            return list(self._previous_percent)
        percent = []
        for core, (before, after) in enumerate(zip(self._baseline, now)):
            busy = _busy_percent(before, after)
            if busy is None:
                busy = self._previous_percent[core]  # hold; baseline stays
            else:
                self._baseline[core] = after
            percent.append(busy)
        self._previous_percent = percent
        return list(percent)

    def process_cpu_s(self) -> float:
        return time.process_time()


class NvmlGpuSource:
    """GPU readings through NVML (``pynvml``, from the ``nvidia-ml-py`` package).

    The constructor imports ``pynvml``, initializes NVML and opens device ``index``; it
    raises (ImportError or an NVML error) when any of that is impossible, and the
    :class:`Sampler` turns the exception into ``gpu_unavailable``. Call :meth:`close`
    to release NVML (initialization is reference-counted, so this does not disturb
    other users in the process).
    """

    def __init__(self, index: int) -> None:
        import pynvml  # optional dependency: imported only when a GPU is watched

        self._nvml = pynvml
        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
            if not 0 <= index < count:
                raise ValueError(f"no GPU at NVML index {index} ({count} visible)")
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except BaseException:
            pynvml.nvmlShutdown()
            raise

    def read(self) -> tuple[float, int, int]:
        nvml = self._nvml
        util = nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu
        mem = nvml.nvmlDeviceGetMemoryInfo(self._handle).used
        sm_clock = nvml.nvmlDeviceGetClockInfo(self._handle, nvml.NVML_CLOCK_SM)
        return float(util), int(mem), int(sm_clock)

    def close(self) -> None:
        self._nvml.nvmlShutdown()


def _unavailable_reason(exc: BaseException) -> str:
    """A short human reason for why GPU telemetry could not be had."""
    if isinstance(exc, ImportError):
        return "pynvml not installed (pip install nvidia-ml-py)"
    name = type(exc).__name__
    # Match pynvml's exception classes by name so this works without importing pynvml.
    if name == "NVMLError_LibraryNotFound":
        return "NVML library not found (no NVIDIA driver)"
    if name == "NVMLError_DriverNotLoaded":
        return "NVIDIA driver not loaded"
    if name == "NVMLError_NoPermission":
        return "no permission to query NVML"
    if name.startswith("NVMLError"):
        return f"NVML error: {exc}"
    return str(exc) or name


# --------------------------------------------------------------------------- sampler


class Sampler:
    """Samples utilization in a background thread between :meth:`start` and :meth:`stop`.

    ``cpu_source`` defaults to :class:`PsutilCpuSource`. ``gpu_source`` is consulted only
    when ``gpu_index`` is given; it is either an object with ``read()`` or a factory
    called as ``gpu_source(gpu_index)`` at :meth:`start` (default: :class:`NvmlGpuSource`).
    A factory or ``read()`` that raises makes the window's ``gpu_unavailable`` say why;
    the sampler itself never raises for the GPU. ``clock`` measures sample times, the
    window and the tick cost, and schedules the ticks.

    Usable once: ``start()``, run the window, ``stop()`` returns the :class:`Telemetry`;
    or ``with Sampler() as s: ...`` and read ``s.telemetry``.
    """

    def __init__(
        self,
        period_s: float = DEFAULT_PERIOD_S,
        *,
        gpu_index: int | None = None,
        cpu_source: CpuSource | None = None,
        gpu_source: GpuSource | Callable[[int], GpuSource] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if not period_s > 0:  # also rejects NaN
            raise ValueError(f"period_s must be > 0 seconds, got {period_s!r}")
        if gpu_index is not None and gpu_index < 0:
            raise ValueError(f"gpu_index must be >= 0 or None, got {gpu_index!r}")
        self.period_s = float(period_s)
        self.gpu_index = gpu_index
        self._cpu = cpu_source if cpu_source is not None else PsutilCpuSource()
        self._gpu_source_arg = gpu_source if gpu_source is not None else NvmlGpuSource
        self._clock = clock

        self._gpu: GpuSource | None = None
        self._gpu_unavailable: str | None = None
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._thread_error: BaseException | None = None
        self._t0 = 0.0
        self._cpu0_s = 0.0
        self._t_s: list[float] = []
        self._cpu_series: list[list[float]] = []
        self._gpu_series: list[tuple[float, int, int]] = []
        self._tick_cost_s: list[float] = []
        self.telemetry: Telemetry | None = None

    # -- lifecycle

    def start(self) -> Sampler:
        """Open the GPU source, set the CPU baseline, start the sampling thread."""
        if self._thread is not None or self.telemetry is not None:
            raise RuntimeError("a Sampler can be started only once")
        if self.gpu_index is None:
            self._gpu_unavailable = GPU_NOT_REQUESTED
        else:
            # Before the window's clock starts: NVML init can take tens of milliseconds.
            self._gpu = self._open_gpu()
        self._t0 = self._clock()
        self._cpu.per_core_percent()  # baseline: the first sample's interval starts here
        self._cpu0_s = self._cpu.process_cpu_s()
        self._thread = threading.Thread(target=self._run, name="whichdevice-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> Telemetry:
        """Stop the thread, take the final sample and return the window's :class:`Telemetry`."""
        if self._thread is None:
            raise RuntimeError("Sampler.stop() called before start()")
        if self.telemetry is not None:
            return self.telemetry
        self._stop_event.set()
        self._thread.join()
        if self._thread_error is not None:
            self._close_gpu()
            raise RuntimeError("telemetry sampling thread failed") from self._thread_error
        self._tick()  # final sample: the series covers the window to its end
        cpu1_s = self._cpu.process_cpu_s()
        wall_s = self._clock() - self._t0
        self._close_gpu()

        have_gpu = self._gpu_unavailable is None
        self.telemetry = Telemetry(
            period_s=self.period_s,
            t_s=self._t_s,
            cpu_percent_per_core=self._cpu_series,
            process_cpu_s=max(0.0, cpu1_s - self._cpu0_s),
            wall_s=wall_s,
            gpu_index=self.gpu_index,
            gpu_util_percent=[g[0] for g in self._gpu_series] if have_gpu else None,
            gpu_mem_used_bytes=[g[1] for g in self._gpu_series] if have_gpu else None,
            gpu_sm_clock_mhz=[g[2] for g in self._gpu_series] if have_gpu else None,
            gpu_unavailable=self._gpu_unavailable,
            sampler_cost_s=statistics.median(self._tick_cost_s),
        )
        return self.telemetry

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- internals

    def _open_gpu(self) -> GpuSource | None:
        source = self._gpu_source_arg
        # An instance with read() is the source itself; a class (its read() is unbound)
        # or any other callable is a factory.
        if hasattr(source, "read") and not isinstance(source, type):
            return source  # type: ignore[return-value]
        try:
            return source(self.gpu_index)  # type: ignore[operator]
        except Exception as exc:  # never let GPU telemetry break a measurement
            self._gpu_unavailable = _UNAVAILABLE_PREFIX + _unavailable_reason(exc)
            return None

    def _close_gpu(self) -> None:
        close = getattr(self._gpu, "close", None)
        self._gpu = None
        if close is not None:
            try:
                close()
            except Exception:
                pass  # the data are already read; a failing NVML shutdown changes nothing

    def _run(self) -> None:
        try:
            k = 1
            while True:
                # Sleep until the next tick on the schedule start + k * period; a
                # late thread skips the ticks it missed instead of bursting.
                due = self._t0 + k * self.period_s
                if self._stop_event.wait(max(0.0, due - self._clock())):
                    return
                self._tick()
                k = max(k + 1, int((self._clock() - self._t0) / self.period_s) + 1)
        except BaseException as exc:  # reported by stop(): a CPU source must not fail silently
            self._thread_error = exc

    def _tick(self) -> None:
        # Runs on the sampling thread, and once more on the caller's thread in stop()
        # after the join, so the sources are never called concurrently.
        t_start = self._clock()
        cpu = list(self._cpu.per_core_percent())
        if self._gpu is not None:
            try:
                util, mem, sm_clock = self._gpu.read()
                self._gpu_series.append((float(util), int(mem), int(sm_clock)))
            except Exception as exc:
                # Keep the series parallel to t_s: drop the GPU part of the window.
                n = len(self._t_s)
                reason = f"read failed after {n} samples: {_unavailable_reason(exc)}"
                self._gpu_unavailable = _UNAVAILABLE_PREFIX + reason
                self._gpu_series.clear()
                self._close_gpu()
        t_end = self._clock()
        self._t_s.append(t_start - self._t0)
        self._cpu_series.append(cpu)
        self._tick_cost_s.append(t_end - t_start)


# --------------------------------------------------------------------------- summary


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
            math.fsum(wi * sample[c] for wi, sample in zip(w, t.cpu_percent_per_core)) / w_sum
            for c in range(n_cores)
        ]
    has_gpu = bool(n) and t.gpu_util_percent is not None
    return TelemetrySummary(
        n_samples=n,
        n_cores=len(per_core),
        cpu_mean_percent=statistics.fmean(per_core) if per_core else None,
        cpu_per_core_mean_percent=per_core,
        # The tolerance keeps a core that read exactly 90 % in every sample saturated
        # although its weighted mean may round to 89.99999999999999.
        cores_saturated=sum(1 for p in per_core if p >= CORE_SATURATED_PERCENT - _ROUNDING_PERCENT),
        process_cpu_cores=t.process_cpu_s / t.wall_s if t.wall_s > 0 else None,
        wall_s=t.wall_s,
        gpu_index=t.gpu_index,
        gpu_util_mean_percent=statistics.fmean(t.gpu_util_percent) if has_gpu else None,  # type: ignore[arg-type]
        gpu_util_median_percent=statistics.median(t.gpu_util_percent) if has_gpu else None,  # type: ignore[arg-type]
        gpu_mem_max_bytes=max(t.gpu_mem_used_bytes) if has_gpu else None,  # type: ignore[arg-type]
        gpu_sm_clock_median_mhz=float(statistics.median(t.gpu_sm_clock_mhz)) if has_gpu else None,  # type: ignore[arg-type]
        gpu_unavailable=t.gpu_unavailable,
    )


def describe(summary: TelemetrySummary) -> str:
    """One terminal line, e.g. ``GPU busy 23 %, CPU 2 of 16 cores saturated (mean 41 %)``.

    When GPU telemetry was asked for but could not be had, the reason is appended; when
    it was not asked for (a CPU window) the GPU is not mentioned.
    """
    if summary.cpu_mean_percent is None:
        cpu = "CPU not sampled"
    else:
        cpu = (
            f"CPU {summary.cores_saturated} of {summary.n_cores} cores saturated"
            f" (mean {summary.cpu_mean_percent:.0f} %)"
        )
    if summary.gpu_util_mean_percent is not None:
        return f"GPU busy {summary.gpu_util_mean_percent:.0f} %, {cpu}"
    if summary.gpu_unavailable and summary.gpu_unavailable != GPU_NOT_REQUESTED:
        return f"{cpu}; {summary.gpu_unavailable}"
    return cpu


# --------------------------------------------------------------------------- verdict inputs


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


def input_threads_saturated(summary: TelemetrySummary, n_input_threads: int) -> bool:
    """True when enough cores were saturated to account for ``n_input_threads`` busy threads.

    Per-thread utilization cannot be attributed to "input" threads from outside the
    framework, so this uses the per-core view: ``n`` always-runnable threads keep
    ``min(n, n_cores)`` cores at or above :data:`CORE_SATURATED_PERCENT` (the 90 %
    threshold is this module's own choice, see that constant). Trade-off: the count is
    machine-wide, so another busy process also counts (it starves the input threads
    just the same), and a thread that migrates between otherwise idle cores spreads its
    load and may count on none.
    """
    if n_input_threads < 1:
        raise ValueError(f"n_input_threads must be >= 1, got {n_input_threads!r}")
    if summary.n_cores == 0:
        return False
    return summary.cores_saturated >= min(n_input_threads, summary.n_cores)


def pipeline_cpu_bound(summary: TelemetrySummary) -> bool | None:
    """True when every CPU core was saturated while the GPU idled.

    "Saturated" is :data:`CORE_SATURATED_PERCENT` (this module's choice); "idled" is
    below :data:`GPU_UNDERFED_PERCENT`, the PyTorch profiler plugin's low-utilization
    rule (kineto tb_plugin profiler/data.py, ``gpu_utilization < 0.5``). Together they
    are the issue's symptom of an input pipeline the CPU cannot keep up with. ``None``
    when there are no GPU data (a CPU window, or NVML unavailable).
    """
    underfed = gpu_underfed(summary)
    if underfed is None:
        return None
    return underfed and input_threads_saturated(summary, max(1, summary.n_cores))
