"""Notebooks: the HTML is a fragment whose CSS restyles nothing outside it, drawn
once; `dir(whichdevice)` lists the API; `%load_ext whichdevice` under a real IPython."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import whichdevice

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


def _selectors(fragment: str) -> list[str]:
    css = "".join(re.findall(r"<style>(.*?)</style>", fragment, re.S))
    return [sel.strip() for block in re.findall(r"([^{}]+)\{[^{}]*\}", css) for sel in block.split(",")]


def test_suite_result_html_is_a_scoped_fragment_drawn_once():
    result = whichdevice.load(DATA / "run_cpu_2core.json")
    frag = result._repr_html_()
    assert frag.startswith('<div class="whichdevice-report">') and frag.endswith("</div>")
    for tag in ("<html", "<body", "<head", "<!doctype", "<title"):
        assert tag not in frag.lower()
    selectors = _selectors(frag)
    assert selectors and all(s.startswith(".whichdevice-report") for s in selectors), selectors
    assert result._repr_html_() is frag  # cached: no second plot


def test_dir_lists_the_api():
    names = dir(whichdevice)
    for name in ("run", "diagnose", "matmul", "load", "predict", "pipeline", "load_ipython_extension"):
        assert name in names
        assert callable(getattr(whichdevice, name))


def test_progress_line_in_words():
    from whichdevice.present.progress import ApiProgress, in_notebook

    assert not in_notebook()
    p = ApiProgress("matmul", enabled=False)
    with p:
        cb = p.callbacks()
        cb.on_total(4)
        cb.on_start("matmul|numpy|CPU:0|n=64,mode=steady")
        cb.on_result(None)
    assert (
        p.text().startswith("whichdevice matmul: 1/4 cases") and "CPU:0 matrix multiply 64×64 (back-to-back" in p.text()
    )


def test_api_command_functions_raise_the_commands_usage_error(tmp_path):
    with pytest.raises(whichdevice.UsageError, match="--batch"):
        whichdevice.pipeline(batch=0, out=tmp_path, progress=False)
    assert not list(tmp_path.glob("*.json"))


def _ipython(script: str, cwd: Path, timeout=300) -> subprocess.CompletedProcess:
    (cwd / "t.ipy").write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor", "t.ipy"],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout,
    )  # fmt: skip


def test_load_ext_registers_the_magics_under_ipython(tmp_path):
    pytest.importorskip("IPython")
    r = _ipython(
        "%load_ext whichdevice\n"
        "r = %whichdevice matmul --framework numpy --sizes 16,32 --mode steady --min-time 0.01\n"
        "print('RESULT', type(r).__name__, r.path.exists(), '<body' in r._repr_html_())\n"
        "bad = %whichdevice matmul --sizes abc\n"
        "print('BAD', bad)\n",
        tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "RESULT Result True False" in r.stdout
    assert "error: --sizes: 'abc' is not a whole number" in r.stderr and "BAD None" in r.stdout


def test_cell_magic_audits_the_cell_and_keeps_the_file(tmp_path):
    pytest.importorskip("IPython")
    r = _ipython(
        "%load_ext whichdevice\n"
        "cell = 'import time\\nt0 = time.perf_counter()\\nsum(range(100000))\\nprint(\"took\", time.perf_counter() - t0)\\n'\n"
        "# a script file is one cell: the cell magic is called as IPython calls it for a %%cell\n"
        "rec = get_ipython().run_cell_magic('whichdevice_audit', '--no-rerun', cell)\n"
        "print('AUDIT', type(rec).__name__, repr(rec))\n",
        tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (cell,) = (tmp_path / "whichdevice-results").glob("cell-*.py")
    assert "perf_counter" in cell.read_text()
    assert "took" in r.stdout and cell.name in r.stdout
    assert "AUDIT AuditResult" in r.stdout


@pytest.mark.tf
@pytest.mark.slow
def test_whichdevice_matmul_quick_in_ipython(tmp_path):
    """The done-when line: `%load_ext whichdevice` then `%whichdevice matmul --quick` (≈ 30 s on
    2 cores: slow; test_load_ext_registers_the_magics_under_ipython runs the same path in CI)."""
    pytest.importorskip("IPython")
    r = _ipython(
        "%load_ext whichdevice\nr = %whichdevice matmul --quick\nprint('RESULT', type(r).__name__, len(r.record.results))\n",
        tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"RESULT Result \d+", r.stdout)


def test_progress_in_a_notebook_updates_one_line_in_place(monkeypatch):
    """In Jupyter (a ZMQ shell) the API's progress is one display handle updated in place."""
    pytest.importorskip("IPython")
    import IPython.display

    from whichdevice.present import progress

    shown = []

    class Handle:
        def update(self, obj):
            shown.append(obj.data)

    def display(obj, display_id=None):
        shown.append(obj.data)
        return Handle()

    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(progress.ApiProgress, "MIN_INTERVAL_S", 0.0)
    with progress.ApiProgress("run") as p:
        cb = p.callbacks()
        cb.on_total(2)
        cb.on_result(None)
        cb.on_result(None)
    assert shown[0].startswith('<div class="whichdevice-report">') and "<progress" in shown[0]
    assert "2/2 cases" in shown[-2] and "done, 2 cases" in shown[-1] and "<progress" not in shown[-1]


