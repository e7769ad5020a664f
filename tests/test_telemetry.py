"""Tests of the utilization telemetry (core.telemetry schema, measure.telemetry sampler,
analysis.utilization summary and verdicts): no TensorFlow, no GPU, a few seconds in all."""

from __future__ import annotations

import builtins
import json
import sys
import threading
import time
from pathlib import Path

import pydantic
import pytest

from whichdevice.analysis.utilization import (
    CORE_SATURATED_PERCENT,
    GPU_UNDERFED_PERCENT,
    gpu_underfed,
    summarize,
)
from whichdevice.core.telemetry import GPU_NOT_REQUESTED, Telemetry, TelemetrySummary
from whichdevice.measure import telemetry as tm
from whichdevice.measure.telemetry import Sampler
from whichdevice.present.tables import telemetry_text

DATA = Path(__file__).parent / "data"

# Costs in binary fractions so sums of fake-clock times are exact in floating point.
CPU_READ_COST_S = 1 / 1024
GPU_READ_COST_S = 1 / 512


class FakeClock:
    """A clock that moves only when a fake source says a reading took time."""

    def __init__(self, start_s: float = 100.0) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s


class ScriptedCpu:
    """Per-core readings from a script; the first call (the sampler's baseline) is script[0]."""

    def __init__(self, clock: FakeClock, script: list[list[float]], process_cpu_s: list[float]):
        self.clock = clock
        self.script = script
        self.calls = 0
        self.process_script = list(process_cpu_s)
        self.read_enough = threading.Event()
        self.wanted_reads = 0

    def per_core_percent(self) -> list[float]:
        self.clock.now_s += CPU_READ_COST_S
        reading = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        if self.wanted_reads and self.calls >= self.wanted_reads:
            self.read_enough.set()
        return reading

    def process_cpu_s(self) -> float:
        return self.process_script.pop(0)


class ScriptedGpu:
    def __init__(self, clock: FakeClock, script: list[tuple[float, int, int]]):
        self.clock = clock
        self.script = script
        self.calls = 0
        self.closed = False

    def read(self) -> tuple[float, int, int]:
        self.clock.now_s += GPU_READ_COST_S
        reading = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return reading

    def close(self) -> None:
        self.closed = True


def cpu_script(n: int) -> list[list[float]]:
    return [[float(i), float(100 - i)] for i in range(n)]


def gpu_script(n: int) -> list[tuple[float, int, int]]:
    return [(float(10 * i % 100), 1_000_000 * (i + 1), 1000 + i) for i in range(n)]


# --------------------------------------------------------------------------- fake sources


def test_single_window_shorter_than_a_period_is_exact():
    # A period far longer than the window: the thread never ticks, stop() takes the one
    # final sample, and every number follows from the fake clock and scripts.
    clock = FakeClock()
    cpu = ScriptedCpu(clock, [[0.0, 0.0], [40.0, 95.5]], process_cpu_s=[7.0, 7.25])
    gpu = ScriptedGpu(clock, [(30.0, 123_456_789, 1410)])
    s = Sampler(3600.0, gpu_index=0, cpu_source=cpu, gpu_source=gpu, clock=clock)
    s.start()
    clock.now_s += 0.5  # the timed window
    t = s.stop()

    assert cpu.calls == 2  # baseline + final sample
    assert t.t_s == [0.5 + CPU_READ_COST_S]  # baseline read happened after t0
    assert t.cpu_percent_per_core == [[40.0, 95.5]]
    assert t.gpu_util_percent == [30.0]
    assert t.gpu_mem_used_bytes == [123_456_789]
    assert t.gpu_sm_clock_mhz == [1410]
    assert t.gpu_unavailable is None
    assert t.gpu_index == 0
    assert t.process_cpu_s == 0.25
    assert t.wall_s == 0.5 + 2 * CPU_READ_COST_S + GPU_READ_COST_S
    assert t.sampler_cost_s == CPU_READ_COST_S + GPU_READ_COST_S
    assert t.period_s == 3600.0
    assert gpu.closed  # a source with close() is closed at stop()
    assert s.stop() is t  # idempotent


