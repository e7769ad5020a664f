"""The command line: bad input (one line, exit 2, nothing written) and real end-to-end runs."""

import json

import pytest
from conftest import run_cli

BAD_MATMUL = [
    (["--sizes", "0"], "--sizes: 0 is not positive"),
    (["--sizes", "-5"], "--sizes: -5 is not positive"),
    (["--sizes", "abc"], "--sizes: 'abc' is not a whole number"),
    (["--sizes", ""], "--sizes: is empty"),
    (["--sizes", "1,,2"], "--sizes: '1,,2' has an empty item"),
    (["--sizes", "99999999"], "larger than the supported maximum"),
    (["--dtype", "int7"], "--dtype: 'int7' is not one of float32, float16, bfloat16"),
    (["--mode", "fast"], "--mode: 'fast' is not one of steady, seed"),
    (["--device", "TPU:0"], "--device: 'TPU:0' is not a device name"),
    (["--device", ","], "--device: is empty"),
    (["--min-time", "abc"], "--min-time: 'abc' is not a number"),
    (["--min-time", "-1"], "--min-time: -1 is not a positive number"),
    (["--cpu-threads", "0"], "--cpu-threads: 0 is out of range"),
    (["--framework", "caffe"], "--framework: 'caffe' is not one of"),
    (["--bogus"], "No such option: --bogus"),
]


@pytest.mark.parametrize("args, message", BAD_MATMUL)
def test_bad_matmul_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, args, message):
    out_dir = tmp_path / "out"
    code, out, err = run_cli(["matmul", "--out", str(out_dir), *args], capsys)
    assert code == 2
    assert message in err
    assert err.strip().count("\n") == 0, err
    assert "Traceback" not in err + out
    assert not out_dir.exists()


def test_unwritable_out_is_refused(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_cli(["matmul", "--out", str(blocker / "sub")], capsys)
    assert code == 2 and "--out:" in err and "is a file" in err
    code, _, err = run_cli(["matmul", "--out", str(blocker)], capsys)
    assert code == 2 and "exists and is not a folder" in err


def test_json_path_that_is_a_folder_is_refused(tmp_path, capsys):
    code, _, err = run_cli(["matmul", "--json", str(tmp_path)], capsys)
    assert code == 2 and "--json:" in err


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "RESULT: no such file"),
        ("{oops", "is not readable JSON"),
        ('{"schema_version": 99}', "newer than this whichdevice reads"),
    ],
)
def test_bad_report_input(tmp_path, capsys, content, message):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    code, _, err = run_cli(["report", str(path)], capsys)
    assert code == 2 and message in err
    assert not (tmp_path / "r.png").exists()


def test_report_on_a_folder(tmp_path, capsys):
    code, _, err = run_cli(["report", str(tmp_path)], capsys)
    assert code == 2 and "is a folder" in err


def test_numpy_sweep_end_to_end_and_report_round_trip(tmp_path, capsys):
    out_dir = tmp_path / "res"
    code, out, err = run_cli(
        ["matmul", "--framework", "numpy", "--sizes", "8,64", "--min-time", "0.02", "--out", str(out_dir)], capsys
    )
    assert code == 0, err
    (json_file,) = out_dir.glob("matmul-*.json")
    (png,) = out_dir.glob("matmul-*.png")
    assert png.stat().st_size > 10_000
    data = json.loads(json_file.read_text())
    assert {r["spec"]["params"]["n"] for r in data["results"]} == {8, 64}
    assert all(r["status"] == "ok" for r in data["results"])
    assert "numpy sees no GPU" in out
    png.unlink()
    before = sorted(out_dir.iterdir())
    code, out2, _ = run_cli(["report", str(json_file)], capsys)
    assert code == 0 and sorted(out_dir.iterdir()) == before  # report writes nothing unless asked
    code, out2, _ = run_cli(["report", str(json_file), "--html"], capsys)
    # the report beside the record is kept: the redraw is written next to it
    assert code == 0 and png.with_name(png.stem + "-report.png").exists() and json_file.with_suffix(".html").exists()
    # The same table comes back from the saved record: compare the rows of n=64.
    row = [ln for ln in out.splitlines() if ln.strip().startswith("│ 64 ")]
    assert row and row[0] in out2


