"""The patches of ``capture.py``, installed right after the script's ``import torch``.

Each ``hook_*`` patches one family of entry points and keeps what it sees in the ``Capture``:

- :func:`hook_steps`: torch's global optimizer step hooks (``register_optimizer_step_pre_hook`` /
  ``..._post_hook``, every optimizer, custom ones included) and ``Optimizer.__init__`` (which
  optimizers the script made);
- :func:`hook_backward`: ``Tensor.backward``, the entry where no optimizer exists;
- :func:`hook_modules`: ``nn.Module.__call__`` of the top-level modules with parameters (the first
  step starts at the first; autocast and channels_last are applied there); removed after the
  first step unless a variant needs it;
- :func:`hook_loader`: ``DataLoader.__init__`` (the script's settings, the loader variants),
  ``__iter__`` (which loader feeds the loop) and the iterator's ``__next__`` (the wait for data);
- :func:`hook_tensors`: ``Tensor.to``/``.cuda`` (host-to-device copies) and the host reads;
- :func:`hook_zero_grad`: ``zero_grad`` of the optimizers and modules (whether the script zeroes its
  gradients in place; a ``set_to_none`` member's steps free them instead);
- :func:`enter` / :func:`leave`: a member's turn in a run that times several variants in turns
  (``capture.py``'s members): its DataLoader (:class:`Feed`), memory format or compiled module
  switched in for its steps and back out after them.

Copies and reads are counted only from the script's code (not torch's own: Adam reads its step
count with ``.item()``), and only during the timed steps.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from whichdevice.frameworks.common import capturekit
from whichdevice.frameworks.torch import loops, rebatch

ENTRY_STEP = "torch.optim.Optimizer.step"
ENTRY_BACKWARD = "torch.Tensor.backward"
_perf = time.perf_counter
_TORCH_DIR = ["//no torch yet//"]  # torch's own folder: calls from there are not the script's
_OPTIMIZERS: weakref.WeakSet[Any] = weakref.WeakSet()
_DEPTH = [0]  # nested module calls (the top-level one is the model)
_MODULE_CALL: list[Any] = []  # nn.Module.__call__ as torch had it
_IS_COMPILING: list[Callable[[], bool]] = [lambda: False]  # torch.compiler.is_compiling, once imported
_KEEPS_GRADS = [False]  # the script zeroed its gradients in place: zero_grad(set_to_none=False)


@dataclass(frozen=True)
class Handlers:
    """``capture.py``'s step functions (passed in: this module does not import it)."""

    first_step: Callable[[Any, str, Any], None]
    boundary: Callable[[Any], None]
    not_applicable: Callable[[Any, str], None]


def _scriptfixes() -> Any:
    """torch's fix adapters (``scriptfixes.py``, which imports this module): each member's applier."""
    return importlib.import_module("whichdevice.frameworks.torch.scriptfixes")


def fix_of(v: str, typed: dict | None = None) -> tuple[Any, str]:
    """A member's applier (``scriptfixes.Apply``; None: the script as it runs) and its value part,
    by its typed variant's catalogue key where given, else by the member's name."""
    return _scriptfixes().applied(v, typed)


def member_fix(m: Any) -> tuple[Any, str]:
    """The applier of a member of the run (``capture.Member``: resolved at install)."""
    got = getattr(m, "applied", None)
    return got if got is not None else fix_of(str(m.variant))


def spec_fix(cap: Any) -> tuple[Any, str]:
    """The applier of the spec's first member: the one a run of its own applies."""
    members = getattr(cap, "members", None)
    return member_fix(members[0]) if members else fix_of(str(cap.spec.variant))


def fix_now(cap: Any) -> tuple[Any, str]:
    """The applier of the step under way: the run's member whose turn it is."""
    now = getattr(cap, "now", None)
    return member_fix(now) if now is not None else spec_fix(cap)


