"""The cost model's arithmetic on hand-computed cases (no framework, no measuring)."""

import pytest

from whichdevice.analysis import costmodel
from whichdevice.analysis.costmodel import OpCost, WorkloadDescription
from whichdevice.analysis.deviceprofile import CurvePoint, DeviceCosts
from whichdevice.present.prediction import assumption_text, extrapolation_text

US = 1e-6


def gpu(**kw) -> DeviceCosts:
    base = dict(
        kind="gpu",
        description="fake GPU",
        dispatch_eager_s=10 * US,
        matmul=[CurvePoint(x=1, s=20 * US), CurvePoint(x=100, s=20 * US), CurvePoint(x=1000, s=100 * US)],
        h2d=[CurvePoint(x=1e3, s=10 * US), CurvePoint(x=1e6, s=100 * US)],
        memory_floor_bytes_per_s=1e9,
        sync_s=5 * US,
    )
    base.update(kw)
    return DeviceCosts(**base)


def work(ops, **kw) -> WorkloadDescription:
    return WorkloadDescription(batch=8, ops=ops, input_bytes=kw.pop("input_bytes", 0.0), **kw)


MM_1000 = OpCost(op_type="MatMul", kind="matmul", flops=2 * 1000**3)
EW_1K = OpCost(op_type="Mul", kind="elementwise", bytes=1000)
FREE = OpCost(op_type="Const", kind="free")


def test_interpolation_is_linear_in_log_log():
    curve = [CurvePoint(x=10, s=1e-3), CurvePoint(x=1000, s=1e-1)]
    assert costmodel.interp_loglog(curve, 100) == pytest.approx(1e-2)
    assert costmodel.interp_loglog(curve, 1) == 1e-3  # clamped below
    assert costmodel.matmul_n(2 * 64**3) == pytest.approx(64)


def test_device_bound_step_adds_copy_and_sync():
    # device: matmul 100 µs + 2 elementwise at the 10 µs floor = 120 µs; host: 3 kernels x 10 µs = 30 µs
    # step = max(30, 120) + copy of 1 kB (10 µs) + 1 sync (5 µs) = 135 µs
    p = costmodel.predict(work([MM_1000, EW_1K, EW_1K, FREE, FREE], input_bytes=1e3, syncs_per_step=1), gpu())
    assert p.step.mid == pytest.approx(135 * US)
    assert p.bound == "device work"
    assert p.parts_s["dispatch/launch"] == pytest.approx(30 * US)  # the floor part of each kernel
    assert p.parts_s["compute"] == pytest.approx(90 * US)
    assert p.parts_s["transfer"] == pytest.approx(10 * US)
    assert p.parts_s["sync"] == pytest.approx(5 * US)
    assert p.dominant == "compute"
    # no elementwise curve: high edge moves 1 kB at 1 GB/s = 1 µs < floor, so no widening here
    assert p.step.high == pytest.approx(135 * US)


def test_host_bound_step_when_in_graph_dispatch_is_slow():
    # host = call 100 µs + 2 kernels x 50 µs = 200 µs > device 2 x 10 µs
    dev = gpu(dispatch_graph_s=50 * US, step_call_s=100 * US)
    p = costmodel.predict(work([EW_1K, EW_1K]), dev)
    assert p.step.mid == pytest.approx(200 * US)
    assert p.bound == "host dispatch" and p.dominant == "dispatch/launch"


def test_cpu_step_is_the_sum_of_op_times():
    cpu = DeviceCosts(
        kind="cpu",
        description="fake CPU",
        dispatch_eager_s=4 * US,
        step_call_s=30 * US,
        matmul=[CurvePoint(x=10, s=5 * US), CurvePoint(x=1000, s=500 * US)],
    )
    p = costmodel.predict(work([MM_1000, EW_1K, FREE]), cpu)
    assert p.step.mid == pytest.approx((30 + 500 + 4) * US)


def test_band_widens_beyond_the_calibrated_range():
    # rate at n=100: 2e6 / 1e-4 = 2e10 FLOP/s; at n=10: 2e3 / 1e-5 = 2e8: gain 100 per decade.
    dev = gpu(matmul=[CurvePoint(x=10, s=1e-5), CurvePoint(x=100, s=1e-4)])
    p = costmodel.predict(work([OpCost(op_type="MatMul", kind="matmul", flops=2 * 1000**3)]), dev)
    assert p.step.mid == pytest.approx(0.1)  # time proportional to work at the last point's rate
    assert p.step.low == pytest.approx(1e-3)  # the rate may keep gaining 100x per decade
    assert p.step.high == pytest.approx(0.1)
    assert p.extrapolated == (costmodel.Extrapolation("matmul", pytest.approx(1000), 100),)
    assert extrapolation_text(p.extrapolated[0]) == "matmul of n≈1000 beyond the largest calibrated size 100"


