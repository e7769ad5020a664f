"""`whichdevice diagnose --framework torch`: the user's nn.Module.

The corpus in tests/torch_models/ (one file per way users write a model: our own code) is
pre-flighted in this process (fast: ``usermodel.check``, torch imported once) and diagnosed
end to end through the CLI (each a real run in child processes: the MLP and the DataLoader in
CI, the other families marked slow). Every diagnosed case must be measured ("ok"), torch.compile
left out where the budget is small (it compiles for 20-50 s on the 2-core machine; its own slow
test gives it the time).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from whichdevice.analysis import facade
from whichdevice import workloads
from whichdevice.workloads import torch_diagnose

MODELS = Path(__file__).parent / "torch_models"

# (file:function, --input-shape, --classes, --data): every family of the corpus.
CORPUS = {
    "mlp": ("mlp.py:build", None, "10", None),
    "cnn": ("cnn.py:SmallCNN", "1,28,28", "10", None),
    "rnn": ("rnn.py:build", "20,8", "4", None),
    "transformer": ("transformer.py:build", "16", "3", None),
    "batchnorm_dropout": ("batchnorm_dropout.py:build", None, None, None),
    "module_loss_optimizer": ("module_loss_optimizer.py:build", None, None, None),
    "custom_loss": ("custom_loss.py:build", None, None, None),
    "dataloader": ("dataloader_data.py:build", None, None, "dataloader_data.py:loader"),
}
FAST = ("dataloader",)  # diagnosed end to end in CI (its loader path holds the MLP's); the others with -m slow

USER = {"model": "user", "model_file": "m.py", "model_fn": "build", "input_shape": "20", "classes": 10}


# ------------------------------------------------------------------ the cases (parent side, no torch)


def test_cases_put_the_seed_parts_first_and_each_fix_in_a_pair():
    cases = torch_diagnose.cases("CPU:0", user={**USER, "conv2d": False}, batch=32, samples=10_000)
    kinds = [c.params["kind"] for c in cases]
    assert kinds[:3] == ["create", "create", "loop"]
    assert len({c.key for c in cases}) == len(cases)
    fixes = [c.params for c in cases if "fix" in c.params]
    assert {p["fix"] for p in fixes} == {"set_to_none", "autocast", "torch_compile"}  # no conv, no GPU
    assert fixes[-1]["fix"] == "torch_compile"  # last: compiling is the slowest case
    assert fixes[-1]["compile_limit_s"] == 22.5  # a quarter of the default 90 s budget
    loaders = [c.params for c in cases if c.params.get("data") == "loader"]
    assert [p["num_workers"] for p in loaders] == [0, *torch_diagnose.LOADERS[0].values]
    assert {p["epochs"] for p in loaders} == {3} and {p["samples"] for p in loaders} == {16 * 32}
    sweep = next(i for i, p in enumerate(c.params for c in cases) if p["kind"] == "steady" and "fix" not in p)
    assert all("fix" in c.params for c in cases[3:sweep])  # the fix pairs before the batch sweep
    loop = next(c.params for c in cases if c.params["kind"] == "loop")
    assert loop["samples"] == torch_diagnose.LOOP_STEPS * 32  # a capped pass, not 10 000 samples
    assert "conv2d" not in loop and "loss" not in loop  # pre-flight facts stay out of the cases


def test_channels_last_needs_a_conv2d_on_image_input_and_gpu_fixes_a_gpu():
    conv = {**USER, "input_shape": "1,28,28", "conv2d": True}
    cpu = {c.params.get("fix") for c in torch_diagnose.cases("CPU:0", user=conv, batch=32, samples=100)}
    gpu = torch_diagnose.cases("GPU:0", user=conv, batch=32, samples=100)
    assert "channels_last" in cpu and "cudnn_benchmark" not in cpu
    assert "cudnn_benchmark" in {c.params.get("fix") for c in gpu}
    assert {c.params.get("pin_memory") for c in gpu if c.params.get("data") == "loader_pin"} == {False, True}


def test_each_fix_pair_is_its_own_interleaved_group():
    cases = torch_diagnose.cases("CPU:0", user={**USER, "conv2d": False}, batch=32, samples=1000)
    by_key = {c.key: c for c in cases}
    groups = [[by_key[k] for k in g] for g in workloads.interleave_groups(cases)]
    loader_groups = [g for g in groups if g[0].params.get("data") == "loader"]
    assert len(loader_groups) == 1 and [c.params["num_workers"] for c in loader_groups[0]] == [0, 2]
    user_loop = [g for g in groups if g[0].params.get("kind") == "loop" and g[0].params.get("data") == "tfdata"]
    assert [len(g) for g in user_loop] == [1]  # the user's own loop is measured alone
    for g in groups:
        fix = {c.params.get("fix") for c in g}
        assert len(fix) == 1  # never a fix mixed with the sweep or another fix
        if fix != {None}:
            (name,) = fix
            (e,) = [e for e in torch_diagnose.STEADY_FIXES if e.key == name]
            assert len(g) == 2 and {c.params[name] for c in g} == {e.baseline, *e.values}
    assert {e.param for e in torch_diagnose.STEADY_FIXES} <= set(workloads._VARYING["train", "steady"])


def test_compile_limit_follows_the_budget():
    assert torch_diagnose.compile_limit_s(40) == 10.0
    assert torch_diagnose.compile_limit_s(600) == torch_diagnose.COMPILE_LIMIT_S


# ------------------------------------------------------------------ the pre-flight, in this process


@pytest.fixture(scope="module")
def usermodel():
    pytest.importorskip("torch")
    from whichdevice.frameworks.torch import usermodel

    return usermodel


def _fn(usermodel, spec: str, argument: str = "--model"):
    path, fn = spec.split(":")
    return usermodel.UserFunction(MODELS / path, fn, argument)


@pytest.mark.frameworks
@pytest.mark.parametrize("family", sorted(CORPUS))
def test_preflight_trains_every_family_one_step(usermodel, family):
    spec, shape, classes, data = CORPUS[family]
    shape_t = tuple(int(d) for d in shape.split(",")) if shape else None
    data_fn = _fn(usermodel, data, "--data") if data else None
    facts = usermodel.check(_fn(usermodel, spec), shape_t, int(classes) if classes else None, data_fn)
    assert facts["ok"] and facts["first_loss"] is not None
    expected = {
        "mlp": ([20], 10, "default CrossEntropyLoss"),
        "cnn": ([1, 28, 28], 10, "default CrossEntropyLoss"),
        "rnn": ([20, 8], 4, "default CrossEntropyLoss"),
        "transformer": ([16], 3, "default CrossEntropyLoss"),
        "batchnorm_dropout": ([16], None, "default MSELoss"),
        "module_loss_optimizer": ([12], 5, "CrossEntropyLoss"),  # classes from the user's own loss
        "custom_loss": ([10], None, "huber_l1"),
        "dataloader": ([24], 6, "default CrossEntropyLoss"),  # class ids in the data: cross-entropy
    }[family]
    assert (facts["input_shape"], facts["label_classes"], facts["loss"]) == expected
    assert facts["conv2d"] == (family == "cnn")
    assert facts["input_int"] == (family == "transformer")  # token ids for an Embedding
    if family == "module_loss_optimizer":
        assert facts["optimizer"] == "SGD" and facts["returned"] == "(module, loss_fn, optimizer)"
    if family == "dataloader":
        assert facts["data_batch"] == 64


BAD = [
    # (source, input_shape, classes, argument, words in the problem or fix)
    ("def build():\n    return 'a string'\n", None, None, "--model", "not an nn.Module"),
    (
        "import torch.nn as nn\ndef build():\n    return nn.Sequential(nn.Conv2d(3, 4, 3))\n",
        None,
        None,
        "--input-shape",
        "--input-shape 3,28,28",
    ),
    ("import torch.nn as nn\ndef build():\n    return nn.Linear(8, 3)\n", None, 5, "--classes", "--classes 3"),
    ("import torch.nn as nn\ndef build():\n    return nn.Linear(8, 3)\n", (9,), None, "--input-shape", "rejects"),
    (
        "import torch.nn as nn\ndef build():\n    return nn.Linear(8, 3), (lambda o, y: (o - y) ** 2)\n",
        None,
        None,
        "--model",
        "not one number",
    ),
    (
        "import torch, torch.nn as nn\ndef build():\n    m = nn.Linear(8, 3)\n"
        "    return m, nn.MSELoss(), torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)\n",
        None,
        None,
        "--model",
        "none of the module's parameters",
    ),
    (
        "import torch.nn as nn\ndef build():\n    return nn.LSTM(8, 4, batch_first=True)\n",
        (5, 8),
        None,
        "--model",
        "not one tensor",
    ),
    (
        "import torch.nn as nn\ndef build():\n    return nn.Linear(8, 3), 'mse'\n",
        None,
        None,
        "--model",
        "not a callable",
    ),
]


@pytest.mark.frameworks
@pytest.mark.parametrize("source,shape,classes,argument,words", BAD)
def test_preflight_refuses_in_one_line_naming_the_argument(
    usermodel, tmp_path, source, shape, classes, argument, words
):
    (tmp_path / "m.py").write_text(source)
    with pytest.raises(usermodel.UserFileError) as e:
        usermodel.check(usermodel.UserFunction(tmp_path / "m.py", "build", "--model"), shape, classes, None)
    assert e.value.argument == argument
    text = f"{e.value.problem}. {e.value.fix}"
    assert words in text and "\n" not in text


@pytest.mark.frameworks
def test_data_batches_that_are_not_pairs_and_a_batch_it_cannot_make(usermodel, tmp_path):
    (tmp_path / "d.py").write_text(
        "import torch\ndef plain():\n    return [torch.zeros(4, 24)]\n"
        "def pairs():\n    return [(torch.zeros(4, 24), torch.zeros(4, dtype=torch.long))]\n"
    )
    model = _fn(usermodel, CORPUS["dataloader"][0])
    with pytest.raises(usermodel.UserFileError, match="not .inputs, labels. pairs"):
        usermodel.check(model, None, None, usermodel.UserFunction(tmp_path / "d.py", "plain", "--data"))
    with pytest.raises(usermodel.UserFileError) as e:
        usermodel.check(model, None, None, usermodel.UserFunction(tmp_path / "d.py", "pairs", "--data"), batch=8)
    assert e.value.argument == "--batch" and "Leave --batch out" in e.value.fix
    facts = usermodel.check(model, None, 6, usermodel.UserFunction(tmp_path / "d.py", "pairs", "--data"))
    assert facts["data_batch"] == 4 and facts["label_classes"] == 6


@pytest.mark.frameworks
def test_a_loader_rebuilt_keeps_its_dataset_and_shuffling(usermodel):
    import torch

    loader = usermodel.call_data_function(MODELS / "dataloader_data.py", "loader")
    again = usermodel.rebuilt_loader(loader, batch=16, num_workers=0)
    assert again.batch_size == 16 and again.dataset is loader.dataset
    assert isinstance(again.sampler, torch.utils.data.RandomSampler)
    capped = usermodel.CappedBatches(again, 3)
    assert len(capped) == 3 and len(list(capped)) == 3 and len(list(capped)) == 3  # re-iterable
    x, y = usermodel.concat_batch(again, 100)
    assert x.shape == (100, 24) and y.shape == (100,)


# ------------------------------------------------------------------ the CLI


def test_a_keras_diagnose_of_a_torch_file_points_at_framework_torch(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("keras")
    (tmp_path / "net.py").write_text(
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n    def forward(self, x):\n        return self.fc(x)\n"
    )
    code, _, err = run_cli(["diagnose", "--model", f"{tmp_path / 'net.py'}:Net", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--framework torch" in err and "nn.Module Net" in err
    assert not (tmp_path / "o").exists()


def test_bad_framework_is_one_line(tmp_path, capsys):
    code, _, err = run_cli(
        ["diagnose", "--framework", "mxnet", "--model", f"{MODELS / 'mlp.py'}:build", "--out", str(tmp_path / "o")],
        capsys,
    )
    assert code == 2 and "--framework" in err and "torch" in err


@pytest.mark.frameworks
def test_torch_preflight_failure_is_one_line_and_writes_nothing(tmp_path, capsys):
    pytest.importorskip("torch")
    code, _, err = run_cli(
        ["diagnose", "--framework", "torch", "--model", f"{MODELS / 'cnn.py'}:SmallCNN", "--out", str(tmp_path / "o")],
        capsys,
    )
    assert code == 2 and "--input-shape 1,28,28" in err
    assert not (tmp_path / "o").exists()


def _diagnose(tmp_path, capsys, family: str, budget: str = "40", extra=()):
    spec, shape, classes, data = CORPUS[family]
    args = ["diagnose", "--framework", "torch", "--model", f"{MODELS / spec}"]
    args += ["--input-shape", shape] if shape else []
    args += ["--classes", classes] if classes else []
    args += ["--data", f"{MODELS / data}"] if data else []
    args += ["--budget", budget, "--cpu-threads", "1", "--samples", "512", "--json", str(tmp_path / "d.json"), *extra]
    code, out, err = run_cli([*args, "--out", str(tmp_path)], capsys)
    assert code == 0, err
    return json.loads((tmp_path / "d.json").read_text()), out


def _without_compile(monkeypatch):
    monkeypatch.setattr(torch_diagnose, "STEADY_FIXES", tuple(f for f in torch_diagnose.STEADY_FIXES if not f.compiles))


def _check_all_measured(record, family):
    failed = [
        (
            {k: v for k, v in r["spec"]["params"].items() if k in ("kind", "data", "num_workers", "fix", "batch")},
            r.get("error"),
        )
        for r in record["results"]
        if r["status"] != "ok"
    ]
    assert not failed, (family, failed)
    fixes = {r["spec"]["params"].get("fix") for r in record["results"]} - {None}
    assert {"set_to_none", "autocast"} <= fixes
    assert record["options"]["framework"] == "torch" and record["options"]["torch_loss"]


@pytest.mark.frameworks
@pytest.mark.parametrize("family", FAST)
def test_diagnose_measures_every_case(tmp_path, capsys, monkeypatch, family):
    pytest.importorskip("torch")
    _without_compile(monkeypatch)
    record, out = _diagnose(tmp_path, capsys, family)
    _check_all_measured(record, family)
    assert "Answer: No GPU here" in out
    assert "cudnn.benchmark, pin_memory + non_blocking (no GPU here)" in out
    if family == "dataloader":
        assert record["options"]["batch"] == 64  # the DataLoader's own batch
        assert any(r["spec"]["params"].get("data_file") for r in record["results"])


@pytest.mark.slow
@pytest.mark.frameworks
@pytest.mark.parametrize("family", [f for f in sorted(CORPUS) if f not in FAST])
def test_diagnose_measures_every_case_slow(tmp_path, capsys, monkeypatch, family):
    pytest.importorskip("torch")
    _without_compile(monkeypatch)
    record, _ = _diagnose(tmp_path, capsys, family, budget="60")
    _check_all_measured(record, family)
    if family == "cnn":
        assert any(r["spec"]["params"].get("fix") == "channels_last" for r in record["results"])


@pytest.mark.slow
@pytest.mark.frameworks
def test_torch_compile_is_measured_or_says_why(tmp_path, capsys):
    pytest.importorskip("torch")
    record, out = _diagnose(tmp_path, capsys, "mlp", budget="240")
    compiled = [r for r in record["results"] if r["spec"]["params"].get("torch_compile")]
    assert compiled
    if compiled[0]["status"] != "ok":
        assert "torch.compile" in out and "Not measured:" in out


# ------------------------------------------------------------------ the Python API


@pytest.mark.frameworks
def test_objects_from_a_notebook_become_files_a_child_loads(usermodel, tmp_path):
    import torch

    net = torch.nn.Sequential(torch.nn.Linear(6, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(40, 6), torch.randint(0, 3, (40,))
    model_spec, data_spec = usermodel.materialize((net, torch.nn.CrossEntropyLoss(), opt), (x, y), tmp_path)
    path, fn = model_spec.rsplit(":", 1)
    user = usermodel.call_model_function(path, fn)
    assert user.returned == "(module, loss_fn, optimizer)"
    assert user.optimizer.param_groups[0]["params"][0] is next(user.module.parameters())  # still bound
    loader = usermodel.call_data_function(*data_spec.rsplit(":", 1))
    assert usermodel.is_loader(loader) and len(loader.dataset) == 40
    facts = usermodel.check(
        usermodel.UserFunction(Path(path), fn, "--model"),
        None,
        None,
        usermodel.UserFunction(Path(data_spec.rsplit(":", 1)[0]), "data", "--data"),
    )
    assert facts["label_classes"] == 3 and facts["data_batch"] == 32


def test_api_refuses_torch_data_without_a_model_object():
    import whichdevice

    with pytest.raises(ValueError, match="data: a DataLoader"):
        whichdevice.diagnose(f"{MODELS / 'mlp.py'}:build", data=[(1, 2)], framework="torch")


@pytest.mark.slow
@pytest.mark.frameworks
def test_api_diagnoses_a_module_object(monkeypatch):
    torch = pytest.importorskip("torch")
    import whichdevice

    _without_compile(monkeypatch)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    result = whichdevice.diagnose(net, classes=4, samples=256, budget_s=40, cpu_threads=1)
    record = result.record
    assert record.options["framework"] == "torch" and record.options["torch_returned"] == "module"
    assert all(r.status == "ok" for r in record.results)
    # the record names the pickled model's loader: it outlives the call, as a Keras object's does
    model_file = next(r.spec.params["model_file"] for r in record.results if r.spec.params.get("model_file"))
    assert Path(model_file).exists(), model_file


# ------------------------------------------------------------------ the GPU side, on recorded H100 data


def _h100_diagnose_record(probe: dict):
    """A torch diagnose record of seed 001's MLP (the user's model here) on the reference H100 machine:
    the batch sweep (``*_step_s``), the loss read back every step at batch 32 (``*_step_item_s``) and
    the user's loop at batch 32 (``*_first_step_s``, ``*_step_from_host_s``), CPU:0 and GPU:0."""
    from conftest import make_record, reference_timing

    from whichdevice.core.records import CaseResult, CaseSpec, Timing

    rows = {r["batch"]: r for r in probe["mlp"]}
    user = {"model": "user", "model_file": "mlp.py", "model_fn": "build", "input_shape": "100", "classes": 10}
    results = []

    def add(device, params, timing, batch):
        spec = CaseSpec(workload="train", framework="torch", device=device, params={**user, **params})
        results.append(
            CaseResult(spec=spec, status="ok", timing=timing, wall_s=0.0, metrics={"samples_per_step": batch})
        )

    for device, pre in (("CPU:0", "cpu"), ("GPU:0", "cuda")):
        for b in (32, 128, 512, 2048, 8192):
            add(device, {"kind": "steady", "batch": b, "sync": "none"}, reference_timing(rows[b][f"{pre}_step_s"]), b)
        add(
            device,
            {"kind": "steady", "batch": 32, "sync": "each"},
            reference_timing(rows[32][f"{pre}_step_item_s"]),
            32,
        )
        first, steady = rows[32][f"{pre}_first_step_s"], rows[32][f"{pre}_step_from_host_s"]
        loop = Timing(first_call_s=first, warmup_s=[first], samples_s=[steady] * 7, number_per_sample=1, overhead_s=0.0)
        add(
            device,
            {"kind": "loop", "example": "user", "batch": 32, "data": "tfdata", "samples": 1024, "epochs": 1},
            loop,
            32,
        )
    record = make_record(results, experiment="diagnose")
    return record.model_copy(update={"options": {"framework": "torch", "batch": 32, "model": "mlp.py:build"}})


