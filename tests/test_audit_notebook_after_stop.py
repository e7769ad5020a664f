"""A notebook that stops at ``.to("cuda")`` (no GPU here): the cells after it are read all the
same. The thread's cause, ``%timeit pt_x @ pt_w`` on CUDA tensors (no sync), sits in a later cell
as a timing magic, whose code is text in the translated cell: it is read from the source as a
timed region of the magic's line."""

from __future__ import annotations

from pathlib import Path

from whichdevice.audit import notebook, static

CORPUS = Path(__file__).parent / "audit_corpus"


def test_a_timing_magic_after_the_stop_is_a_timed_region_read_from_the_source():
    source, _ = notebook.translate(CORPUS / "notebook_cuda_then_timeit.ipynb")
    regions = {r.text: r for r in static.scan(source)}
    gpu = regions["%timeit pt_x @ pt_w"]
    assert gpu.cuda_names == ["pt_w", "pt_x"] and not gpu.waits and gpu.start_line == gpu.end_line == 11
    cpu = regions["%timeit cpu_x @ cpu_w"]
    assert cpu.cuda_names == []  # the CPU tensors' timing: no CUDA work to say anything of


def test_a_cell_timing_magic_reads_each_line_and_the_sync_in_it():
    src = "import torch\nx = torch.ones(4).cuda()\n__whichdevice_magics__.time('y = x @ x\\ntorch.cuda.synchronize()', globals(), 3)\n"
    (r,) = static.scan(src)
    assert r.text == "%time y = x @ x; torch.cuda.synchronize()" and r.cuda_names == ["x"]
    assert r.waits and r.waits_on[0][1].startswith("torch.cuda.synchronize")


def test_the_cells_after_a_missing_device_stop_are_run_and_read(tmp_path):
    """For real: cell 2 stops at ``.to("cuda")``; cell 3 (``%timeit pt_x @ pt_w``) cannot run without
    it and is read from the source (the missing sync, line 11); cell 4 (``%timeit cpu_x @ cpu_w``) runs
    on this CPU and is audited. Before, nothing after cell 2 was run or read."""
    import pytest

    pytest.importorskip("torch")
    from tests.test_audit import rules_of, run_audit

    proc, record = run_audit(tmp_path, CORPUS / "notebook_cuda_then_timeit.ipynb", "--no-rerun", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {"missing_device_failure", "latent_from_source"} <= set(rules_of(record))
    latent = next(f for f in record["findings"] if f["rule"] == "latent_from_source")
    assert (
        latent["where"] == "line 11: %timeit pt_x @ pt_w" and "nothing in it waits for the GPU" in latent["explanation"]
    )
    after = record["notebook"]["cells_after_stop"]
    assert [(c["cell"], c["error"] is None) for c in after] == [(3, False), (4, True)]
    assert after[0]["error"].startswith("NameError")
    timed = [m for m in record["measurements"] if not m["tracing"]]
    assert timed and all(m["line"] == 14 for m in timed)  # cell 4's %timeit, on the CPU
    failure = next(f for f in record["findings"] if f["rule"] == "missing_device_failure")
    assert "It had timed" not in failure["explanation"] and "later cells ran all the same" in failure["explanation"]
    out = " ".join(proc.stdout.split())
    assert "__whichdevice_magics__" not in out and "line 14: %timeit cpu_x @ cpu_w" in out


def test_the_page_and_the_html_say_which_later_cells_ran_and_which_were_read(tmp_path):
    from whichdevice.cli.audit import make_record
    from whichdevice.present.pages.audit import notebook_after_stop, render_html

    source, nb = notebook.translate(CORPUS / "notebook_cuda_then_timeit.ipynb")
    script = tmp_path / "nb.ipynb.py"
    script.write_text(source)
    state = {
        "blocks": [],
        "reads": [],
        "intervals": [],
        "totals": {},
        "script": str(script),
        "framework": "torch",
        "torch_installed": True,
        "exit_code": 1,
        "exception": {"type": "AssertionError", "message": "Torch not compiled with CUDA enabled", "line": 7},
        "cells_after_stop": [
            {"cell": 3, "line": 11, "error": "NameError: name 'pt_x' is not defined"},
            {"cell": 4, "line": 14, "error": None},
        ],
    }
    rec = make_record(script, [], 60.0, state, 1, 1.0, False, notebook=nb)
    line = notebook_after_stop(rec)
    assert line.startswith("After the cell that stopped at line 7 on a missing device, the later cells were run")
    assert "cell 4 ran on this machine's devices" in line and "cell 3 (line 11: NameError" in line
    assert "cell 3 (line 11: NameError" in render_html(rec)
    # a notebook that ran through (or stopped otherwise): nothing to say
    assert notebook_after_stop(rec.model_copy(update={"notebook": nb})) == ""
