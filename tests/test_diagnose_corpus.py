"""`diagnose` on the models users have (tests/diagnose_corpus/, one file per family).

In CI: the labels each family's loss needs are read from the model (every light family: a
forward pass, no training), what the script ``diagnose --model`` writes prepares (the model,
its data and the loss of two samples) on a diverse subset, and the model whose loss cannot run
with synthetic data refused with one line and exit 2. Under ``-m slow``: every family prepared,
and ``diagnose`` end to end on every family (the script trained and measured), labels inferred
without --classes.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import run_cli

from whichdevice.frameworks.common.usermodel import UserFileError, UserFunction

CORPUS = Path(__file__).parent / "diagnose_corpus"
FAMILIES = sorted(p.stem for p in CORPUS.glob("*.py"))
# The pre-flight's training step in CI: one family per kind of target and structure.
STEP_SUBSET = (
    "seq_mlp_sparse",
    "cnn_functional_categorical",
    "binary_sigmoid_flat_labels",
    "multi_output_dict",
    "custom_train_step",
    "uncompiled_subclassed_sigmoid",
)
END_TO_END_CI = "custom_train_step"


def _module(name: str):
    path = CORPUS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"corpus_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _heavy(name: str) -> bool:
    return bool(getattr(_module(name), "HEAVY", False))


def _check(name: str, *, step: bool):
    """The model read (its inputs, outputs and loss); with ``step``, prepared as the script
    ``diagnose --model`` writes prepares it (the data drawn, the compiled loss computed once)."""
    from whichdevice.frameworks.common import modelscript
    from whichdevice.frameworks.common.usermodel import check

    mod = _module(name)
    path = CORPUS / f"{name}.py"
    if step:
        data = (str(path), mod.DATA) if hasattr(mod, "DATA") else None
        return modelscript.prepare(
            str(path), "build", input_shape=getattr(mod, "INPUT_SHAPE", None), samples=16, data=data, batch=8
        )
    data_fn = UserFunction(path, mod.DATA, "--data") if hasattr(mod, "DATA") else None
    return check(UserFunction(path, "build", "--model"), getattr(mod, "INPUT_SHAPE", None), None, data_fn)


def test_the_corpus_has_fifteen_families_with_their_targets():
    assert len(FAMILIES) >= 15
    for name in FAMILIES:
        targets = getattr(_module(name), "TARGETS", None)
        assert targets and all(t in ("onehot", "sparse", "binary", "real") for t in targets), name


@pytest.mark.tf
@pytest.mark.parametrize("name", [f for f in FAMILIES if f not in ("applications_mobilenet",)])
def test_labels_are_read_from_the_model_and_its_loss(name):
    """Without --classes: one-hot for categorical CE, ids for sparse (per time step too), {0,1}
    for binary, real for regression losses; dict targets for dict losses."""
    facts = _check(name, step=False)
    io = json.loads(facts["io"])
    assert [o["kind"] for o in io["outputs"]] == _module(name).TARGETS
    if name == "bilstm_embedding":  # int32 token ids below the Embedding's input_dim
        assert io["inputs"][0]["high"] == 5000 and io["inputs"][0]["shape"] == [40]
    if name == "attention_mha":  # a float Input feeding an Embedding: ids as well
        assert io["inputs"][0]["high"] == 1000
    if name == "lstm_per_timestep":  # one class id per time step
        assert io["outputs"][0]["shape"] == [20, 4]
    if name == "multi_output_dict":
        assert io["out_struct"] == "dict" and io["out_keys"] == ["kind", "price"]
    if name == "multi_input":
        assert io["in_struct"] == "list" and [i["shape"] for i in io["inputs"]] == [[10], [4, 4]]
    if name.startswith("uncompiled"):
        assert io["compile_loss"]


def test_synthetic_targets_have_the_shapes_and_values_the_loss_needs():
    from whichdevice.frameworks.common import iospec

    spec = {
        "inputs": [{"name": "t", "shape": [7], "dtype": "int32", "high": 50}],
        "in_struct": "single",
        "in_keys": [],
        "outputs": [
            {"name": "a", "shape": [10], "kind": "onehot", "classes": 10, "loss": "cce"},
            {"name": "b", "shape": [5, 4], "kind": "sparse", "classes": 4, "loss": "scce"},
            {"name": "c", "shape": [1], "kind": "binary", "classes": 1, "loss": "bce"},
            {"name": "d", "shape": [3], "kind": "real", "classes": 3, "loss": "mse"},
        ],
        "out_struct": "dict",
        "out_keys": ["a", "b", "c", "d"],
    }
    x, y = iospec.make_xy(spec, 16)
    assert x.shape == (16, 7) and x.dtype.kind == "i" and x.max() < 50
    assert y["a"].shape == (16, 10) and (y["a"].sum(axis=1) == 1).all()
    assert y["b"].shape == (16, 5) and y["b"].max() < 4 and y["b"].dtype.kind == "i"
    assert y["c"].shape == (16, 1) and set(y["c"].ravel()) <= {0.0, 1.0}
    assert y["d"].shape == (16, 3) and y["d"].dtype == "float32"
    assert "one-hot (8, 10) for the loss cce" in iospec.describe_targets(spec, 8)


@pytest.mark.parametrize(
    "loss, kind",
    [
        ("categorical_crossentropy", "onehot"),
        ("SparseCategoricalCrossentropy", "sparse"),
        ("binary_crossentropy", "binary"),
        ("huber", "real"),
        ("kl_divergence", "onehot"),
        ("my_loss", "real"),
    ],
)
def test_loss_names_map_to_target_kinds(loss, kind):
    from whichdevice.frameworks.common import iospec

    assert iospec.loss_kind(loss) == kind


@pytest.mark.tf
@pytest.mark.parametrize("name", STEP_SUBSET)
def test_the_script_prepares_the_model_and_its_data(name):
    p = _check(name, step=True)
    assert p.model is not None and (p.y is not None or hasattr(p.x, "element_spec"))
    assert (p.loss is None) == (
        not name.startswith("uncompiled")
    )  # an uncompiled model gets the loss its outputs imply


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("name", [f for f in FAMILIES if f not in STEP_SUBSET])
def test_the_script_prepares_every_family(name):
    assert _check(name, step=True).model is not None


@pytest.mark.tf
def test_a_step_that_cannot_run_on_synthetic_labels_is_refused_in_one_line(tmp_path, capsys):
    path = CORPUS / "unrunnable" / "fixed_width_labels.py"
    with pytest.raises(UserFileError) as e:
        from whichdevice.frameworks.common import modelscript

        modelscript.prepare(str(path), "build")
    assert "the compiled loss" in e.value.problem and "seven_wide" in e.value.problem
    assert "output (2, 3)" in e.value.problem and "--data FILE.py:FUNCTION" in e.value.fix
    out_dir = tmp_path / "out"
    code, out, err = run_cli(["diagnose", "--model", f"{path}:build", "--out", str(out_dir)], capsys)
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "seven_wide" in lines[0] and "--data" in lines[0], err
    assert not out_dir.exists() and "Answer" not in out


def _diagnose(name: str, tmp_path: Path, capsys, budget: str = "30") -> tuple[dict, int]:
    mod = _module(name)
    args = ["diagnose", "--model", f"{CORPUS / name}.py:build", "--budget", budget, "--batch", "16"]
    if hasattr(mod, "INPUT_SHAPE"):
        args += ["--input-shape", ",".join(map(str, mod.INPUT_SHAPE))]
    if hasattr(mod, "DATA"):
        args += ["--data", f"{CORPUS / name}.py:{mod.DATA}"]
    json_file = tmp_path / f"{name}.json"
    code, _out, err = run_cli([*args, "--json", str(json_file), "--out", str(tmp_path), "--quiet"], capsys)
    assert code in (0, 1), err
    return json.loads(json_file.read_text()), code


def _assert_every_case_measured(record: dict) -> None:
    """The script's baseline and every variant measured or said not to be (never failed)."""
    bad = [(r["spec"]["params"].get("variant"), r.get("error")) for r in record["results"] if r["status"] == "failed"]
    assert not bad, bad
    assert any(r["status"] == "ok" for r in record["results"])
    assert record["options"]["script"].endswith(".model.py") and record["options"]["entry"] == "keras.Model.fit"


@pytest.mark.slow  # the suite's time: test_run's --model diagnose covers the command end to end, the preparation test this model
@pytest.mark.tf
def test_diagnose_end_to_end_on_a_custom_train_step_model(tmp_path, capsys):
    record, _ = _diagnose(END_TO_END_CI, tmp_path, capsys, budget="90")
    _assert_every_case_measured(record)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("name", [f for f in FAMILIES if f != END_TO_END_CI])
def test_diagnose_measures_every_case_of_every_family(name, tmp_path, capsys):
    record, _ = _diagnose(name, tmp_path, capsys, budget="150" if _heavy(name) else "90")
    _assert_every_case_measured(record)