def _torch_verdicts(v):
    """The PyTorch fixes' verdicts (workloads/fixes.TORCH_FIXES), by key."""
    return {fv.kind: fv for fv in v.fixes if fv.entry.framework == "torch"}


def test_gpu_side_reads_the_h100_reference(h100_probe):
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.present.firstscreen import cause_text, first_screen
    from whichdevice.present.suitepage import settings_advice

    record = _h100_diagnose_record(h100_probe)
    v = suite_verdict(record, seed_batch=32)
    advice = settings_advice(v, 32)
    # The user's loop at batch 32: CPU 0.82 ms a step, the H100 1.33 ms (its ~1 ms floor): the CPU.
    assert advice[0].startswith("Device: CPU:0 —") and "batch 32" in advice[0]
    fs = first_screen(record, v, advice=advice)
    assert fs.answer[0].startswith("Device: CPU:0")
    assert any("GPU:0" in a and "batch" in a for a in fs.answer[1:])  # the sweep's crossover
    torch = _torch_verdicts(v)
    # a GPU was measured: the GPU-only fixes are not excused by "no GPU" (their cases are not in this record)
    assert torch["cudnn_benchmark"].not_measured.reason == "not_in_suite"
    assert any("reading the loss back (.item())" in cause_text(c) for c in fs.causes)


