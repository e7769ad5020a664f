"""Every finding kind of the audit speaks the script's framework.

Each framework (TensorFlow, PyTorch, JAX) gets a hand-made child state and measurements that make
every finding kind it can produce fire (no child process: the rules are pure functions), and no
finding's text (title, where, explanation, fix) may hold another framework's words — no
"tf.function" in a PyTorch or JAX finding, no "torch.compile" in a JAX or TensorFlow one, no
"jax.jit" or "XLA compile" where they do not apply. The kinds only TensorFlow's hooks can produce
(tf.device blocks, graph loops, Sessions, TFRecord files) are listed as such."""

from __future__ import annotations

import pytest

from tests.test_audit import _m
from whichdevice.audit import causes, rules
from whichdevice.present.auditwords import findings as said
from whichdevice.audit.record import Block

# Words of each framework that must not appear in another framework's finding.
_FOREIGN = {
    "tensorflow": ("torch", "PyTorch", "nn.Module", "jax", "JAX", "block_until_ready", "CUDA path"),
    "torch": ("tf.", "TensorFlow", "Session", "ConfigProto", "soft placement", "XLA", "jax", "JAX", "jitted"),
    "jax": ("tf.", "TensorFlow", "Session", "ConfigProto", "soft placement", "torch", "PyTorch", "nn.Module"),
}

# The kinds every framework can produce, and those only one framework's hooks produce.
_COMMON = {
    "missing_device_failure",
    "different_one_time_costs",
    "gpu_timing_without_sync",
    "first_includes_setup",
    "one_shot_timing",
    "gpu_label_without_gpu",
    "setup_inside_timing",
    "host_inputs_per_call",
    "host_read_per_step",
    "dispatch_bound",
    "recurrent_layer",  # a Keras LSTM on any backend
}
_KINDS = {
    "tensorflow": _COMMON
    | {
        "soft_placed_missing_device",
        "clock_read_while_tracing",
        # tf_hooks only: tf.device blocks, variables, TFRecord files, Sessions, graph loops
        "gpu_ops_on_cpu",
        "variables_on_other_device",
        "read_from_page_cache",
        "first_run_is_setup",
        "per_element_loop",
    },
    # torch_hooks only: DataLoader; the source scan: .cuda() after the script stopped
    "torch": _COMMON | {"soft_placed_missing_device", "dataloader_settings", "latent_from_source"},
    "jax": _COMMON | {"clock_read_while_tracing", "latent_from_source"},
}

_MISSING = {
    "tensorflow": "Cannot assign a device for operation MatMul: /device:GPU:0",
    "torch": "Cannot access accelerator device when none is available.",
    "jax": "Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present.",
}
_SOURCE = {
    "tensorflow": "import tensorflow as tf\n\nx = tf.ones([3, 3])\n",
    "torch": "import time, torch\n\nx = torch.rand(3, 3).cuda()\nt0 = time.time()\nfor _ in range(100):\n"
    "    y = x @ x\nprint(time.time() - t0)\n",
    "jax": "import time, jax\n\nx = jax.device_put(jax.numpy.ones((3, 3)), jax.devices('cuda')[0])\nt0 = time.time()\n"
    "for _ in range(100):\n    y = x @ x\nprint(time.time() - t0)\n",
}
_SETUP = {"tensorflow": "trace", "torch": "compile", "jax": "compile"}
_TRACER = {"tensorflow": "tf.function measure", "jax": "jax.jit measure"}


def _state(fw: str) -> dict:
    reads = [
        {"id": i, "fn": "time.time", "line": 6 + 3 * i, "text": "t = time.time()", "tracing": _TRACER.get(fw, "")}
        for i in range(2)
    ]
    return {
        "framework": fw,
        "jax_installed": fw == "jax",
        "physical_devices": {"CPU": 1, "GPU": 0},
        "op_cost": {"op": "a 4x4 add", "plain_s": 4e-6, "hooked_s": 8e-6},
        "exception": {"type": "RuntimeError", "message": _MISSING[fw], "line": 3},
        "script_source": _SOURCE[fw],
        "reads": reads if fw in _TRACER else [],
        "functions": {"1": {"name": "measure", "calls": 2, "traces": 1}},
        "rnn_layers": [{"layer": "LSTM", "line": 3, "text": "LSTM(20)", "units": 20, "timesteps": 5000}],
        "loaders": [{"line": 4, "text": "DataLoader(ds)", "num_workers": 0, "pin_memory": False}]
        if fw == "torch"
        else [],
        "first_runs": [{"seq": 15, "seconds": 0.5, "line": 20, "steady_s": 0.001, "reruns": 20}]
        if fw == "tensorflow"
        else [],
        "read_after_write": [{"seq": 1, "path": "d.tfrecord", "read_line": 5, "written_line": 4}]
        if fw == "tensorflow"
        else [],
    }


