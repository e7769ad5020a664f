""" "Warnings that mean what they say": a point "did not converge" only when its
interval is outside the target; "busy" only when other programs used the cores (not the
measured workload's own threads, not its child processes); the spread of one process is
"noisy", the gap between processes is the bimodal warning's; each kind's words fit every
framework. Checked on the recorded H200 run (a quiet, dedicated 16-core box) and the recorded
busy 2-core run, and on small synthetic records."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_record

from whichdevice.analysis import quality
from whichdevice.analysis import utilization
from whichdevice.analysis.utilization import summarize
from whichdevice.core.records import CaseResult, CaseSpec, Timing, load_run
from whichdevice.core.telemetry import GPU_NOT_REQUESTED, Telemetry
from whichdevice.present import notes
from whichdevice.present.firstscreen import aggregate_warnings
from whichdevice.present.tables import telemetry_text

DATA = Path(__file__).parent / "data"
H200_RUN = DATA / "h200" / "run.json"  # a quiet, dedicated 16-core H200 machine
BUSY = DATA / "run_cpu_2core_busy.json"  # a 2-core VM another program kept busy
TARGET = 0.05


def _telemetry(n_cores: int, busy_cores: float, process_cores: float, children_cores: float | None = None):
    """One 1 s window: every core ``busy_cores / n_cores`` busy, this process and its children
    using what they are given."""
    pct = 100.0 * busy_cores / n_cores
    return Telemetry(
        period_s=0.05,
        t_s=[0.5, 1.0],
        cpu_percent_per_core=[[pct] * n_cores, [pct] * n_cores],
        process_cpu_s=process_cores,
        children_cpu_s=children_cores,
        wall_s=1.0,
        gpu_index=None,
        gpu_util_percent=None,
        gpu_mem_used_bytes=None,
        gpu_sm_clock_mhz=None,
        gpu_unavailable=GPU_NOT_REQUESTED,
        sampler_cost_s=1e-4,
    )


def _result(samples, *, stop=None, number=4, rounds=None, telemetry=None, framework="numpy", device="CPU:0"):
    spec = CaseSpec(workload="matmul", framework=framework, device=device, params={"n": 64, "mode": "steady"})
    t = Timing(
        first_call_s=samples[0],
        warmup_s=[samples[0]],
        samples_s=list(samples),
        number_per_sample=number,
        overhead_s=1e-9,
        stop_reason=stop,
        rounds_s=rounds,
        telemetry=telemetry,
    )
    return CaseResult(spec=spec, status="ok", timing=t, wall_s=1.0)


def _kinds(record) -> dict[str, list[quality.TimingWarning]]:
    out: dict[str, list[quality.TimingWarning]] = {}
    for w in quality.measurement_warnings(record):
        out.setdefault(w.kind, []).append(w)
    return out


# ------------------------------------------------------------------ "did not converge"


def test_a_capped_point_inside_the_target_is_no_unsettled_point():
    """H200: 50 samples, ±3 % (target ±5 %), stopped by the sample cap before --min-time: its
    interval met the target, so it did converge."""
    tight = [1.0 + 0.001 * (i % 7) for i in range(50)]
    assert quality.stats.median_rel_halfwidth(tight) < TARGET
    assert "not_converged" not in _kinds(make_record([_result(tight, stop="sample cap")]))


def test_an_unsettled_point_prints_an_interval_visibly_outside_the_target():
    """5.4 % rounds to "5%": it is printed with its decimal so it never reads as the target."""
    wide = [1.0 + (i * 37 % 50) / 50 for i in range(50)]
    (w,) = _kinds(make_record([_result(wide, stop="time cap")]))["not_converged"]
    shown = float(re.search(r"interval is ±([\d.]+)%", notes.warning_message(w)).group(1)) / 100
    assert w.value > TARGET and shown > TARGET
    assert notes._pct(0.054, TARGET) == "5.4%" and notes._pct(0.14, TARGET) == "14%"


def test_pooled_rounds_use_the_first_rounds_interval_as_its_stop_reason_does():
    """merge_rounds keeps round 1's stop reason; round 2 sitting 40 % away widens the pooled
    interval (that gap is the bimodal warning's), not round 1's."""
    r1 = [1.0 + 0.001 * (i % 5) for i in range(50)]
    r2 = [1.4 + 0.001 * (i % 5) for i in range(50)]
    rec = make_record([_result(r1 + r2, stop="sample cap", rounds=[r1, r2])])
    kinds = _kinds(rec)
    assert "not_converged" not in kinds and "noisy" not in kinds
    assert [w.kind for w in quality.measurement_warnings(rec)] == ["bimodal"]


def test_the_h200_run_has_no_unsettled_point_inside_the_target():
    record = load_run(H200_RUN)
    unsettled = _kinds(record)["not_converged"]
    assert unsettled and all(w.value > TARGET for w in unsettled)
    for w in unsettled:
        m = re.search(r"interval is ±([\d.]+)%", notes.warning_message(w))
        assert m is None or float(m.group(1)) > 5, notes.warning_message(w)
    # The keras-jax GPU steps at ±2-3 % (target ±5 %) were listed as "did not converge".
    assert not [w for w in unsettled if w.case.device == "GPU:0" and w.case.params.get("batch") in (8, 10, 32)]


# ------------------------------------------------------------------ "the machine was busy"


def test_a_workload_saturating_every_core_itself_is_no_busy_machine():
    own = summarize(_telemetry(16, busy_cores=16.0, process_cores=15.9, children_cores=0.0))
    assert own.cores_saturated == 16 and own.others_cpu_cores == pytest.approx(0.1)
    assert utilization.others_busy(own) is False
    others = summarize(_telemetry(16, busy_cores=16.0, process_cores=4.0, children_cores=0.0))
    assert others.others_cpu_cores == pytest.approx(12.0) and utilization.others_busy(others) is True
    workers = summarize(_telemetry(16, busy_cores=16.0, process_cores=4.0, children_cores=11.8))
    assert utilization.others_busy(workers) is False  # a DataLoader's workers are this run's own
    assert telemetry_text(workers).endswith("(mean 100 %: this run 15.8 cores, other programs 0.2)")


def test_an_old_record_without_the_childrens_split_says_what_it_knows():
    old = summarize(_telemetry(2, busy_cores=2.0, process_cores=0.5))  # children_cpu_s absent
    assert old.children_cpu_cores is None and utilization.others_busy(old) is True
    assert telemetry_text(old).endswith("(mean 100 %: this process 0.5 cores, the rest 1.5)")
    rec = make_record([_result([1.0, 1.5, 1.0, 2.0, 1.0, 1.6, 1.1], telemetry=_telemetry(2, 2.0, 0.5))])
    (w,) = _kinds(rec)["noisy"]
    assert "other programs (or this run's own child processes) used 1.5 of 2 cores" in notes.warning_message(w)


def test_the_h200_torch_cpu_points_are_not_called_busy():
    """The issue's row: "16 of 16 cores saturated… the machine was busy" on a dedicated box."""
    record = load_run(H200_RUN)
    warnings = quality.measurement_warnings(record)
    saturated = [w for w in warnings if w.telemetry is not None and w.telemetry.cores_saturated == 16]
    assert saturated and all(w.others_busy is False for w in saturated)
    text = "\n".join(notes.warning_text(w) for w in warnings)
    assert "machine was busy" not in text and "close them and measure again" not in text
    assert "no other program was busy (they used 0.0 of 16 cores); this run's own threads kept all 16" in text
    for g in aggregate_warnings(quality.measurement_warnings(record)):
        assert "busy" not in g.text or "no other program was busy" in g.text, g.text


def test_the_busy_2core_run_is_called_busy():
    record = load_run(BUSY)
    warned = [w for w in quality.measurement_warnings(record) if w.telemetry is not None and w.kind != "overhead"]
    assert warned and all(w.others_busy for w in warned)
    assert any(
        "other programs kept the machine busy" in g.text
        for g in aggregate_warnings(quality.measurement_warnings(record))
    )


def test_the_sampler_counts_its_child_processes_as_this_runs(tmp_path):
    """A child burning CPU inside the window: its seconds are the run's, not other programs'."""
    from whichdevice.measure.telemetry import Sampler

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
    with Sampler(0.05) as s:
        p = subprocess.Popen([sys.executable, "-c", burn])
        p.wait(timeout=60)
        time.sleep(0.05)
    t = s.telemetry
    assert t.children_cpu_s is not None and 0.3 <= t.children_cpu_s <= 1.0
    assert t.process_cpu_s < 0.3


# ------------------------------------------------------------------ spread within one process


def test_the_spread_is_each_rounds_own_not_the_pooled_rounds():
    r1 = [1.0, 1.01, 1.02, 1.0, 1.01, 1.02]
    r2 = [1.15, 1.16, 1.17, 1.15, 1.16, 1.17]  # 15 % apart: neither bimodal (25 %) nor noisy
    assert quality.stats.rel_iqr(r1 + r2) > 0.10
    assert quality.measurement_warnings(make_record([_result(r1 + r2, rounds=[r1, r2])])) == []
    noisy = [1.0, 1.3, 1.0, 1.35, 1.0, 1.3]
    (w,) = quality.measurement_warnings(make_record([_result(r1 + noisy, rounds=[r1, noisy])]))
    assert w.kind == "noisy" and w.round_index == 1 and "in round 2 of 2" in notes.warning_message(w)


def test_single_steps_warn_at_torch_benchmarks_gross_level():
    """Block means warn at IQR/median > 10 % (torch.utils.benchmark's _IQR_WARN_THRESHOLD);
    single steps, not averaged over a block, at its 25 % (_IQR_GROSS_WARN_THRESHOLD)."""
    assert quality.UNEVEN_REL_IQR == 0.25
    steps_15 = [1.0, 1.15] * 10
    assert quality.measurement_warnings(make_record([_result(steps_15, number=1)])) == []
    (w,) = quality.measurement_warnings(make_record([_result([1.0, 1.4] * 10, number=1)]))
    assert w.kind == "uneven_steps" and w.threshold == 0.25


def test_the_h200_warnings_are_fewer_and_each_kind_means_it():
    """Before: 16 bimodal, 23 unsettled, 21 uneven, 35 noisy on a quiet box."""
    kinds = _kinds(load_run(H200_RUN))
    counts = {k: len(v) for k, v in kinds.items()}
    assert counts["not_converged"] < 23 and counts["uneven_steps"] < 21 and counts["noisy"] < 35
    for w in kinds["noisy"] + kinds["uneven_steps"]:
        t = next(r.timing for r in load_run(H200_RUN).results if r.spec == w.case)
        assert quality.stats.rel_iqr(t.rounds[w.round_index]) == w.value > w.threshold


# ------------------------------------------------------------------ words per framework

_FOREIGN = {
    "tensorflow": ("torch", "DataLoader", "jax", "jit", "cuda"),
    "keras-jax": ("torch", "DataLoader", "tf.function", "tf.data", "tensorflow"),
    "keras-torch": ("tf.function", "tf.data", "tensorflow", "jax"),
    "torch": ("tf.function", "tf.data", "tensorflow", "jax", "keras", "XLA"),
    "jax": ("tf.function", "tf.data", "tensorflow", "torch", "DataLoader", "keras"),
}


@pytest.mark.parametrize("framework", sorted(_FOREIGN))
def test_every_warning_and_note_kind_uses_no_other_frameworks_words(framework):
    wide = [1.0 + (i * 37 % 50) / 50 for i in range(50)]
    r1, r2 = [1.0, 1.01, 1.0, 1.02, 1.01, 1.0], [2.0, 2.01, 2.0, 2.02, 2.01, 2.0]
    tele = _telemetry(4, busy_cores=4.0, process_cores=1.0, children_cores=0.5)
    quiet = _telemetry(4, busy_cores=4.0, process_cores=3.9, children_cores=0.0)
    results = [
        _result(wide, stop="time cap", telemetry=tele, framework=framework),
        _result(wide, stop="sample cap", telemetry=quiet, framework=framework),
        _result([1.0, 1.5] * 10, number=1, telemetry=tele, framework=framework),
        _result([1.0, 1.3, 1.0, 1.35, 1.0, 1.3], framework=framework),
        _result(r1 + r2, rounds=[r1, r2], framework=framework, device="GPU:0"),
        _result([1e-8] * 6, number=1, framework=framework),
    ]
    spec = CaseSpec(workload="matmul", framework=framework, device="GPU:0", params={"n": 64})
    results += [
        CaseResult(spec=spec, status="failed", failure=f, error="boom", wall_s=1.0)
        for f in ("error", "crash", "timeout", "out_of_memory", "not_started")
    ]
    results.append(CaseResult(spec=spec, status="skipped", failure="skipped", error="time budget", wall_s=0.0))
    record = make_record(results)
    kinds = {w.kind for w in quality.measurement_warnings(record)}
    assert kinds == {"bimodal", "not_converged", "uneven_steps", "noisy", "overhead"}
    lines = notes.timing_warnings(quality.measurement_warnings(record)) + notes.failures(record)
    lines += [g.text for g in aggregate_warnings(quality.measurement_warnings(record))] + [
        i for g in aggregate_warnings(quality.measurement_warnings(record)) for i in g.items
    ]
    text = "\n".join(lines).lower()
    found = [word for word in _FOREIGN[framework] if word.lower() in text]
    assert not found, (found, text)


def test_a_long_uncapped_step_series_is_judged_without_its_quadratic_interval():
    """The median's interval (order statistics, O(n^2)) is computed for capped points only: the
    H200 train record's 10,000-step series made `whichdevice report` spin for minutes."""
    steps = [1.0 + 0.01 * (i % 13) for i in range(20_000)]
    t0 = time.perf_counter()
    assert quality.measurement_warnings(make_record([_result(steps, number=1, stop="precision")])) == []
    assert time.perf_counter() - t0 < 5.0
    record = load_run(DATA / "h200" / "train_torch.json")
    t0 = time.perf_counter()
    assert len(quality.measurement_warnings(record)) < 60
    assert time.perf_counter() - t0 < 10.0