# ------------------------------------------------------------------ a recorded real run


def test_first_screen_of_a_recorded_torch_diagnose():
    """tests/data/diagnose_torch_cnn_cpu_2core.json: a real run of the corpus's CNN on the loaded
    2-core machine, its torch.compile case past its bound."""
    from whichdevice.core.records import load_run
    from whichdevice.present.firstscreen import screen_lines
    from whichdevice.present.suitepage import suite_report

    record = load_run(Path(__file__).parent / "data" / "diagnose_torch_cnn_cpu_2core.json")
    rep = suite_report(facade.suite(record), Path("/nonexistent/x.png"))
    torch = _torch_verdicts(rep.verdict)
    assert {k for k, fv in torch.items() if fv.fixes} == {"set_to_none", "autocast", "channels_last", "num_workers"}
    assert torch["torch_compile"].not_measured.reason == "failed"  # past its compile bound (the Failed list says so)
    assert torch["cudnn_benchmark"].not_measured.reason == "no_gpu"
    assert torch["set_to_none"].outcome == "helps"  # the one significant claim of this (noisy, loaded) run
    text = "\n".join(t for _, t in screen_lines(rep.first, report=None))
    assert "optimizer.zero_grad(set_to_none=True)" in text
    assert "Caveat: the default since PyTorch 2.0" in text
    assert "cudnn.benchmark, pin_memory + non_blocking (no GPU here)" in text
    assert "torch.compile" in text


