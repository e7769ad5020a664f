"""The PyTorch capture of a user's script: ``frameworks/torch/capture.py``.

Each corpus script (``tests/script_corpus/torch_*.py``, our own code written the ways users write
their loops) runs in a script child (``measure/scriptchild.py``, as ``diagnose SCRIPT.py`` runs it)
with the torch capture installed, and the result dict is checked: the entry point captured, the
steps counted (a GAN's two optimizers one step), the variants applied or ``not_applicable`` with
their reason, and what the script does per step (DataLoader wait, host-to-device copies, host
reads). This machine has no GPU: host-to-device copies are checked on the ``meta`` device, which
stands in for one (``test_torch_device_scope.py``'s idea).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

pytest.importorskip("torch")

from whichdevice.frameworks.torch import capture_hooks  # noqa: E402

CORPUS = Path(__file__).parent / "script_corpus"
SRC = Path(__file__).parents[1] / "src"
pytestmark = pytest.mark.frameworks
# The fast subset: one child per pattern (≈ 5 s each on an idle 2-core machine, torch's import
# half of it); the rest of the corpus's variants are ``slow``.


def SLOW(*case: str):  # noqa: N802 - reads as a mark in the table
    return pytest.param(*case, marks=pytest.mark.slow)


def capture(
    tmp_path: Path, script: str | Path, variant: str = "baseline", frameworks: tuple = ("torch",), **spec
) -> tuple[list[dict], dict]:
    """Run ``script`` in a script child with the torch capture: (its results, its end line)."""
    path = script if isinstance(script, Path) else CORPUS / script
    job = {
        "script": str(path),
        "args": [],
        "frameworks": list(frameworks),
        "spec": {"variant": variant, "warmup_steps": 1, "steps": 3, "device": "cpu", "deadline_s": 120, **spec},
    }
    (tmp_path / "job.json").write_text(json.dumps(job))
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(SRC), "CUDA_VISIBLE_DEVICES": "", "KERAS_BACKEND": "torch"}
    cmd = [sys.executable, "-m", "whichdevice.measure.scriptchild", str(tmp_path / "job.json"), str(out)]
    with open(tmp_path / "log.txt", "w") as log:  # a file, not a pipe: no wait for a child's children
        done = subprocess.run(cmd, env=env, stdout=log, stderr=log, timeout=300)
    assert done.returncode == 0, (tmp_path / "log.txt").read_text()[-2000:]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return [line["result"] for line in lines if line["type"] == "result"], lines[-1]


def one(tmp_path: Path, script: str | Path, variant: str = "baseline", **spec) -> dict:
    results, end = capture(tmp_path, script, variant, **spec)
    assert end["status"] == "ok" and len(results) == 1, (end, results)
    return results[0]


def steady(r: dict, steps: int = 3) -> None:
    """A measured result: the steps asked for, each a positive time, the set-up apart."""
    assert r["status"] == "ok" and r["why_not"] is None
    assert len(r["step_s"]) >= steps and all(t > 0 for t in r["step_s"])  # more until the median settles
    assert len(r["warmup_s"]) >= 1 and r["setup_s"] > 0
    assert r["stopped"] in ("steps", "script end")  # a short loop may end before its median settles


def test_an_optimizer_over_plain_tensors_with_a_loss_read_every_step(tmp_path):
    r = one(tmp_path, "torch_optimizer_tensors.py")
    steady(r)
    n = len(r["step_s"])
    assert r["entry"] == "torch.optim.Optimizer.step" and r["entry_calls"] == n
    assert r["model"] is None  # no nn.Module: the optimizer holds two tensors
    assert r["syncs"]["count"] == n and r["syncs"]["s"] > 0  # loss.item() once a step
    assert r["data_source"] is None and r["data_wait_s"] == []  # no DataLoader: not measured
    assert r["h2d"] == {"count": 0, "bytes": 0, "pinned": 0}  # .to("cpu") copies nothing


def test_a_manual_update_without_an_optimizer_is_timed_at_backward(tmp_path):
    r = one(tmp_path, "torch_manual_update.py")
    steady(r)
    assert r["entry"] == "torch.Tensor.backward" and r["entry_calls"] == len(r["step_s"])
    assert r["model"] == "Sequential"
    assert r["syncs"]["count"] == 0  # the loss is read once an epoch, outside these steps


def test_a_closure_optimizer_finds_the_model_its_closure_calls(tmp_path):
    """L-BFGS runs the forward inside ``optimizer.step(closure)``, after the step's pre-hook: the
    trained model is found at the step's end, so a module variant is judged on it."""
    r = one(tmp_path, "torch_closure_lbfgs.py", "channels_last")
    assert r["status"] == "not_applicable" and r["why_not"] == "no Conv2d in the trained model"
    assert r["model"] == "Sequential" and r["entry"] == "torch.optim.Optimizer.step"


