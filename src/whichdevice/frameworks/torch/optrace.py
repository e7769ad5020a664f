"""Where the ops of a torch training step ran, its host<->device copies and its syncs, for
``whichdevice placement --framework torch`` (imported inside a child: it imports torch).

Two of torch's own tools, each over whole steps after three warm-up steps:

- **One step under a ``TorchDispatchMode``** (``torch.utils._python_dispatch``, the mode
  ``torch.utils.flop_counter`` and FakeTensor are built on): every ATen op the step calls,
  forward and backward, with its tensors. An op ran where its tensors live (torch has no
  placer: an op runs on its inputs' device, a CPU 0-d tensor passed as a scalar aside), so the
  op's device is read from them. A ``_to_copy``/``copy_`` between devices is a copy, with its
  bytes and whether its host side is pinned (``Tensor.is_pinned``); a ``_local_scalar_dense``
  (``.item()``, ``float(t)``) of a GPU tensor is a sync, and so is a blocking copy to the host.
  The mode sees the ops the step calls itself; the ops those ops call inside their kernels it
  does not (the profiler does).
- **``steps`` steps under ``torch.profiler.profile``** (CPU activity, plus CUDA on a GPU):
  ``key_averages()`` gives each op's calls and self time on the host (``self_cpu_time_total``,
  µs), and on a GPU its kernels' time (``self_device_time_total``) and the copy kernels
  ("Memcpy HtoD (Pageable -> Device)": pageable or pinned as the driver saw it).

CPU fallbacks: CUDA has none (an op without a CUDA kernel raises NotImplementedError); Apple's
MPS falls back to the CPU only with ``PYTORCH_ENABLE_MPS_FALLBACK=1``. What a GPU run can still
do on the CPU is an op whose tensors are on the CPU: the step's own (the optimizer's step
counters, data never moved), listed as ops that ran on the CPU in a GPU run.

Metrics (per step unless said): ``op_calls|DEVICE|OP``, ``op_host_us|OP`` and ``op_gpu_us|OP``
(totals over the profiled steps), ``copies|H2D`` / ``copies|D2H`` / ``copies|D2D``,
``copy_bytes|...``, ``copies_pinned``, ``copies_pageable``, ``syncs|item``,
``syncs|copy_to_host``, ``host_reads`` (scalar reads of any tensor), ``memcpy|NAME``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

_COPY_OPS = ("_to_copy", "copy_")
_SYNC_OPS = ("nonzero", "masked_select", "unique", "_unique2", "repeat_interleave")  # sizes read from the GPU


def _place(t: torch.Tensor) -> str:
    return "CPU:0" if t.device.type == "cpu" else f"GPU:{t.device.index or 0}"


class _StepOps(TorchDispatchMode):
    """Every ATen op called while active: its device, copies between devices, syncs."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[tuple[str, str]] = Counter()
        self.copies: Counter[str] = Counter()
        self.copy_bytes: Counter[str] = Counter()
        self.memory: Counter[str] = Counter()  # pinned / pageable host side of H2D and D2H copies
        self.syncs: Counter[str] = Counter()
        self.host_reads = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        ins = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        outs = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
        if name in _COPY_OPS and self._copy(name, ins, outs, kwargs or {}):
            return out
        # An op runs on its tensors' device; a CPU 0-d tensor beside GPU ones is a scalar argument.
        places = {_place(t) for t in ins + outs if not (t.dim() == 0 and t.device.type == "cpu")} or {
            _place(t) for t in ins + outs
        }
        where = ",".join(sorted(places)) or "no tensor"
        self.calls[(where, name)] += 1
        if name == "_local_scalar_dense":
            self.host_reads += 1
            if any(t.device.type != "cpu" for t in ins):
                self.syncs["item"] += 1
        elif name in _SYNC_OPS and any(t.device.type != "cpu" for t in ins):
            self.syncs[name] += 1
        return out

    def _copy(self, name: str, ins: list, outs: list, kwargs: dict) -> bool:
        """Count a copy between devices (``_to_copy``: input -> output; ``copy_``: the second
        argument into the first). False when both ends are on one device (a cast, a clone)."""
        if name == "_to_copy" and ins and outs:
            src, dst = ins[0], outs[0]
        elif name == "copy_" and len(ins) >= 2:
            dst, src = ins[0], ins[1]
        else:
            return False
        if src.device == dst.device:
            return False
        src_host, dst_host = src.device.type == "cpu", dst.device.type == "cpu"
        kind = "H2D" if src_host and not dst_host else "D2H" if dst_host and not src_host else "D2D"
        self.copies[kind] += 1
        self.copy_bytes[kind] += src.numel() * src.element_size()
        host = src if kind == "H2D" else dst if kind == "D2H" else None
        if host is not None:
            self.memory["pinned" if host.is_pinned() else "pageable"] += 1
        if kind == "D2H" and not kwargs.get("non_blocking", False):
            self.syncs["copy_to_host"] += 1
        return True


