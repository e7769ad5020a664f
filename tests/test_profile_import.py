"""`whichdevice profile import|list|show`, `predict --profile FILE`, `whichdevice import` and
`report` on reference GPU runs and on the audit's own record (no framework, no measuring).

Data: tests/data/h100_probe_torch.json and keras_{jax,torch}_{cpu,gpu}.json are the shared
H100 reference (a recorded H100 run of 2026-11-22, see tests/data/README.md);
audit_record_cpu.json is a real `whichdevice audit` record (tests/data/README.md)."""

import json
from pathlib import Path

import pytest

from whichdevice.analysis import deviceprofile, reference
from whichdevice.core import records

from conftest import DATA

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "h100-2026-11-22"
REFERENCE_FILES = {
    "probe_torch.json": "h100_probe_torch.json",
    "keras_jax_cpu.json": "keras_jax_cpu.json",
    "keras_jax_gpu.json": "keras_jax_gpu.json",
    "keras_torch_cpu.json": "keras_torch_cpu.json",
    "keras_torch_gpu.json": "keras_torch_gpu.json",
}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def cli(argv, capsys):
    from whichdevice.cli.app import main

    code = 0
    try:
        main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_profile_import_of_the_reference_probe_gives_the_bundled_h100_profile(home, capsys):
    code, out, err = cli(["profile", "import", DATA / "h100_probe_torch.json", "--name", "my-h100"], capsys)
    assert code == 0, err
    assert "predict --profile my-h100" in out
    imported = deviceprofile.load("my-h100")
    shipped = deviceprofile.load("h100")
    same_but_labels = imported.model_copy(
        update={"name": shipped.name, "source": shipped.source, "created_at": shipped.created_at}
    )
    assert same_but_labels == shipped
    assert "h100_probe_torch.json" in imported.source
    # the probe file itself works as --profile FILE, converted on the fly
    on_the_fly = deviceprofile.load(str(DATA / "h100_probe_torch.json"))
    assert on_the_fly.gpu == shipped.gpu and on_the_fly.cpu == shipped.cpu


def test_profile_import_names_it_after_the_gpu_refuses_a_clash_and_a_non_profile(home, capsys):
    code, out, _ = cli(["profile", "import", DATA / "h100_probe_torch.json"], capsys)
    assert code == 0 and "nvidia-h100-80gb-hbm3" in out
    saved = home / "profiles" / "nvidia-h100-80gb-hbm3.json"
    before = saved.read_bytes()
    code, _, err = cli(["profile", "import", DATA / "h100_probe_torch.json"], capsys)
    assert code == 2 and "--force" in err and len(err.strip().splitlines()) == 1
    assert saved.read_bytes() == before
    assert cli(["profile", "import", DATA / "h100_probe_torch.json", "--force"], capsys)[0] == 0
    code, _, err = cli(["profile", "import", DATA / "keras_jax_gpu.json", "--name", "k"], capsys)
    assert code == 2 and "probe_torch.json" in err
    code, _, err = cli(["profile", "import", DATA / "h100_probe_torch.json", "--name", "h100"], capsys)
    assert code == 2 and "shipped profile" in err
    assert sorted(p.name for p in (home / "profiles").iterdir()) == ["nvidia-h100-80gb-hbm3.json"]


def test_profile_import_reads_a_calibrate_profile_and_list_and_show_print_it(home, tmp_path, capsys):
    own = deviceprofile.load("h100").model_copy(update={"name": "lab-box", "source": "whichdevice calibrate"})
    f = tmp_path / "lab.profile.json"
    f.write_text(deviceprofile.dumps(own))
    assert cli(["profile", "import", f], capsys)[0] == 0
    assert deviceprofile.load("lab-box") == own
    code, out, _ = cli(["profile", "list"], capsys)
    assert code == 0 and "lab-box" in out and "h100" in out and "saved" in out and "shipped" in out
    code, out, _ = cli(["profile", "show", "lab-box"], capsys)
    assert code == 0 and "NVIDIA H100 80GB HBM3" in out and "9.68 µs" in out  # the GPU's eager dispatch
    code, _, err = cli(["profile", "show", "no-such"], capsys)
    assert code == 2 and "unknown profile" in err