def test_background_samples_pass_values_through_in_order():
    clock = FakeClock()
    cpu = ScriptedCpu(clock, cpu_script(200), process_cpu_s=[1.0, 1.5])
    cpu.wanted_reads = 6  # baseline + 5 samples from the thread
    gpu = ScriptedGpu(clock, gpu_script(200))
    with Sampler(0.005, gpu_index=1, cpu_source=cpu, gpu_source=gpu, clock=clock) as s:
        assert cpu.read_enough.wait(10.0), "the sampling thread did not tick"
    t = s.telemetry
    assert t is not None

    n = len(t.t_s)
    assert n >= 6  # at least 5 thread ticks + the final one
    assert cpu.calls == n + 1  # every reading but the baseline is a sample
    assert t.cpu_percent_per_core == cpu_script(200)[1 : n + 1]
    assert t.gpu_util_percent == [g[0] for g in gpu_script(200)[:n]]
    assert t.gpu_mem_used_bytes == [g[1] for g in gpu_script(200)[:n]]
    assert t.gpu_sm_clock_mhz == [g[2] for g in gpu_script(200)[:n]]
    # The fake clock only moves inside readings: each tick costs exactly one CPU and
    # one GPU read, and sample i is taken after the baseline and i earlier ticks.
    tick_s = CPU_READ_COST_S + GPU_READ_COST_S
    assert t.sampler_cost_s == pytest.approx(tick_s, rel=1e-12)
    assert t.t_s == pytest.approx([CPU_READ_COST_S + i * tick_s for i in range(n)], rel=1e-12)
    assert t.wall_s == pytest.approx(CPU_READ_COST_S + n * tick_s, rel=1e-12)
    assert t.process_cpu_s == 0.5
    assert t.gpu_index == 1


def test_real_clock_never_samples_faster_than_the_period():
    # Ticks are scheduled on start + k * period and late ones are skipped, so the count
    # is bounded above by wall / period + 1 (the final sample) however loaded the box.
    cpu = ScriptedCpu(FakeClock(), cpu_script(1000), process_cpu_s=[0.0, 0.0])
    with Sampler(0.02, cpu_source=cpu) as s:
        time.sleep(0.2)
    t = s.telemetry
    assert 1 <= len(t.t_s) <= t.wall_s / 0.02 + 1
    assert t.t_s == sorted(t.t_s)


def test_no_gpu_requested_says_so_and_never_opens_a_gpu_source():
    def factory(index: int):
        raise AssertionError("the GPU source must not be opened when no GPU is asked for")

    clock = FakeClock()
    cpu = ScriptedCpu(clock, cpu_script(3), process_cpu_s=[0.0, 0.0])
    with Sampler(3600.0, cpu_source=cpu, gpu_source=factory, clock=clock) as s:
        clock.now_s += 1.0
    t = s.telemetry
    assert t.gpu_index is None
    assert t.gpu_unavailable == GPU_NOT_REQUESTED
    assert t.gpu_util_percent is t.gpu_mem_used_bytes is t.gpu_sm_clock_mhz is None
    assert t.sampler_cost_s == CPU_READ_COST_S


def test_failing_cpu_source_is_reported_not_swallowed():
    class Broken(ScriptedCpu):
        def per_core_percent(self):
            if self.calls >= 1:
                raise OSError("/proc/stat vanished")
            return super().per_core_percent()

    s = Sampler(0.001, cpu_source=Broken(FakeClock(), cpu_script(2), [0.0, 0.0]))
    s.start()
    time.sleep(0.05)
    with pytest.raises(RuntimeError, match="sampling thread failed"):
        s.stop()


