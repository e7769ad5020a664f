"""`calibrate --framework torch|keras-jax`: the framework's own probes measured on
this CPU into a profile that `profile list` shows, and `predict --framework torch` taking this
machine's CPU costs from it in place of the shipped reference's host CPU."""

import socket

import pytest
from conftest import make_record

from whichdevice.analysis import deviceprofile
from whichdevice.analysis.calibration import dispatch_mode, profile_from_record
from whichdevice.core.records import CaseResult, CaseSpec, load_run
from whichdevice.workloads import calibrate as cal_workload


def _cli(args, capsys):
    from whichdevice.cli.app import main

    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_torch_plans_no_compiled_chain_and_its_profile_is_eager():
    torch_probes = {c.params["probe"] for c in cal_workload.build_cases("torch", "CPU:0", "cpu")}
    jax_probes = {c.params["probe"] for c in cal_workload.build_cases("keras-jax", "CPU:0", "cpu")}
    assert "graph" not in torch_probes and {"tiny_eager", "tiny_sync", "matmul", "elementwise"} <= torch_probes
    assert "graph" in jax_probes
    spec = CaseSpec(workload="calibrate", framework="torch", device="CPU:0", params={"probe": "tiny_eager"})
    rec = make_record(
        [CaseResult(spec=spec, status="failed", error="x", failure="error", wall_s=0.0)], experiment="calibrate"
    )
    assert dispatch_mode(rec) == "eager"


@pytest.mark.frameworks
@pytest.mark.parametrize("framework, module", [("torch", "torch"), ("keras-jax", "jax"), ("jax", "jax")])
def test_calibrate_writes_a_profile_that_profile_list_shows(tmp_path, capsys, monkeypatch, framework, module):
    pytest.importorskip(module)
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    name = f"ci-{framework}"
    code, _, err = _cli(
        ["calibrate", "--framework", framework, "--name", name, "--out", str(out), "--min-time", "0.02"], capsys
    )
    records = [p for p in out.glob("calibrate-*.json") if not p.name.endswith(".profile.json")]
    assert records, err  # the record is written either way
    if code == 1 and "too noisy" in err:  # a busy machine: refused rather than a clamped 0
        assert name not in deviceprofile.saved_names()
        return
    assert code == 0, err
    prof = deviceprofile.load(name)
    assert prof.framework.startswith(f"{framework} ") and prof.gpu is None
    assert prof.machine["hostname"] == socket.gethostname()
    assert prof.cpu.dispatch_eager_s > 0 and prof.cpu.sync_s is not None and prof.cpu.sync_s > 0
    assert [p.x for p in prof.cpu.matmul] == [float(n) for n in cal_workload.MATMUL_N]
    if framework == "torch":  # eager: no compiled figures, and the record says why
        assert prof.dispatch_mode == "eager" and prof.cpu.dispatch_graph_s is None
    else:  # XLA: the per-kernel cost of a compiled step, below the eager dispatch
        assert prof.dispatch_mode == "graph" and 0 < prof.cpu.dispatch_graph_s < prof.cpu.dispatch_eager_s
    assert prof == profile_from_record(load_run(records[0]), name)
    code, listed, err = _cli(["profile", "list"], capsys)
    assert code == 0 and name in listed and f"{framework} " in listed


def test_predict_takes_this_machines_cpu_from_a_profile_calibrated_here(tmp_path, monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home"))
    h100 = deviceprofile.load("h100")
    here = socket.gethostname()
    assert deviceprofile.with_local_cpu(h100, "torch", here) == h100  # nothing calibrated here yet
    local_cpu = h100.cpu.model_copy(update={"description": "this CPU", "dispatch_eager_s": 3e-6})
    for name, fw, host in (
        ("mine", "torch 2.13", here),
        ("other-fw", "keras-jax 3.15", here),
        ("away", "torch 2", "x"),
    ):
        prof = h100.model_copy(
            update={"name": name, "framework": fw, "machine": {"hostname": host}, "cpu": local_cpu, "gpu": None}
        )
        deviceprofile.user_dir().mkdir(parents=True, exist_ok=True)
        (deviceprofile.user_dir() / f"{name}.json").write_text(deviceprofile.dumps(prof))
    used = deviceprofile.with_local_cpu(h100, "torch", here)
    assert used.cpu.description == "this CPU" and used.gpu == h100.gpu
    assert "--profile mine" in used.notes[-1] and "in place of the profile's CPU" in used.notes[-1]
    assert deviceprofile.with_local_cpu(h100, "jax", here) == h100  # no profile of that framework here
