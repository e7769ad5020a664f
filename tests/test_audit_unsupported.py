"""What the audit does not follow is said in one line, never audited in another framework's name (a CuPy
or Numba script), and a Keras ``fit`` script with no timing of its own is pointed at ``whichdevice
diagnose``. Fast: the record is made from hand-made child states, no child process."""

from __future__ import annotations

from tests.test_audit import _m
from whichdevice.cli.audit import make_record
from whichdevice.present.pages.audit import verdict_lines


def _record(tmp_path, source: str, name: str = "bench.py", **state):
    script = tmp_path / name
    script.write_text(source)
    base = {"blocks": [], "reads": [], "intervals": [], "totals": {}, "script": str(script)}
    return make_record(script, [], 60.0, {**base, **state}, 1, 1.0, False)


CUPY_DRIVER = {
    "exception": {
        "type": "CUDARuntimeError",
        "message": "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
        "line": 4,
    }
}


def test_a_cupy_script_is_named_unsupported_in_one_line_and_names_no_framework(tmp_path):
    rec = _record(tmp_path, "import time\nimport cupy as cp\nt = time.time()\nx = cp.ones(3)\n", **CUPY_DRIVER)
    assert rec.unsupported == ["CuPy"] and rec.framework == "" and rec.findings == []
    (line,) = verdict_lines(rec)
    assert line.startswith("Not supported: the script uses CuPy") and "TensorFlow, PyTorch and JAX" in line
    assert not any("imported neither" in n for n in rec.notes)  # the one line says it; no second one


def test_numba_and_cupyx_are_named_too(tmp_path):
    rec = _record(tmp_path, "from numba import cuda\nimport cupyx.scipy\n")
    assert rec.unsupported == ["CuPy", "Numba"]
    assert verdict_lines(rec)[0].startswith("Not supported: the script uses CuPy and Numba")


def test_a_host_timing_beside_cupy_is_still_said_and_named_in_no_framework(tmp_path):
    rec = _record(tmp_path, "import numpy as np\nimport cupy\n")
    rec = rec.model_copy(update={"measurements": [_m(0, 0.5, framework="")]})
    lines = verdict_lines(rec)
    assert lines[0].startswith("Not supported: the script uses CuPy") and lines[1].startswith("Timings seen: 1")


def test_a_torch_script_is_not_named_unsupported(tmp_path):
    rec = _record(tmp_path, "import torch\n", framework="torch", torch_installed=True)
    assert rec.unsupported == [] and rec.framework == "torch"


def test_a_keras_fit_script_with_no_timing_is_pointed_at_diagnose(tmp_path):
    src = "import keras\nmodel = keras.Sequential([])\nmodel.fit(x, y, epochs=2)\n"
    rec = _record(tmp_path, src, name="train.py", tf_installed=True)
    assert "`whichdevice diagnose train.py`" in rec.next_step
    (line,) = verdict_lines(rec)
    assert line.startswith("No timing seen") and "Next: it trains with Keras' fit" in line
    # no fit, or a script that is not Keras: no pointer
    assert _record(tmp_path, "import keras\nmodel.predict(x)\n", tf_installed=True).next_step == ""
    assert _record(tmp_path, "import torch\nmodel.fit(x)\n", torch_installed=True).next_step == ""
