"""Placement: parsing real TensorFlow placement logs and XProf op stats captured on this CPU
(tests/data/placement/, see make_placement_data.py), copies counted on the real step graph,
the fallback explanation, and `whichdevice placement` end to end on the CPU."""

import json

import pytest
from conftest import DATA, run_cli

from whichdevice.analysis.placement import cpu_op_cause, device_placement
from whichdevice.present.pages.placement import CPU_OP_WORDS
from whichdevice.frameworks.tensorflow.logparse import (
    Edge,
    count_copies,
    op_type_counts,
    parse_op_stats,
    parse_placement_log,
    placement_map,
)
from whichdevice.core.records import load_run

P = DATA / "placement"


def _placed():
    return parse_placement_log((P / "cpu_step.log").read_text())


def _edges():
    return [Edge(*e) for e in json.loads((P / "cpu_step_edges.json").read_text())]


def test_real_cpu_log_every_node_on_the_cpu_with_the_string_ops_listed():
    placed = _placed()
    counts = op_type_counts(placed)
    assert list(counts) == ["CPU:0"]  # a CPU-only run: nothing anywhere else
    cpu = counts["CPU:0"]
    assert cpu["AsString"] == 1 and cpu["StringLength"] == 1  # the no-GPU-kernel example
    assert cpu["MatMul"] == 5  # 2 forward + 3 gradient MatMuls
    assert cpu["Softmax"] == 1
    assert "_Arg" not in cpu  # plumbing is apart
    assert op_type_counts(placed, include_plumbing=True)["CPU:0"]["_Arg"] > 0


def test_bare_stdout_lines_are_not_counted_twice_when_glog_lines_exist():
    text = (P / "glog_excerpt.log").read_text()
    placed = parse_placement_log(text)
    graph = [p for p in placed if p.source == "graph"]
    eager = [p for p in placed if p.source == "eager"]
    assert {p.op_type for p in graph} >= {"AsString", "StringLength", "Cast"}
    assert eager and all(p.device == "CPU:0" for p in eager)
    doubled = text + "\n" + "\n".join(ln.split("] ", 1)[1] for ln in text.splitlines() if "placer.cc" in ln)
    assert len(parse_placement_log(doubled)) == len(placed)


def test_copies_on_the_real_step_graph():
    placed, edges = _placed(), _edges()
    assert count_copies(edges, placement_map(placed)).count == 0  # one device: no copies
    # The same graph as a GPU run where soft placement put the string ops on the CPU: the loss
    # goes to the host (4 bytes, a float32 scalar) and the length comes back (4 bytes, int32).
    gpu = {name: ("CPU:0" if name in ("AsString", "StringLength") else "GPU:0") for name in placement_map(placed)}
    c = count_copies(edges, gpu)
    assert c.count == 2 and c.nbytes == 8 and c.unknown_size == 0
    assert c.by_direction == {"GPU:0->CPU:0": 1, "CPU:0->GPU:0": 1}


def test_real_xprof_op_stats_give_time_and_occurrences():
    stats = parse_op_stats((P / "cpu_framework_op_stats.json").read_bytes())
    assert all(s.host_or_device == "Host" for s in stats)  # CPU-only profile
    by_type = {s.op_type: s for s in stats}
    assert by_type["AsString"].occurrences == 10  # 10 profiled steps, one each
    assert "_FusedMatMul" in by_type  # grappler's rewrite, seen by the profiler only
    assert all(s.self_us >= 0 for s in stats) and "IDLE" not in by_type


def test_fallback_explanations_name_the_reason():
    assert cpu_op_cause("AsString", {"CPU"}) == "no_gpu_kernel" and cpu_op_cause("Shape", None) == "unknown"
    assert "no GPU kernel" in CPU_OP_WORDS[cpu_op_cause("AsString", {"CPU"})]
    assert "Python" in CPU_OP_WORDS[cpu_op_cause("PyFunc", {"CPU"})]
    assert "int32" in CPU_OP_WORDS[cpu_op_cause("Shape", {"CPU", "GPU"})]
    assert "variable" in CPU_OP_WORDS[cpu_op_cause("ReadVariableOp", {"CPU", "GPU", "DEFAULT"})]


def test_gpu_run_lists_cpu_ops_first_from_metrics():
    m = {
        "placed|GPU:0|MatMul": 5,
        "placed|CPU:0|AsString": 1,
        "placed|GPU:0|_Arg": 3,
        "gpu_kernel|AsString": 0.0,
        "gpu_kernel|MatMul": 1.0,
        "copies": 2,
        "copy_bytes": 8,
        "copies|GPU:0->CPU:0": 1,
        "copies|CPU:0->GPU:0": 1,
        "op_stats": 0.0,
        "profiled_steps": 10,
    }
    p = device_placement("GPU:0", m, 0.001)
    assert [o.op_type for o in p.on_cpu_in_gpu_run] == ["AsString"]
    assert p.copies.count == 2 and not p.profiled


BAD = [
    (["--classes", "3"], "--classes: only applies to --model"),
    (["--model", "nofile.py:build"], "--model: no such file 'nofile.py'"),
    (["--batch", "0"], "--batch: 0 is out of range"),
    (["--steps", "x"], "--steps: 'x' is not a whole number"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, args, message):
    code, out, err = run_cli(["placement", "--out", str(tmp_path / "o"), *args], capsys)
    assert code == 2 and message in err and err.strip().count("\n") == 0
    assert not (tmp_path / "o").exists()


@pytest.mark.tf
def test_placement_quick_on_the_cpu_and_report(tmp_path, capsys):
    j = tmp_path / "p.json"
    code, out, err = run_cli(["placement", "--quick", "--steps", "5", "--out", str(tmp_path), "--json", str(j)], capsys)
    assert code == 0, err
    assert "everything ran on the CPU" in out and "AsString" in out
    r = load_run(j).results[0]
    assert r.status == "ok" and r.metrics["placement_lines"] > 100
    assert r.metrics["placed|CPU:0|AsString"] == 1 and r.metrics["gpu_kernel|AsString"] == 0
    assert r.metrics["copies"] == 0 and r.metrics["profiled_steps"] == 5
    code, out2, _ = run_cli(["report", str(j)], capsys)
    assert code == 0 and "AsString" in out2