def test_a_dataloader_loop_measures_its_wait_for_data(tmp_path):
    r = one(tmp_path, "torch_dataloader.py")
    steady(r)
    assert r["model"] == "Classifier" and r["data_source"] == "DataLoader"
    assert r["batch_size"] == 32 and r["samples_per_step"] == 32 and r["samples"] == 2048
    assert len(r["data_wait_s"]) == len(r["step_s"]) and all(0 < w < s for w, s in zip(r["data_wait_s"], r["step_s"]))
    assert r["loader"] == {
        "batch_size": 32,
        "batch_sampler": False,
        "num_workers": 0,
        "pin_memory": False,
        "persistent_workers": False,
    }
    assert r["syncs"]["count"] == 0  # Adam's own .item() of its step count is torch's, not the script's


def test_two_networks_with_two_optimizers_are_one_step(tmp_path):
    r = one(tmp_path, "torch_gan.py", steps=4)
    steady(r, 4)
    assert r["model"] == "Sequential+Sequential"  # the discriminator and the generator
    assert r["entry_calls"] == 2 * len(r["step_s"])  # optD.step() and optG.step() in each step


def test_a_gan_under_autocast_hands_its_loss_float32(tmp_path):
    """Autocast wraps the networks' forward only: their bfloat16 outputs come back as float32, so
    the script's loss outside it still runs (pytorch/examples' DCGAN: BCELoss of a bfloat16
    output against float32 labels raised 'Found dtype Float but expected BFloat16')."""
    r = one(tmp_path, "torch_gan.py", "autocast")
    steady(r)
    assert r["applied"] and r["entry_calls"] == 2 * len(r["step_s"])


@pytest.mark.slow
def test_a_hidden_state_lstm_lm_under_autocast(tmp_path):
    r = one(tmp_path, "torch_lstm_lm.py", "autocast")
    steady(r)
    assert r["applied"] and r["model"] == "LM" and r["entry"] == "torch.optim.Optimizer.step"


@pytest.mark.slow
def test_a_cnn_in_channels_last(tmp_path):
    r = one(tmp_path, "torch_cnn.py", "channels_last")
    steady(r)
    assert r["applied"] and r["conv2d"] and r["model"] == "Net"
    assert r["syncs"]["count"] == 3  # running_loss += loss.item()


@pytest.mark.slow
def test_a_bigger_dataloader_batch(tmp_path):
    r = one(tmp_path, "torch_dataloader.py", "batch:64")
    steady(r)
    assert r["applied"] and r["batch_size"] == 64 and r["samples_per_step"] == 64
    assert r["loader"]["batch_size"] == 32  # what the script asked for


@pytest.mark.parametrize(
    "script, variant, why",
    [
        ("torch_dataloader.py", "channels_last", "no Conv2d in the trained model"),
        ("torch_optimizer_tensors.py", "workers:2", "no DataLoader feeds the training loop"),
        SLOW("torch_dataloader.py", "pin_memory", "no GPU: pinned memory"),
        SLOW("torch_cnn.py", "cudnn_benchmark", "no GPU: cudnn.benchmark"),
        SLOW("torch_dataloader.py", "persistent_workers", "no worker processes (num_workers=0)"),
        SLOW("torch_optimizer_tensors.py", "compile", "trains no torch.nn.Module"),
        SLOW("torch_gan.py", "steps_per_execution:8", "is not a PyTorch fix"),
    ],
)
def test_a_variant_that_does_not_fit_says_why_at_once(tmp_path, script, variant, why):
    r = one(tmp_path, script, variant)
    assert r["status"] == "not_applicable" and not r["applied"] and why in r["why_not"]
    assert r["step_s"] == []


def test_the_capture_passes_the_scripts_except_exception(tmp_path):
    """``CaptureDone`` is a BaseException: a loop wrapped in ``try/except Exception`` still stops."""
    script = tmp_path / "guarded.py"
    script.write_text(
        "import torch\n"
        "w = torch.zeros(4, requires_grad=True)\n"
        "opt = torch.optim.SGD([w], lr=0.1)\n"
        "for i in range(10_000):\n"
        "    try:\n"
        "        opt.zero_grad(); (w - 1).pow(2).sum().backward(); opt.step()\n"
        "    except Exception:\n"
        "        raise SystemExit('swallowed')\n"
    )
    r = one(tmp_path, script)
    steady(r)


