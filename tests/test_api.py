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
