"""The replay of a plain-tensor PyTorch timed block (issue #39, What to build #3).

The most common GPU timing script people post times tensor ops, not a model: ``c = a @ b`` on the CPU,
then on the GPU, with no ``torch.cuda.synchronize()`` and the first call inside the clock. The module
re-run (``child._TorchPairs``) has no forward pass to call there, so such a block is replayed instead:
the torch ops the script ran inside the interval, from its own code (``torch_hooks._log_op``: each op
with the shape, dtype and device of its tensor arguments, not the tensors), run again in order on
fresh tensors of the same shapes, dtypes and devices — random values for floating point, zeros for
integers and booleans (a valid index). The child times it like a module call: warmed up, device
synchronized before and after, interleaved with the other side.

Fresh tensors mean the replay touches nothing of the script's. Python work between the ops (NumPy,
lists, prints) is not replayed: the corrected ratio is the ratio of the block's torch ops. A block is
not replayed, with the reason kept in one line, when it runs autograd or an op with an effect outside
torch (``_NOT_REPLAYED``), when it ran more ops than the log keeps between two clock reads
(``torch_hooks.MAX_SPAN_OPS``) or the log was full before it ended, or when its fresh tensors would
need more than ``MAX_BYTES``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

# Fresh tensors of one block: at most this many bytes (the device must hold them beside the script's).
MAX_BYTES = 2 * 2**30
# Ops not replayed: autograd (its graph is not rebuilt from single ops), files, the RNG's seed, storage
# sharing and stream bookkeeping.
_NOT_REPLAYED = re.compile(r"backward|autograd|grad$|save|load|seed|share_memory|record_stream|set_", re.I)


@dataclass
class Replay:
    """One block's ops with fresh arguments; calling it runs them once, in order."""

    ops: list[tuple[Any, tuple, dict]]
    label: str

    def __call__(self) -> None:
        for func, args, kwargs in self.ops:
            func(*args, **kwargs)


def _fresh(spec: Any, torch, made: dict, size: list[int]) -> Any:
    """The fresh tensor for one spec (the same spec twice: the same tensor), or the value itself."""
    from whichdevice.audit.torch_hooks import KINDS, is_spec

    if is_spec(spec):
        if spec not in made:
            _, _, shape, kind = spec
            dtype, device = KINDS[kind]
            floating = dtype.is_floating_point or dtype.is_complex
            t = (torch.randn if floating else torch.zeros)(shape, dtype=dtype, device=device)
            size[0] += t.numel() * t.element_size()
            if size[0] > MAX_BYTES:
                raise MemoryError(f"its fresh tensors would need more than {MAX_BYTES / 2**30:.0f} GiB")
            made[spec] = t
        return made[spec]
    if isinstance(spec, list):
        return [_fresh(x, torch, made, size) for x in spec]
    if isinstance(spec, tuple):
        return tuple(_fresh(x, torch, made, size) for x in spec)
    return spec


def _label(names: list[str]) -> str:
    counts = Counter(names).most_common()
    top = ", ".join(f"{n} ×{c}" for n, c in counts[:3]) + (", …" if len(counts) > 3 else "")
    return f"{len(names)} torch op{'s' if len(names) != 1 else ''} replayed ({top})"


def side(st: Any, m: Any) -> tuple[list[tuple], str | None]:
    """(key, replay, (), grad mode, calls) for measurement ``m``'s block, or the one-line reason it is not
    replayed; the key names the block and the device its work ran on."""
    import torch

    from whichdevice.audit.torch_hooks import MAX_SPAN_OPS

    funcs = {i: f for f, i in st.torch_op_index.items()}
    logged = [(funcs[i], a, k or {}) for seq, i, a, k in st.torch_ops if m.start_seq < seq < m.end_seq]
    if st.torch_ops_full_at is not None and st.torch_ops_full_at < m.end_seq:
        return [], "the timed work ran after the audit's op log was full (200,000 ops): its ops are not all known"
    if any(m.start_seq < seq < m.end_seq for seq in st.torch_ops_dropped):
        return [], (
            f"the timed work ran more than {MAX_SPAN_OPS:,} torch ops between two clock reads: only blocks up to "
            "that many are replayed"
        )
    if not logged:
        return [], "the timed work calls no nn.Module and runs no torch op from the script: nothing to re-run"
    names = [getattr(f, "__name__", "") or type(f).__name__ for f, _, _ in logged]
    bad = sorted({n for n in names if _NOT_REPLAYED.search(n)})
    if bad:
        return [], (
            f"the timed work runs {', '.join(bad[:3])} (autograd, or an effect outside torch): its ops are not "
            "replayed on fresh tensors"
        )
    made: dict = {}
    size = [0]
    try:
        ops = [(f, _fresh(a, torch, made, size), _fresh(k, torch, made, size)) for f, a, k in logged]
    except Exception as e:  # a dtype randn cannot make, a device gone, too much memory
        return [], f"its ops' arguments could not be made afresh ({type(e).__name__}: {str(e).strip()[:160]})"
    gpu = sorted(d for d in m.ran_on if d.startswith("GPU"))
    dev = gpu[0] if gpu else (sorted(m.ran_on)[0] if m.ran_on else "CPU:0")
    return [(f"replay:{m.id}@{dev}", Replay(ops, _label(names)), (), False, 1)], None