def test_a_script_that_never_trains_is_no_entry(tmp_path):
    script = tmp_path / "infer.py"
    script.write_text(
        "import torch\nm = torch.nn.Linear(4, 2)\nwith torch.no_grad():\n    print(m(torch.ones(1, 4)))\n"
    )
    results, end = capture(tmp_path, script)
    assert results == [] and end["status"] == "no_entry" and "loss.backward()" in end["watched"]


META_SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("meta")  # stands in for a GPU: a real copy from the host, no compute
model = torch.nn.Sequential(torch.nn.Linear(8, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(640, 8), torch.randn(640, 4)), batch_size=16)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def test_host_to_device_copies_are_counted_per_step(tmp_path):
    """Two copies a step (inputs and targets, 16 x 8 and 16 x 4 float32), from pageable memory;
    the model's own ``.to(device)`` before the loop is not counted."""
    script = tmp_path / "meta_copies.py"
    script.write_text(META_SCRIPT)
    r = one(tmp_path, script, device="gpu")
    steady(r)
    n = len(r["step_s"])
    assert r["h2d"] == {"count": 2 * n, "bytes": n * 16 * (8 + 4) * 4, "pinned": 0}


META_CNN = """
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.backends.cudnn.benchmark = {already_on}
device = torch.device("meta")
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(320, 3, 8, 8), torch.randn(320, 2)), batch_size=16)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
"""


@pytest.mark.parametrize(
    "variant, already_on, why",
    [
        ("cudnn_benchmark", False, None),
        SLOW("cudnn_benchmark", True, "the script already sets torch.backends.cudnn.benchmark = True"),
        SLOW("pin_memory", False, None),
        SLOW("channels_last", False, None),
    ],
)
def test_the_gpu_variants_on_a_device_standing_in_for_a_gpu(tmp_path, variant, already_on, why):
    """On a "gpu" child (meta standing in), the GPU-only fixes apply, or say why not."""
    script = tmp_path / "meta_cnn.py"
    script.write_text(META_CNN.format(already_on=already_on))
    r = one(tmp_path, script, variant, device="gpu")
    assert r["why_not"] == why and r["applied"] == (why is None)
    if why is None:
        steady(r)
        assert r["conv2d"] and r["h2d"]["count"] == 2 * len(r["step_s"])


def test_loader_change_is_pure_and_keeps_the_scripts_settings():
    spec = type("Spec", (), {"variant": "workers:0"})
    user = {"batch_size": 8, "batch_sampler": False, "num_workers": 2, "pin_memory": False, "persistent_workers": True}
    assert capture_hooks.loader_change(spec, user) == {
        "num_workers": 0,
        "persistent_workers": False,
        "prefetch_factor": None,
    }
    spec.variant = "batch:8"
    assert capture_hooks.loader_change(spec, user) == "the script already uses batch_size=8"
    spec.variant = "autocast"
    assert capture_hooks.loader_change(spec, user) is None


@pytest.mark.slow
def test_compile_of_the_trained_module(tmp_path):
    """torch.compile of the module the optimizer trains: its compile lands in the warm-up (one
    warm-up step more than asked: the first step ran eager)."""
    r = one(tmp_path, "torch_manual_update.py", "compile", warmup_steps=1)
    steady(r)
    assert r["applied"] and len(r["warmup_s"]) == 2
    assert r["warmup_s"][1] > max(r["step_s"])  # the compile


@pytest.mark.slow
def test_dataloader_workers_end_with_the_capture(tmp_path):
    """workers:2 on a loader the script built with none; its worker processes (forked: the same
    command line as the child) are gone once the child has exited."""
    r = one(tmp_path, "torch_cnn.py", "workers:2")
    steady(r)
    assert r["applied"] and r["loader"]["num_workers"] == 0 and r["batch_size"] == 32
    job = str(tmp_path / "job.json")
    left = [p for p in psutil.process_iter(["cmdline"]) if job in " ".join(p.info["cmdline"] or [])]
    assert left == []


@pytest.mark.slow
def test_a_keras_fit_on_torch_is_left_to_the_keras_capture(tmp_path):
    """Keras' torch backend calls ``loss.backward()`` inside ``fit``: with both captures installed
    (the pre-flight's way) the step is Keras' fit, and torch's capture stays out."""
    pytest.importorskip("keras")
    results, end = capture(tmp_path, "keras_fit_arrays.py", frameworks=("keras-torch", "torch"))
    assert end["status"] == "ok" and [r["entry"] for r in results] == ["keras.Model.fit"]
