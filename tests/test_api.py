"""The Python API mirrors the CLI: same checks, same records, a notebook representation."""

import re
from pathlib import Path

import pytest

import whichdevice


def test_bad_arguments_raise_usage_error_naming_the_argument():
    with pytest.raises(whichdevice.UsageError, match="--sizes: 0 is not positive"):
        whichdevice.matmul(sizes=[0], framework="numpy")
    with pytest.raises(ValueError, match="--dtype"):
        whichdevice.matmul(dtype="int7", framework="numpy")


def test_numpy_sweep_result_saves_and_renders(tmp_path):
    result = whichdevice.matmul(sizes=[8, 32], modes=["steady"], min_time_s=0.01, framework="numpy")
    assert {r.spec.params["n"] for r in result.record.results} == {8, 32}
    assert "CPU" in str(result) or "note" in str(result)
    page = result._repr_html_()
    assert page.startswith('<div class="whichdevice-report">') and "data:image/png;base64," in page
    assert result._repr_html_() is page  # drawn once, however often the notebook shows it
    path = result.save(tmp_path, "m")
    assert path.exists() and (tmp_path / "m.png").exists() and (tmp_path / "m.html").exists()
    assert (tmp_path / "m.html").read_text().startswith("<!doctype html>")  # the file is a whole page
    assert whichdevice.load(path).record == result.record
    # an API run is kept and indexed like a command's
    from whichdevice.measure import history

    assert result.path is not None and result.path.exists()
    assert history.entries(1)[0].path == str(result.path.absolute())


def test_diagnose_refuses_what_is_not_a_model():
    with pytest.raises(whichdevice.UsageError, match="model: list is not a Keras model"):
        whichdevice.diagnose([1, 2, 3])
    with pytest.raises(whichdevice.UsageError, match="data: \\(x, y\\) arrays need a model object"):
        whichdevice.diagnose("m.py:build", data=([1], [2]))


@pytest.mark.tf
def test_a_model_object_and_arrays_become_loadable_files(tmp_path):
    """What diagnose(model, (x, y)) hands its children: a loader module they can import."""
    import importlib.util

    import keras
    import numpy as np

    from whichdevice.api import _materialize

    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="softmax")])
    x, y = np.random.rand(16, 8).astype("float32"), np.random.randint(0, 4, 16)
    model_spec, data_spec = _materialize(m, (x, y), tmp_path)
    path = model_spec.split(":")[0]
    spec = importlib.util.spec_from_file_location("loader", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.build().output_shape == (None, 4)
    (bx, by) = next(iter(mod.data().batch(16)))
    assert np.allclose(bx.numpy(), x) and (by.numpy() == y).all()
    assert data_spec.endswith("loader.py:data")


@pytest.mark.tf
@pytest.mark.slow
def test_diagnose_a_model_object_with_arrays(tmp_path):
    import keras
    import numpy as np

    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="softmax")])
    x, y = np.random.rand(256, 8).astype("float32"), np.random.randint(0, 4, 256)
    r = whichdevice.diagnose(m, (x, y), classes=4, samples=256, budget_s=45)  # the sweep fits (plans it)
    assert r.record.experiment == "diagnose"
    assert any(c.status == "ok" and c.spec.params.get("kind") == "fit" for c in r.record.results)
    # the loader the record names (and the first screen's `predict --model` hint) still exists
    assert Path(r.record.options["model"].rsplit(":", 1)[0]).exists()
    # The batch fix is on the first screen in one of its three outcome lines (a change "Batch 32 → N",
    # or named among "No clear change" / "Slower here" / "Not measured"): which one is measured here.
    # The last three are read from the lines the report lists: the screen (str(r)) drops them when a
    # busy run's causes and caveats would take it past 25 lines (present/firstscreen.screen_lines)
    from whichdevice.present.firstscreen import first_screen, tail_lines

    batch = r.verdict.fix("batch")
    assert batch.measured or batch.not_measured is not None
    said = "\n".join([str(r), *tail_lines(first_screen(r.record, r.verdict))])
    assert re.search(r"Batch 32 → [0-9,]+:|a larger batch", said), said


def test_a_model_objects_folder_outlives_the_call():
    """Hints never name a deleted file: the folder a model object is saved in is kept
    under $WHICHDEVICE_HOME/models/ (a temporary folder was gone when the call returned)."""
    from whichdevice.api import _kept_folder
    from whichdevice.measure import history

    with _kept_folder("model") as folder:
        (Path(folder) / "loader.py").write_text("def build(): ...\n")
    assert (Path(folder) / "loader.py").exists()
    assert Path(folder).parent == history.home() / "models"


