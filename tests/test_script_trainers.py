"""A script whose step runs inside a trainer's loop: PyTorch Lightning's ``Trainer.fit`` and the
Hugging Face ``Trainer`` (frameworks/torch/trainers.py). The capture records which trainer ran the
step, the fixes apply underneath it (the DataLoader variants at the loader it is given or builds,
autocast and torch.compile at the model's call), and each fix's line is the setting that trainer's
users write: ``TrainingArguments(dataloader_num_workers=2)``, not ``DataLoader(num_workers=2)``.

Fast: the wording and the plan from recorded facts, and Accelerate's re-wrapped DataLoader on
plain torch. Real trainers: skipped where lightning / transformers are not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from whichdevice.analysis.fixes import Fix
from whichdevice.analysis.significance import Claim
from whichdevice.frameworks.contracts import CaptureSpec
from whichdevice.frameworks.torch import trainers
from whichdevice.present import fixes as fixwords
from whichdevice.workloads import script, scriptplan

CORPUS = Path(__file__).parent / "script_corpus"
_CLAIM = Claim(ratio=1.5, lo=1.3, hi=1.7, n=10, unit="samples", threshold=0.05, status="significant")


def _fix(kind, baseline, variant, trainer=None):
    where = {"kind": "steady", "batch": 16, "entry": "torch.optim.Optimizer.step"}
    if trainer:
        where["trainer"] = trainer
    return Fix(kind, "CPU:0", "torch", baseline, variant, _CLAIM, where)


@pytest.mark.parametrize(
    "kind, baseline, variant, hf, lightning",
    [
        ("batch", 16, 64, "TrainingArguments(..., per_device_train_batch_size=64)", "batch_size=64"),
        ("autocast", "off", "bfloat16", "TrainingArguments(..., bf16=True)", 'L.Trainer(precision="bf16-mixed")'),
        ("num_workers", 0, 2, "TrainingArguments(..., dataloader_num_workers=2", "num_workers=2, persistent_workers"),
        (
            "torch_compile",
            False,
            True,
            "TrainingArguments(..., torch_compile=True)",
            "trainer.fit(torch.compile(model)",
        ),
    ],
)
def test_each_fix_is_worded_in_the_trainers_own_settings(kind, baseline, variant, hf, lightning):
    plain = fixwords.change_code(_fix(kind, baseline, variant))
    assert hf in fixwords.change_code(_fix(kind, baseline, variant, trainers.HF))
    assert lightning in fixwords.change_code(_fix(kind, baseline, variant, trainers.LIGHTNING))
    assert "TrainingArguments" not in plain and "L.Trainer" not in plain and "LightningDataModule" not in plain
    if kind == "num_workers":  # where the DataLoader is: the datamodule's train_dataloader()
        assert "LightningDataModule's train_dataloader()" in fixwords.change_code(_fix(kind, 0, 2, trainers.LIGHTNING))


def test_a_fix_the_trainer_has_no_setting_for_keeps_the_torch_line():
    f = _fix("channels_last", False, True, trainers.HF)
    assert fixwords.change_code(f) == fixwords.change_code(_fix("channels_last", False, True))


FACTS = {
    "framework": "torch",
    "entry": "torch.optim.Optimizer.step",
    "batch": 16,
    "step_s": 0.08,
    "first_step_s": 0.3,
    "setup_s": 9.0,
    "data_s": 2.0,
    "model": "BertForSequenceClassification",
    "data_source": "DataLoader",
    "samples": 1024,
    "loader": {"batch_size": 16, "batch_sampler": False, "num_workers": 0, "pin_memory": True},
    "trainer": "hf",
}


def test_the_plan_carries_the_trainer_to_every_case_and_names_it():
    from whichdevice.cli.scriptcmd import found_line

    user = scriptplan.user_params({"script": "train.py"}, FACTS)
    sizing = scriptplan.size(FACTS, 300.0)
    cases = scriptplan.cases("torch", "CPU:0", user, sizing)
    assert {c.params.get("trainer") for c in cases} == {"hf"}
    planned = {c.variant.fix for c in cases if c.variant is not None}
    assert {"autocast", "num_workers", "torch_compile"} <= planned
    assert {script.variant_of(c) for c in cases} >= {"baseline", "autocast", "workers:2", "compile"}
    assert "inside Hugging Face Trainer (Trainer.train)" in found_line({**FACTS})
    assert scriptplan.options(user, sizing)["trainer"] == "hf"
    assert "inside Hugging Face Trainer" in scriptplan.notes(user, sizing)[0]
    own = scriptplan.user_params({"script": "train.py"}, {**FACTS, "trainer": None})
    assert "trainer" not in own and "inside" not in found_line({**FACTS, "trainer": None})


def test_the_trainer_is_read_from_the_stack():
    """A frame of transformers/trainer.py (or lightning/pytorch/) between the step and the script."""
    ns: dict = {}
    exec(compile("def train(f): return f()", "/site-packages/transformers/trainer.py", "exec"), ns)  # noqa: S102
    assert ns["train"](lambda: trainers.on_stack()) == trainers.HF
    exec(compile("def fit(f): return f()", "/x/lightning/pytorch/trainer/trainer.py", "exec"), ns)  # noqa: S102
    assert ns["fit"](lambda: trainers.on_stack()) == trainers.LIGHTNING
    assert trainers.on_stack() is None


_REWRAP = """
import torch
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(512, 8), torch.randn(512, 1))
first = DataLoader(data, batch_size=16, shuffle=True)
# as Accelerate's prepare_data_loader: a second loader over the first's batch sampler and settings
loader = DataLoader(data, batch_sampler=first.batch_sampler, num_workers=first.num_workers)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(3):
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
"""


def test_a_loader_copied_over_anothers_batch_sampler_keeps_the_first_loaders_settings():
    """The rule alone (no torch): a loader built over a batch sampler (or, as Accelerate passes it
    for a batch sampler that is a sampler, ``sampler``) of a loader seen before is a copy."""
    from whichdevice.frameworks.torch import capture_hooks as hooks

    class Sampler:
        batch_size = 16

    class Loader:
        def __init__(self, user):
            self.batch_sampler, self._whichdevice_user = Sampler(), user

    first = Loader({"batch_size": 16, "num_workers": 0})
    hooks._remember(first)
    assert hooks._rewrapped({"batch_sampler": first.batch_sampler}) == {"batch_size": 16, "num_workers": 0}
    assert hooks._rewrapped({"batch_sampler": None, "sampler": first.batch_sampler})["batch_size"] == 16
    assert hooks._rewrapped({"batch_sampler": Sampler(), "sampler": None}) is None
    assert hooks._rewrapped({"batch_sampler": None, "sampler": [1, 2]}) is None  # an unhashable sampler
    assert hooks.loader_batch(type("Copy", (), {"batch_size": None, "batch_sampler": Sampler()})()) == 16


@pytest.mark.slow
@pytest.mark.frameworks
def test_a_loader_rebuilt_from_anothers_batch_sampler_keeps_the_variant_and_the_scripts_settings(tmp_path):
    """The HF Trainer's DataLoader is re-wrapped by Accelerate (its batch sampler and worker count
    passed on): the batch and workers variants read "the DataLoader batches with its own
    batch_sampler" and "the script already uses num_workers=2" there, and were not measured."""
    pytest.importorskip("torch")
    path = tmp_path / "rewrap.py"
    path.write_text(_REWRAP)
    spec = CaptureSpec("batch:64", 1, 3, "cpu", 60.0)
    (r,) = script.run_child({"script": str(path), "args": []}, spec, ["torch"], timeout_s=120).results
    assert r["status"] == "ok" and r["samples_per_step"] == 64 and r["batch_size"] == 64, r
    assert r["loader"]["batch_size"] == 16 and r["trainer"] is None  # the script's own settings, its own loop


