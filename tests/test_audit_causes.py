"""Fast checks without a child process: the causes' rules on hand-made state, the
source scan for scripts that stopped before their GPU timing, the notebook translation, the
missing-device messages of each framework and the honest "nothing found" lines."""

from __future__ import annotations

import json

import pytest

from whichdevice.audit import causes, notebook, rules, static
from whichdevice.core.errors import UsageError
from whichdevice.present.auditwords import findings as said
from tests.test_audit import _m


def _state(**kw):
    base = {"reads": [], "functions": {}, "first_runs": [], "loops": [], "op_cost": {}, "physical_devices": {}}
    return {**base, **kw}


# ---------------------------------------------------------------- dispatch-bound


def test_dispatch_bound_needs_many_tiny_ops_and_quotes_the_measured_per_op_cost():
    cost = {"op": "4x4 add (torch)", "plain_s": 4e-6, "hooked_s": 16e-6}
    m = _m(0, 13.5, framework="torch", eager_ops=1_000_000, elems=16_000_000, fn_calls=0, series_len=1)
    f = said(causes.rule_dispatch_bound(_state(op_cost=cost), [], [m]))
    assert [x.rule for x in f] == ["dispatch_bound"]
    text = f[0].explanation
    assert "1,000,000" in text and "16 elements" in text and "4 µs" in text and "H100" in text
    assert "tf." not in f[0].fix  # PyTorch finding, PyTorch fix
    # Large ops (a 256x256 output each) or few ops: not dispatch-bound.
    big = _m(1, 1.0, framework="torch", eager_ops=1000, elems=1000 * 65536, fn_calls=0)
    few = _m(2, 1.0, framework="torch", eager_ops=10, elems=160, fn_calls=0)
    assert causes.rule_dispatch_bound(_state(op_cost=cost), [], [big, few]) == []


def test_dispatch_bound_skips_bookkeeping_ops_around_compiled_steps():
    """model.fit's timing holds hundreds of Keras's own tiny eager ops around compiled steps: their
    dispatch (measured) is a small share, so they are not the timing's story."""
    cost = {"plain_s": 5e-6, "hooked_s": 10e-6}
    m = _m(0, 3.0, eager_ops=600, elems=600, fn_calls=30)
    assert causes.rule_dispatch_bound(_state(op_cost=cost), [], [m]) == []


# ---------------------------------------------------------------- first run, loops, tracing


def test_first_run_is_setup_from_the_re_run_and_silent_without_one():
    m = _m(0, 0.124, start_seq=10, end_seq=20, session_runs=1)
    runs = [{"seq": 15, "seconds": 0.124, "line": 20, "steady_s": 0.0004, "reruns": 20}]
    f = said(causes.rule_first_run_is_setup(_state(first_runs=runs), [], [m]))
    assert [x.rule for x in f] == ["first_run_is_setup"]
    assert "100%" in f[0].explanation and "re-run 20 times" in f[0].explanation
    unmeasured = [{"seq": 15, "seconds": 0.124, "line": 20, "not_rerun": "too long"}]
    assert causes.rule_first_run_is_setup(_state(first_runs=unmeasured), [], [m]) == []


def test_per_element_loop_gives_the_time_per_iteration():
    lp = {"seq": 3, "kind": "tf.map_fn", "line": 9, "text": "tf.map_fn(...)", "iterations": 999_999}
    m = _m(0, 13.2, loops=[{**lp, "elems_per_iteration": 1, "calls": 1}])
    f = said(causes.rule_per_element_loop(_state(), [], [m]))
    assert [x.rule for x in f] == ["per_element_loop"]
    assert "999,999" in f[0].title and "13.2 µs per iteration" in f[0].explanation
    assert "vectorized_map" in f[0].fix


def test_clock_read_while_tracing_reports_the_function_and_its_calls():
    reads = [
        {"id": 0, "fn": "time.time", "line": 6, "text": "start = time.time()", "tracing": "tf.function measure"},
        {"id": 1, "fn": "time.time", "line": 9, "text": "end = time.time()", "tracing": "tf.function measure"},
    ]
    fns = {"1": {"name": "measure", "calls": 2, "traces": 1}}
    m = _m(0, 2.3, tracing="tf.function measure")
    f = said(causes.rule_clock_read_while_tracing(_state(reads=reads, functions=fns), [], [m]))
    assert [x.rule for x in f] == ["clock_read_while_tracing"]
    assert "called 2 time(s) and traced 1" in f[0].explanation and "lines 6, 9" in f[0].where
    # Other rules never see a tracing measurement as a timing.
    assert rules.timed([m]) == []


