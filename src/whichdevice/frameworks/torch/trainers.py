"""The training loops PyTorch users train through without writing one: PyTorch Lightning's
``Trainer.fit`` and Hugging Face's ``Trainer.train``.

Their steps are torch's own (the capture's ``optimizer.step`` fires inside them), and the fixes
the capture applies reach them: the DataLoader variants at the DataLoader the trainer is given
(Lightning: the datamodule's) or builds (the HF Trainer: from ``TrainingArguments``, re-wrapped by
Accelerate, whose copy keeps the settings of the loader it wraps: ``capture_hooks.hook_loader``),
autocast and ``torch.compile`` at the model's call. What differs is the line the user writes:
a Lightning user sets ``Trainer(precision="bf16-mixed")``, not ``torch.autocast``; an HF user
``TrainingArguments(dataloader_num_workers=2)``, not ``DataLoader(num_workers=2)``.

:func:`on_stack` (the script's child: which trainer runs the step) and :data:`TRAINERS` (the
parent, through ``env.py``'s declaration: their names and lines) import no framework.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

import os
import sys

LIGHTNING, HF = "lightning", "hf"

# A frame of the trainer's own loop, by the folder (and file) its code is in: a step reached from
# one of these runs under that trainer. Lightning 2 ships as ``lightning.pytorch`` and as the
# older ``pytorch_lightning`` package; the HF Trainer's loop is ``transformers/trainer.py``.
_LOOPS: tuple[tuple[str, str], ...] = (
    (HF, f"{os.sep}transformers{os.sep}trainer.py"),
    (LIGHTNING, f"{os.sep}lightning{os.sep}pytorch{os.sep}"),
    (LIGHTNING, f"{os.sep}pytorch_lightning{os.sep}"),
)


def on_stack(depth: int = 1) -> str | None:
    """The trainer whose loop called this (``LIGHTNING``, ``HF``), or None for a loop the script
    wrote itself; read from the call stack at the first step (the outermost trainer frame wins:
    a Lightning module that calls an HF model is Lightning's loop)."""
    found: str | None = None
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_code.co_filename
        for trainer, part in _LOOPS:
            if part in name:
                found = trainer
                break
        frame = frame.f_back  # type: ignore[assignment]
    return found


# Per trainer: what the screen calls it, and the line its users write for each fix of the
# catalogue (workloads/fixes.py, by key; ``{v}``: the recommended value). A fix without a line
# here keeps the catalogue's torch line (cudnn.benchmark: no TrainingArguments option for it).
TRAINERS: dict[str, dict[str, object]] = {
    LIGHTNING: {
        "name": "PyTorch Lightning (Trainer.fit)",
        "code": {
            fixkeys.BATCH: "DataLoader(dataset, batch_size={v}, shuffle=True)  # in the LightningDataModule's "
            "train_dataloader()",
            fixkeys.AUTOCAST: 'L.Trainer(precision="bf16-mixed")',
            fixkeys.NUM_WORKERS: "DataLoader(dataset, batch_size=b, num_workers={v}, persistent_workers=True)  # in the "
            "LightningDataModule's train_dataloader()",
            fixkeys.PIN_MEMORY: "DataLoader(dataset, batch_size=b, pin_memory=True)  # in train_dataloader(); Lightning "
            "moves the batch to the device itself",
            fixkeys.TORCH_COMPILE: "trainer.fit(torch.compile(model), datamodule=dm)",
            fixkeys.CUDNN_BENCHMARK: "L.Trainer(benchmark=True)",
        },
    },
    HF: {
        "name": "Hugging Face Trainer (Trainer.train)",
        "code": {
            fixkeys.BATCH: "TrainingArguments(..., per_device_train_batch_size={v})",
            fixkeys.AUTOCAST: "TrainingArguments(..., bf16=True)",
            fixkeys.NUM_WORKERS: "TrainingArguments(..., dataloader_num_workers={v}, dataloader_persistent_workers=True)",
            fixkeys.PIN_MEMORY: "TrainingArguments(..., dataloader_pin_memory=True)  # the default",
            fixkeys.TORCH_COMPILE: "TrainingArguments(..., torch_compile=True)",
        },
    },
}