def _measurements(fw: str) -> list:
    one_time = {
        "tensorflow": {"traces": 1, "instantiations": 1},
        "torch": {"new_kernels": 5},
        "jax": {"traces": 1, "xla_compiles": 1},
    }[fw]
    tf_only = (
        {
            "vars_other_device": 2,
            "start_seq": 10,
            "end_seq": 20,
            "loops": [
                {"seq": 3, "kind": "tf.map_fn", "line": 9, "text": "tf.map_fn(f, x)", "iterations": 1000,
                 "elems_per_iteration": 1, "calls": 1}
            ],
        }
        if fw == "tensorflow"
        else {}
    )  # fmt: skip
    gpu_ran = {"GPU:0": 40} if fw == "jax" else {"CPU:0": 40}  # JAX's GPU kind is where its work ran
    return [
        _m(0, 1.0, framework=fw, setup_s={_SETUP[fw]: 0.8}, series_len=2, **one_time),
        _m(1, 0.1, framework=fw, series_len=2, index_in_series=1),
        _m(2, 0.2, line=20, kind="GPU", framework=fw, ran_on=gpu_ran, unsynced_gpu_end=True, fn_calls=20,
           host_inputs=20, user_syncs=20, syncs=20, loader_wait_s=0.1, series_len=1, index_in_series=0, **tf_only),
        _m(3, 0.2, line=30, kind="", framework=fw, text="print('gpu', t)", series_len=1, index_in_series=0),
        _m(4, 0.05, line=40, framework=fw, eager_ops=1000, elems=16000, fn_calls=0, series_len=1, index_in_series=0),
    ]  # fmt: skip


def _blocks(fw: str) -> list[Block]:
    if fw != "tensorflow":
        return []
    return [
        Block(
            id=0, requested="/GPU:0", api="tf.device", line=19, text="with tf.device('/GPU:0'):",
            device_exists=True, wall_s=0.2, ran_on={"CPU:0": 3, "GPU:0": 10}, fn_calls=1, traces=0,
            instantiations=0, xla_compiles=0, sessions=0, session_runs=0, syncs=0, h2d=1, d2h=1,
            cpu_ops_in_gpu_block=3,
        )
    ]  # fmt: skip


def _findings(fw: str) -> list:
    state, blocks, ms = _state(fw), _blocks(fw), _measurements(fw)
    if fw == "tensorflow":
        # A second, soft-placed block asking for a GPU that does not exist (its own finding).
        missing = blocks[0].model_copy(update={"id": 1, "requested": "/GPU:1", "device_exists": False, "line": 50})
        blocks = [*blocks, missing]
    return said([f for rule in (*rules.RULES, *causes.RULES) for f in rule(state, blocks, ms)])


@pytest.mark.parametrize("fw", ["tensorflow", "torch", "jax"])
def test_every_finding_kind_speaks_the_scripts_framework(fw):
    found = _findings(fw)
    kinds = {f.rule for f in found}
    assert _KINDS[fw] <= kinds, sorted(_KINDS[fw] - kinds)  # every kind it can produce was rendered
    for f in found:
        text = " ".join((f.title, f.where, f.explanation, f.fix))
        foreign = [w for w in _FOREIGN[fw] if w in text]
        assert not foreign, (fw, f.rule, foreign, text)


def test_the_words_that_named_the_wrong_framework_now_name_the_right_one():
    """The evidence: a jax.jit script's timing "includes 1 tf.function trace" and
    "torch.compile compilation (first calls)"; a torch loop "125 tf.function calls"."""
    jax = {f.rule: f for f in _findings("jax")}
    assert "jax.jit trace" in jax["first_includes_setup"].explanation
    assert "jax.jit compilation" in jax["setup_inside_timing"].explanation
    one_shot = [f.explanation for f in _findings("torch") if f.rule == "one_shot_timing"]
    assert any("20 nn.Module calls in one timing" in text for text in one_shot), one_shot


# ---------------------------------------------------------------- What to build #6: this GPU's launch cost