def test_missing_bandwidth_widens_elementwise_up_to_the_floor_bandwidth():
    big = OpCost(op_type="Relu", kind="elementwise", bytes=1e6)  # 1 MB at >= 1 GB/s: at most 1 ms
    p = costmodel.predict(work([big]), gpu())
    assert p.step.low == pytest.approx(10 * US) and p.step.mid == pytest.approx(10 * US)
    assert p.step.high == pytest.approx(1e-3)
    assert costmodel.Assumption("no_elementwise_curve", floor_s=10 * US) in p.assumptions
    assert any("no elementwise curve" in assumption_text(a) for a in p.assumptions)


def test_quartiles_of_calibrated_points_make_the_band():
    dev = gpu(
        elementwise=[
            CurvePoint(x=1e3, s=20 * US, q1_s=18 * US, q3_s=25 * US),
            CurvePoint(x=1e6, s=200 * US, q1_s=190 * US, q3_s=220 * US),
        ]
    )
    p = costmodel.predict(work([EW_1K]), dev)
    assert (p.step.low, p.step.mid, p.step.high) == pytest.approx((18 * US, 20 * US, 25 * US))


def test_unknown_ops_get_the_floor_and_widen_the_band_instead_of_refusing():
    # 1 elementwise + 2 unknown ops: 3 kernels at the 10 µs floor; high edge + 2 x UNKNOWN_OP_HIGH_S
    p = costmodel.predict(
        work([EW_1K, OpCost(op_type="Mystery", kind="uncovered"), OpCost(op_type="Mystery", kind="uncovered")]), gpu()
    )
    assert p.cannot_predict is None
    assert p.step.mid == pytest.approx(30 * US)
    assert p.step.high == pytest.approx(30 * US + 2 * costmodel.UNKNOWN_OP_HIGH_S)
    (unknown,) = [a for a in p.assumptions if a.kind == "unknown_ops"]
    assert unknown.ops == (("Mystery", 2),) and "Mystery ×2" in assumption_text(unknown)


def test_measured_host_overhead_replaces_the_call_and_pays_only_the_extra_dispatch():
    # eager: host = H 500 µs + 3 kernels x (10 - 4) µs = 518 µs > device 3 x 10 µs
    w = work([EW_1K, EW_1K, EW_1K], launch_mode="eager", compiled=False, host_overhead_s=500 * US)
    p = costmodel.predict(w.model_copy(update={"host_dispatch_paid_s": 4 * US}), gpu(step_call_s=1e-3))
    assert p.step.mid == pytest.approx(518 * US)
    assert p.bound == "host dispatch"
    assert p.parts_s["host overhead"] == pytest.approx(500 * US)
    assert p.dominant == "host overhead"


def test_steps_per_execution_amortizes_the_host_overhead_of_a_compiled_step_only():
    ops = [EW_1K] * 3
    for mode, expected in (("xla", 100 * US + 30 * US), ("graph", 100 * US + 30 * US), ("eager", 400 * US + 30 * US)):
        w = work(ops, launch_mode=mode, compiled=mode != "eager", host_overhead_s=400 * US, steps_per_execution=4)
        p = costmodel.predict(w, gpu(dispatch_graph_s=10 * US))
        assert p.step.mid == pytest.approx(expected), mode
    w = work(ops, launch_mode="eager", compiled=False, host_overhead_s=400 * US, steps_per_execution=4)
    eager = costmodel.predict(w, gpu()).assumptions
    assert costmodel.Assumption("spe_eager") in eager
    assert any("no effect on an eager loop" in assumption_text(a) for a in eager)


def test_a_tf32_framework_takes_the_tf32_curve_for_the_middle_and_float32_for_the_high_edge():
    dev = gpu(matmul_tf32=[CurvePoint(x=1, s=20 * US), CurvePoint(x=100, s=20 * US), CurvePoint(x=1000, s=25 * US)])
    fp32 = costmodel.predict(work([MM_1000]), dev).step
    tf32 = costmodel.predict(work([MM_1000], tf32=True), dev).step
    assert fp32.mid == pytest.approx(100 * US) and fp32.low == pytest.approx(25 * US)
    assert tf32.mid == pytest.approx(25 * US) and tf32.high == pytest.approx(100 * US)
