"""The Python API mirrors the CLI: same checks, same records, a notebook representation."""

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
    assert page.startswith("<!doctype html>") and "data:image/png;base64," in page
    path = result.save(tmp_path, "m")
    assert path.exists() and (tmp_path / "m.png").exists() and (tmp_path / "m.html").exists()
    assert whichdevice.load(path).record == result.record


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
    r = whichdevice.diagnose(m, (x, y), classes=4, samples=256, budget_s=20)
    assert r.record.experiment == "diagnose"
    assert any(c.status == "ok" and c.spec.params.get("kind") == "fit" for c in r.record.results)
    assert "Increase the batch size" in str(r)
