"""`whichdevice diagnose --framework torch --model FILE.py:FUNCTION`: the user's nn.Module, trained
by the script diagnose writes (a DataLoader and a loop with the optimizer's step) and measured
through the script path.

The corpus in tests/torch_models/ (one file per way users write a model: our own code) is
prepared in this process (fast: ``frameworks/torch/modelscript.prepare``, what the script calls
first, torch imported once) and diagnosed end to end through the CLI (each a real run in child
processes: the DataLoader family in CI, the others marked slow).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import run_cli

from whichdevice.analysis import facade

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


# ------------------------------------------------------------------ what the script prepares, in this process


@pytest.fixture(scope="module")
def prep():
    pytest.importorskip("torch")
    from whichdevice.frameworks.torch import modelscript

    return modelscript


def _prepare(prep, family: str, **kw):
    spec, shape, classes, data = CORPUS[family]
    path, fn = spec.split(":")
    shape_t = tuple(int(d) for d in shape.split(",")) if shape else None
    data_t = (str(MODELS / data.split(":")[0]), data.split(":")[1]) if data else None
    args = {"input_shape": shape_t, "classes": int(classes) if classes else None, "samples": 64, "data": data_t}
    return prep.prepare(str(MODELS / path), fn, **{**args, **kw})


@pytest.mark.frameworks
@pytest.mark.parametrize("family", sorted(CORPUS))
def test_every_family_is_prepared_with_its_loss_and_data(prep, family):
    import torch

    p = _prepare(prep, family)
    expected = {
        "mlp": ([20], torch.int64, "CrossEntropyLoss"),
        "cnn": ([1, 28, 28], torch.int64, "CrossEntropyLoss"),
        "rnn": ([20, 8], torch.int64, "CrossEntropyLoss"),
        "transformer": ([16], torch.int64, "CrossEntropyLoss"),
        "batchnorm_dropout": ([16], torch.float32, "MSELoss"),
        "module_loss_optimizer": ([12], torch.int64, "CrossEntropyLoss"),  # classes from the user's own loss
        "custom_loss": ([10], torch.float32, "function"),
        "dataloader": ([24], torch.int64, "CrossEntropyLoss"),  # class ids in the data: cross-entropy
    }[family]
    x, y = (
        next(iter(torch.utils.data.DataLoader(p.data, batch_size=4))) if family != "dataloader" else next(iter(p.data))
    )
    assert (list(x.shape[1:]), y.dtype, type(p.loss_fn).__name__) == expected
    if family == "transformer":
        assert not torch.is_floating_point(x)  # token ids for an Embedding
    if family == "module_loss_optimizer":
        assert type(p.optimizer).__name__ == "SGD"
    else:
        assert type(p.optimizer).__name__ == "Adam" and p.optimizer.defaults["lr"] == 1e-3
    if family == "dataloader":
        assert p.data.batch_size == 64  # the user's own DataLoader, as they built it
    else:
        assert len(p.data) == 64
    loss = p.loss_fn(p.model(x), y)  # the loop's step takes what was prepared
    assert loss.numel() == 1


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
def test_a_users_file_problem_is_one_line_naming_the_argument(prep, tmp_path, source, shape, classes, argument, words):
    from whichdevice.frameworks.common.userload import UserFileError

    (tmp_path / "m.py").write_text(source)
    with pytest.raises(UserFileError) as e:
        prep.prepare(str(tmp_path / "m.py"), "build", input_shape=shape, classes=classes, samples=8)
    assert e.value.argument == argument
    text = f"{e.value.problem}. {e.value.fix}"
    assert words in text and "\n" not in text


@pytest.mark.frameworks
def test_data_batches_that_are_not_pairs_and_a_batch_it_cannot_make(prep, tmp_path):
    from whichdevice.frameworks.common.userload import UserFileError

    (tmp_path / "d.py").write_text(
        "import torch\ndef plain():\n    return [torch.zeros(4, 24)]\n"
        "def pairs():\n    return [(torch.zeros(4, 24), torch.zeros(4, dtype=torch.long))]\n"
    )
    model = str(MODELS / "dataloader_data.py")
    with pytest.raises(UserFileError, match="not .inputs, labels. pairs"):
        prep.prepare(model, "build", data=(str(tmp_path / "d.py"), "plain"))
    with pytest.raises(UserFileError) as e:
        prep.prepare(model, "build", data=(str(tmp_path / "d.py"), "pairs"), batch=8)
    assert e.value.argument == "--batch" and "Leave --batch out" in e.value.fix
    assert len(prep.prepare(model, "build", classes=6, data=(str(tmp_path / "d.py"), "pairs")).data) == 1


@pytest.mark.frameworks
def test_a_loader_rebuilt_keeps_its_dataset_and_shuffling(prep):
    import torch

    p = _prepare(prep, "dataloader", batch=16)
    assert p.data.batch_size == 16 and isinstance(p.data.sampler, torch.utils.data.RandomSampler)


# ------------------------------------------------------------------ the script diagnose writes


def _job(**kw):
    from whichdevice.workloads.modelscript import ModelJob

    base = dict(model=("/m/net.py", "build"), framework="torch", input_shape=(20,), classes=10, samples=512, batch=None)
    return ModelJob(**{**base, **kw})


def test_the_torch_script_trains_with_a_dataloader_and_the_optimizers_step():
    from whichdevice.workloads import modelscript

    text = modelscript.text(_job())
    compile(text, "script.py", "exec")
    assert "modelscript.prepare('/m/net.py', 'build', input_shape=(20,), classes=10, samples=512)" in text
    assert "DataLoader(prepared.data, batch_size=32, shuffle=True)" in text
    assert "loss.backward()" in text and "optimizer.step()" in text
    with_data = modelscript.text(_job(data=("/m/d.py", "loader"), batch=16))
    assert "data=('/m/d.py', 'loader'), batch=16" in with_data and "loader = prepared.data" in with_data


@pytest.mark.parametrize(
    "framework,backend", [("tensorflow", "tensorflow"), ("keras-jax", "jax"), ("keras-torch", "torch")]
)
def test_the_keras_script_compiles_an_uncompiled_model_and_fits(framework, backend):
    from whichdevice.workloads import modelscript

    text = modelscript.text(_job(framework=framework, batch=64, samples=1000))
    compile(text, "script.py", "exec")
    assert f'os.environ["KERAS_BACKEND"] = {backend!r}' in text
    assert "if prepared.loss is not None:" in text and "keras.optimizers.Adam(0.001)" in text
    assert "model.fit(prepared.x, prepared.y, batch_size=64, epochs=26)" in text  # at least 400 steps


def test_the_script_is_written_beside_the_record_not_in_the_users_folder(tmp_path):
    from whichdevice.workloads import modelscript

    record = tmp_path / "runs" / "diagnose-1.json"
    path = modelscript.write(_job(), str(record))
    assert path == tmp_path / "runs" / "diagnose-1.model.py" and path.read_text() == modelscript.text(_job())
    modelscript.remove(path, folder_too=True)
    assert not (tmp_path / "runs").exists()


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


def _diagnose(tmp_path, capsys, family: str, budget: str = "60", extra=()):
    spec, shape, classes, data = CORPUS[family]
    args = ["diagnose", "--framework", "torch", "--model", f"{MODELS / spec}"]
    args += ["--input-shape", shape] if shape else []
    args += ["--classes", classes] if classes else []
    args += ["--data", f"{MODELS / data}"] if data else []
    args += ["--budget", budget, "--samples", "512", "--json", str(tmp_path / "d.json"), *extra]
    code, out, err = run_cli([*args, "--out", str(tmp_path)], capsys)
    assert code == 0, err
    return json.loads((tmp_path / "d.json").read_text()), out, err


def _check_measured(record, family):
    """The baseline measured; every case measured or "not measured" with its reason (a torch.compile
    past its bound is a measured lower bound, not a failure of the script)."""
    base = [r for r in record["results"] if r["status"] == "ok"]
    assert base, (family, [(r["spec"]["params"].get("variant"), r.get("error")) for r in record["results"]])
    assert record["options"]["framework"] == "torch"
    assert record["options"]["model"].endswith(CORPUS[family][0])
    script = Path(record["options"]["script"])
    assert script.name.endswith(".model.py") and script.parent == Path(record["options"]["script"]).parent


@pytest.mark.frameworks
@pytest.mark.parametrize("family", FAST)
def test_diagnose_measures_the_model_through_the_script(tmp_path, capsys, family):
    pytest.importorskip("torch")
    record, out, err = _diagnose(tmp_path, capsys, family, budget="40")
    _check_measured(record, family)
    assert "Answer: No GPU here" in out
    # the GPU-only fixes are named as not measured here; which budget-cut fixes sit between them
    # in the line (and so how they group) depends on what the machine's load let the plan hold.
    # Read from the lines the report lists: the terminal drops them when a busy run's causes and
    # caveats would take the screen past 25 lines (present/firstscreen.screen_lines)
    from whichdevice.analysis import facade
    from whichdevice.core.records import load_run
    from whichdevice.present.firstscreen import first_screen, tail_lines

    loaded = load_run(tmp_path / "d.json")
    tail = " ".join(tail_lines(first_screen(loaded, facade.suite(loaded).verdict)))
    notmeasured = re.search(r"Not measured: (.*?)no GPU here\)", tail)
    assert notmeasured is not None, (tail, out)
    said = notmeasured.group(1)
    assert "cudnn.benchmark" in said and "pin_memory + non_blocking" in said, said
    assert record["options"]["batch"] == 64  # the DataLoader's own batch
    script = Path(record["options"]["script"])
    assert script.parent == tmp_path and script.exists()  # beside the record, for the user to read
    assert not (MODELS / script.name).exists()  # never in the user's folder
    assert any(str(script) in n for n in record["notes"])  # the record names it (--verbose shows the notes)


@pytest.mark.slow
@pytest.mark.frameworks
@pytest.mark.parametrize("family", [f for f in sorted(CORPUS) if f not in FAST])
def test_diagnose_measures_every_family_slow(tmp_path, capsys, family):
    pytest.importorskip("torch")
    record, _, _ = _diagnose(tmp_path, capsys, family, budget="90")
    _check_measured(record, family)
    if family == "cnn":
        assert any(r["spec"]["params"].get("fix") == "channels_last" for r in record["results"])


# ------------------------------------------------------------------ the Python API


@pytest.mark.frameworks
def test_objects_from_a_notebook_become_files_the_script_loads(tmp_path):
    torch = pytest.importorskip("torch")
    from whichdevice.frameworks.torch import modelscript, usermodel

    net = torch.nn.Sequential(torch.nn.Linear(6, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(40, 6), torch.randint(0, 3, (40,))
    model_spec, data_spec = usermodel.materialize((net, torch.nn.CrossEntropyLoss(), opt), (x, y), tmp_path)
    path, fn = model_spec.rsplit(":", 1)
    user = usermodel.call_model_function(path, fn)
    assert user.returned == "(module, loss_fn, optimizer)"
    assert user.optimizer.param_groups[0]["params"][0] is next(user.module.parameters())  # still bound
    p = modelscript.prepare(path, fn, data=tuple(data_spec.rsplit(":", 1)))
    assert usermodel.is_loader(p.data) and len(p.data.dataset) == 40 and p.data.batch_size == 32
    assert type(p.optimizer).__name__ == "SGD"


def test_api_refuses_torch_data_without_a_model_object():
    import whichdevice

    with pytest.raises(ValueError, match="data: a DataLoader"):
        whichdevice.diagnose(f"{MODELS / 'mlp.py'}:build", data=[(1, 2)], framework="torch")


@pytest.mark.slow
@pytest.mark.frameworks
def test_api_diagnoses_a_module_object():
    torch = pytest.importorskip("torch")
    import whichdevice

    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    result = whichdevice.diagnose(net, classes=4, samples=256, budget_s=60, cpu_threads=1)
    record = result.record
    assert record.options["framework"] == "torch" and any(r.status == "ok" for r in record.results)
    assert Path(record.options["script"]).exists()  # the script that trained it outlives the call


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


def test_a_journal_of_an_older_model_diagnose_is_refused_in_one_line():
    """A --model journal of the old cases (no script in its plan): this version does not run them."""
    from whichdevice.cli.run import DiagnosePlan, _diagnose_cases
    from whichdevice.core.errors import UsageError

    user = {"model": "user", "model_file": "m.py", "model_fn": "build", "input_shape": "20", "classes": 3}
    plan = DiagnosePlan(
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
        framework="torch",
    )
    with pytest.raises(UsageError) as e:
        _diagnose_cases(plan)
    assert e.value.argument == "--resume" and "Start a new run" in e.value.fix


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