def test_a_keras_diagnose_record_lists_no_torch_fixes():
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.core.records import load_run

    record = load_run(Path(__file__).parent / "data" / "diagnose_cpu_2core.json")
    assert not _torch_verdicts(suite_verdict(record, seed_batch=32))


def test_a_torch_diagnose_without_gpu_does_not_offer_predict_on_the_module():
    from whichdevice.core.records import load_run
    from whichdevice.present.suitepage import suite_report

    record = load_run(Path(__file__).parent / "data" / "diagnose_torch_cnn_cpu_2core.json")
    answer = suite_report(facade.suite(record), Path("/nonexistent/x.png")).first.answer
    assert "predict --framework torch --quick" in answer[1] and "--model" not in answer[1]


# ------------------------------------------------------------------ a Keras model on another backend


def _plan(framework: str):
    from whichdevice.cli.run import DiagnosePlan

    user = {"model": "user", "model_file": "m.py", "model_fn": "build", "input_shape": "20", "classes": 3}
    return DiagnosePlan(
        model="m.py:build",
        data=None,
        user=user,
        batch=32,
        samples=1000,
        budget_s=90,
        devices_wanted=None,
        cpu_threads=None,
        json_file="d.json",
        command=["whichdevice"],
        framework=framework,
    )


@pytest.mark.parametrize("framework", ["keras-jax", "keras-torch"])
def test_keras_backends_leave_out_what_does_not_apply(framework):
    from whichdevice import frameworks
    from whichdevice.cli.run import _diagnose_cases
    from whichdevice.core.records import DeviceInfo

    cases = _diagnose_cases(_plan(framework))(None, DeviceInfo(name="CPU:0", kind="cpu"))
    assert {c.framework for c in cases} == {framework}
    assert all(frameworks.unsupported(framework, c.params) is None for c in cases)
    assert any(c.params.get("kind") == "fit" for c in cases)  # model.fit runs on every Keras backend
    has_spe = any("steps_per_execution" in c.params for c in cases)
    assert has_spe == (framework == "keras-jax")  # Keras' torch trainer: one step per call