def install(torch: Any, cap: Any, on: Handlers) -> None:
    """Every patch, on the imported torch. A variant that cannot apply on this device (or is not
    a PyTorch one) is ``not_applicable`` at once, before the script runs a step."""
    for name in ("torch.nn", "torch.optim", "torch.utils.data"):
        importlib.import_module(name)
    cap.torch = torch
    _TORCH_DIR[0] = os.path.dirname(torch.__file__) + os.sep
    _IS_COMPILING[0] = torch.compiler.is_compiling
    why = device_why_not(cap.spec)
    if why:
        on.not_applicable(cap, why)
    fix, arg = spec_fix(cap)
    if fix is not None:  # the thread count: OMP_NUM_THREADS is set for the child too; held if torch read it otherwise
        fix.at_import(torch, arg)
    hook_steps(torch, cap, on)
    hook_backward(torch, cap, on)
    hook_modules(torch, cap)
    hook_loader(torch, cap)
    hook_tensors(torch, cap)
    hook_zero_grad(torch, cap)
    rebatch.hook_slicing(torch, cap, _from_script)


def hold_threads(torch: Any, n: int) -> None:
    """torch's thread count set to ``n`` and held there: a script that sets its own (a
    ``torch.set_num_threads(8)`` on 2 cores) would otherwise undo the count being measured, and the
    pair would time the script's count on both sides."""
    setter = torch.set_num_threads
    setter(n)

    def held(_count: int) -> None:
        setter(n)

    torch.set_num_threads = held


def device_why_not(spec: Any, v: str | None = None, typed: dict | None = None) -> str | None:
    """Why the variant (``v``: a member's; None: the spec's) cannot apply on this device, or None."""
    v = str(v if v is not None else spec.variant)
    fix, _ = fix_of(v, typed)
    if fix is None and v != "baseline":
        names = [a.name for a in _scriptfixes().APPLY]
        return f"'{v.partition(':')[0]}' is not a PyTorch fix (PyTorch's: {', '.join(names)})"
    return fix.device_why_not(spec) if fix is not None else None


def _free() -> bool:
    """No other framework's capture measures this run (Keras' torch backend calls ``backward``
    inside its own ``fit``, which the Keras capture times)."""
    return not capturekit.OWNER or capturekit.OWNER[0] in (ENTRY_STEP, ENTRY_BACKWARD)


def _from_script() -> bool:
    """The caller of the patched method (two frames up) is not torch's own code."""
    return not sys._getframe(2).f_code.co_filename.startswith(_TORCH_DIR[0])


# ------------------------------------------------------------------ entry points


def hook_steps(torch: Any, cap: Any, on: Handlers) -> None:
    """Global step hooks of every optimizer: the first step's pre-hook decides the entry; the post
    hook of the first optimizer to step is the step boundary."""
    opt = torch.optim.Optimizer
    orig_init = opt.__init__

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        _OPTIMIZERS.add(self)
        cap.optimizers += 1
        return orig_init(self, *args, **kwargs)

    def pre(optimizer, args, kwargs):  # type: ignore[no-untyped-def]
        measured = loops.before_step(cap, optimizer)  # the script's loops: the one spec.entry_call names
        if measured and cap.entry is None and not cap.done and _free():
            on.first_step(cap, ENTRY_STEP, optimizer)
        cap.entry_calls += cap.timing and cap.entry == ENTRY_STEP

    def post(optimizer, args, kwargs):  # type: ignore[no-untyped-def]
        if optimizer is cap.lead:
            on.boundary(cap)
        loops.after_step(cap, optimizer, _OPTIMIZERS)

    opt.__init__ = init
    optimizer = importlib.import_module("torch.optim.optimizer")
    optimizer.register_optimizer_step_pre_hook(pre)
    optimizer.register_optimizer_step_post_hook(post)


