"""How each framework's training step becomes the cost model's kernel list:
XLA's compiled HLO for Keras/JAX (a recorded HLO text: no JAX needed), ATen ops for
PyTorch (recorded under TorchDispatchMode), and TensorFlow's graph with Dropout and an LSTM
(stateless random ops, a While loop, TensorList ops) — each predicted on the H100 profile."""

import json
import subprocess
import sys

import pytest

from whichdevice.analysis import costmodel, deviceprofile
from whichdevice.analysis.prediction import description_from_metrics
from whichdevice.frameworks.keras_jax.calibration import kernels_from_hlo
from whichdevice.workloads.calibrate import encode_ops

from conftest import DATA


def test_xla_kernels_are_the_compiled_entry_computations_fusions_and_dots():
    # tests/data/keras_jax_mlp_step_b32.hlo.txt: the ENTRY computation of seed 001's Keras/JAX train
    # step (Dense 128 relu, Dense 10, Adam) compiled by XLA for the CPU at batch 32 (see tests/data/README.md)
    ops = kernels_from_hlo((DATA / "keras_jax_mlp_step_b32.hlo.txt").read_text())
    kernels = [o for o in ops if o["kind"] != "free"]
    assert 30 <= len(kernels) <= 45  # vs 116 TensorFlow graph kernels for the same step
    mm = sorted(o["flops"] for o in kernels if o["kind"] == "matmul")
    # forward 32x100 . 100x128 and 32x128 . 128x10, their two weight gradients, one input gradient
    assert mm == sorted(
        [2 * 32 * 100 * 128, 2 * 32 * 128 * 10, 2 * 32 * 100 * 128, 2 * 32 * 128 * 10, 2 * 32 * 128 * 10]
    )
    assert all(o["bytes"] > 0 for o in kernels)
    w = description_from_metrics(encode_ops(ops, 32 * 100 * 4 + 32 * 4, "xla"), 32)
    assert w.launch_mode == "xla" and w.kernels == len(kernels)
    gpu = deviceprofile.load("h100").gpu
    p = costmodel.predict(w, gpu)
    # without a measured host overhead: the kernels at the ~10 µs floor, matmuls a little above it
    assert w.kernels * gpu.dispatch_eager_s <= p.step.mid <= 1.5 * w.kernels * gpu.dispatch_eager_s


def test_torch_eager_kernels_are_the_aten_ops_of_one_step():
    torch = pytest.importorskip("torch")
    from whichdevice.frameworks.torch import calibration, training

    model = training.build_model("seed001")
    opt, loss = training.optimizer_and_loss("seed001", model)
    x, y = torch.rand(32, 100), torch.randint(0, 10, (32,))
    d = calibration.describe_train(model, opt, loss, training, x, y)
    kernels = [o for o in d["ops"] if o["kind"] != "free"]
    types = [o["op_type"] for o in kernels]
    assert d["launch_mode"] == "eager"
    assert sorted(o["flops"] for o in kernels if o["kind"] == "matmul") == sorted(
        [2 * 32 * 100 * 128, 2 * 32 * 128 * 10, 2 * 32 * 128 * 10, 2 * 128 * 32 * 10, 2 * 100 * 32 * 128]
    )
    # Adam's multi-tensor path, as on a GPU: one kernel per update step for all four weights
    assert "_foreach_addcdiv_" in types and types.count("_foreach_lerp_") == 1
    assert 15 <= len(kernels) <= 30  # views, detach and the CPU-side step counters launch nothing


