"""`whichdevice pipeline --trace`: a TensorBoard profile of each loop's steady steps."""

import json

import pytest
from conftest import run_cli


@pytest.mark.tf
def test_pipeline_trace_writes_a_profile_per_variant(tmp_path, capsys):
    trace = tmp_path / "trace"
    json_file = tmp_path / "p.json"
    code, _, err = run_cli(
        [
            "pipeline",
            "--quick",
            "--variants",
            "serial,prefetch",
            "--no-stages",
            "--images",
            "64",
            "--trace",
            str(trace),
            "--json",
            str(json_file),
        ],
        capsys,
    )
    assert code == 0, err
    from test_trace_markers import _markers

    for variant in ("serial", "prefetch"):
        assert list((trace / f"CPU0-{variant}").glob("plugins/profile/*/*.xplane.pb")), variant
        # every traced loop step carries XProf's step marker, numbered
        steps = [m["step_num"] for m in _markers(trace / f"CPU0-{variant}")]
        assert steps and steps == sorted(steps) and len(set(steps)) == len(steps), variant
    assert json.loads(json_file.read_text())["options"]["trace"] == str(trace.resolve())


def test_trace_into_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    code, _, err = run_cli(["pipeline", "--trace", str(f), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--trace" in err and not (tmp_path / "o").exists()