def test_sampler_can_start_only_once_and_stop_needs_start():
    cpu = ScriptedCpu(FakeClock(), cpu_script(3), process_cpu_s=[0.0, 0.0])
    s = Sampler(3600.0, cpu_source=cpu, clock=FakeClock())
    with pytest.raises(RuntimeError, match="before start"):
        s.stop()
    s.start()
    with pytest.raises(RuntimeError, match="only once"):
        s.start()
    s.stop()


@pytest.mark.parametrize("bad", [0, 0.0, -0.05, float("nan")])
def test_invalid_period_is_rejected_at_construction(bad):
    with pytest.raises(ValueError, match="period_s"):
        Sampler(bad)


def test_negative_gpu_index_is_rejected():
    with pytest.raises(ValueError, match="gpu_index"):
        Sampler(gpu_index=-1)


# --------------------------------------------------------------------------- real psutil path


def test_real_psutil_path_while_a_thread_is_busy():
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        with Sampler(0.05) as s:
            time.sleep(0.3)
    finally:
        stop.set()
        spinner.join()
    t = s.telemetry
    assert len(t.t_s) >= 1
    assert all(0.0 <= v <= 100.0 for sample in t.cpu_percent_per_core for v in sample)
    assert {len(sample) for sample in t.cpu_percent_per_core} == {len(t.cpu_percent_per_core[0])}
    assert t.process_cpu_s > 0.0
    assert t.wall_s >= 0.3
    assert t.sampler_cost_s > 0.0
    summary = summarize(t)
    # The spinning thread keeps about one core busy.
    assert summary.cpu_mean_percent > 0.0
    assert summary.process_cpu_cores > 0.2


def test_psutil_source_does_not_share_state_with_psutil_cpu_percent():
    # psutil.cpu_percent keeps its previous reading in module state; our source keeps
    # its own, so other callers of cpu_percent cannot shorten our intervals.
    import psutil

    a, b = tm.PsutilCpuSource(), tm.PsutilCpuSource()
    assert a.per_core_percent() == [0.0] * psutil.cpu_count()  # baseline call
    b.per_core_percent()
    psutil.cpu_percent(percpu=True)
    time.sleep(0.05)
    for reading in (a.per_core_percent(), b.per_core_percent()):
        assert len(reading) == psutil.cpu_count()
        assert all(0.0 <= v <= 100.0 for v in reading)


def test_busy_percent_matches_psutils_formula():
    import psutil

    fields = psutil.cpu_times()._fields
    zero = dict.fromkeys(fields, 0.0)
    cls = type(psutil.cpu_times())
    before = cls(**zero)
    after = cls(**{**zero, "user": 3.0, "system": 1.0, "idle": 4.0, **({"iowait": 2.0} if "iowait" in fields else {})})
    expected = 40.0 if "iowait" in fields else 50.0
    assert tm._busy_percent(before, after) == expected
    assert tm._busy_percent(before, before) is None  # no time accounted: no reading


def test_busy_percent_agrees_with_psutil_on_real_readings():
    import psutil

    if not (hasattr(psutil, "_cpu_busy_time") and hasattr(psutil, "_cpu_tot_time")):
        pytest.skip("psutil's private helpers moved; the formula test above still holds")
    t1 = psutil.cpu_times(percpu=True)
    time.sleep(0.05)
    t2 = psutil.cpu_times(percpu=True)
    for b, a in zip(t1, t2):
        ours = tm._busy_percent(b, a)
        theirs = psutil._cpu_busy_time(a) - psutil._cpu_busy_time(b)
        total = psutil._cpu_tot_time(a) - psutil._cpu_tot_time(b)
        if ours is not None and total > 0:
            assert ours == pytest.approx(100 * theirs / total, abs=0.051)


