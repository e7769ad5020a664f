"""Where the parent can tell only the CPU exists (numpy; Linux without an
NVIDIA driver), no discovery child runs — the CPU's measuring child says what it sees, and the
record keeps that, not the parent's provisional guess."""

import platform

import pytest

from whichdevice.core.records import DeviceInfo
from whichdevice.frameworks.common import nvidia
from whichdevice.measure import experiment, runner, session
from whichdevice.workloads.matmul import build_cases

from test_runner import QUICK


def test_a_discovery_child_is_needed_only_where_a_gpu_could_exist(monkeypatch):
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(nvidia, "driver_present", lambda: True)
    assert experiment.needs_discovery_child("tensorflow") and experiment.needs_discovery_child("torch")
    assert not experiment.needs_discovery_child("numpy")  # CPU only, whatever the machine has
    monkeypatch.setattr(nvidia, "driver_present", lambda: False)
    assert not experiment.needs_discovery_child("tensorflow")
    monkeypatch.setattr(platform, "system", lambda: "Darwin")  # no driver check there: ask a child
    assert experiment.needs_discovery_child("torch")


def test_a_measuring_child_also_reports_its_devices():
    job = runner.Job("numpy", "CPU:0", "cpu", build_cases("numpy", "CPU:0", (4,), ["steady"], "float32"), policy=QUICK)
    job.report_devices = True
    out = runner.run_job(job, case_timeout_s=60)
    assert out.discovery is not None and [d["name"] for d in out.discovery["devices"]] == ["CPU:0"]
    assert [r.status for r in out.results] == ["ok"]  # and it measured as before


def test_measure_starts_no_discovery_child_and_keeps_what_the_child_saw(monkeypatch):
    jobs = []
    real = runner.run_job

    def spy(job, **kw):
        jobs.append(job.device)
        return real(job, **kw)

    monkeypatch.setattr(runner, "run_job", spy)
    req = session.Request(
        "matmul",
        "numpy",
        lambda found, d: build_cases("numpy", d.name, (4,), ["steady"], "float32"),
        {},
        ["whichdevice", "matmul"],
        min_time_s=0.01,
    )
    record = session.measure(req)
    assert jobs == ["CPU:0"]  # one child, no discovery job (device None)
    (seen,) = record.devices_seen["numpy"]
    assert seen == record.sessions[0].device  # the child's own description of its CPU
    assert record.results[0].status == "ok"


@pytest.mark.skipif(
    platform.system() != "Linux" or nvidia.driver_present(), reason="needs a Linux machine with no driver"
)
@pytest.mark.parametrize("users", [None, "-1"])
def test_the_reasons_are_the_users_not_the_env_the_parent_set_for_the_cpu_child(monkeypatch, users):
    """torch's CPU child runs with CUDA_VISIBLE_DEVICES="" (set by the parent): the reasons it
    reports must not blame that variable; a user's own CUDA_VISIBLE_DEVICES=-1 must be named."""
    pytest.importorskip("torch")
    if users is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", users)
    job = runner.Job("torch", "CPU:0", "cpu", [], policy=QUICK, report_devices=True)
    out = runner.run_job(job, case_timeout_s=120)
    reasons = out.discovery["no_gpu_reasons"]
    assert nvidia.NO_DRIVER in reasons
    assert any("CUDA_VISIBLE_DEVICES='-1'" in r for r in reasons) == (users == "-1"), reasons


def test_devices_asks_a_child_and_says_why_no_gpu_without_claiming_a_measurement(capsys):
    from conftest import run_cli

    code, out, _ = run_cli(["devices", "--framework", "numpy"], capsys)
    assert code == 0 and "numpy" in out and "CPU:0" in out
    assert "numpy computes on the CPU only" in out and "measured" not in out


def test_each_framework_s_gpus_are_listed_one_way_with_what_nvidia_smi_adds(monkeypatch):
    """``nvidia.devices`` (every framework's ``list_devices``): the framework's own name, memory and
    compute capability where it reports them, nvidia-smi's driver, and its name and memory where
    the framework has none (TensorFlow and JAX report no memory). No GPU here: the GPUs are the
    shape ``torch.cuda.get_device_properties`` and ``get_device_details`` report on an H100."""
    smi = [{"name": "NVIDIA H100 80GB HBM3", "memory_mib": "81559", "driver": "550.54.15"}]
    monkeypatch.setattr(nvidia, "smi_query", lambda: smi)
    cpu, torch_gpu = nvidia.devices([("NVIDIA H100 80GB HBM3", 85_045_592_064, "9.0")])
    assert (cpu.name, cpu.kind, torch_gpu.name, torch_gpu.kind) == ("CPU:0", "cpu", "GPU:0", "gpu")
    assert (torch_gpu.memory_bytes, torch_gpu.compute_capability, torch_gpu.driver) == (
        85_045_592_064,
        "9.0",
        "550.54.15",
    )
    _, tf_gpu = nvidia.devices([(None, None, "9.0")])
    assert (tf_gpu.description, tf_gpu.memory_bytes) == ("NVIDIA H100 80GB HBM3", 81559 * 2**20)
    _, _, second = nvidia.devices([("H100", None, None), ("H100", None, None)])
    assert second.name == "GPU:1" and second.driver is None and second.memory_bytes is None  # no smi row
    monkeypatch.setattr(nvidia, "smi_query", lambda: [])
    assert nvidia.devices([]) == [DeviceInfo(name="CPU:0", kind="cpu", description=cpu.description)]
