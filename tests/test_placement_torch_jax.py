"""`whichdevice placement --framework torch / keras-jax`: JAX's Perfetto trace read
(a real one captured on this CPU, tests/data/placement/make_jax_trace.py), the traced tables'
GPU branch, and both commands end to end on this CPU with their findings checked.

No recorded GPU trace exists yet (the H200/H100 runs in tests/data predate this command): the
GPU branch is tested on metrics written by hand in the shape ``optrace`` writes, and
benchmarks/gpu_acceptance.sh records the real ones on the next GPU machine."""

import gzip
import json

import pytest
from conftest import DATA, run_cli

from whichdevice import frameworks
from whichdevice.analysis.placement import NESTED, traced_placement
from whichdevice.core.records import load_run
from whichdevice.present.pages import placement_traced


def test_real_jax_perfetto_trace_ops_and_copies():
    from whichdevice.frameworks.jax.optrace import device_of, op_type, read_perfetto

    data = json.loads(gzip.open(DATA / "placement" / "jax_cpu_step.trace.json.gz", "rt").read())
    ops, moved = read_perfetto(data["traceEvents"])
    # 5 steps of a jitted step: each XLA op of it 5 times, all on the CPU backend
    assert ops and all(n == 5 and where == "CPU:0" for (where, _), (n, _us) in ops.items())
    assert ("CPU:0", "dot") in ops and ops[("CPU:0", "dot")][1] > 0
    assert moved == {"H2D": 10, "D2H": 5}  # two NumPy arguments put on the device a step, float(loss) read back
    assert op_type("multiply_add_fusion.3") == "multiply_add_fusion" and device_of("/device:GPU:0 (H200)") == "GPU:0"


def _gpu_metrics():
    """A torch GPU step in the shape frameworks/torch/optrace.py writes (hand-made: see the docstring)."""
    return {
        "traced": 1.0,
        "op_stats": 1.0,
        "profiled_steps": 10.0,
        "op_calls|GPU:0|addmm": 2.0,
        "op_calls|CPU:0|add_": 4.0,  # Adam's step counters live on the CPU
        "op_calls|GPU:0|t": 3.0,
        "op_host_us|addmm": 200.0,
        "op_gpu_us|addmm": 50.0,
        "op_host_us|add_": 40.0,
        "op_host_us|empty_strided": 10.0,
        "op_occ|empty_strided": 20.0,
        "copies|H2D": 2.0,
        "copy_bytes|H2D": 4320.0,
        "copies_pageable": 2.0,
        "copies_pinned": 0.0,
        "syncs|item": 1.0,
        "host_reads": 5.0,
        "read_backs": 1.0,
        "feed_tensors": 2.0,
        "feed_bytes": 4320.0,
        "memcpy|Memcpy HtoD (Pageable -> Device)": 20.0,
    }


def test_gpu_branch_lists_cpu_ops_copies_and_syncs():
    p = traced_placement("GPU:0", _gpu_metrics(), 1e-3)
    assert [o.op_type for o in p.on_cpu_in_gpu_run] == ["add_"]
    nested = next(o for o in p.ops if o.op_type == "empty_strided")
    assert nested.ran_on == NESTED and nested.calls == 2.0 and nested.gpu_us == 0.0
    text = "\n".join(placement_traced.lines("torch", p))
    assert "1 op types ran on the CPU in this GPU run" in text and "add_" in text
    assert "H2D 2 (4.22 KiB); host side pageable 2, pinned 0" in text
    assert "Memcpy HtoD (Pageable -> Device) x2" in text
    assert "1 syncs a step" in text and ".item() / float() of a GPU tensor: 1" in text
    assert "not measured" not in text  # a GPU run measures all of it
    grid = placement_traced.ops_grid("torch", p, None)
    assert grid.rows[0][0].text == "addmm" and grid.rows[0][4].text == "5 µs"  # 50 µs over 10 steps
    assert any("t x3" in f for f in grid.footer)  # views counted apart