def test_psutil_source_holds_a_core_whose_counters_did_not_move(monkeypatch):
    import psutil

    cls = type(psutil.cpu_times())
    zero = dict.fromkeys(cls._fields, 0.0)

    def times(user_idle):
        return [cls(**{**zero, "user": u, "idle": i}) for u, i in user_idle]

    readings = iter(
        [
            times([(0.0, 0.0), (0.0, 0.0)]),  # baseline
            times([(0.01, 0.0), (0.0, 0.01)]),  # core 0 busy, core 1 idle
            times([(0.01, 0.0), (0.0, 0.015)]),  # core 0: no tick accounted yet
            times([(0.02, 0.0), (0.0, 0.02)]),  # core 0: one more busy tick
        ]
    )
    monkeypatch.setattr(psutil, "cpu_times", lambda percpu: next(readings))
    src = tm.PsutilCpuSource()
    assert src.per_core_percent() == [0.0, 0.0]
    assert src.per_core_percent() == [100.0, 0.0]
    assert src.per_core_percent() == [100.0, 0.0]  # held, not psutil's 0.0
    assert src.per_core_percent() == [100.0, 0.0]


# --------------------------------------------------------------------------- NVML missing


def _cpu_only_sampler(gpu_source=None) -> Sampler:
    clock = FakeClock()
    cpu = ScriptedCpu(clock, cpu_script(3), process_cpu_s=[0.0, 0.001])
    kwargs = {} if gpu_source is None else {"gpu_source": gpu_source}
    return Sampler(3600.0, gpu_index=0, cpu_source=cpu, clock=clock, **kwargs)


def test_gpu_source_factory_that_raises_gives_a_reason_not_an_exception():
    class NVMLError_LibraryNotFound(Exception):  # named like pynvml's
        pass

    def factory(index: int):
        raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")

    with _cpu_only_sampler(factory) as s:
        pass
    t = s.telemetry
    assert t.gpu_unavailable == "GPU telemetry unavailable: NVML library not found (no NVIDIA driver)"
    assert t.gpu_util_percent is None
    assert t.cpu_percent_per_core == [[1.0, 99.0]]  # CPU telemetry is untouched
    assert telemetry_text(summarize(t)) == (
        "CPU 1 of 2 cores saturated (mean 50 %: this process 0.5 cores, the rest 0.5); "
        "GPU telemetry unavailable: NVML library not found (no NVIDIA driver)"
    )


def test_any_factory_error_is_reported_with_its_message():
    def factory(index: int):
        raise RuntimeError(f"no GPU at NVML index {index} (0 visible)")

    with _cpu_only_sampler(factory) as s:
        pass
    assert s.telemetry.gpu_unavailable == "GPU telemetry unavailable: no GPU at NVML index 0 (0 visible)"


def test_pynvml_not_importable(monkeypatch):
    real_import = builtins.__import__

    def no_pynvml(name, *args, **kwargs):
        if name == "pynvml":
            raise ModuleNotFoundError("No module named 'pynvml'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    with _cpu_only_sampler() as s:  # default source: NvmlGpuSource
        pass
    t = s.telemetry
    assert t.gpu_unavailable == "GPU telemetry unavailable: pynvml not installed (pip install 'whichdevice[gpu]')"
    assert len(t.t_s) == 1


def test_real_nvml_path_on_this_machine_never_raises():
    # Whatever this machine has (no pynvml, pynvml without a driver, or a real GPU),
    # asking for GPU 0 gives either GPU data or a reason.
    with Sampler(0.05, gpu_index=0) as s:
        time.sleep(0.06)
    t = s.telemetry
    if t.gpu_unavailable is None:
        assert t.gpu_util_percent is not None and len(t.gpu_util_percent) == len(t.t_s)
    else:
        assert t.gpu_unavailable.startswith("GPU telemetry unavailable: ")
        assert t.gpu_util_percent is None


def test_bad_index_on_a_working_nvml_is_a_reason(monkeypatch):
    class FakePynvml:
        NVML_CLOCK_SM = 1
        shutdowns = 0

        @staticmethod
        def nvmlInit():
            pass

        @classmethod
        def nvmlShutdown(cls):
            cls.shutdowns += 1

        @staticmethod
        def nvmlDeviceGetCount():
            return 1

    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml)
    s = _cpu_only_sampler()
    s.gpu_index = 3
    with s:
        pass
    assert s.telemetry.gpu_unavailable == "GPU telemetry unavailable: no GPU at NVML index 3 (1 visible)"
    assert FakePynvml.shutdowns == 1  # NVML released after the failed open


