"""A torch loop that makes its own batches, re-batched at its step (the ``batch:K`` variant).

A DataLoader's batch is changed where the script builds it (``capture_hooks.loader_change``). A
loop that slices its own tensors (``xb = X[i : i + 8]``, no DataLoader) has nothing to rebuild,
so, as the JAX capture tiles a jitted step's data arguments (``frameworks/jax/capture.py``), the
step itself is re-batched: in a ``batch:K`` member's steps each batch the script slices along
its first dimension is tiled (its rows repeated, then cut) to K rows before the script uses it,
inputs and targets alike, so the whole step (forward, loss, backward, the update) runs at K rows
on the script's own data. The member's turns take no run of their own: it shares the baseline's
process (``capture_hooks.SWITCHED`` and this module's ``TAKES_TURNS``).

The batch is read at the first step, which runs as the script wrote it (how the step is found):
every tensor the step feeds its model (the top-level calls of modules with parameters) has the
same first dimension, and the script sliced a tensor to that many rows. Where either fails the
batch member is not measured, with the reason (:func:`why_not`), before any tiled step runs.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

from dataclasses import dataclass, field
from typing import Any

# The variant the turns may hold beside the switched ones: its steps differ only in the rows the
# hooks hand the script, nothing the script built is rebuilt (where no DataLoader feeds it).
TAKES_TURNS = fixkeys.BATCH
MAX_LEAVES = 16  # tensors looked at in one model call (a call with more is read as no batch)


@dataclass
class Tiles:
    """What the first step showed of the script's batches, and the tiling of the members' steps."""

    fed: set[int] = field(default_factory=set)  # first dimensions of the tensors fed to the model in the first step
    sliced: set[int] = field(default_factory=set)  # rows of the script's own first-dimension slices before it ended
    calls: int = 0  # top-level model calls seen in the first step
    ragged: bool = False  # a model call whose tensors differ in their first dimension
    # the memory of the tensors the script sliced its batches from (and of their copies to the
    # device), kept alive while the first step is read: a tensor fed to the model in another memory
    # was made some other way (noise drawn in the step) and would stay at the script's batch
    bases: set[int] = field(default_factory=set)
    keep: list[Any] = field(default_factory=list)
    unsliced: bool = False  # the first step fed its model a tensor of the batch's rows from no slice

    def rows(self) -> int | None:
        """The script's batch: the one first dimension its model was fed, or None."""
        return next(iter(self.fed)) if len(self.fed) == 1 and not self.ragged else None


def tiles(cap: Any) -> Tiles:
    if cap.tiles is None:
        cap.tiles = Tiles()
    return cap.tiles


def wanted(spec: Any) -> bool:
    """Whether the run has a batch member (the slicing hook is installed only then)."""
    return any(str(v).partition(":")[0] == TAKES_TURNS for v in (spec.variant, *spec.also))


def member_batch(cap: Any) -> int | None:
    """K where the step under way is a ``batch:K`` member's tiled step, else None: the script has
    no DataLoader, its first step has ended and showed a batch the tiling fits."""
    name, _, value = str(cap.variant).partition(":")
    if name != TAKES_TURNS or cap.loader is not None or cap.last is None or cap.done or not value:
        return None
    return int(value) if why_not(cap) is None else None


def _tensors(torch: Any, x: Any) -> list[Any]:
    """The tensors of at least one dimension in ``x`` (a tensor, or one level of list, tuple, dict)."""
    if isinstance(x, torch.Tensor):
        items = [x]
    elif isinstance(x, dict):
        items = list(x.values())
    elif isinstance(x, (list, tuple)):
        items = list(x)
    else:
        return []
    return [v for v in items if isinstance(v, torch.Tensor) and v.dim() >= 1]


def _base(t: Any) -> int | None:
    """Where a tensor's memory starts (views, reshapes and slices of one tensor share it)."""
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # a tensor without memory of its own (meta)
        return None


def copied(cap: Any, src: Any, out: Any) -> None:
    """A copy to the device in the first step: a copy of a sliced batch counts as sliced."""
    t = cap.tiles
    if t is not None and cap.last is None and _base(src) in t.bases:
        t.bases.add(_base(out) or 0)
        t.keep.append(out)


