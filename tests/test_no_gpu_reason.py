"""Why there is no GPU, said one way per fact and true for what was detected.

The first screen said "No GPU here (this torch build)" (the first reason cut at its version's
parenthesis: no reason at all) for a torch script, while the provisional answer of the same run
(the parent's discovery, which checks only the driver) and every TensorFlow record said "(no
NVIDIA driver found)". Now each framework's discovery words a build without CUDA one way
(``nvidia.no_cuda_build``), the reasons are ordered by the one that decides (no driver before a
build without CUDA: without the driver no build has a GPU), and the screen names that one as its
fact alone (``nvidia.no_gpu_gist``); the record's note keeps them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from whichdevice.analysis.suite import no_gpu_reasons, suite_verdict
from whichdevice.core.records import load_run
from whichdevice.frameworks.common import nvidia
from whichdevice.present.firstscreen import first_screen

DATA = Path(__file__).parent / "data"
TORCH_RECORD = DATA / "diagnose_script_regression_budget60_cpu_2core.json"  # a CPU-only torch build, no driver
TORCH_BUILD = nvidia.no_cuda_build("torch", "2.13.0+cpu", "install a CUDA build of torch")


def _answer(reasons: list[str]) -> str:
    record = load_run(TORCH_RECORD).model_copy(update={"no_gpu_reasons": {"torch": reasons}})
    return first_screen(record, suite_verdict(record)).answer[0]


def test_a_cpu_only_torch_build_on_a_machine_without_a_driver_names_the_driver_in_either_order():
    """Both facts detected: the driver decides, whichever order the record keeps them in (the
    recorded one put the build first), and the provisional discovery's reason (the driver only)
    gives the same answer line."""
    record = load_run(TORCH_RECORD)
    assert [nvidia.no_gpu_gist(r) for r in no_gpu_reasons(record)] == [
        "no NVIDIA driver found",
        "this torch build has no CUDA support",
    ]
    said = "No GPU here (no NVIDIA driver found): everything below was measured on this CPU."
    assert first_screen(record, suite_verdict(record)).answer[0] == said
    assert _answer([TORCH_BUILD, nvidia.NO_DRIVER]) == _answer([nvidia.NO_DRIVER, TORCH_BUILD]) == said
    assert _answer([nvidia.NO_DRIVER]) == said  # the parent's provisional discovery (experiment.discover)


def test_a_cpu_only_build_beside_a_driver_says_the_build_whole():
    """A driver, but a torch built without CUDA: the build is the reason, said as a whole fact."""
    assert _answer([TORCH_BUILD]) == (
        "No GPU here (this torch build has no CUDA support): everything below was measured on this CPU."
    )


@pytest.mark.parametrize(
    "reason,fact",
    [
        (nvidia.NO_DRIVER, "no NVIDIA driver found"),
        (TORCH_BUILD, "this torch build has no CUDA support"),
        (nvidia.no_cuda_build("JAX", "jaxlib 0.10.2, no CUDA plugin", "pip install -U 'jax[cuda12]'"), None),
        (nvidia.no_cuda_build("TensorFlow", "tensorflow-cpu 2.21.0", "pip install tensorflow"), None),
        ("CUDA_VISIBLE_DEVICES='-1' hides every GPU (unset it)", "CUDA_VISIBLE_DEVICES='-1' hides every GPU"),
        # a record written before the one wording
        ("this JAX has no CUDA plugin (CPU-only jaxlib): pip install -U 'jax[cuda12]'", "this JAX has no CUDA plugin"),
    ],
)
def test_each_reason_s_short_form_is_its_whole_fact(reason, fact):
    gist = nvidia.no_gpu_gist(reason)
    framework = reason.split(" build (")[0].removeprefix("this ")
    assert gist == (fact or f"this {framework} build has no CUDA support")
    assert "(" not in gist and ":" not in gist


def test_the_reasons_are_ordered_by_what_decides():
    hidden = "CUDA_VISIBLE_DEVICES='' hides every GPU (unset it)"
    windows = "TensorFlow >= 2.11 has no native GPU support on Windows (use WSL2)"
    other = "torch found no usable GPU (python -c 'import torch; torch.cuda.init()' says why)"
    mixed = [other, TORCH_BUILD, windows, hidden, nvidia.NO_DRIVER, TORCH_BUILD]
    assert nvidia.no_gpu_order(mixed) == [nvidia.NO_DRIVER, hidden, windows, TORCH_BUILD, other]


def test_torch_discovery_here_says_each_fact_it_detects_in_that_order(monkeypatch):
    """The installed torch, asked here: a CPU-only build is said in the one wording; the driver,
    when absent, comes first."""
    torch = pytest.importorskip("torch")
    from whichdevice.frameworks.torch import discovery

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(nvidia, "driver_present", lambda: False)
    monkeypatch.setattr(nvidia.platform, "system", lambda: "Linux")
    reasons = discovery.no_gpu_reasons()
    assert reasons[0] == nvidia.NO_DRIVER
    if torch.version.cuda is None:
        assert reasons[1:] == [nvidia.no_cuda_build("torch", torch.__version__, "install a CUDA build of torch")]
    monkeypatch.setattr(nvidia, "driver_present", lambda: True)
    with_driver = discovery.no_gpu_reasons()
    assert nvidia.NO_DRIVER not in with_driver
    if torch.version.cuda is None:
        assert [nvidia.no_gpu_gist(r) for r in with_driver] == ["this torch build has no CUDA support"]
