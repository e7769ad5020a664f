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
                    timing=timing_of(row[key]),
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