def test_keras_backend_with_tf_data_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "m.py").write_text("def build():\n    pass\n")
    code, _, err = run_cli(
        [
            "diagnose",
            "--framework",
            "keras-jax",
            "--model",
            f"{tmp_path / 'm.py'}:build",
            "--data",
            f"{tmp_path / 'm.py'}:build",
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
    )
    assert code == 2 and "Checking" not in err and err.startswith("error: --data") and "--framework tensorflow" in err


@pytest.mark.slow
@pytest.mark.frameworks
def test_keras_jax_diagnose_end_to_end(tmp_path, capsys):
    pytest.importorskip("jax")
    (tmp_path / "m.py").write_text(
        "import keras\ndef build():\n    return keras.Sequential([keras.Input((20,)), keras.layers.Dense(8, "
        "activation='relu'), keras.layers.Dense(3, activation='softmax')])\n"
    )
    args = ["diagnose", "--framework", "keras-jax", "--model", f"{tmp_path / 'm.py'}:build", "--classes", "3"]
    code, out, err = run_cli([*args, "--samples", "256", "--budget", "30", "--json", str(tmp_path / "d.json")], capsys)
    assert code == 0, err
    record = json.loads((tmp_path / "d.json").read_text())
    assert record["options"]["framework"] == "keras-jax"
    assert any(r["status"] == "ok" and r["spec"]["params"].get("kind") == "fit" for r in record["results"])


# ------------------------------------------------------------------ --resume


def test_torch_diagnose_resumes_with_the_torch_preflight_again(tmp_path, capsys, monkeypatch):
    """Killed after 3 cases, then --resume: the plan keeps --framework torch, the model file is
    checked again by the torch pre-flight (not the Keras one), the cases finish (fake children)."""
    import sys

    from test_resume import SUFFIX, _FakeMeasuring, _keys, _killed

    (tmp_path / "m.py").write_text("def build(): pass\n")
    json_file = tmp_path / "d.json"
    fake = _FakeMeasuring(monkeypatch, kill_framework="torch", kill_after=3)
    torch_checks = []

    def user_params_and_facts(model_fn, shape, classes, data_fn, batch, env):
        torch_checks.append(batch)
        facts = {"step_s": 1e-3, "first_step_s": 2e-3, "build_s": 1e-3, "import_s": 1.0}  # the plan's cost model
        return {
            "model": "user",
            "model_file": str(model_fn.path),
            "model_fn": "build",
            "input_shape": "4",
            "classes": None,
            "label_classes": None,
            "output_shape": "3",
            "data_file": None,
            "data_fn": None,
            "conv2d": False,
            "loss": "default MSELoss",
        }, facts

    monkeypatch.setattr(torch_diagnose, "user_params_and_facts", user_params_and_facts)
    monkeypatch.setattr(torch_diagnose, "STEADY_FIXES", torch_diagnose.STEADY_FIXES[:2])
    args = ["diagnose", "--framework", "torch", "--model", f"{tmp_path / 'm.py'}:build", "--batch", "16"]
    _killed([*args, "--budget", "30", "--json", str(json_file)], monkeypatch)
    fake.ran, fake.kill_framework = [], None
    monkeypatch.setattr(sys, "argv", ["whichdevice", "diagnose", "--resume", str(tmp_path)])
    code, _, err = run_cli(["diagnose", "--resume", str(tmp_path / f"d{SUFFIX}")], capsys)
    assert code == 0, err
    assert torch_checks == [16, 16] and fake.preflights == 0  # torch's pre-flight, twice; never Keras'
    data, keys = _keys(json_file)
    assert len(keys) == len(set(keys)) == len(fake.ran) + 3
    assert data["options"]["framework"] == "torch" and {r["spec"]["framework"] for r in data["results"]} == {"torch"}


# ------------------------------------------------------------------ The plan sized to the budget

# The pre-flight's facts of a slow model (a DCGAN discriminator's step on the loaded 2-core machine:
# 113 s wall for --budget 60, 16 of 19 cases skipped) and of a fast one (the corpus's CNN).
SLOW = {"step_s": 1.0, "first_step_s": 1.5, "build_s": 0.05, "import_s": 4.0}
FAST = {"step_s": 0.005, "first_step_s": 0.05, "build_s": 0.002, "import_s": 4.0}


@pytest.mark.parametrize("facts", [SLOW, FAST], ids=["slow", "fast"])
@pytest.mark.parametrize("budget", [30.0, 60.0, 90.0])
def test_the_torch_plan_fits_round_1_in_its_share_of_the_budget(facts, budget):
    """As the Keras diagnose: round 1 planned to its share of what the budget leaves after the
    start-up (two rounds) or to the whole of it (one), from the pre-flight's measured step."""
    from whichdevice.workloads import suite

    s = torch_diagnose.size_cases(facts, batch=32, budget_s=budget, samples=10_000)
    avail = max(budget - max(suite.START_UP_MIN_S, facts["import_s"]), 0.5 * budget)
    share = suite.ROUND1_SHARE if s["rounds"] == 2 else suite.ROUND1_ONLY_SHARE
    assert s["planned_s"] <= share * avail + 1e-9
    cases = torch_diagnose.cases("GPU:0", user={**USER, "conv2d": False}, batch=32, samples=10_000, sizing=s)
    sweep = sorted({c.params["batch"] for c in cases if c.params["kind"] == "steady" and "fix" not in c.params})
    assert sweep == s["sweep_batches"] and 32 in sweep  # the user's batch is always measured
    fixes = {c.params["fix"] for c in cases if "fix" in c.params}
    assert fixes == set(s["fixes_planned"]) - {"channels_last"}  # no Conv2d in USER
    assert any(c.params.get("data") == "loader" for c in cases) == s["loaders"]
    assert any(c.params.get("data") == "loader_pin" for c in cases) == s["pin_memory"]
    loop = next(c for c in cases if c.params["kind"] == "loop")
    assert loop.params["samples"] == s["loop_samples"] <= torch_diagnose.LOOP_STEPS * 32
    if not (s["loaders"] and "torch_compile" in s["fixes_planned"] and len(sweep) == 5):
        assert s["cut"][-1].startswith("a larger --budget measures what was cut")  # what was cut is said


def test_a_slow_step_leaves_the_costly_cases_out_and_says_so():
    """A 1 s step at --budget 60: no DataLoader pairs (3 worker start-ups and 96 steps) and no
    torch.compile are started to overrun the budget; each cut is one line of the record."""
    s = torch_diagnose.size_cases(SLOW, batch=32, budget_s=60.0, samples=10_000)
    assert not s["loaders"] and s["compile_limit_s"] is None and "torch_compile" not in s["fixes_planned"]
    assert s["loop_samples"] < torch_diagnose.LOOP_STEPS * 32
    cut = "\n".join(s["cut"])
    assert "DataLoader workers pair" in cut and "torch.compile not measured" in cut and "the user's loop" in cut
    fast = torch_diagnose.size_cases(FAST, batch=32, budget_s=90.0, samples=10_000)
    assert fast["loaders"] and fast["rounds"] == 2 and len(fast["fixes_planned"]) >= 4


def test_a_budget_too_short_for_the_essentials_is_one_line():
    from whichdevice.core.errors import UsageError

    with pytest.raises(UsageError) as e:
        torch_diagnose.size_cases({**SLOW, "step_s": 5.0}, batch=32, budget_s=30.0, samples=10_000)
    assert e.value.argument == "--budget" and "Pass --budget" in e.value.fix


def test_a_journal_without_the_torch_plan_keeps_every_case():
    """A diagnose journaled before the plan (sizing None) resumes with the cases as they were."""
    old = torch_diagnose.cases("GPU:0", user={**USER, "conv2d": False}, batch=32, samples=10_000)
    assert {c.params.get("fix") for c in old} >= {"set_to_none", "autocast", "cudnn_benchmark", "torch_compile"}
    assert sum(c.params.get("data") in ("loader", "loader_pin") for c in old) == 4


# ------------------------------------------------------------------ Torch.compile's compile, a one-time cost


def _compile_text(record_path: Path) -> list[str]:
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.core.records import load_run
    from whichdevice.present.fixes import verdict_lines

    record = load_run(record_path)
    fv = _torch_verdicts(suite_verdict(record, seed_batch=32))["torch_compile"]
    return verdict_lines(fv)


def test_h200_compile_past_its_bound_is_a_measured_lower_bound_not_a_budget_blame():
    """The H200's torch.compile "did not finish compiling within 7.5 s (raise --budget)": now the
    measured lower bound and the fewest steps compiling could pay back in."""
    lines = _compile_text(Path(__file__).parent / "data" / "h200" / "diag_cnn.json")
    line = next(ln for ln in lines if ln.startswith("GPU:0"))
    assert "compiling took more than 7.5 s here (stopped at its bound)" in line
    assert "it pays back only after more than" in line and "steps even if compiled steps were free" in line
    assert "raise --budget" not in line


def test_a_finished_compile_is_reported_with_its_break_even(tmp_path):
    """A compiled pair with its measured compile (``compile_s``): the one-time cost and the step
    count after which it pays back, from the pair's steady steps (analysis/warmup.break_even)."""
    from whichdevice.core.records import load_run

    src = Path(__file__).parent / "data" / "h200" / "diag_cnn.json"
    data = json.loads(src.read_text())
    for r in data["results"]:
        p = r["spec"]["params"]
        if p.get("fix") == "torch_compile" and r["spec"]["device"] == "GPU:0":
            base = next(
                x
                for x in data["results"]
                if x["spec"]["device"] == "GPU:0" and x["spec"]["params"].get("torch_compile") is False
            )
            if p["torch_compile"]:  # the compiled side: steps a quarter of the eager ones, 12 s to compile
                r.update(status="ok", error=None, failure=None, wall_s=14.0)
                r["timing"] = {**base["timing"], "samples_s": [s / 4 for s in base["timing"]["samples_s"]]}
                r["timing"]["first_call_s"] = base["timing"]["first_call_s"] / 4
                r["metrics"] = {**base["metrics"], "compile_s": 12.0}
    path = tmp_path / "compiled.json"
    path.write_text(json.dumps(data))
    load_run(path)  # a valid record
    line = next(ln for ln in _compile_text(path) if ln.startswith("GPU:0: compiling"))
    assert "compiling took 12" in line and "a one-time cost" in line and "it pays back after" in line


def test_a_fix_the_plan_left_out_is_said_so_not_called_outside_the_suite(tmp_path):
    """A torch fix the budget's plan left out reads "left out: time budget", never "not part of
    your model's suite" (it is part of it), and is listed on the first screen."""
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.core.records import load_run
    from whichdevice.present.fixes import not_measured_text

    data = json.loads((Path(__file__).parent / "data" / "h200" / "diag_cnn.json").read_text())
    keep = ("set_to_none",)
    data["results"] = [
        r
        for r in data["results"]
        if r["spec"]["params"].get("fix") in (None, *keep)
        and not str(r["spec"]["params"].get("data", "")).startswith("loader")
    ]
    data["options"] |= {"fixes_planned": list(keep), "budget_cut": ["autocast, ... not measured: ..."]}
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(data))
    torch = _torch_verdicts(suite_verdict(load_run(path), seed_batch=32))
    for key in ("autocast", "channels_last", "cudnn_benchmark", "torch_compile", "num_workers", "pin_memory"):
        assert torch[key].not_measured.reason == "cut", key
        assert "time budget" in not_measured_text(torch[key].not_measured, "diagnose")
    assert torch["set_to_none"].fixes


