"""The training step's kernels as PyTorch launches them (eager, op by op), for ``predict``.

``describe_train`` runs one training step under a ``TorchDispatchMode`` that records every
ATen op the step dispatches — forward, autograd's backward, the optimizer — with its
kind, FLOPs and bytes (costmodel.OpCost fields). Eager PyTorch launches one kernel per
ATen op (a ``_foreach_*`` op: one multi-tensor kernel), so the op list is the kernel list.
Traced on the CPU; what would differ on a GPU is handled here:

- ``torch.optim`` optimizers run their ``foreach`` (multi-tensor) path on a GPU by default:
  the step is traced with ``foreach=True``;
- ops whose tensors are all 0-dimensional run on the host when the optimizer keeps its
  step counters on the CPU (``torch.optim`` without ``capturable``): ``scalar_ops_on_host``
  makes them free (their cost is in the measured per-step Python overhead);
- views, metadata and profiler markers launch nothing (``FREE``).

It also holds the ``calibrate`` probes (``contracts.CalibrationProbes``): a 1-element add
queued without a sync (the eager dispatch + launch rate), the same read back with ``.item()``
(the sync), ``a + b`` across sizes, and the host<->device copies (pageable numpy memory, as a
user's batch is). PyTorch runs op by op, so there is no compiled chain to time: ``graph_chain``
is never planned for it (``env.CALIBRATE_SKIPS``) and refuses to run.
"""

from __future__ import annotations

import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from whichdevice.frameworks.torch.placement import torch_device

FREE = frozenset(
    {
        "t",
        "view",
        "_unsafe_view",
        "detach",
        "alias",
        "lift_fresh",
        "expand",
        "reshape",
        "as_strided",
        "transpose",
        "permute",
        "unsqueeze",
        "squeeze",
        "slice",
        "select",
        "split",
        "chunk",
        "unbind",
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "_record_function_enter_new",
        "_record_function_exit",
        "is_same_size",
        "result_type",
        "_local_scalar_dense",
        "_has_compatible_shallow_copy_type",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "set_",
        "_to_copy",
    }
)
MATMUL = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "addmv", "mv", "linear", "_addmm_activation"})
CONV = frozenset({"convolution", "convolution_backward", "_convolution", "cudnn_convolution"})


def _tensors(x) -> list:
    return [t for t in tree_flatten(x)[0] if isinstance(t, torch.Tensor)]


def _nbytes(t) -> float:
    return float(t.numel()) * t.element_size()


def _flops(name: str, args, out) -> float:
    ts = _tensors(args)
    outs = _tensors(out)
    if not outs:
        return 0.0
    if name in MATMUL:
        # lhs [.., m, k] x rhs [.., k, n]: k = the lhs dimension the output does not have.
        mats = [t for t in ts if t.dim() >= 1]
        o = outs[0]
        lhs = mats[-2] if len(mats) >= 2 else mats[0]
        k = lhs.shape[-1] if lhs.dim() >= 1 else 1
        return 2.0 * float(o.numel()) * float(k)
    if name in CONV and len(ts) >= 2:
        w = ts[1]
        per_out = float(math.prod(w.shape[1:])) if w.dim() > 1 else 1.0
        return 2.0 * float(max(o.numel() for o in outs)) * per_out
    return 0.0


class _Recorder(TorchDispatchMode):
    def __init__(self, scalar_ops_on_host: bool) -> None:
        super().__init__()
        self.ops: list[dict] = []
        self.scalar_on_host = scalar_ops_on_host

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = str(func.overloadpacket.__name__)
        ins = _tensors((args, kwargs))
        outs = _tensors(out)
        every = ins + outs
        if name in FREE or not every:
            kind = "free"
        elif self.scalar_on_host and all(t.dim() == 0 for t in every):
            kind = "free"  # host-side scalar (torch.optim's step counters)
        elif name in MATMUL:
            kind = "matmul"
        elif name in CONV:
            kind = "conv"
        else:
            kind = "elementwise"  # pointwise, reductions, copies: memory-bound, costed by bytes
        flops = _flops(name, (args, kwargs), out) if kind in ("matmul", "conv") else 0.0
        nbytes = sum(_nbytes(t) for t in every) if kind != "free" else 0.0
        self.ops.append({"op_type": name, "kind": kind, "flops": flops, "bytes": nbytes})
        return out


def prefer_foreach(optimizer) -> None:
    """Make a ``torch.optim`` optimizer take its multi-tensor path, as it does on a GPU."""
    for group in getattr(optimizer, "param_groups", []):
        if "foreach" in group:
            group["foreach"] = True


def record_step(step, x, y, *, scalar_ops_on_host: bool) -> list[dict]:
    """Run ``step(x, y)`` twice untraced (lazy optimizer state is created), then once under
    the recorder; returns its op list."""
    step(x, y)
    step(x, y)
    rec = _Recorder(scalar_ops_on_host)
    with rec:
        step(x, y)
    return rec.ops


def describe_train(model, optimizer, loss_fn, training, x, y) -> dict:
    """Plain PyTorch: the op list of one ``training.train_step`` (foreach optimizer)."""
    prefer_foreach(optimizer)
    step = training.train_step(model, optimizer, loss_fn)
    return {"ops": record_step(step, x, y, scalar_ops_on_host=True), "launch_mode": "eager", "tf32": tf32_matmul()}


def tf32_matmul() -> bool:
    """PyTorch runs float32 matmuls as TF32 only when asked (off by default since 1.12)."""
    return bool(torch.backends.cuda.matmul.allow_tf32) or torch.get_float32_matmul_precision() != "highest"


# ---------------- the calibrate probes ----------------


def tiny_eager(device: str):
    """One add on a 1-element tensor on ``device``, no sync per call: dispatch + launch rate."""
    a = torch.ones(1, device=torch_device(device))
    return lambda: torch.add(a, a)


def tiny_sync(device: str):
    """The same add, then ``.item()``: one device->host read (a sync on a GPU) per call."""
    a = torch.ones(1, device=torch_device(device))
    return lambda: torch.add(a, a).item()


def graph_chain(device: str, k: int):
    """Not planned for PyTorch (``env.CALIBRATE_SKIPS``): eager PyTorch has no compiled step
    whose per-op cost differs from ``tiny_eager``'s (TorchScript is deprecated, and
    ``torch.compile`` compiles for tens of seconds)."""
    raise NotImplementedError("PyTorch runs op by op: the compiled-chain probe does not apply (env.CALIBRATE_SKIPS)")


def elementwise(device: str, nbytes: int):
    """``a + b`` on float32 tensors on ``device``; ``nbytes`` = bytes moved (two inputs + one output)."""
    n = max(1, int(nbytes) // 12)
    g = torch.Generator().manual_seed(0)
    a = torch.rand(n, generator=g).to(torch_device(device))
    b = torch.rand(n, generator=g).to(torch_device(device))
    return lambda: torch.add(a, b)


def h2d(device: str, nbytes: int):
    """A pageable host (numpy-backed) tensor of ``nbytes`` copied to ``device``."""
    host = torch.ones(max(1, int(nbytes) // 4))
    dev = torch_device(device)
    return lambda: host.to(dev)


def d2h(device: str, nbytes: int):
    """A tensor of ``nbytes`` on ``device`` copied back to the host."""
    t = torch.ones(max(1, int(nbytes) // 4), device=torch_device(device))
    return lambda: t.cpu()