TF_CHILD = r"""
import json, os, sys
os.environ["CUDA_VISIBLE_DEVICES"] = "-1"; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from whichdevice.frameworks.tensorflow import calibration, training
from whichdevice.workloads.calibrate import encode_ops
out = {}
for steps in (3, 6):
    layers = [keras.Input((steps, 4)), keras.layers.LSTM(8), keras.layers.Dropout(0.2), keras.layers.Dense(3)]
    x = np.zeros((8, steps, 4), np.float32)
    model = keras.Sequential(layers)
    y = np.zeros((8,), np.int64)
    d = calibration.describe_train(model, keras.optimizers.Adam(), keras.losses.SparseCategoricalCrossentropy(from_logits=True), training, x, y)
    out[f"lstm{steps}"] = encode_ops(d["ops"], float(x.nbytes + y.nbytes), d["launch_mode"])
mlp = keras.Sequential([keras.Input((100,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])
mlp.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
x, y = np.zeros((32, 100), np.float32), np.zeros((32,), np.int64)
for jit in (True, False):
    mlp.jit_compile = jit
    d = calibration.describe_train(mlp, keras.optimizers.Adam(), mlp.loss, training, x, y)
    out[f"mlp_jit_{jit}"] = encode_ops(d["ops"], float(x.nbytes + y.nbytes), d["launch_mode"])
print(json.dumps(out))
"""


@pytest.mark.tf
def test_a_dropout_lstm_model_predicts_with_its_loop_unrolled():
    res = subprocess.run([sys.executable, "-c", TF_CHILD], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    described = {k: description_from_metrics(v, 8) for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items()}
    gpu = deviceprofile.load("h100").gpu
    jit, graph = described.pop("mlp_jit_True"), described.pop("mlp_jit_False")
    # TensorFlow with jit_compile=True: XLA's fused kernels, far fewer than the graph's ops
    assert jit.launch_mode == "xla" and graph.launch_mode == "graph"
    assert 20 <= jit.kernels <= 60 and graph.kernels >= 100
    assert sum(o.kind == "matmul" for o in jit.ops) == 5  # 2 forward, 2 weight gradients, 1 input gradient
    for name, w in described.items():
        assert w.uncovered == {}, name  # every op known: stateless random, While, TensorList
        p = costmodel.predict(w, gpu)
        assert p.cannot_predict is None and p.step.mid > 0, name
    types = {o.op_type for o in described["lstm3"].ops}
    assert {"StatelessRandomUniformV2", "StatelessRandomGetKeyCounter"} <= types  # Dropout
    assert {"TensorListGetItem", "TensorListSetItem"} <= types  # the LSTM's loop state
    # the forward and backward While loops run once per time step: 3 more steps, 3 more loop bodies
    # (the layers around the loop are the same)
    k3, k6 = described["lstm3"].kernels, described["lstm6"].kernels
    per_step = (k6 - k3) / 3
    assert per_step >= 10  # the cell's matmuls, gates and TensorList reads/writes, forward + backward
    mm3, mm6 = (sum(o.kind == "matmul" for o in described[k].ops) for k in ("lstm3", "lstm6"))
    assert mm6 - mm3 == 3 * 6  # per step: 2 forward matmuls, 4 backward


def test_the_describe_case_of_a_torch_step_flattens_the_eager_kernels():
    # workloads/calibrate.py's describe case as the predict child runs it (in process here; torch only)
    pytest.importorskip("torch")
    from whichdevice import frameworks
    from whichdevice.core.records import CaseSpec
    from whichdevice.core.timing import TimingPolicy
    from whichdevice.workloads import calibrate as cal_workload

    (spec,) = cal_workload.describe_cases("torch", "CPU:0", {"model": "seed001"}, [64])
    fw = frameworks.load("torch")
    raw, metrics = cal_workload.run_case(spec, fw, TimingPolicy(min_time_s=1e-3, telemetry_period_s=None), 0.0)
    assert isinstance(spec, CaseSpec) and raw.samples_s[0] > 0
    w = description_from_metrics(metrics, 64)
    assert w.launch_mode == "eager" and not w.compiled and 15 <= w.kernels <= 30
    assert w.input_bytes == 64 * 100 * 4 + 64 * 8  # float32 features (seed data is float64 on the host), int64 labels