def test_the_pin_memory_pair_is_planned_apart_from_the_workers_pair():
    """On the H200: diagnose --framework torch --budget 45 left out the DataLoader workers pair
    (three spawned workers a side, a 5.8 s torch import each) and with it the pin_memory pair, the
    GPU's own loader fix, which starts no workers. The pin pair is planned on its own, first."""
    h200 = {"step_s": 0.00229, "first_step_s": 0.017, "build_s": 0.002, "import_s": 5.79}  # its pre-flight (CPU)
    s = torch_diagnose.size_cases(h200, batch=32, budget_s=45.0, samples=10_000)
    assert s["pin_memory"] and not s["loaders"]
    gpu = torch_diagnose.cases("GPU:0", user={**USER, "conv2d": False}, batch=32, samples=10_000, sizing=s)
    assert [c.params["pin_memory"] for c in gpu if c.params.get("data") == "loader_pin"] == [False, True]
    assert not any(c.params.get("data") == "loader" for c in gpu)
    cpu = torch_diagnose.cases("CPU:0", user={**USER, "conv2d": False}, batch=32, samples=10_000, sizing=s)
    assert not any(str(c.params.get("data", "")).startswith("loader") for c in cpu)
    assert any("DataLoader workers pair not measured" in line for line in s["cut"])
