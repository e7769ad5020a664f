"""`whichdevice run`: the suite verdict on a recorded real run, and a real run end to end."""

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import run_cli

from whichdevice.analysis import facade
from whichdevice.analysis.suite import suite_verdict
from whichdevice.core.records import load_run
from whichdevice.workloads.suite import suite_cases

DATA = Path(__file__).parent / "data"


def test_suite_verdict_on_a_recorded_cpu_run():
    from whichdevice.present.fixes import verdict_lines
    from whichdevice.present.suitepage import headline
    from whichdevice.workloads.fixes import FIXES

    record = load_run(DATA / "run_cpu_2core.json")
    v = suite_verdict(record)
    assert headline(v)[0].startswith("Only the CPU was measured")
    # the catalogue's order; the PyTorch fixes only where torch ran
    # a fix that one plan alone measures (planned_only: the script's CPU thread count) only where planned
    assert [f.entry for f in v.fixes] == [f for f in FIXES if f.framework != "torch" and not f.planned_only]
    by_key = {f.kind: f for f in v.fixes}
    batch = verdict_lines(by_key["batch"])
    assert by_key["batch"].outcome == "helps" and "reaches" in batch[0]
    for key in ("prefetch", "steps_per_execution", "jit_compile", "sync", "warmup", "pyfunc", "precision"):
        assert by_key[key].measured, key
    placement = by_key["placement"]
    assert placement.measured and "AsString" in verdict_lines(placement)[0]  # the built-in no-GPU-kernel op
    assert "tf.py_function" in verdict_lines(by_key["pyfunc"])[0]
    assert any(line.startswith("Image input pipeline: ") for line in headline(v))
    # The recorded CPU run: steps_per_execution=20 helps the batch-10 fit (2.68× there); its grid
    # (recorded before the grid had 5 and 100) is the one value, so it is the best and recommended.
    spe = verdict_lines(by_key["steps_per_execution"])
    assert spe[0].startswith("CPU:0: steps_per_execution 1 -> 20:") and "reaches 100% of the best" in spe[0]
    assert "20: 2.7× faster" in spe[1]  # the grid, value by value, in the claim's words
    assert any(f.rule == "compute_bound" and f.device == "CPU:0" for f in v.findings)


