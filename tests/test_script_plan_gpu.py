"""`diagnose SCRIPT` plans GPU-only variants only where a GPU can be measured.

Stop 46's pytorch-cifar report, on a machine with no GPU, read "cudnn_benchmark not measured on a
GPU: its 2 case(s) need about 176 s, more than the budget leaves": the plan was always sized as if a
GPU would be measured, so the budget took the blame for what the machine could not do. The first
screen already says "cudnn.benchmark, pin_memory + non_blocking (no GPU here)" from the catalogue.
The pre-flight's line also read "batch 0" for a loop whose batch it could not read, and gave a
multi-second step as "6.08e+03 ms".
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from whichdevice.cli import scriptcmd
from whichdevice.frameworks.common import nvidia
from whichdevice.workloads import scriptplan

FACTS = {
    "entry": "torch.optim.Optimizer.step",
    "model": "Net",
    "batch": 0,
    "framework": "torch",
    "step_s": 6.08,
    "setup_s": 2.0,
}


class _Stop(Exception):
    pass


def _plan(monkeypatch, tmp_path: Path, *, driver: bool, device: str | None) -> tuple[bool, str]:
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    seen: dict[str, bool] = {}

    def size(facts, budget_s, *, gpu=False, prior=None):
        seen["gpu"] = gpu
        raise _Stop

    buf = io.StringIO()
    monkeypatch.setattr(scriptcmd, "err_console", Console(file=buf, width=200, color_system=None))
    monkeypatch.setattr(nvidia, "driver_present", lambda: driver)
    monkeypatch.setattr(scriptplan, "preflight", lambda job, budget_s, **limits: dict(FACTS))
    monkeypatch.setattr(scriptplan, "size", size)
    monkeypatch.setattr(scriptcmd.experiment, "require_installed", lambda fw: None)
    with pytest.raises(_Stop):
        scriptcmd.plan([str(script)], {}, "60", {"device": device, "out": tmp_path / "out"}, object)
    return seen["gpu"], buf.getvalue()


def test_no_driver_plans_no_gpu_variants_and_the_preflight_line_reads_as_words(monkeypatch, tmp_path):
    gpu, said = _plan(monkeypatch, tmp_path, driver=False, device=None)
    assert gpu is False
    assert "(Net, torch): a step took 6.08 s," in said and "batch 0" not in said and "e+03" not in said


@pytest.mark.parametrize(("device", "planned"), [(None, True), ("CPU:0,GPU:0", True), ("CPU", False)])
def test_with_a_driver_gpu_variants_are_planned_when_a_gpu_is_measured(monkeypatch, tmp_path, device, planned):
    assert _plan(monkeypatch, tmp_path, driver=True, device=device)[0] is planned


def test_the_sizing_note_gives_a_long_step_in_seconds():
    """The recorded ResNet18 report read "Sized from the pre-flight's training step (1.14e+04 ms …)"."""
    from whichdevice.workloads.suite import sizing_notes

    assert sizing_notes({"step_s": 11.4, "cut": []})[0].startswith("Sized from the pre-flight's training step (11.4 s ")
    assert "(1.42 ms " in sizing_notes({"step_s": 0.00142, "cut": []})[0]  # below a second: as before
