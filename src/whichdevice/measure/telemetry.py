"""Utilization telemetry sampled beside a steady-state timing window.

A :class:`Sampler` runs a daemon thread that, every ``period_s`` seconds, reads

* per-core CPU utilization (busy % of each logical core since the previous reading,
  the same formula as ``psutil.cpu_percent(percpu=True)``),
* on NVIDIA GPUs, through NVML (``nvidia-ml-py``, imported as ``pynvml``): GPU
  utilization, device memory used and SM clock,

and, once for the whole window, the CPU seconds of this process (user + system, all
threads) and of its child processes, so the rest of the machine's busy time is known to be
other programs' (torch's own 16 threads saturating 16 cores is no busy machine). The result is a frozen ``core.telemetry.Telemetry`` (the raw series, for records
and plots); ``analysis.utilization`` summarizes it and turns it into verdict inputs.

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
  each sample's interval (see ``analysis.utilization.summarize``): the mean equals the busy fraction of
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

import statistics
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, cast

import psutil

from whichdevice.core.telemetry import GPU_NOT_REQUESTED, Telemetry

__all__ = [
    "DEFAULT_PERIOD_S",
    "CpuSource",
    "GpuSource",
    "NvmlGpuSource",
    "PsutilCpuSource",
    "Sampler",
]

#: Default sampling period. 50 ms gives ~20 samples in a 1 s timing window (enough for
#: a mean and a strip plot) at a cost of well under 1 % of one core.
DEFAULT_PERIOD_S = 0.05

_UNAVAILABLE_PREFIX = "GPU telemetry unavailable: "


# --------------------------------------------------------------------------- sources


class CpuSource(Protocol):
    """What the sampler reads CPU utilization from (injectable for tests)."""

    def per_core_percent(self) -> list[float]:
        """Busy % of each core since the previous call (the first call sets the baseline)."""
        ...

    def process_cpu_s(self) -> float:
        """CPU seconds this process has used so far (user + system, all threads)."""
        ...

    # Optional: ``children_cpu_s() -> float``, the CPU seconds this process's children have
    # used so far. A source without it records ``Telemetry.children_cpu_s = None``.


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
    busy: float = round(min(100.0, max(0.0, 100.0 * busy_s / all_s)), 1)
    return busy


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

    def children_cpu_s(self) -> float:
        """User + system seconds of this process's descendants: the live ones (psutil, 10 ms
        ticks; one that ends meanwhile is skipped) plus the ended ones this process waited for
        (``os.times``). Read twice per window, at its start and its end, so a child that ends
        inside the window counts from its live reading to its end."""
        import os

        done = os.times()
        total = done.children_user + done.children_system
        try:
            children = psutil.Process().children(recursive=True)
        except psutil.Error:
            return total
        for child in children:
            try:
                t = child.cpu_times()
            except psutil.Error:  # ended, a zombie, or not ours to read
                continue
            total += t.user + t.system
        return total


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
        return "pynvml not installed (pip install 'whichdevice[gpu]')"
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
        self._children0_s: float | None = None
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
        self._children0_s = self._children_cpu_s()
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
        children1_s = self._children_cpu_s()
        wall_s = self._clock() - self._t0
        self._close_gpu()

        have_gpu = self._gpu_unavailable is None
        self.telemetry = Telemetry(
            period_s=self.period_s,
            t_s=self._t_s,
            cpu_percent_per_core=self._cpu_series,
            process_cpu_s=max(0.0, cpu1_s - self._cpu0_s),
            children_cpu_s=(
                max(0.0, children1_s - self._children0_s)
                if children1_s is not None and self._children0_s is not None
                else None
            ),
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

    def _children_cpu_s(self) -> float | None:
        read = getattr(self._cpu, "children_cpu_s", None)  # optional in a CpuSource
        return float(read()) if read is not None else None

    def _open_gpu(self) -> GpuSource | None:
        source = self._gpu_source_arg
        # An instance with read() is the source itself; a class (its read() is unbound)
        # or any other callable is a factory.
        if hasattr(source, "read") and not isinstance(source, type):
            return cast(GpuSource, source)
        assert self.gpu_index is not None  # _open_gpu runs only when a GPU is watched
        try:
            return cast(Callable[[int], GpuSource], source)(self.gpu_index)
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