def _step_ops(call: Callable[[], Any]) -> _StepOps:
    mode = _StepOps()
    with mode:
        call()
    return mode


def _profile(call: Callable[[], Any], steps: int, on_gpu: bool) -> tuple[Any, list[float]]:
    """``steps`` steps under torch.profiler, each timed (the profiler's cost included)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    times: list[float] = []
    with profile(activities=activities) as prof:
        for _ in range(steps):
            t0 = time.perf_counter()
            call()
            if on_gpu:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    return prof.key_averages(), times


def trace_step(call: Callable[[], Any], inputs: tuple, steps: int, device: str) -> tuple[dict[str, float], list[float]]:
    """The placement metrics of ``call`` (one whole step) on ``device`` (module docstring) and
    the profiled steps' times (the profiler's cost in them)."""
    on_gpu = device.startswith("GPU")
    for _ in range(3):  # warm-up: allocator, cuBLAS handles, lazy CUDA init stay out
        call()
    ops = _step_ops(call)
    averages, times = _profile(call, steps, on_gpu)
    m: dict[str, float] = {"profiled_steps": float(steps), "profiler_on": 1.0, "op_stats": 1.0}
    for (where, name), n in ops.calls.items():
        m[f"op_calls|{where}|{name}"] = float(n)
    for kind, n in ops.copies.items():
        m[f"copies|{kind}"] = float(n)
        m[f"copy_bytes|{kind}"] = float(ops.copy_bytes[kind])
    m["copies_pinned"] = float(ops.memory["pinned"])
    m["copies_pageable"] = float(ops.memory["pageable"])
    for reason, n in ops.syncs.items():
        m[f"syncs|{reason}"] = float(n)
    m["host_reads"] = float(ops.host_reads)
    _profiler_metrics(m, averages)
    return m, times


def _profiler_metrics(m: dict[str, float], averages: Any) -> None:
    """Per op: host self time and GPU kernel time (totals over the profiled steps); the copy
    kernels' counts by name."""
    for e in averages:
        key = str(e.key)
        if key.startswith("Memcpy"):
            m[f"memcpy|{key}"] = m.get(f"memcpy|{key}", 0.0) + float(e.count)
            continue
        if not key.startswith("aten::"):
            continue  # record_function labels (Optimizer.step#Adam.step) and kernels: in their ops
        name = key.removeprefix("aten::")
        m[f"op_host_us|{name}"] = m.get(f"op_host_us|{name}", 0.0) + float(e.self_cpu_time_total)
        m[f"op_occ|{name}"] = m.get(f"op_occ|{name}", 0.0) + float(e.count)
        gpu_us = float(getattr(e, "self_device_time_total", 0.0) or 0.0)
        if gpu_us:
            m[f"op_gpu_us|{name}"] = m.get(f"op_gpu_us|{name}", 0.0) + gpu_us
