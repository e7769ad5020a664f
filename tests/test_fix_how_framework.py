"""A fix's "how" names the page's own framework: a TensorFlow script's page said
"torch.set_num_threads(n) … TensorFlow: tf.config.threading…" for the CPU thread count."""

from __future__ import annotations

from pathlib import Path

from whichdevice.analysis import facade
from whichdevice.core.records import load_run
from whichdevice.present.suitepage import fix_grid

DATA = Path(__file__).parent / "data"


def _how(name: str) -> str:
    record = load_run(DATA / name)
    grid = fix_grid(facade.suite(record).verdict, record=record)
    (row,) = [r for r in grid.rows if r[0].text.endswith("Set the CPU thread count")]
    return row[-1].text


def test_a_tensorflow_page_names_tensorflows_thread_setting():
    how = _how("diagnose_script_keras_fit_validation_callbacks_budget20_cpu_2core.json")
    assert "tf.config.threading.set_intra_op_parallelism_threads(n)" in how and "torch" not in how


def test_a_torch_page_names_torchs():
    how = _how("diagnose_script_host_reads_budget60_cpu_2core_busy.json")
    assert "torch.set_num_threads(n)" in how and "tf.config" not in how and "TensorFlow" not in how


def test_a_page_without_a_record_keeps_the_catalogues_words_for_each_framework():
    record = load_run(DATA / "diagnose_script_keras_fit_validation_callbacks_budget20_cpu_2core.json")
    grid = fix_grid(facade.suite(record).verdict)
    (row,) = [r for r in grid.rows if r[0].text.endswith("Set the CPU thread count")]
    assert "torch.set_num_threads(n)" in row[-1].text and "TensorFlow" in row[-1].text