def test_nvml_source_reads_through_pynvml(monkeypatch):
    class Rates:
        gpu = 87

    class Mem:
        used = 5 * 2**30

    class FakePynvml:
        NVML_CLOCK_SM = 1

        @staticmethod
        def nvmlInit():
            pass

        @staticmethod
        def nvmlShutdown():
            pass

        @staticmethod
        def nvmlDeviceGetCount():
            return 2

        @staticmethod
        def nvmlDeviceGetHandleByIndex(i):
            return ("handle", i)

        @staticmethod
        def nvmlDeviceGetUtilizationRates(h):
            return Rates

        @staticmethod
        def nvmlDeviceGetMemoryInfo(h):
            return Mem

        @staticmethod
        def nvmlDeviceGetClockInfo(h, kind):
            assert kind == FakePynvml.NVML_CLOCK_SM
            return 1980

    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml)
    s = _cpu_only_sampler()
    s.gpu_index = 1
    with s:
        pass
    t = s.telemetry
    assert t.gpu_unavailable is None
    assert (t.gpu_util_percent, t.gpu_mem_used_bytes, t.gpu_sm_clock_mhz) == ([87.0], [5 * 2**30], [1980])


def test_gpu_read_failing_mid_window_drops_gpu_series_keeps_cpu():
    clock = FakeClock()

    class Flaky(ScriptedGpu):
        def read(self):
            if self.calls >= 2:
                raise RuntimeError("GPU is lost")
            return super().read()

    gpu = Flaky(clock, gpu_script(5))
    cpu = ScriptedCpu(clock, cpu_script(50), process_cpu_s=[0.0, 0.0])
    cpu.wanted_reads = 5
    with Sampler(0.002, gpu_index=0, cpu_source=cpu, gpu_source=gpu, clock=clock) as s:
        assert cpu.read_enough.wait(10.0)
    t = s.telemetry
    assert t.gpu_unavailable == "GPU telemetry unavailable: read failed after 2 samples: GPU is lost"
    assert t.gpu_util_percent is None
    assert len(t.cpu_percent_per_core) == len(t.t_s) >= 4
    assert gpu.closed


# --------------------------------------------------------------------------- summaries


def make_telemetry(**overrides) -> Telemetry:
    fields = dict(
        period_s=0.05,
        t_s=[0.05, 0.10, 0.12],
        cpu_percent_per_core=[[100.0, 20.0], [90.0, 40.0], [80.0, 100.0]],
        process_cpu_s=0.3,
        wall_s=0.125,
        gpu_index=0,
        gpu_util_percent=[10.0, 60.0, 30.0],
        gpu_mem_used_bytes=[1_000, 3_000, 2_000],
        gpu_sm_clock_mhz=[1400, 1500, 1601],
        gpu_unavailable=None,
        sampler_cost_s=0.0001,
    )
    fields.update(overrides)
    return Telemetry(**fields)


def test_summary_math_is_interval_weighted_for_cpu():
    s = summarize(make_telemetry())
    # Intervals 0.05, 0.05, 0.02 -> weights 5 : 5 : 2 (of 12).
    core0 = (5 * 100 + 5 * 90 + 2 * 80) / 12  # 92.5
    core1 = (5 * 20 + 5 * 40 + 2 * 100) / 12  # 41.666...
    assert s.cpu_per_core_mean_percent == pytest.approx([core0, core1], rel=1e-12)
    assert s.cpu_mean_percent == pytest.approx((core0 + core1) / 2, rel=1e-12)
    assert s.cores_saturated == 1
    assert s.n_cores == 2
    assert s.n_samples == 3
    assert s.process_cpu_cores == pytest.approx(0.3 / 0.125)
    assert s.wall_s == 0.125
    assert s.gpu_util_mean_percent == pytest.approx(100 / 3)
    assert s.gpu_util_median_percent == 30.0
    assert s.gpu_mem_max_bytes == 3_000
    assert s.gpu_sm_clock_median_mhz == 1500.0
    assert s.gpu_index == 0 and s.gpu_unavailable is None