def _notebook(cells: list[str], cwd: Path, timeout: int = 600) -> list[list[dict]]:
    """The cells run by a real Jupyter kernel (ipykernel, which sets FORCE_COLOR=1), each cell's
    outputs as saved in the notebook; skipped where nbclient or a python3 kernel is missing."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import find_kernel_specs

    if "python3" not in find_kernel_specs():
        pytest.skip("no python3 Jupyter kernel")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "WHICHDEVICE_HOME": str(cwd / "home")}
    old = dict(os.environ)
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        nbclient.NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return [[dict(o) for o in cell.outputs] for cell in nb.cells]


def _texts(outputs: list[dict]) -> list[str]:
    return [o.get("text", "") for o in outputs] + [str(v) for o in outputs for v in o.get("data", {}).values()]


def _check_in_place(outputs: list[dict], max_lines: int = 60) -> str:
    """One output block (updated in place, not frames piled up; the record's own HTML may
    follow as the cell's result), no escape code, at most ``max_lines`` lines in all."""
    kinds = [o["output_type"] for o in outputs]
    assert kinds in (["display_data"], ["display_data", "execute_result"]), kinds
    assert not any("\x1b" in t for t in _texts(outputs))
    lines = sum(len(o["data"]["text/plain"].splitlines()) for o in outputs)
    plain = outputs[0]["data"]["text/plain"]
    assert lines <= max_lines, plain
    assert "<pre" in outputs[0]["data"]["text/html"]
    return plain


def test_magics_in_a_jupyter_kernel_show_one_block_no_escape_codes_tables_whole(tmp_path):
    """Under ipykernel's own environment (FORCE_COLOR=1): the command's output
    is one HTML block, without escape codes or progress frames, and `history` is not cut to 80
    columns (each row, record path included, on one line)."""
    cells = _notebook(
        [
            "import os; print(os.environ.get('FORCE_COLOR'))",
            "%load_ext whichdevice",
            "r = %whichdevice matmul --framework numpy --sizes 16,32,64 --mode steady --min-time 0.05",
            "%whichdevice history",
            "print(type(r).__name__)",
        ],
        tmp_path,
    )
    assert cells[0][0]["text"].strip() == "1"  # ipykernel forces colour: the case the child must not follow
    matmul = _check_in_place(cells[2])
    assert "matmul" in matmul and "done in" in matmul
    rows = [line for line in _check_in_place(cells[3]).splitlines() if ".json" in line]
    assert len(rows) == 1 and rows[0].rstrip().endswith("│") and len(rows[0]) > 80, rows
    assert cells[4][0]["text"].strip() == "Result"


@pytest.mark.tf
@pytest.mark.slow
def test_matmul_quick_in_a_jupyter_kernel_is_at_most_60_lines(tmp_path):
    """The notebook's acceptance check: `%whichdevice matmul --quick` under FORCE_COLOR=1
    prints no escape code and at most 60 lines."""
    cells = _notebook(["%load_ext whichdevice", "%whichdevice matmul --quick"], tmp_path)
    _check_in_place(cells[1], max_lines=60)


def test_a_command_run_in_process_is_not_forced_to_draw_for_a_terminal(monkeypatch):
    """The magic and the API run the command in this process (no `python -m whichdevice` child):
    what the kernel forces (FORCE_COLOR=1, a narrow COLUMNS) does not reach the command's text,
    and the consoles are themselves again afterwards."""
    from whichdevice import commands
    from whichdevice.present.screen import console

    for name in ("FORCE_COLOR", "CLICOLOR_FORCE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("COLUMNS", "20")
    before = dict(console.__dict__)
    done = commands.run_command(["devices", "--framework", "numpy"], echo=False)
    assert done.code == 0 and "CPU:0" in done.stdout and "\x1b" not in done.stdout + done.stderr
    assert console.__dict__ == before


def test_magic_output_in_a_notebook_is_one_handle_updated_in_place(monkeypatch, tmp_path):
    """Without a kernel: in a (faked) notebook, the command's lines go to one display handle,
    redrawn in place, none printed as a stream; the last draw is the whole output and its status."""
    pytest.importorskip("IPython")
    import IPython.display

    from whichdevice import commands
    from whichdevice.present import progress

    shown: list[dict] = []
    printed: list[str] = []

    class Handle:
        def update(self, obj, raw=False):
            shown.append(obj)

    def display(obj, raw=False, display_id=None):
        shown.append(obj)
        return Handle()

    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(sys, "stdout", type("W", (), {"write": printed.append, "flush": lambda self: None})())
    monkeypatch.chdir(tmp_path)
    done = commands.run_command(["matmul", "--sizes", "abc"])
    code, err = done.code, done.stderr
    assert code == 2 and "--sizes" in err and not printed
    last = shown[-1]
    assert "error: --sizes" in last["text/plain"] and "exit code 2" in last["text/plain"]
    assert last["text/html"].startswith('<div class="whichdevice-report">') and "\x1b" not in last["text/html"]