def hook_backward(torch: Any, cap: Any, on: Handlers) -> None:
    """``Tensor.backward`` is the entry when the script made no optimizer by its first backward
    (a manual update): its end is the step boundary."""
    orig = torch.Tensor.backward

    def backward(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if cap.entry is None and cap.optimizers == 0 and not cap.done and _free():
            on.first_step(cap, ENTRY_BACKWARD, None)
        cap.entry_calls += cap.timing and cap.entry == ENTRY_BACKWARD
        out = orig(self, *args, **kwargs)
        if cap.entry == ENTRY_BACKWARD:
            on.boundary(cap)
        return out

    torch.Tensor.backward = backward


def hook_modules(torch: Any, cap: Any) -> None:
    """Top-level calls of modules with parameters: the first starts the first step; autocast and
    channels_last wrap each (the loss, a module without parameters, is left alone)."""
    module = torch.nn.Module
    orig = module.__call__
    _MODULE_CALL[:] = [orig]

    def call(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if _DEPTH[0] or cap.done or _compiling() or next(self.parameters(), None) is None:
            return orig(self, *args, **kwargs)
        _top_call(cap, self)
        rebatch.fed(cap, args, kwargs)  # the batch it was fed (a loop that slices its own)
        capturekit.step_began()
        fix, arg = fix_now(cap)  # members taking turns: this step's
        _DEPTH[0] += 1
        try:
            if fix is not None:
                return fix.call(cap, orig, self, args, kwargs, arg)
            return orig(self, *args, **kwargs)
        finally:
            _DEPTH[0] -= 1

    module.__call__ = call


def _top_call(cap: Any, m: Any) -> None:
    """A top-level call of ``m``: the first step's start, the modules list, the variants set at
    the model's first call (channels_last converts it; cudnn.benchmark is switched on)."""
    if cap.first_call is None:
        cap.first_call = _perf()
        cap.timing = warmup_steps(cap) + (cap.now.extra if cap.now is not None else 0) == 0
        fix, arg = spec_fix(cap)
        if fix is not None and not cap.turns:  # in turns: at its member's turns (enter)
            fix.first_call(cap, arg)
    if any(m is k for k in cap.modules):
        return
    cap.modules.append(m)
    fix, arg = spec_fix(cap)
    if fix is not None and not cap.turns:
        fix.new_module(cap, m, arg)


def hook_loader(torch: Any, cap: Any) -> None:
    """DataLoader: the script's settings kept on the loader (the loader variants change them at
    its construction), the loader the loop iterates, and its ``__next__`` timed."""
    data = torch.utils.data
    dataloader = importlib.import_module("torch.utils.data.dataloader")
    orig_init, orig_iter = data.DataLoader.__init__, data.DataLoader.__iter__
    _LOADER_INIT[0] = orig_init
    orig_next = dataloader._BaseDataLoaderIter.__next__
    sig = inspect.signature(orig_init)

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError:  # the script's own mistake: torch says it
            return orig_init(self, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        wrapped = _rewrapped(a)
        if wrapped is not None:  # a trainer's copy of a loader: its settings, the variant's already in
            self._whichdevice_user = wrapped
            out = orig_init(*bound.args, **bound.kwargs)
        else:
            self._whichdevice_user = user = _settings(a)
            # the script's own arguments: a member's turn builds its DataLoader from them (Feed)
            self._whichdevice_args = {k: v for k, v in a.items() if k != "self"}
            change = loader_change(cap.spec, user, fix=spec_fix(cap))
            if isinstance(change, dict) and not cap.done and not cap.turns:  # in turns: a Feed's
                a.update(change)
            out = orig_init(*bound.args, **bound.kwargs)
        _remember(self)
        return out

    def iter_(self):  # type: ignore[no-untyped-def]
        cap.loader = self
        it = orig_iter(self)
        try:
            it._whichdevice_loader = self  # which loader's batches it gives (a turn's Feed replaces them)
        except AttributeError:  # an iterator class with __slots__: never fed by a turn
            pass
        return it

    def next_(self):  # type: ignore[no-untyped-def]
        cap.iterator = weakref.ref(self)
        _count_fetch(cap, self)
        feed = cap.feed if cap.feed is not None and getattr(self, "_whichdevice_loader", None) is cap.fed else None
        t = _perf()
        try:
            out = feed.next(orig_next, orig_iter) if feed is not None else orig_next(self)
        finally:
            cap.wait_now += _perf() - t
        cap.samples = _rows(torch, out) or cap.samples
        if cap.now is not None:
            cap.now.samples = _rows(torch, out) or cap.now.samples
        return out

    data.DataLoader.__init__, data.DataLoader.__iter__ = init, iter_
    dataloader._BaseDataLoaderIter.__next__ = next_


def _count_fetch(cap: Any, it: Any) -> None:
    """Batches taken from one iterator before the first step ended: one in a loop that takes
    each step's batch as the step begins; two where it fetches the next batch ahead (a
    prefetcher, a trainer's fetcher), or several where a step takes several (gradient
    accumulation): then a batch is not its turn's, and the loader variants cannot take turns."""
    if cap.last is not None:
        return
    cap.fetches = cap.fetches + 1 if cap.fetched is not None and cap.fetched() is it else 1
    cap.fetched = weakref.ref(it)  # weakly: an iterator the script drops ends its workers as before


# The batch samplers of the DataLoaders built so far, each with the script's settings of its loader.
_BATCHED: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()


def _remember(loader: Any) -> None:
    try:
        _BATCHED[loader.batch_sampler] = loader._whichdevice_user
    except (AttributeError, TypeError):  # no batch sampler (an iterable dataset), or one not weakly referable
        pass


def _rewrapped(a: dict) -> dict | None:
    """The script's settings of the loader this one copies, or None for a loader of its own. The
    HF Trainer's Accelerate builds a second DataLoader from the first (``prepare_data_loader``:
    the first's batch sampler and worker settings, passed on): that copy keeps the variant the
    first got, and the settings the script gave the first, or a batch variant would read
    "batches with its own batch_sampler" and a workers variant "already uses num_workers=2"."""
    for key in ("batch_sampler", "sampler"):
        s = a.get(key)
        if s is not None:
            try:
                got = _BATCHED.get(s)
            except TypeError:
                got = None
            if got is not None:
                return got
    return None


def _settings(a: dict) -> dict:
    """The script's DataLoader settings (JSON-safe)."""
    return {
        "batch_size": a.get("batch_size"),
        "batch_sampler": a.get("batch_sampler") is not None,
        "num_workers": int(a.get("num_workers") or 0),
        "pin_memory": bool(a.get("pin_memory")),
        "persistent_workers": bool(a.get("persistent_workers")),
    }


def loader_change(spec: Any, user: dict, v: str | None = None, fix: Any = None) -> dict | str | None:
    """The settings the variant (``v``: a member's; None: the spec's; ``fix``: its applier and value
    part, where resolved) gives a DataLoader the script built with ``user``'s, or why it does not
    fit it; None for a variant that is not a loader's."""
    applier, arg = fix if fix is not None else fix_of(str(v if v is not None else spec.variant))
    return applier.change(user, arg) if applier is not None and applier.loader else None


def _rows(torch: Any, batch: Any) -> int | None:
    """Rows of a batch: the first dimension of its first tensor."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() else None
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (list, tuple)) else ()
    for b in items:
        n = _rows(torch, b)
        if n:
            return n
    return None


def hook_zero_grad(torch: Any, cap: Any) -> None:
    """``zero_grad`` of every optimizer and module: whether the script zeroes its gradients in
    place (``set_to_none=False``: a memset of every gradient each step, the plan's fact
    ``keeps_grads``), and in a ``set_to_none`` member's steps the gradients freed instead."""
    for cls in (torch.optim.Optimizer, torch.nn.Module):
        orig = cls.zero_grad

        def zero_grad(self, set_to_none: bool = True, _orig: Any = orig) -> Any:
            if not set_to_none and _from_script():
                _KEEPS_GRADS[0] = True
            fix, _ = fix_now(cap)
            if fix is not None:
                set_to_none = fix.set_to_none(set_to_none)
            return _orig(self, set_to_none)

        cls.zero_grad = zero_grad


def keeps_grads() -> bool:
    """Whether the script zeroed its gradients in place so far (``zero_grad(set_to_none=False)``)."""
    return _KEEPS_GRADS[0]


def optimizers() -> list[Any]:
    """The optimizers the script made, still alive."""
    return list(_OPTIMIZERS)


def plan_facts(cap: Any) -> dict[str, Any]:
    """What the script did that a plan reads to choose a fix's cases (``scriptfixes.py``): whether
    it zeroed its gradients in place."""
    return {"keeps_grads": _KEEPS_GRADS[0]}


def hook_tensors(torch: Any, cap: Any) -> None:
    """Host-to-device copies (``to``, ``cuda``) and host reads (``item``, ``tolist``, ``numpy``,
    ``float(t)``; ``cpu`` of a device tensor) made by the script during the timed steps."""
    tensor = torch.Tensor
    for name in ("to", "cuda"):
        setattr(tensor, name, _copy(getattr(tensor, name), cap))
    for name in ("item", "tolist", "numpy", "__float__", "cpu"):
        setattr(tensor, name, _read(getattr(tensor, name), cap, device_only=name == "cpu"))


def _copy(orig: Any, cap: Any) -> Any:
    def copy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = orig(self, *args, **kwargs)
        if (
            cap.timing
            and not _compiling()
            and out is not self
            and self.device.type == "cpu"
            and _on_device(out)
            and _from_script()
        ):
            cap.h2d["count"] += 1
            cap.h2d["bytes"] += int(self.nbytes)
            cap.h2d["pinned"] += int(self.is_pinned())
        if out is not self and cap.last is None:
            rebatch.copied(cap, self, out)  # a sliced batch on the device is still the sliced batch
        return out

    return copy


def _compiling() -> bool:
    """Inside torch.compile's tracing (the script's forward compiled): count nothing there, and
    leave the traced code as it was (``sys._getframe`` would break the graph)."""
    return bool(_IS_COMPILING[0]())


def _on_device(t: Any) -> bool:
    device = getattr(t, "device", None)
    return device is not None and device.type != "cpu"


def _read(orig: Any, cap: Any, device_only: bool) -> Any:
    def read(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not cap.timing or _compiling() or (device_only and self.device.type == "cpu") or not _from_script():
            return orig(self, *args, **kwargs)
        t = _perf()
        try:
            return orig(self, *args, **kwargs)
        finally:
            cap.syncs["s"] += _perf() - t
            cap.syncs["count"] += 1

    return read


# ------------------------------------------------------------------ the first step


def trained_modules(cap: Any) -> list[Any]:
    """The top-level modules whose parameters the optimizers hold (with no optimizer: every
    top-level module with parameters called before the first backward)."""
    if cap.entry != ENTRY_STEP:
        return list(cap.modules)
    held = {id(p) for o in list(_OPTIMIZERS) for g in o.param_groups for p in g["params"]}
    return [m for m in cap.modules if any(id(p) in held for p in m.parameters())]


def why_not(cap: Any, v: str | None = None, m: Any = None) -> str | None:
    """Why the variant (``v``: a member's, as ``batch:64``; None: the spec's) does not fit this
    script (None: it does), seen at its first step."""
    v = str(v if v is not None else cap.spec.variant)
    fix = fix_of(v) if m is None else member_fix(m)
    applier, arg = fix
    if applier is None:
        return None
    if v.partition(":")[0] == rebatch.TAKES_TURNS and cap.loader is None:
        return rebatch.why_not(cap)  # no DataLoader to rebuild: the step re-batched by tiling
    if applier.loader:
        if cap.loader is None:
            return "no DataLoader feeds the training loop"
        change = loader_change(cap.spec, cap.loader._whichdevice_user, v, fix)
        return change if isinstance(change, str) else None
    if applier.module and not cap.trained:
        return "the step trains no torch.nn.Module the script calls (its optimizer holds plain tensors)"
    return applier.why_not(cap, arg)


def after_first_step(cap: Any) -> None:
    """The variant holds from now on: the trained modules compiled (``compile``), and the module
    hook removed where no variant needs it any more."""
    fix, arg = spec_fix(cap)
    if fix is not None and not cap.turns:  # in turns: at its member's turns (enter)
        fix.after_first_step(cap, arg)
    members = getattr(cap, "members", None) or [SimpleNamespace(variant=v) for v in (cap.spec.variant, *cap.spec.also)]
    wraps = any(f is not None and f.wraps_calls for f, _ in map(member_fix, members))
    tiled = rebatch.wanted(cap.spec) and cap.loader is None  # its model's rows checked in each tiled step
    if not wraps and not tiled and _MODULE_CALL:
        cap.torch.nn.Module.__call__ = _MODULE_CALL[0]
    rebatch.unhook_slicing(cap)


def warmup_steps(cap: Any, v: str | None = None, m: Any = None) -> int:
    """The spec's warm-up steps for the variant (``v``: a member's; None: the spec's), and one
    more for ``compile``: alone, its first step ran eager (the modules are compiled after it)
    and its second compiles them; in turns, its first turn compiles them."""
    fix, _ = member_fix(m) if m is not None else fix_of(str(v)) if v is not None else spec_fix(cap)
    return int(cap.spec.warmup_steps) + (fix.extra_warmup if fix is not None else 0)


def sync(cap: Any) -> None:
    """Wait for the GPU's queued work at a step boundary (nothing to wait for on the CPU)."""
    torch = cap.torch
    if cap.spec.device == "gpu" and torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def convolutional(torch: Any, m: Any) -> bool:
    kinds = (torch.nn.Conv2d, torch.nn.ConvTranspose2d)
    return any(isinstance(s, kinds) for s in m.modules())


def has_conv2d(cap: Any) -> bool:
    return cap.torch is not None and any(convolutional(cap.torch, m) for m in cap.trained)


def loader_settings(loader: Any) -> dict | None:
    return getattr(loader, "_whichdevice_user", None)


def loader_batch(loader: Any) -> int | None:
    """The loader's batch size, or its batch sampler's (a trainer's copy batches with the batch
    sampler of the loader it wraps)."""
    n = getattr(loader, "batch_size", None)
    if n is None:
        n = getattr(getattr(loader, "batch_sampler", None), "batch_size", None)
    return int(n) if isinstance(n, int) else None


def dataset_size(loader: Any) -> int | None:
    """Samples in the DataLoader's dataset (None for an iterable one without a length)."""
    try:
        return int(len(loader.dataset)) if loader is not None else None
    except TypeError:
        return None


def stop_workers(cap: Any) -> None:
    """The DataLoader's worker processes ended with the capture (the child exits without the
    interpreter's teardown, and a worker would wait up to 5 s to see its parent gone), the turns'
    Feeds' with them."""
    close_feeds(cap)
    it = cap.iterator() if cap.iterator is not None else None
    shutdown = getattr(it, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


# ------------------------------------------------------------------ turns


def alone_why(cap: Any, v: str) -> str | None:
    """Why a member cannot take turns in this run but needs a run of the script of its own, seen
    at the end of the first step (None: it can). A loader member's batches come from a DataLoader
    built for it; that is sound only where the script's own loop takes each step's batch as the
    step begins, from a plain DataLoader without worker processes of its own (whose workers would
    go on loading during the other members' steps)."""
    fix, _ = fix_of(v)
    loader = cap.fed
    if fix is None or not fix.loader or loader is None or not isinstance(_user_change(cap, v), dict):
        return None  # not a loader's, or its misfit is said at its first step (why_not)
    if cap.trainer is not None:
        return "a trainer's loop fetches its batches ahead of its steps"
    if cap.fetches > 1:
        return "the loop takes its batches ahead of its steps, or several a step"
    if type(loader) is not cap.torch.utils.data.DataLoader:
        return "the script's DataLoader is a class of its own"
    if int(loader._whichdevice_user["num_workers"]):
        return "the script's DataLoader has worker processes, which load on during the other variants' steps"
    if fix.workers and not PAUSABLE:
        return "worker processes can be paused between turns only on Linux"
    return None


def _user_change(cap: Any, v: str) -> dict | str | None:
    user = getattr(cap.fed, "_whichdevice_user", None)
    return loader_change(cap.spec, user, v) if user is not None else "no settings kept"


# Worker processes are paused between their member's turns (SIGSTOP, SIGCONT), so that they load
# only during its steps, as they would in a run of their own; a paused worker cannot see its parent
# end, so it is started with the kernel's parent-death signal (Linux only).
PAUSABLE = sys.platform.startswith("linux")


def _worker_start(user_init: Any, worker_id: int) -> None:
    """A Feed's worker: killed by the kernel when the script's process ends, even while paused."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass
    if user_init is not None:
        user_init(worker_id)


class Feed:
    """A loader member's batches: a DataLoader built from the script's own arguments with the
    variant's settings (what the script would have built), its iterator renewed at each of its
    epochs' ends, its worker processes paused outside its member's turns."""

    def __init__(self, torch: Any, loader: Any, change: dict) -> None:
        import functools

        args = {**loader._whichdevice_args, **change}
        if int(args.get("num_workers") or 0):
            args["worker_init_fn"] = functools.partial(_worker_start, args.get("worker_init_fn"))
        cls = torch.utils.data.DataLoader
        self.loader = cls.__new__(cls)
        _LOADER_INIT[0](self.loader, **args)  # torch's own __init__: not one of the script's loaders
        self.iterator: Any = None
        self.paused = False

    def next(self, orig_next: Any, orig_iter: Any) -> Any:
        """The next batch, a new epoch of the Feed's loader begun where one ended."""
        for _ in range(2):
            if self.iterator is None:
                self.iterator = orig_iter(self.loader)
            try:
                return orig_next(self.iterator)
            except StopIteration:
                self.iterator = None
        raise RuntimeError("the DataLoader built for this variant gives no batch")

    def pids(self) -> list[int]:
        return [int(w.pid) for w in getattr(self.iterator, "_workers", None) or [] if w.pid]

    def pause(self, stop: bool) -> None:
        import signal

        if not PAUSABLE or self.paused == stop:
            return
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGSTOP if stop else signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused = stop

    def close(self) -> None:
        """Its workers resumed (a paused one would not see the shutdown) and shut down."""
        self.pause(False)
        shutdown = getattr(self.iterator, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
        self.iterator = None

    def settings(self) -> dict:
        """What fed the member's steps: the batch size, workers and pinning used."""
        it = self.iterator
        return {
            "batch_size": loader_batch(self.loader),
            "num_workers": int(getattr(it, "_num_workers", self.loader.num_workers) or 0),
            "pin_memory": bool(self.loader.pin_memory),
            "worker_pids": self.pids(),
        }


_LOADER_INIT: list[Any] = [None]  # DataLoader.__init__ as torch had it


def close_feeds(cap: Any) -> None:
    """Every Feed's workers resumed and shut down (the capture's end, or the script's)."""
    for feed in list(cap.feeds.values()):
        feed.close()
    cap.feed = None


def enter(cap: Any, m: Any) -> None:
    """``m``'s turn begins (after the first step): its applier switches it in (its Feed's batches,
    its model's memory format, its compiled module)."""
    fix, arg = member_fix(m)
    if fix is not None:
        fix.enter(cap, m, arg)


def leave(cap: Any, m: Any) -> None:
    """``m``'s turn ends: the script's own batches, memory format and eager modules back."""
    fix, arg = member_fix(m)
    if fix is not None:
        fix.leave(cap, m, arg)