def test_summary_median_of_even_sm_clock_series_and_equal_intervals():
    s = summarize(
        make_telemetry(
            t_s=[0.05, 0.10],
            cpu_percent_per_core=[[90.0], [89.0]],
            gpu_util_percent=[0.0, 100.0],
            gpu_mem_used_bytes=[1, 2],
            gpu_sm_clock_mhz=[1400, 1401],
        )
    )
    assert s.cpu_per_core_mean_percent == pytest.approx([89.5], rel=1e-12)
    assert s.cores_saturated == 0  # 89.5 < 90
    assert s.gpu_sm_clock_median_mhz == 1400.5
    assert s.gpu_util_median_percent == 50.0


def test_summary_of_an_empty_series():
    s = summarize(
        make_telemetry(
            t_s=[],
            cpu_percent_per_core=[],
            gpu_util_percent=None,
            gpu_mem_used_bytes=None,
            gpu_sm_clock_mhz=None,
            gpu_unavailable=GPU_NOT_REQUESTED,
            gpu_index=None,
            wall_s=0.0,
        )
    )
    assert (s.n_samples, s.n_cores, s.cores_saturated) == (0, 0, 0)
    assert s.cpu_mean_percent is None and s.cpu_per_core_mean_percent == []
    assert s.process_cpu_cores is None
    assert s.gpu_util_mean_percent is None
    assert telemetry_text(s) == "CPU not sampled"


def test_frozen_clock_falls_back_to_plain_means():
    s = summarize(make_telemetry(t_s=[0.0, 0.0, 0.0]))
    assert s.cpu_per_core_mean_percent == pytest.approx([90.0, 160 / 3])


def test_recorded_series_from_this_machine():
    # Recorded on the project's 2-core box: one pure-Python thread spinning for the
    # whole 1 s window, the main thread asleep, GPU 0 asked for on a machine without
    # an NVIDIA driver. See tests/data/README_telemetry.md.
    raw = json.loads((DATA / "telemetry_series.json").read_text())
    t = Telemetry.model_validate(raw)
    s = summarize(t)
    assert s.n_samples == 21
    assert s.n_cores == 2
    assert s.cpu_per_core_mean_percent == pytest.approx([99.1947504805056, 1.567671095795217], rel=1e-9)
    assert s.cpu_mean_percent == pytest.approx(50.38121078815041, rel=1e-9)
    assert s.cores_saturated == 1
    assert s.process_cpu_cores == pytest.approx(0.9943167697154259, rel=1e-9)
    assert s.gpu_unavailable == "GPU telemetry unavailable: NVML library not found (no NVIDIA driver)"
    assert telemetry_text(s) == (
        "CPU 1 of 2 cores saturated (mean 50 %: this process 1.0 cores, the rest 0.0); "
        "GPU telemetry unavailable: NVML library not found (no NVIDIA driver)"
    )
    assert gpu_underfed(s) is None
    # Round trip: what goes into the records comes back identical.
    assert Telemetry.model_validate_json(t.model_dump_json()) == t


def test_telemetry_is_frozen_and_strict():
    t = make_telemetry()
    with pytest.raises(pydantic.ValidationError):
        t.wall_s = 1.0  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        make_telemetry(surprise=1)
    with pytest.raises(pydantic.ValidationError, match="cpu_percent_per_core"):
        make_telemetry(cpu_percent_per_core=[[1.0]])
    with pytest.raises(pydantic.ValidationError, match="all present or all None"):
        make_telemetry(gpu_sm_clock_mhz=None)
    with pytest.raises(pydantic.ValidationError, match="reason"):
        make_telemetry(gpu_util_percent=None, gpu_mem_used_bytes=None, gpu_sm_clock_mhz=None)
    with pytest.raises(pydantic.ValidationError, match="must be None"):
        make_telemetry(gpu_unavailable="GPU telemetry unavailable: x")


