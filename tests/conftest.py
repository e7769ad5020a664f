import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def h100_probe():
    return json.loads((DATA / "h100_probe_torch.json").read_text())


def timing_of(seconds: float):
    """A one-sample Timing from a recorded median (the reference kept no raw samples)."""
    from whichdevice.core.records import Timing

    return Timing(first_call_s=seconds, warmup_s=[seconds], samples_s=[seconds], number_per_sample=1, overhead_s=0.0)


def reference_timing(seconds: float, blocks: int = 7):
    """A recorded reference median as the Timing of its ``blocks`` timed blocks (the H100 probe:
    median of 7 blocks, tests/data/README.md). The spread was not kept, so the blocks are equal:
    enough samples for analysis/significance.py's rule, with an interval of the point itself."""
    from whichdevice.core.records import Timing

    return Timing(
        first_call_s=seconds, warmup_s=[seconds], samples_s=[seconds] * blocks, number_per_sample=1, overhead_s=0.0
    )


def fake_session(dev):
    """A measuring session of ``dev`` as a faked ``experiment.run_devices`` returns it."""
    from whichdevice.core.records import FrameworkInfo, Session

    return Session(
        framework=FrameworkInfo(name="tensorflow", version="0"),
        device=dev,
        env={},
        import_s=0.0,
        overhead_s=0.0,
        cpu_threads_intra=2,
        cpu_threads_inter=2,
        cpu_threads_source="test",
        onednn=False,
    )


def make_record(results, experiment="matmul"):
    from whichdevice.core.records import MachineInfo, RunRecord

    machine = MachineInfo(
        hostname="ref",
        os="Linux",
        python="3.12",
        cpu_model="Xeon",
        cpu_cores_logical=16,
        cpu_cores_physical=16,
        ram_bytes=128 * 2**30,
    )
    return RunRecord(
        experiment=experiment,
        command=["test"],
        created_at="2026-11-22T00:00:00+00:00",
        machine=machine,
        results=results,
    )


def h100_matmul_record(probe: dict, cpu_key: str, gpu_key: str, mode: str):
    """The reference's fp32 (tf32 off) matmul rows as a RunRecord: CPU:0 vs GPU:0."""
    from whichdevice.core.records import CaseResult, CaseSpec

    results = []
    for row in probe["matmul"]:
        if row["tf32"]:
            continue
        for device, key in (("CPU:0", cpu_key), ("GPU:0", gpu_key)):
            spec = CaseSpec(
                workload="matmul",
                framework="torch",
                device=device,
                params={"n": row["n"], "mode": mode, "dtype": "float32"},
            )
            results.append(
                CaseResult(
                    spec=spec,
                    status="ok",
                    timing=reference_timing(row[key]),
                    wall_s=0.0,
                    metrics={"flops_per_call": 2.0 * row["n"] ** 3},
                )
            )
    return make_record(results)


@pytest.fixture(autouse=True)
def _private_history(tmp_path_factory, monkeypatch):
    """Keep the run-history database of every test out of the user's home."""
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path_factory.mktemp("wdhome")))


def run_cli(args, capsys):
    """Run the CLI in-process: (exit code, stdout, stderr). main() exits only on errors."""
    from whichdevice.cli.app import main

    with pytest.raises(SystemExit) as e:
        main(args)
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return e.value.code, out, err


def pytest_collection_modifyitems(config, items):
    """Tests marked ``tf`` run real TensorFlow: without it installed they are skipped with the
    reason, not failed (the other frameworks' tests already skip themselves)."""
    import importlib.util

    if importlib.util.find_spec("tensorflow") is not None:
        return
    skip = pytest.mark.skip(reason="TensorFlow is not installed: pip install '.[tensorflow]'")
    for item in items:
        if item.get_closest_marker("tf") is not None:
            item.add_marker(skip)