def test_reference_copies_in_tests_data_are_the_shared_files():
    if not SHARED.is_dir():
        pytest.skip("../shared/reference is not beside this clone")
    shared_json = sorted(p.name for p in SHARED.glob("*.json"))
    assert shared_json == sorted(REFERENCE_FILES)  # a new reference file needs a copy here
    for name, copy in REFERENCE_FILES.items():
        ours = json.loads((DATA / copy).read_text())
        ours.pop("origin", None)  # the copy's note of origin
        assert json.loads((SHARED / name).read_text()) == ours, name


@pytest.mark.parametrize("name", sorted(REFERENCE_FILES))
def test_report_renders_every_reference_file(name, tmp_path, capsys):
    code, out, err = cli(["report", DATA / REFERENCE_FILES[name], "--out", tmp_path], capsys)
    assert code == 0, err
    assert "Reference run" in out and "raw samples were not kept" in out
    if name == "probe_torch.json":
        assert "mlp step" in out and "matmul" in out and "NVIDIA H100 80GB HBM3" in out
    else:
        assert "fit epoch" in out and "batch=4096" in out


def test_reference_record_keeps_every_value_with_its_device():
    probe = json.loads((DATA / "h100_probe_torch.json").read_text())
    rec = reference.record_from_reference(probe, "probe_torch.json", "2026-11-22")
    steps = {
        (r.spec.device, r.spec.params["quantity"]): r.timing.median_s
        for r in rec.results
        if r.spec.workload == "mlp step" and r.spec.params["batch"] == 2048
    }
    row = next(r for r in probe["mlp"] if r["batch"] == 2048)
    assert steps[("GPU:0", "step_s")] == row["cuda_step_s"] and steps[("CPU:0", "step_s")] == row["cpu_step_s"]
    n_values = sum(1 for r in probe["mlp"] for k in r if k.endswith("_s"))
    assert sum(r.spec.workload == "mlp step" for r in rec.results) == n_values


def test_import_writes_normal_records_that_report_renders(tmp_path, capsys):
    out = tmp_path / "out"
    code, text, err = cli(["import", DATA / "keras_jax_gpu.json", DATA / "h100_probe_torch.json", "--out", out], capsys)
    assert code == 0, err
    written = sorted(out.glob("reference-*.json"))
    assert [p.name for p in written] == ["reference-h100_probe_torch.json", "reference-keras_jax_gpu.json"]
    rec = records.load_run(written[1])
    assert rec.experiment == "reference" and {r.spec.framework for r in rec.results} == {"keras-jax"}
    code, text, err = cli(["report", written[1], "--out", tmp_path], capsys)
    assert code == 0 and "jax matmul" in text
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    code, _, err = cli(["import", bad, "--out", tmp_path / "none"], capsys)
    assert code == 2 and "not a reference run file" in err and not (tmp_path / "none").exists()


def test_report_renders_the_audits_own_record(tmp_path, capsys):
    code, out, err = cli(["report", DATA / "audit_record_cpu.json", "--out", tmp_path], capsys)
    assert code == 0, err
    assert "whichdevice audit" in out and "Findings" in out


def test_a_malformed_reference_file_is_one_line_exit_2(tmp_path, capsys):
    probe = json.loads((DATA / "h100_probe_torch.json").read_text())
    del probe["matmul"][0]["n"]
    bad = tmp_path / "probe_torch.json"
    bad.write_text(json.dumps(probe))
    for argv in (["report", bad], ["import", bad, "--out", tmp_path / "o"], ["profile", "import", bad]):
        code, _, err = cli(argv, capsys)
        assert code == 2 and "does not fit" in err and len(err.strip().splitlines()) == 1, argv
    assert not (tmp_path / "o").exists()