@pytest.mark.tf
def test_tensorflow_cpu_sweep_end_to_end(tmp_path, capsys):
    """A real TensorFlow run (the CPU child; a discovery child too where a GPU could exist), small sizes, both modes."""
    json_file = tmp_path / "r.json"
    code, out, err = run_cli(["matmul", "--sizes", "1,32,128", "--min-time", "0.02", "--json", str(json_file)], capsys)
    assert code == 0, err
    data = json.loads(json_file.read_text())
    assert len(data["results"]) == 6 and all(r["status"] == "ok" for r in data["results"])
    (session,) = data["sessions"]
    assert session["device"]["name"] == "CPU:0"
    assert session["env"]["CUDA_VISIBLE_DEVICES"] == "-1"  # the GPU was hidden before import
    assert session["cpu_threads_intra"] >= 1 and session["onednn"] in (True, False)
    assert session["framework"]["name"] == "tensorflow"
    r = data["results"][0]
    assert r["timing"]["first_call_s"] > 0 and len(r["timing"]["samples_s"]) >= 3
    assert json_file.with_suffix(".png").exists()
    if not any(d["kind"] == "gpu" for d in data["devices_seen"]["tensorflow"]):
        assert "tensorflow sees no GPU" in out


@pytest.mark.tf
def test_unknown_gpu_is_refused_after_discovery(tmp_path, capsys):
    out_dir = tmp_path / "out"
    code, _, err = run_cli(["matmul", "--device", "GPU:9", "--out", str(out_dir)], capsys)
    assert code == 2 and "--device: GPU:9 does not exist on this machine" in err
    assert not out_dir.exists()


def test_html_report_is_self_contained_and_escapes_record_strings(tmp_path, capsys):
    from whichdevice.core.records import load_run, save_run

    out_dir = tmp_path / "res"
    code, _, err = run_cli(
        [
            "matmul",
            "--framework",
            "numpy",
            "--sizes",
            "8",
            "--mode",
            "steady",
            "--min-time",
            "0.01",
            "--out",
            str(out_dir),
        ],
        capsys,
    )
    assert code == 0, err
    (json_file,) = out_dir.glob("matmul-*.json")
    page = json_file.with_suffix(".html").read_text()
    assert "data:image/png;base64," in page and "http://" not in page and "https://" not in page
    # A hostile string in a record is shown, not executed, in HTML and in the terminal.
    rec = load_run(json_file)
    evil = rec.model_copy(update={"notes": ["<script>alert(1)</script> [bold red]x[/bold red]"]})
    save_run(evil, json_file)
    code, out, _ = run_cli(["report", str(json_file), "--html"], capsys)
    assert code == 0
    redrawn = json_file.with_name(json_file.stem + "-report.html")  # the original page is kept
    assert f"Report: {redrawn}" in out
    page = redrawn.read_text()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "[bold red]x[/bold red]" in out  # rich markup printed literally
    assert redrawn.stat().st_size < 2 * 2**20


def test_memory_limit_reaches_the_child_and_the_report_says_out_of_memory(tmp_path, capsys, monkeypatch):
    # The n=16 case really allocates until --memory-limit stops it; the others finish.
    monkeypatch.setenv("WHICHDEVICE_FAULT", "grow:n=16")
    path = tmp_path / "m.json"
    code, out, err = run_cli(
        [
            "matmul",
            "--framework",
            "numpy",
            "--sizes",
            "8,16,24",
            "--mode",
            "steady",
            "--min-time",
            "0.02",
            "--memory-limit",
            "0.6",
            "--json",
            str(path),
        ],
        capsys,
    )
    assert code == 0, err
    from whichdevice.core.records import load_run

    rec = load_run(path)
    by_n = {r.spec.params["n"]: r for r in rec.results}
    assert by_n[16].failure == "out_of_memory" and "over the memory limit of 0.600 GiB" in by_n[16].error
    assert by_n[8].status == "ok" and by_n[24].status == "ok"
    assert rec.options["memory_limit_gib"] == 0.6
    flat = " ".join(out.split())
    failed = "Failed: CPU:0 matrix multiply 16×16 (back-to-back, operands on the device) — out of memory:"
    assert f"{failed} the case's processes used" in flat  # the case named for people
    assert "raise --memory-limit" in flat