# --------------------------------------------------------------------------- describe


def summary(**overrides) -> TelemetrySummary:
    fields = dict(
        n_samples=20,
        n_cores=16,
        cpu_mean_percent=41.2,
        cpu_per_core_mean_percent=[41.2] * 16,
        cores_saturated=2,
        process_cpu_cores=1.5,
        wall_s=1.0,
        gpu_index=0,
        gpu_util_mean_percent=23.4,
        gpu_util_median_percent=20.0,
        gpu_mem_max_bytes=2**30,
        gpu_sm_clock_median_mhz=1980.0,
        gpu_unavailable=None,
    )
    fields.update(overrides)
    return TelemetrySummary(**fields)


NO_GPU = dict(
    gpu_util_mean_percent=None,
    gpu_util_median_percent=None,
    gpu_mem_max_bytes=None,
    gpu_sm_clock_median_mhz=None,
)


def test_describe_gpu_window():
    assert telemetry_text(summary()) == "GPU busy 23 %, CPU 2 of 16 cores saturated (mean 41 %)"


def test_describe_gpu_unavailable():
    s = summary(
        n_cores=2, cores_saturated=2, cpu_mean_percent=96.6, gpu_unavailable="GPU telemetry unavailable: r", **NO_GPU
    )
    assert telemetry_text(s) == "CPU 2 of 2 cores saturated (mean 97 %); GPU telemetry unavailable: r"


def test_describe_cpu_window_does_not_mention_the_gpu():
    s = summary(gpu_index=None, gpu_unavailable=GPU_NOT_REQUESTED, **NO_GPU)
    assert telemetry_text(s) == "CPU 2 of 16 cores saturated (mean 41 %)"


# --------------------------------------------------------------------------- verdict inputs


def test_thresholds_are_the_documented_ones():
    assert GPU_UNDERFED_PERCENT == 50.0
    assert CORE_SATURATED_PERCENT == 90.0
    assert gpu_underfed.__doc__


@pytest.mark.parametrize(
    ("util", "expected"),
    [(0.0, True), (49.999, True), (50.0, False), (50.001, False), (100.0, False), (None, None)],
)
def test_gpu_underfed_boundary(util, expected):
    assert gpu_underfed(summary(gpu_util_mean_percent=util)) is expected


def test_core_at_exactly_the_threshold_in_every_sample_is_saturated():
    # Unequal intervals make the weighted mean of 90, 90, 90 round below 90 in floats.
    t = make_telemetry(t_s=[0.303, 0.67, 0.83], cpu_percent_per_core=[[90.0], [90.0], [90.0]])
    s = summarize(t)
    assert s.cpu_per_core_mean_percent[0] == pytest.approx(90.0, rel=1e-15)
    assert s.cores_saturated == 1


def test_saturated_core_boundary_through_summarize():
    cores = [[89.99], [90.0], [90.01], [100.0]]
    t = make_telemetry(
        t_s=[0.05],
        cpu_percent_per_core=[[c[0] for c in cores]],
        gpu_util_percent=[1.0],
        gpu_mem_used_bytes=[1],
        gpu_sm_clock_mhz=[1],
    )
    assert summarize(t).cores_saturated == 3


def test_module_does_not_import_tensorflow_or_pynvml_eagerly():
    import subprocess

    code = (
        "import sys, whichdevice.analysis.utilization, whichdevice.measure.telemetry as t; "
        "assert 'tensorflow' not in sys.modules; assert 'pynvml' not in sys.modules"
    )
    import whichdevice

    env_path = str(Path(whichdevice.__file__).resolve().parents[1])  # the folder holding the package
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": env_path}, timeout=60)
