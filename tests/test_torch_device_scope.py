"""A CPU-side guard for device bugs in the torch measuring paths (What to build #2).

On a GPU, whichdevice builds the model inside ``with torch.device('cuda')``
(``frameworks/torch/placement.scope``): whatever is created in that scope without a device lands on
the GPU. A CPU-side object created there breaks: the H200 run's DataLoader cases all failed with
"Expected a 'cuda' device type for generator but found 'cpu'" (``RandomSampler``'s ``randperm``
with a CPU generator on a CUDA default device; tests/data/h200/diag_cnn.json), and the synthetic
TensorDataset and the user's own data function would have built their tensors on the GPU, where a
user's script never puts its data.

This machine has no GPU, so ``meta`` stands in for it: ``placement.torch_device`` returns
``torch.device('meta')`` for every device, and the cases of ``train --framework torch`` run here, in this process,
through the measuring children's own entry points (``workloads/train.run_case``, ``prepare`` and
``time_group``). The model is built on meta, so every step computes on meta; the data must come
from where a user's data comes from, the CPU, and be copied to the device in the step.

What meta cannot do is left out, and only that: ``.item()`` of a meta loss (the loss read back
returns NaN for a meta tensor, here only) and autocast (torch has no meta autocast: the autocast
pair is not run); torch.compile's pair is left out for its compile time (tens of seconds here).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from whichdevice import frameworks, workloads  # noqa: E402
from whichdevice.core.records import CaseSpec  # noqa: E402
from whichdevice.core.timing import TimingPolicy  # noqa: E402
from whichdevice.frameworks.torch import placement, training  # noqa: E402
from whichdevice.workloads import train as train_workload  # noqa: E402

POLICY = TimingPolicy(min_time_s=1e-3, warmup_calls=1, min_samples=2, max_samples=3, telemetry_period_s=None)
# pin_memory=True without an accelerator: torch warns and does not pin (the case still runs its path)
pytestmark = pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true:UserWarning")


class Spy:
    """What the train step was given: the devices of the tensor batches it copied (steady steps
    get theirs on the device already), and the devices it copied to."""

    def __init__(self) -> None:
        self.sources: set[str] = set()
        self.targets: set[str] = set()


@pytest.fixture
def meta_gpu(monkeypatch):
    """The device scope of every device is ``torch.device('meta')``; the step's copies spied on."""
    spy = Spy()
    real_tensor, real_read = training._tensor, training.read_back

    def tensor(a, device):
        if isinstance(a, torch.Tensor) and a.device != torch.device(device):  # a batch copied in the step
            spy.sources.add(a.device.type)
        spy.targets.add(torch.device(device).type)
        return real_tensor(a, device)

    monkeypatch.setattr(placement, "torch_device", lambda device: torch.device("meta"))
    monkeypatch.setattr(training, "_tensor", tensor)
    monkeypatch.setattr(training, "read_back", lambda loss: math.nan if loss.is_meta else real_read(loss))
    yield spy
    assert torch.get_default_device().type == "cpu"  # no scope left behind


def _run(cases) -> dict[str, str]:
    """Each case measured as the measuring child does (groups interleaved): key -> "ok" or the error."""
    fw = frameworks.load("torch")
    by_key = {c.key: c for c in cases}
    out: dict[str, str] = {}
    for keys in workloads.interleave_groups(cases):
        group = [by_key[k] for k in keys]
        try:
            if len(group) == 1:
                train_workload.run_case(group[0], fw, POLICY, 0.0)
                got: list = [None]
            else:
                prepared = [train_workload.prepare(s, fw, POLICY, 0.0) for s in group]
                got = train_workload.time_group(prepared, fw, POLICY, 0.0)
        except Exception as e:  # noqa: BLE001 - the guard reports every failing case
            got = [e] * len(group)
        for spec, g in zip(group, got):
            out[_label(spec)] = "ok" if not isinstance(g, BaseException) else f"{type(g).__name__}: {g}"
    return out


def _label(spec) -> str:
    """A case in a few words (its key is hundreds of characters): its kind and what sets it apart."""
    p = spec.params
    keys = ["kind", "op", "model", "data", "num_workers", "pin_memory", "batch", "sync", "fix", str(p.get("fix"))]
    return " ".join(f"{k}={p[k]}" for k in keys if k in p)


@pytest.mark.frameworks
def test_train_framework_torch_builds_its_steps_in_the_scope(meta_gpu):
    """``train --framework torch``'s cases (the seeds' models: creation, their loops over numpy
    batches, the steady steps in both sync modes) with the same non-CPU default device."""
    cases = train_workload.build_cases(
        "torch", "GPU:0", quick=True, batches=(8, 32), parts=("create", "loop", "sweep", "sync")
    )
    cases = [c if c.params.get("kind") != "loop" else _fewer_samples(c) for c in cases]
    got = _run(cases)
    assert {k: v for k, v in got.items() if v != "ok"} == {}
    assert meta_gpu.targets == {"meta"}


def _fewer_samples(spec):
    return CaseSpec(
        workload=spec.workload,
        framework=spec.framework,
        device=spec.device,
        params={**spec.params, "samples": 4 * int(spec.params["batch"]), "epochs": 1},
    )