# ------------------------------------------------------------------ real trainers


def _captured(name, variant):
    """One capture of a corpus script, in the current folder (the test's own: the HF script writes its
    output_dir there, and a capture alone does not put the folder back as diagnose does)."""
    run = script.run_child(
        {"script": str(CORPUS / name), "args": []}, CaptureSpec(variant, 1, 3, "cpu", 120.0), ["torch"], timeout_s=240
    )
    assert run.results, run.stderr_tail[-1500:]
    return run.results[0]


@pytest.mark.slow
@pytest.mark.frameworks
@pytest.mark.parametrize("variant", ["baseline", "batch:64", "workers:2", "autocast"])
def test_hf_trainer_captured_with_each_fix_applied(variant, tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    monkeypatch.chdir(tmp_path)
    r = _captured("hf_trainer_tiny.py", variant)
    assert r["status"] == "ok" and r["trainer"] == trainers.HF and len(r["step_s"]) == 3, r
    assert r["model"] == "BertForSequenceClassification" and r["loader"]["batch_size"] == 16
    assert r["samples_per_step"] == (64 if variant == "batch:64" else 16)


@pytest.mark.slow
@pytest.mark.frameworks
@pytest.mark.parametrize("variant", ["baseline", "batch:64", "workers:2", "autocast"])
def test_lightning_trainer_captured_with_each_fix_applied(variant, tmp_path, monkeypatch):
    pytest.importorskip("lightning")
    monkeypatch.chdir(tmp_path)
    r = _captured("lightning_trainer_fit.py", variant)
    assert r["status"] == "ok" and r["trainer"] == trainers.LIGHTNING and len(r["step_s"]) == 3, r
    assert r["model"] == "Classifier" and r["loader"]["batch_size"] == 32
    assert r["samples_per_step"] == (64 if variant == "batch:64" else 32)


def test_corpus_trainers_are_in_the_corpus_table():
    from tests.test_script_diagnose import TRAINS

    assert TRAINS["lightning_trainer_fit.py"][0] == TRAINS["hf_trainer_tiny.py"][0] == "torch.optim.Optimizer.step"
    assert sys.modules["whichdevice.frameworks.torch.trainers"] is trainers