def test_suite_puts_the_seed_cases_before_the_fixes():
    cases = suite_cases("tensorflow", "CPU:0", gpu_present=False)
    kinds = [c.params.get("kind", c.workload) for c in cases]
    assert kinds[0] == "create"  # device start-up lands in seed 001 ex1's first call
    first_fix = next(i for i, c in enumerate(cases) if "steps_per_execution" in c.params)
    assert any(c.workload == "matmul" for c in cases[:first_fix])
    assert len({c.key for c in cases}) == len(cases)


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_report_of_a_recorded_run_renders_parseable_html(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text((DATA / "run_cpu_2core.json").read_text())
    code, out, err = run_cli(["report", str(path), "--html"], capsys)
    assert code == 0, err
    assert out.startswith("whichdevice run") and "What to change" in out and "batch_size=" in out
    page = (tmp_path / "run.html").read_text()
    p = _Collect()
    p.feed(page)
    assert p.tags.count("img") == 2 and p.tags.count("table") >= 6
    assert "Image input pipeline" in page and "Every fix, measured on the same workload" in page
    text = " ".join(p.text)
    assert "Only the CPU was measured" in text and "steps_per_execution" in text
    assert len(page) < 2 * 2**20


@pytest.mark.tf
def test_run_end_to_end_within_a_small_budget(tmp_path, capsys):
    json_file = tmp_path / "run.json"
    code, out, err = run_cli(["run", "--budget", "20", "--json", str(json_file)], capsys)
    assert code == 0, err
    data = json.loads(json_file.read_text())
    statuses = [r["status"] for r in data["results"]]
    assert statuses.count("ok") >= 5
    skipped = [r for r in data["results"] if r["status"] == "failed"]
    assert all("budget" in r["error"] for r in skipped)  # nothing else may fail
    assert json_file.with_suffix(".html").exists()
    assert "Answer: " in out and "Report: " in out


def test_bad_budget_is_refused(tmp_path, capsys):
    code, _, err = run_cli(["run", "--budget", "5", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--budget" in err
    assert not (tmp_path / "o").exists()


USER_MODEL = """
import keras


def build():
    return keras.Sequential([keras.Input((20,)), keras.layers.Dense(32, activation="relu"),
                             keras.layers.Dense(3, activation="softmax")])
"""


@pytest.mark.tf
def test_diagnose_end_to_end_names_device_and_settings(tmp_path, capsys):
    (tmp_path / "m.py").write_text(USER_MODEL)
    json_file = tmp_path / "d.json"
    code, out, err = run_cli(
        [
            "diagnose",
            "--model",
            f"{tmp_path / 'm.py'}:build",
            "--classes",
            "3",
            "--samples",
            "1000",
            "--budget",
            "40",
            "--json",
            str(json_file),
        ],
        capsys,
    )
    assert code == 0, err
    assert "Answer: No GPU here" in out and "Run the same `whichdevice diagnose` on the machine with the GPU" in out
    data = json.loads(json_file.read_text())
    assert data["experiment"] == "diagnose" and data["options"]["batch"] == 32
    assert data["options"]["model"] == f"{tmp_path / 'm.py'}:build" and data["options"]["entry"] == "keras.Model.fit"
    script = Path(data["options"]["script"])  # the script that trained the model, beside the record
    assert script.parent == json_file.parent and "model.fit(prepared.x, prepared.y, batch_size=32" in script.read_text()
    assert any(r["status"] == "ok" for r in data["results"])


def test_diagnose_bad_model_file_is_one_line(tmp_path, capsys):
    code, _, err = run_cli(
        ["diagnose", "--model", str(tmp_path / "none.py") + ":build", "--out", str(tmp_path / "o")], capsys
    )
    assert code == 2 and "--model" in err and not (tmp_path / "o").exists()


def test_python_api_suite_result_from_a_recorded_run(tmp_path):
    from whichdevice.api import SuiteResult

    result = SuiteResult(load_run(DATA / "run_cpu_2core.json"))
    assert "What to change" in str(result) and "batch_size=" in str(result)
    assert len(repr(result)) < 120 and repr(result).startswith("<SuiteResult run ")
    assert result._repr_html_().startswith('<div class="whichdevice-report">')  # a notebook fragment
    path = result.save(tmp_path, "r")
    assert path.exists() and (tmp_path / "r.html").exists()


def test_a_hostile_model_name_comes_out_escaped_in_the_report(tmp_path):
    """diagnose's record carries the user's file spec (command and options): shown, never run."""
    from whichdevice.api import suite_report

    rec = load_run(DATA / "run_cpu_2core.json")
    evil = "<script>alert(1)</script>.py:build"
    rec = rec.model_copy(
        update={
            "experiment": "diagnose",
            "command": ["whichdevice", "diagnose", "--model", evil],
            "options": {**rec.options, "model": evil, "batch": 10},
        }
    )
    page = suite_report(facade.suite(rec), tmp_path / "d.png").page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;.py:build" in page


def test_plots_read_plainly_and_say_when_there_is_no_gpu(tmp_path, monkeypatch):
    """Batch axes 8 … 8,192 (not 2^3), panel titles and legends in people's words, a 'no GPU'
    note with one device, and no matplotlib layout warning leaking out."""
    import warnings

    import matplotlib.pyplot as plt

    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.present import plots

    v = suite_verdict(load_run(DATA / "run_cpu_2core.json"))
    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path, dpi=110: figures.append(fig) or path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Tight layout not applied" and friends fail the test
        plots.plot_batch_sweep(v.training.sweep, tmp_path / "b.png", title="t")
        plots.plot_sweep(v.matmul, tmp_path / "m.png", x_label="n", title="t")
        for fig in figures:
            fig.canvas.draw()
    batch, matmul = figures
    ticks = [t.get_text() for t in batch.axes[0].get_xticklabels()]
    assert "8,192" in ticks and not any("^" in t for t in ticks)
    texts = [t.get_text() for ax in batch.axes + matmul.axes for t in ax.texts]
    assert any("no GPU" in t for t in texts)
    titles = [ax.get_title() for ax in matmul.axes]
    assert any("operands created and the result read back" in t for t in titles) and not any(
        "mode=" in t for t in titles
    )
    labels = [h.get_label() for ax in matmul.axes for h in ax.get_legend_handles_labels()[0]]
    assert labels and not any("steady" in label for label in labels)  # the seed-mode panel is not "steady"
    assert all(len(h.get_label()) < 40 for ax in batch.axes for h in ax.get_legend_handles_labels()[0])
    for fig in figures:
        plt.close(fig)


def test_print_of_a_matmul_result_gives_each_mode_and_repr_is_short():
    from whichdevice.api import Result

    rec = load_run(DATA / "run_cpu_2core.json")
    rec = rec.model_copy(
        update={"experiment": "matmul", "results": [r for r in rec.results if r.spec.workload == "matmul"]}
    )
    text = str(Result(rec))
    assert "steady (" in text and "seed (" in text  # one line per mode
    assert "no crossover — one device measured" in text and "ms at n=1000" in text
    assert len(repr(Result(rec))) < 120


def test_a_plot_whose_cases_all_failed_draws_without_a_legend_warning(tmp_path, monkeypatch):
    import warnings

    import matplotlib.pyplot as plt

    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.present import plots

    rec = load_run(DATA / "run_cpu_2core.json")
    failed = [
        r.model_copy(update={"status": "skipped", "failure": "skipped", "timing": None, "error": "time budget"})
        if r.spec.params.get("kind") == "steady"
        else r
        for r in rec.results
    ]
    v = suite_verdict(rec.model_copy(update={"results": failed}))
    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path, dpi=110: figures.append(fig) or path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "No artists with labels found to put in legend"
        plots.plot_batch_sweep(v.training.sweep, tmp_path / "b.png", title="t")
        for fig in figures:
            fig.canvas.draw()
            plt.close(fig)


def test_settings_advice_reads_the_gains_as_data_not_the_words():
    """analysis returns which pairs are significant gains (FixVerdict.gains), decided from the
    claims; settings_advice writes them in the fix table's words and searches no sentence."""
    import dataclasses

    from whichdevice.present.fixes import fix_line
    from whichdevice.present.suitepage import settings_advice

    v = suite_verdict(load_run(DATA / "run_cpu_2core.json"))
    batch = v.fix("batch")
    assert batch.gains("CPU:0") == [batch.grids[0].pick]
    assert not v.fix("sync").gains("CPU:0")  # no clear change there
    advice = settings_advice(v, 10)
    assert f"Setting: Increase the batch size: {fix_line(batch.grids[0].pick)}" in advice
    # the outcome alone decides: a pair made 'no change' is not advised, whatever its words
    sync = v.fix("sync")
    assert not any(a.startswith("Setting: Do not read the loss back") for a in advice)
    made_gain = dataclasses.replace(sync, deciding=[batch.grids[0].pick])
    fixes = [made_gain if f is sync else f for f in v.fixes]
    advice = settings_advice(dataclasses.replace(v, fixes=fixes), 10)
    assert any(a.startswith("Setting: Do not read the loss back") for a in advice)