def test_placement_offers_the_frameworks_with_the_part():

    assert frameworks.offering("placement") == frameworks.having("placement_log", "optrace")
    assert {"tensorflow", "torch", "keras-jax", "keras-torch"} <= set(frameworks.offering("placement"))


def test_bad_framework_is_one_line_exit_2(tmp_path, capsys):
    code, _, err = run_cli(["placement", "--framework", "jax", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--framework" in err and "keras-jax" in err
    assert not (tmp_path / "o").exists()


def _run(tmp_path, capsys, fw):
    out = tmp_path / "o"
    code, _, err = run_cli(
        ["placement", "--quick", "--framework", fw, "--out", str(out), "--json", str(out / "p.json")], capsys
    )
    assert code == 0, err
    rec = load_run(out / "p.json")
    (r,) = rec.results
    assert r.status == "ok", r.error
    code, md, err = run_cli(["report", str(out / "p.json"), "--markdown"], capsys)
    assert code == 0, err
    return r, traced_placement(r.spec.device, r.metrics, r.timing.median_s), md


def test_torch_placement_quick_on_the_cpu(tmp_path, capsys):
    r, p, md = _run(tmp_path, capsys, "torch")
    ran = {o.op_type: o.ran_on for o in p.ops}
    assert ran["addmm"] == "CPU:0" and ran["mm"] == "CPU:0"  # the two Linear layers, forward and backward
    assert {where for where in ran.values()} <= {"CPU:0", "no tensor", NESTED}
    assert p.copies == {} and p.syncs == {}  # one device: no copy, no device to wait for
    assert p.read_backs == 1 and p.host_reads >= 1  # the loop's loss.item() at least
    assert next(o for o in p.ops if o.op_type == "addmm").host_us > 0
    assert "ATen ops of one training step" in md and "not measured here (no GPU)" in md


def test_keras_jax_placement_quick_on_the_cpu(tmp_path, capsys):
    r, p, md = _run(tmp_path, capsys, "keras-jax")
    assert p.ops and all(o.ran_on == "CPU:0" for o in p.ops)  # one XLA program on the one device
    assert any(o.op_type.startswith("dot") or "fusion" in o.op_type for o in p.ops)
    assert p.copies.get("H2D") == 2 and p.copy_bytes["H2D"] == r.metrics["feed_bytes"]  # x and y put each step
    assert "XLA ops of the compiled step" in md and "DevicePut" in md


@pytest.mark.slow
def test_keras_torch_placement_quick_on_the_cpu(tmp_path, capsys):
    r, p, md = _run(tmp_path, capsys, "keras-torch")
    assert any(o.ran_on == "CPU:0" for o in p.ops) and p.copies == {}


def test_jax_gpu_run_host_launches_are_not_cpu_ops():
    from whichdevice.frameworks.jax.optrace import _op_metrics

    m: dict = {}
    ops = {("GPU:0", "fusion"): (10, 50.0), ("CPU:0", "fusion"): (10, 30.0), ("CPU:0", "callback"): (10, 5.0)}
    _op_metrics(m, ops, 10)
    # the host's events of a GPU op are its launch: host time, not an op on the CPU; an op seen
    # only on the host (a host callback) ran there
    assert {k for k in m if k.startswith("op_calls")} == {"op_calls|GPU:0|fusion", "op_calls|CPU:0|callback"}
    assert m["op_host_us|fusion"] == 30.0 and m["op_gpu_us|fusion"] == 50.0
    p = traced_placement("GPU:0", {**m, "traced": 1.0, "op_stats": 1.0, "profiled_steps": 10.0}, 1e-3)
    assert [o.op_type for o in p.on_cpu_in_gpu_run] == ["callback"]


def test_torch_with_model_is_one_line_exit_2(tmp_path, capsys):
    args = ["placement", "--framework", "torch", "--model", "m.py:build", "--out", str(tmp_path / "o")]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "--model" in err and "diagnose --framework torch" in err
    assert not (tmp_path / "o").exists()
