"""``diagnose SCRIPT``'s cases carry the utilization window of the script process that measured
them, as ``run``'s carry their steady window's: a spread caused by other programs is said to be
theirs ("other programs kept the machine busy") on the script path too."""

from __future__ import annotations

import contextlib
import signal

import subprocess
import sys
import time

from conftest import make_record

from whichdevice.analysis import quality
from whichdevice.core.records import CaseResult, CaseSpec, Timing
from whichdevice.core.telemetry import GPU_NOT_REQUESTED, Telemetry
from whichdevice.core.timing import TimingPolicy
from whichdevice.present.firstscreen import aggregate_warnings
from whichdevice.workloads import script, train

UNEVEN = [0.010, 0.030, 0.011, 0.029, 0.010, 0.031, 0.012, 0.030, 0.010, 0.028, 0.011, 0.030]


def _busy(n_cores: int = 2) -> Telemetry:
    """Every core saturated, this process and its children using a tenth of one."""
    return Telemetry(
        period_s=0.5,
        t_s=[0.5, 1.0],
        cpu_percent_per_core=[[100.0] * n_cores, [100.0] * n_cores],
        process_cpu_s=0.05,
        children_cpu_s=0.05,
        wall_s=1.0,
        gpu_index=None,
        gpu_util_percent=None,
        gpu_mem_used_bytes=None,
        gpu_sm_clock_mhz=None,
        gpu_unavailable=GPU_NOT_REQUESTED,
        sampler_cost_s=1e-4,
    )


class _Window:
    """A sampler that says what it was given and returns a fixed window."""

    periods: list[float | None] = []

    def __init__(self, period_s: float | None = None) -> None:
        _Window.periods.append(period_s)
        self.started = False

    def start(self) -> _Window:
        self.started = True
        return self

    def stop(self) -> Telemetry:
        assert self.started
        return _busy()


def _spec(**more) -> CaseSpec:
    params = {"script": "train.py", "entry": "torch.optim.Optimizer.step", "kind": "loop", "batch": 32, **more}
    return CaseSpec(workload="train", framework="torch", device="CPU:0", params=params)


def _steps(samples=UNEVEN) -> Timing:
    return Timing(first_call_s=0.5, warmup_s=[0.5], samples_s=list(samples), number_per_sample=1, overhead_s=1e-9)


def test_a_script_case_carries_its_process_window_and_is_called_busy(monkeypatch):
    monkeypatch.setattr(script, "run_case", lambda spec, fw, policy, overhead_s: (_steps(), {"setup_s": 1.0}))
    _Window.periods.clear()
    policy = TimingPolicy(window=_Window)
    timing, metrics = train.run_case(_spec(), None, policy, 1e-9)  # type: ignore[arg-type]
    assert timing.telemetry == _busy() and metrics == {"setup_s": 1.0}
    assert _Window.periods == [train.SCRIPT_TELEMETRY_PERIOD_S]  # coarser than a steady window's
    record = make_record([CaseResult(spec=_spec(), status="ok", timing=timing, wall_s=2.0)], experiment="diagnose")
    warned = [w for w in quality.measurement_warnings(record) if w.kind == "uneven_steps"]
    assert warned and all(w.others_busy for w in warned)
    text = " ".join(g.text for g in aggregate_warnings(quality.measurement_warnings(record)))
    assert "other programs kept the machine busy" in text


def test_a_shared_script_process_gives_each_member_its_window_and_keeps_a_failure(monkeypatch):
    failed = RuntimeError("the script process ended early")
    monkeypatch.setattr(
        script, "time_group", lambda prepared, fw, policy, overhead_s, before=None: [(_steps(), {}), failed]
    )
    policy = TimingPolicy(window=lambda: _Window())  # a factory that takes no period: its own
    got = train.time_group([_spec(), _spec(batch=64)], None, policy, 1e-9)
    assert got[0][0].telemetry == _busy() and got[1] is failed


def test_no_window_no_telemetry(monkeypatch):
    monkeypatch.setattr(script, "run_case", lambda spec, fw, policy, overhead_s: (_steps(), {}))
    timing, _ = train.run_case(_spec(), None, TimingPolicy(window=None), 1e-9)  # type: ignore[arg-type]
    assert timing.telemetry is None


def test_a_real_sampler_sees_a_cpu_burner_as_other_programs(monkeypatch):
    """The measuring child's own sampler (measure/child.py's factory) over a script process
    that sleeps while another program burns every core: the others are busy, the script's own
    process is not counted as theirs."""
    import os

    from whichdevice.analysis import utilization
    from whichdevice.analysis.utilization import summarize
    from whichdevice.measure.telemetry import Sampler

    n = os.cpu_count() or 1
    burn = "import time\nt = time.time()\nwhile time.time() - t < 3: pass\n"
    # each burner started by a shell that exits at once, so it is no descendant of this process:
    # the sampler counts this process's descendants as the run's own children, and a burner
    # started by Popen was counted there (the test then passed only on a machine already busy)
    start = '"$0" -c "$1" >/dev/null 2>&1 & echo $!'
    burners = [
        int(
            subprocess.run(["sh", "-c", start, sys.executable, burn], capture_output=True, text=True, check=True).stdout
        )
        for _ in range(n)
    ]
    try:
        time.sleep(0.3)  # the burners running before the window opens

        def run_script(spec, fw, policy, overhead_s):  # the script's process, mostly waiting
            subprocess.run([sys.executable, "-c", "import time; time.sleep(1.2)"], check=True)
            return _steps(), {}

        monkeypatch.setattr(script, "run_case", run_script)
        policy = TimingPolicy(window=lambda period_s=None: Sampler(period_s or 0.05))
        timing, _ = train.run_case(_spec(), None, policy, 1e-9)  # type: ignore[arg-type]
    finally:
        for pid in burners:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert timing.telemetry is not None and timing.telemetry.period_s == train.SCRIPT_TELEMETRY_PERIOD_S
    summary = summarize(timing.telemetry)
    assert utilization.others_busy(summary) is True, summary
