"""The audit's lines say only what is true of the run: a script that stopped at a missing device
is not told its printed times "came from elsewhere" (it printed none: it stopped first); a Keras
``fit`` script that times nothing the audit follows is pointed at ``whichdevice diagnose``. Fast:
records made from hand-made child states, no child process."""

from __future__ import annotations

from tests.test_audit_unsupported import _record
from whichdevice.present.pages.audit import verdict_lines

READ = {"id": 0, "fn": "time.time", "line": 2, "text": "t0 = time.time()", "block": None, "tracing": "", "snap": {}}
CUDA_STOP = {
    "exception": {"type": "AssertionError", "message": "Torch not compiled with CUDA enabled", "line": 3},
    "exit_code": 1,
}


def test_a_script_that_stopped_at_cuda_is_told_it_stopped_not_that_its_times_came_from_elsewhere(tmp_path):
    src = "import time, torch\nt0 = time.time()\nx = torch.ones(3).cuda()\nprint(time.time() - t0)\n"
    rec = _record(tmp_path, src, framework="torch", torch_installed=True, reads=[READ], **CUDA_STOP)
    (line,) = verdict_lines(rec)
    assert line.startswith("No timing seen") and "came from elsewhere" not in line and "If it printed" not in line
    assert "It stopped at line 3, after reading the clock, before computing an end - start" in line
    # no clock read before the stop: it does not claim one
    rec = _record(tmp_path, "import torch\nx = torch.ones(3)\ny = x.cuda()\n", framework="torch", **CUDA_STOP)
    assert "It stopped at line 3 before computing an end - start" in verdict_lines(rec)[0]


def test_a_script_that_ran_to_its_end_untimed_is_told_where_printed_times_would_come_from(tmp_path):
    rec = _record(tmp_path, "import torch\nprint(torch.ones(3))\n", framework="torch", exit_code=0)
    (line,) = verdict_lines(rec)
    assert "If it printed times, they were read outside its own code (a module it imports" in line
    assert "It stopped" not in line


HELPER = """import time


def train_timed(model, x, y, epochs=2):
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        model.fit(x, y, epochs=1, verbose=0)
        times.append(time.perf_counter() - start)
    return times
"""


def test_a_keras_fit_timed_in_a_helper_module_is_pointed_at_diagnose(tmp_path):
    """The script imports its project's helper, which fits and times the epochs: the audit follows
    clock reads in the script's own code only, so it saw no timing; it said "No timing seen" with no
    pointer, as the fit was not in the script's text. Now the helper beside it is read too."""
    (tmp_path / "train_helpers.py").write_text(HELPER)
    src = "import keras\nfrom train_helpers import train_timed\nmodel = keras.Sequential([])\nprint(train_timed(model, 1, 2))\n"
    rec = _record(tmp_path, src, name="bench.py", tf_installed=True, exit_code=0)
    assert "it trains with Keras' fit (in train_helpers.py)" in rec.next_step
    assert "`whichdevice diagnose bench.py`" in rec.next_step
    (line,) = verdict_lines(rec)
    assert line.startswith("No timing seen") and "Next: it trains with Keras' fit (in train_helpers.py)" in line
    assert "a module it imports" in line  # where its printed times were read, not "a clock not followed" alone
    # a helper that fits nothing, or a module that is not beside the script: no pointer
    (tmp_path / "train_helpers.py").write_text("def train_timed(*a):\n    return []\n")
    assert _record(tmp_path, src, name="bench.py", tf_installed=True, exit_code=0).next_step == ""