def test_recurrent_layer_names_the_cudnn_path():
    ly = {"layer": "LSTM", "line": 33, "text": "LSTM(20)", "units": 20, "timesteps": 50000, "features": 3}
    f = said(causes.rule_recurrent_layer(_state(rnn_layers=[{**ly, "not_cudnn_because": {}}]), [], []))
    assert f and "cuDNN" in f[0].explanation and "CuDNNLSTM" in f[0].fix
    off = said(
        causes.rule_recurrent_layer(
            _state(rnn_layers=[{**ly, "timesteps": 10, "not_cudnn_because": {"recurrent_dropout": "0.2"}}]), [], []
        )
    )
    assert off and "recurrent_dropout=0.2" in off[0].explanation


# ---------------------------------------------------------------- read from the source

POSTED = """import torch
import time

t = torch.rand(3,3)
ct = t.cuda()

start = time.time()
for i in range(100):
    t.inverse()
print('cpu: %f' % (time.time() - start))

start = time.time()
for i in range(100):
    ct.inverse()
print('gpu: %f' % (time.time() - start))
"""


def test_static_scan_finds_each_timed_region_its_loop_and_its_cuda_names():
    regions = static.scan(POSTED)
    assert [(r.start_line, r.end_line) for r in regions] == [(7, 10), (12, 15)]
    cpu, gpu = regions
    assert cpu.cuda_names == [] and gpu.cuda_names == ["ct"]
    assert gpu.iterations == 100 and gpu.elems == 9 and not gpu.waits


REASSIGNED = """import time
import torch
x = torch.rand(64, 64).cuda()
y = torch.rand(64, 64).to('cuda')
t0 = time.time()
z = x @ y
print(time.time() - t0)
x, y = x.cpu(), torch.rand(64, 64)
t0 = time.time()
z = x @ y
print(time.time() - t0)
y = y.cuda()
t0 = time.time()
z = x @ y
print(time.time() - t0)
"""


def test_static_scan_reads_the_device_each_name_holds_when_the_region_runs():
    """pytorch/pytorch#7459's pattern: a name's last assignment before the timed region says where
    its tensor is; x = x.cpu() after a GPU timing makes the next timing CPU work."""
    regions = static.scan(REASSIGNED)
    assert [(r.start_line, r.end_line) for r in regions] == [(5, 7), (9, 11), (13, 15)]
    assert [r.cuda_names for r in regions] == [["x", "y"], [], ["y"]]


def test_latent_from_source_only_for_a_script_stopped_before_its_cuda_timing():
    state = _state(script_source=POSTED, exception={"type": "AssertionError", "line": 5, "message": "x"})
    f = said(causes.rule_latent_from_source(state, [], []))
    assert [x.rule for x in f] == ["latent_from_source"]
    assert "9-element" in f[0].explanation and "not measured" in f[0].explanation
    assert causes.rule_latent_from_source(_state(script_source=POSTED), [], []) == []  # it ran: nothing latent


# ---------------------------------------------------------------- missing device, all frameworks


@pytest.mark.parametrize(
    "message, framework_word",
    [
        ("Torch not compiled with CUDA enabled", "torch.cuda.is_available()"),
        ("Found no NVIDIA driver on your system.", "torch.cuda.is_available()"),
        ("Tried to instantiate dummy base class Event", "torch.cuda.is_available()"),
        ("Cannot access accelerator device when none is available.", "torch.cuda.is_available()"),  # torch 2.13
        ("Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present.", "jax"),
        ("Cannot assign a device for operation MatMul: /device:GPU:0", "soft placement"),
    ],
)
def test_missing_device_is_found_in_each_frameworks_words(message, framework_word):
    state = _state(
        exception={"type": "RuntimeError", "message": message, "line": 3},
        script_source="import x\n\nx.go()\n",
        jax_installed="backend" in message,
        physical_devices={"CPU": 1, "GPU": 0},
    )
    f = said(rules.rule_missing_device_failure(state, [], []))
    assert [x.rule for x in f] == ["missing_device_failure"]
    assert framework_word in f[0].fix
    if "Torch" in message or "NVIDIA" in message or "accelerator" in message:
        assert "tf." not in f[0].fix and "ConfigProto" not in f[0].fix


# ---------------------------------------------------------------- notebooks