def fed(cap: Any, args: tuple, kwargs: dict) -> None:
    """A top-level call of a module with parameters: in the first step its tensors' first
    dimensions are kept (the batch), and whether each came from a slice of the script's; in a
    tiled step they are checked against the tiled rows."""
    torch = cap.torch
    tensors = [x for a in (*args, *kwargs.values()) for x in _tensors(torch, a)]
    dims = [int(x.shape[0]) for x in tensors]
    if not dims or len(dims) > MAX_LEAVES:
        return
    t = tiles(cap)
    if cap.last is None:  # the first step
        t.calls += 1
        t.ragged |= len(set(dims)) > 1
        t.fed |= set(dims)
        t.unsliced |= any(_base(x) not in t.bases for x in tensors)
        return
    k = member_batch(cap)
    if k is not None and set(dims) != {k} and not cap.why_not:  # said at the step's end: the member is dropped
        cap.why_not = (
            f"its model was fed {', '.join(str(d) for d in sorted(set(dims)))} rows in a step re-batched to {k}: "
            "part of its batch does not come from the tensors the script slices"
        )


def why_not(cap: Any) -> str | None:
    """Why the step cannot be re-batched by tiling (None: it can), read from its first step."""
    if cap.loader is not None:
        return "the DataLoader's batch size changes what the script builds: a run of the script of its own"
    t = tiles(cap)
    if not t.calls:
        return "the step calls no torch.nn.Module with parameters, so its batch could not be found"
    n = t.rows()
    if n is None:
        dims = ", ".join(str(d) for d in sorted(t.fed))
        return (
            f"the tensors fed to the model differ in their first dimension ({dims}): which one is the batch "
            "is not known"
        )
    if n not in t.sliced:
        return (
            f"the script does not slice its batch of {n} rows from a tensor (as X[i : i + {n}]): there is no "
            "batch the capture could tile"
        )
    if t.unsliced:
        return (
            f"its model is fed a tensor of {n} rows that is no slice of the script's data (made in the step, as "
            "noise drawn there): tiling the slices would leave it at the script's batch"
        )
    return None


def tile(torch: Any, x: Any, k: int) -> Any:
    """``x`` with ``k`` rows along its first dimension: its rows repeated, then cut."""
    n = int(x.shape[0])
    reps = -(-k // n)
    return torch.cat([x] * reps)[:k] if reps > 1 else x[:k]


def _rows_cut(key: Any, n: int) -> bool:
    """Whether indexing with ``key`` cuts the first dimension with a slice (``X[i : i + 8]``,
    ``X[i : i + 8, :]``), the way a loop takes its batches."""
    first = key[0] if isinstance(key, tuple) and key else key
    return isinstance(first, slice) and (first.step in (None, 1)) and n > 0


def samples(cap: Any, variant: str) -> int | None:
    """Rows a step of ``variant`` runs at where no DataLoader feeds the loop: a tiled member's K,
    else the batch the first step showed (None: a DataLoader's loop, or no batch found)."""
    if cap.loader is not None:
        return None
    name, _, value = variant.partition(":")
    if name == TAKES_TURNS and value and why_not(cap) is None:
        return int(value)
    return tiles(cap).rows()


def tileable(cap: Any) -> bool:
    """Whether a batch variant would re-batch this loop's step by tiling (the pre-flight tells the
    plan so: its batch sweep then takes turns in one process)."""
    return cap.loader is None and why_not(cap) is None


_GETITEM: list[Any] = []  # Tensor.__getitem__ as torch had it


def unhook_slicing(cap: Any) -> None:
    """After the first step: the slicing hook removed where no member of the run is re-batched."""
    if cap.tiles is not None:
        cap.tiles.keep.clear()
    if _GETITEM and not (wanted(cap.spec) and cap.loader is None):
        cap.torch.Tensor.__getitem__ = _GETITEM[0]


def hook_slicing(torch: Any, cap: Any, from_script: Any) -> None:
    """``Tensor.__getitem__`` from the script's code: the rows of its first-dimension slices kept
    until the first step ends, and in a tiled member's step a slice of the batch's rows tiled."""
    tensor = torch.Tensor
    orig = tensor.__getitem__
    _GETITEM[:] = [orig]

    def getitem(self, key):  # type: ignore[no-untyped-def]
        out = orig(self, key)
        if cap.done or cap.torch is None or not isinstance(out, tensor) or not out.dim() or not self.dim():
            return out
        n = int(out.shape[0])
        if n >= int(self.shape[0]) or not _rows_cut(key, n) or not from_script():
            return out
        t = tiles(cap)
        if cap.last is None:
            t.sliced.add(n)
            t.bases.add(_base(out) or 0)
            t.keep.append(out)
            return out
        k = member_batch(cap)
        rows = t.rows()
        if k is None or rows is None or n > rows:  # a batch's rows, or fewer (an epoch's last batch)
            return out
        return tile(torch, out, k)

    tensor.__getitem__ = getitem