_H200 = {
    "device": "NVIDIA H200",
    "framework": "torch",
    "launch_s": 5.1e-6,
    "item_roundtrip_s": 1.45e-5,
    "launches": 1000,
    "roundtrips": 200,
    "blocks": 3,
}


def test_findings_quote_the_launch_cost_measured_on_the_gpu_present():
    """GPU present (injected: no GPU here): the child's measurement of this card is quoted, with its
    name, and the H100's recorded figure is not; without one the H100's is quoted, labelled with its card."""
    state = {**_state("torch"), "physical_devices": {"CPU": 1, "GPU": 1}, "gpu_costs": _H200}
    ms = _measurements("torch")
    ms[2] = ms[2].model_copy(update={"ran_on": {"GPU:0": 40}, "h2d": 20})
    ms[4] = ms[4].model_copy(update={"ran_on": {"GPU:0": 1000}})
    found = {f.rule: f for f in said([f for rule in (*rules.RULES, *causes.RULES) for f in rule(state, [], ms)])}
    dispatch, reads = found["dispatch_bound"].explanation, found["host_read_per_step"].explanation
    assert "5.1 µs each on this NVIDIA H200, measured here after the script" in dispatch, dispatch
    assert "on this NVIDIA H200 a launch costs ≈ 5 µs and a launch plus a host read ≈ 14 µs" in reads, reads
    assert "H100" not in dispatch + reads
    recorded = {**state, "gpu_costs": None, "physical_devices": {"CPU": 1, "GPU": 0}}
    found = {f.rule: f for f in said([f for rule in (*rules.RULES, *causes.RULES) for f in rule(recorded, [], ms)])}
    assert "9.68 µs each on an H100, recorded there" in found["dispatch_bound"].explanation
    assert "on an H100 a launch costs ≈ 10 µs" in found["host_read_per_step"].explanation
    assert "(recorded there)" in found["host_read_per_step"].explanation


def test_the_record_keeps_the_measured_gpu_costs_and_says_them_in_a_note(tmp_path):
    from whichdevice.cli.audit import make_record

    state = {"framework": "torch", "torch_installed": True, "physical_devices": {"CPU": 1, "GPU": 1}, "blocks": []}
    record = make_record(tmp_path / "s.py", [], 60.0, {**state, "gpu_costs": _H200}, 0, 1.0, False)
    assert record.gpu_costs == _H200
    assert any("measured on this GPU (NVIDIA H200, torch)" in n and "5.1 µs" in n for n in record.notes)
    failed = make_record(
        tmp_path / "s.py", [], 60.0, {**state, "gpu_costs": {"error": "RuntimeError: x"}}, 0, 1.0, False
    )
    assert any("quote the H100's recorded figure" in n for n in failed.notes)
    none = make_record(tmp_path / "s.py", [], 60.0, {**state, "physical_devices": {"CPU": 1}}, 0, 1.0, False)
    assert none.gpu_costs is None and not any("launch cost" in n for n in none.notes)


@pytest.mark.frameworks
def test_the_launch_cost_loop_runs_for_real_and_finds_no_gpu_here():
    """The child's measuring loop, run for real on this machine's CPU device (the CUDA path differs only
    in the device and the sync); and gpu_launch_cost says None where torch sees no GPU."""
    torch = pytest.importorskip("torch")
    from whichdevice.frameworks.torch import audit

    got = audit.launch_cost_on(torch, "cpu", "CPU")
    assert got["device"] == "CPU" and got["framework"] == "torch"
    assert 0 < got["launch_s"] < 1e-3 and 0 < got["item_roundtrip_s"] < 1e-3
    if not torch.cuda.is_available():
        assert audit.gpu_cost() is None


def test_a_recorded_explanation_s_old_multipliers_are_said_with_the_times_sign():
    """A record keeps a finding's words as they were written: an older audit wrote '72.9x
    measurement 3'; its page says '72.9× measurement 3', as every ratio is written, and leaves the
    user's own code a finding quotes as it is."""
    from whichdevice.present.auditwords import recorded

    old = "it took 4.23 ms, 72.9x measurement 3 (58 µs) (the steady run is 41x faster)."
    assert recorded(old) == "it took 4.23 ms, 72.9× measurement 3 (58 µs) (the steady run is 41× faster)."
    tf = "measured tf.while_loop ≈ 10x slower on GPU, tensorflow/tensorflow#40708)."
    assert recorded(tf) == tf.replace("10x", "10×")
    code = 'line 7: print("matmul 20x", time.perf_counter() - t0)'
    assert recorded(code) == code