def _nb(tmp_path, cells):
    p = tmp_path / "n.ipynb"
    p.write_text(
        json.dumps(
            {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": []} for c in cells], "nbformat": 4}
        )
    )
    return p


def test_notebook_cells_joined_in_order_with_magics_translated(tmp_path):
    src, info = notebook.translate(
        _nb(
            tmp_path,
            ["!pip install x\nimport math\n%matplotlib inline", "%timeit -n 5 -r 3 math.sqrt(2)", "%%time\ny = 1"],
        )
    )
    compile(src, "n", "exec")
    assert info["cells"] == 3 and info["magics_translated"] == 4
    assert "__whichdevice_magics__.timeit('math.sqrt(2)'" in src and "number=5, repeat=3" in src
    assert "__whichdevice_magics__.time('y = 1'" in src
    assert "pass  # skipped by whichdevice audit: !pip install x" in src


@pytest.mark.parametrize("cells", [["%%bash\necho hi"], []])
def test_notebook_that_cannot_be_audited_is_refused_naming_nbconvert(tmp_path, cells):
    with pytest.raises(UsageError) as e:
        notebook.translate(_nb(tmp_path, cells))
    assert "jupyter nbconvert --to script" in str(e.value.fix)


def test_broken_notebook_json_is_refused(tmp_path):
    p = tmp_path / "x.ipynb"
    p.write_text('{"cells": [null')
    with pytest.raises(UsageError):
        notebook.translate(p)


def test_an_audit_record_of_schema_1_is_read_with_its_ratios_as_a_over_b(tmp_path):
    """The audit's ratios read A/B as compare's; a schema-1 record (B/A) is migrated
    on reading, its interval's ends swapped, and says so."""
    from pathlib import Path

    from whichdevice.audit import record

    raw = json.loads((Path(__file__).parent / "data" / "audit_record_cpu.json").read_text())
    assert raw["schema_version"] == 1
    # seed 001 ex2's figures (benchmarks/audit.md): script 0.19, re-measured 0.97 (0.89-1.1), B/A
    raw["corrections"] = [
        {
            "a": 0,
            "b": 1,
            "script_ratio": 0.19,
            "real_ratio": 0.97,
            "real_ratio_low": 0.89,
            "real_ratio_high": 1.1,
            "round_ratios": [0.9, 1.0, 1.05],
            "rerun_ok": True,
        }
    ]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(raw))
    rec = record.load(path)
    assert rec.corrections[0].script_ratio == pytest.approx(1 / 0.19)
    for old, new in zip(raw["corrections"], rec.corrections):
        assert new.script_ratio == pytest.approx(1 / old["script_ratio"])
        if old.get("real_ratio"):
            assert new.real_ratio == pytest.approx(1 / old["real_ratio"])
            assert new.real_ratio_low == pytest.approx(1 / old["real_ratio_high"])
            assert new.real_ratio_low <= new.real_ratio <= new.real_ratio_high
    assert any("schema 1" in n for n in rec.notes)


# ---------------------------------------------------------------- The plain-tensor replay


@pytest.mark.frameworks
def test_replay_runs_the_blocks_ops_on_fresh_tensors_or_says_why_not_in_one_line():
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from whichdevice.frameworks.torch import audit as replay
    from whichdevice.frameworks.torch.audit import _spec

    a = torch.ones(8, 8)
    spec = _spec(a, torch)
    idx = _spec(torch.ones(3, dtype=torch.int64), torch)
    index = {torch.matmul: 0, torch.index_select: 1, torch.add: 2, torch.Tensor.backward: 3}
    ops = [(11, 0, (spec, spec), None), (12, 1, (spec, 0, idx), None), (30, 2, (spec, 1), {"alpha": 2})]
    st = SimpleNamespace(torch_ops_dropped=[], torch_ops=ops, torch_ops_full_at=None, torch_op_index=index)
    m = _m(0, 0.1, start_seq=10, end_seq=20, ran_on={"CPU:0": 2}, framework="torch")
    ((key, run, args, grad, calls),) = replay.replay_side(st, m)[0]
    assert key == "replay:0@CPU:0" and args == () and grad is False and calls == 1
    assert run.label == "2 torch ops replayed (matmul ×1, index_select ×1)"  # op 30 is outside the block
    fresh = run.ops[0][1][0]
    assert fresh is not a and fresh is run.ops[0][1][1] and fresh.shape == (8, 8)  # one spec, one fresh tensor
    assert run.ops[1][1][2].dtype == torch.int64 and not run.ops[1][1][2].any()  # indices: zeros, valid
    run()
    assert torch.equal(a, torch.ones(8, 8))  # the script's tensor is untouched
    backward = [(15, 3, (spec,), None)]
    _, why = replay.replay_side(
        SimpleNamespace(torch_ops_dropped=[], torch_ops=backward, torch_ops_full_at=None, torch_op_index=index), m
    )
    assert why.startswith("the timed work runs backward (autograd") and "\n" not in why
    _, why = replay.replay_side(
        SimpleNamespace(torch_ops_dropped=[], torch_ops=ops, torch_ops_full_at=15, torch_op_index=index), m
    )
    assert "op log was full" in why
    long = SimpleNamespace(torch_ops_dropped=[14], torch_ops=ops, torch_ops_full_at=None, torch_op_index=index)
    assert "more than 1,000 torch ops between two clock reads" in replay.replay_side(long, m)[1]
    _, why = replay.replay_side(
        SimpleNamespace(torch_ops_dropped=[], torch_ops=[], torch_ops_full_at=None, torch_op_index={}), m
    )
    assert why == "the timed work calls no nn.Module and runs no torch op from the script: nothing to re-run"