def test_load_returns_the_type_of_the_experiment(tmp_path):
    """``whichdevice.load`` of a run record is a SuiteResult, of a matmul record a Result,
    of any other experiment a RecordResult (before: always the matmul Result)."""
    import shutil

    import whichdevice
    from whichdevice.api import RecordResult, Result, SuiteResult

    data = Path(__file__).parent / "data"
    run = whichdevice.load(data / "run_cpu_2core.json")
    assert type(run) is SuiteResult and run.record.experiment == "run"
    rec = whichdevice.load(data / "run_cpu_2core.json").record
    for experiment, kind in (("matmul", Result), ("train", RecordResult)):
        path = tmp_path / f"{experiment}.json"
        from whichdevice.core.records import save_run

        save_run(rec.model_copy(update={"experiment": experiment}), path)
        assert type(whichdevice.load(path)) is kind
    assert "train:" in str(whichdevice.load(tmp_path / "train.json"))
    shutil.rmtree(tmp_path)


def test_diagnose_keeps_the_input_shape_order(monkeypatch, tmp_path):
    """The API parses input_shape as the CLI does (28, 28, 1 stays 28, 28, 1; it was sorted
    and de-duplicated into (1, 28))."""
    from whichdevice.workloads import scriptplan

    seen = {}

    def fake_preflight(job, budget_s, **kwargs):
        seen["script"] = Path(job["script"]).read_text()
        raise RuntimeError("stop here")

    monkeypatch.setattr(scriptplan, "preflight", fake_preflight)  # diagnose's pre-flight: the script's run
    model = tmp_path / "m.py"
    model.write_text("def build():\n    pass\n")
    with pytest.raises(RuntimeError, match="stop here"):
        whichdevice.diagnose(f"{model}:build", input_shape=(28, 28, 1))
    seen["shape"] = (28, 28, 1) if "input_shape=(28, 28, 1)" in seen["script"] else seen["script"]
    assert seen["shape"] == (28, 28, 1)


def test_an_api_run_records_the_call_not_the_kernels_argv():
    result = whichdevice.matmul(sizes=[8], modes=["steady"], min_time_s=0.01, framework="numpy", progress=False)
    assert result.record.command == ["whichdevice.matmul(sizes=[8], modes=['steady'], dtype='float32')"]


@pytest.mark.tf
def test_diagnose_trains_the_arrays_it_is_given_through_the_script(monkeypatch):
    """``diagnose(model, (x, y))``: the model and the arrays saved as files, and the script
    diagnose writes fits the arrays' dataset (not synthetic data); the pre-flight's run of it is
    replaced by its facts, the model is a real Keras model, saved as diagnose saves it."""
    import keras
    import numpy as np

    from whichdevice import api, commands
    from whichdevice.workloads import scriptplan

    facts = {
        "framework": "tensorflow",
        "entry": "keras.Model.fit",
        "batch": 32,
        "step_s": 1e-3,
        "first_step_s": 0.3,
        "setup_s": 3.0,
        "model": "Sequential",
        "data": "tfdata",
        "steps_per_execution": 1,
    }
    monkeypatch.setattr(scriptplan, "preflight", lambda *a, **k: dict(facts))
    planned = {}

    def no_measuring(plan, request):
        planned["cases"] = request.cases_for(None, type("Device", (), {"name": "CPU:0"})())
        planned["options"], planned["plan"] = request.options, plan
        raise RuntimeError("planned")

    monkeypatch.setattr(commands, "_suite", no_measuring)
    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="softmax")])
    x, y = np.random.rand(2000, 8).astype("float32"), np.random.randint(0, 4, 2000)
    with pytest.raises(RuntimeError, match="planned"):
        whichdevice.diagnose(m, (x, y), classes=4, budget_s=60)
    script = Path(planned["options"]["script"]).read_text()
    assert "data=(" in script and "loader.py', 'data')" in script and "model.fit(prepared.x, epochs=" in script
    assert planned["plan"].user["model_file"].endswith("loader.py")  # --resume and the folder guard name it
    assert all(c.params["script"] == planned["options"]["script"] for c in planned["cases"])
    assert api._samples_in((x, y)) == 2000 and api._samples_in(({"a": x}, y)) == 2000
    assert api._samples_in("data.py:make") is None
