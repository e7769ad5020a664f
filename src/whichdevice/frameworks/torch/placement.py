"""Put torch work on one device: threads after import, ``torch.device`` as default device."""

from __future__ import annotations

import torch

from whichdevice.core.machine import usable_cores


def torch_device(device: str) -> torch.device:
    """``CPU:0`` -> ``cpu``, ``GPU:1`` -> ``cuda:1``."""
    kind, _, idx = device.partition(":")
    return torch.device("cpu") if kind == "CPU" else torch.device(f"cuda:{int(idx or 0)}")


def configure(device: str, cpu_threads: int | None) -> dict[str, object]:
    """Threads (``torch.set_num_threads`` when asked; otherwise torch's default, one per
    physical core: recorded as it is, since torch.utils.benchmark's default of *one* thread
    is the classic unfair CPU baseline, pytorch/pytorch #58585) and the current GPU."""
    if cpu_threads is not None:
        torch.set_num_threads(cpu_threads)
        try:
            torch.set_num_interop_threads(cpu_threads)
        except RuntimeError:  # only possible before any inter-op work has started
            pass
    if device.startswith("GPU"):
        torch.cuda.set_device(torch_device(device))
    intra, inter = torch.get_num_threads(), torch.get_num_interop_threads()
    return {
        "cpu_threads_intra": intra,
        "cpu_threads_inter": inter,
        "cpu_threads_source": "--cpu-threads"
        if cpu_threads
        else f"default: torch's {intra} threads on {usable_cores()} usable cores",
        "onednn": bool(torch.backends.mkldnn.is_available()),
    }


def scope(device: str):
    """``with torch.device(...)``: tensors and modules created inside go to ``device``."""
    return torch_device(device)


def host():
    """``with torch.device('cpu')``: the data side as a user's script runs it, on the CPU, even
    inside a GPU's :func:`scope` — datasets and their tensors, the user's data function, a
    DataLoader read batch by batch (its sampler, workers, pinning); the step then copies each
    batch to the model's device. Read inside the GPU's scope, a shuffling DataLoader drew its
    permutation on the GPU with its CPU generator and failed ("Expected a 'cuda' device type for
    generator but found 'cpu'", every loader case of the first H200 run)."""
    return torch.device("cpu")


def ran_on(tensor) -> str:
    return "GPU" if tensor.device.type == "cuda" else tensor.device.type.upper()
