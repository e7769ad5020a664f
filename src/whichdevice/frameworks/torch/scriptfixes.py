"""How torch's script capture (``capture.py``, ``capture_hooks.py``) measures the catalogue's fixes
(``workloads/fixes.py``) on a user's script: one adapter per fix, in the order a plan tries them.

Each says the capture's member for a case's value (its variant: ``Variant(fix, value)``), the cases
a plan gives the fix from the pre-flight's facts, and what it adds to a case's cost. Adding a torch
fix to ``diagnose SCRIPT`` is its catalogue entry and its adapter here, and, for a change the
capture cannot make yet, the capture's member (``capture_hooks.py``: applied at the model's call,
or built and switched in at its turns). Imports no torch: the plan reads it in the parent.
"""

from __future__ import annotations

from typing import Any

from whichdevice.frameworks.contracts import ScriptFix, StepCost
from whichdevice.frameworks.torch import capture_hooks

LOADER_WORKERS = 2  # the DataLoader's worker processes tried (2 cores here; more rarely pay on a small machine)
# torch.compile of a small model's step: 21-52 s on the loaded 2-core machine (benchmarks/diagnose_torch.md)
TORCH_COMPILE_S = 45.0
_STEADY = {"kind": "steady", "sync": "none"}


def _switch(member: str) -> Any:
    """A fix the capture switches on for the member's steps: ``member`` at any value but the
    baseline's (False, "off", 0), else the script as it runs."""
    return lambda value, _params: member if value not in (False, "off", 0, None) else "baseline"


def _pair(baseline: object, value: object, when: Any) -> Any:
    """A steady pair at the user's batch (``baseline`` -> ``value``) where ``when(facts, gpu)``."""
    return lambda facts, gpu: [(v, dict(_STEADY)) for v in (baseline, value)] if when(facts, gpu) else []


def _module(facts: dict[str, Any], _gpu: bool) -> bool:
    """The step trains an nn.Module (not an optimizer over bare tensors)."""
    return bool(facts.get("model"))


def _keeps_grads(facts: dict[str, Any], gpu: bool) -> bool:
    """The pre-flight saw the script zero its module's gradients in place (set_to_none=False)."""
    return _module(facts, gpu) and bool((facts.get("plan_facts") or {}).get("keeps_grads"))


def _own_loader(facts: dict[str, Any]) -> dict[str, Any] | None:
    """The script's DataLoader settings where it feeds the loop and has no workers of its own."""
    loader = facts.get("loader") or {}
    if facts.get("data_source") == "DataLoader" and not int(loader.get("num_workers") or 0):
        return loader
    return None


def _workers(facts: dict[str, Any], _gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    return [(w, {"kind": "loop"}) for w in (0, LOADER_WORKERS)] if _own_loader(facts) is not None else []


def _pinned(facts: dict[str, Any], gpu: bool) -> list[tuple[Any, dict[str, Any]]]:
    loader = _own_loader(facts)
    if not gpu or loader is None or loader.get("pin_memory"):
        return []
    return [(v, {"kind": "loop", "num_workers": 0}) for v in (False, True)]


def _threads(value: Any, _params: dict[str, Any]) -> str:
    """The default side runs as the script does; a count is set before torch is imported."""
    return "baseline" if value == "default" else f"threads:{int(value)}"


# ------------------------------------------------------------------ how the capture applies each


class Apply:
    """How torch's capture applies one member in the script's child (``capture_hooks.py`` calls
    these by the member's adapter, never by a fix's name). ``arg`` is the value part of the member
    (``"64"`` of ``"batch:64"``; ``""`` where it has none). ``turns``: ``"switched"`` (applied per
    call: it takes turns with the baseline with nothing of the script's rebuilt), ``"built"``
    (switched in for its member's steps and back out, :meth:`enter`, :meth:`leave`) or ``""`` (set
    before the script runs: a run of its own)."""

    name = ""  # the member's name ("workers" of "workers:2")
    turns = ""
    loader = False  # changes the script's DataLoader (:meth:`change`)
    workers = False  # the DataLoader's worker processes (paused between turns only on Linux)
    module = False  # applied at the trained nn.Module
    wraps_calls = False  # the module hook stays installed after the first step for it
    extra_warmup = 0  # warm-up steps more than the spec's (a compile's first step)

    def device_why_not(self, spec: Any) -> str | None:
        return None

    def at_import(self, torch: Any, arg: str) -> None:
        """Set as the script imports torch, before its first step (a run of its own)."""

    def call(self, cap: Any, orig: Any, m: Any, args: tuple, kwargs: dict, arg: str) -> Any:
        """A top-level call of the trained module in the member's steps."""
        return orig(m, *args, **kwargs)

    def first_call(self, cap: Any, arg: str) -> None:
        """At the model's first call, in a run of the member alone."""

    def new_module(self, cap: Any, m: Any, arg: str) -> None:
        """A module with parameters called at the top level for the first time, in a run alone."""

    def change(self, user: dict, arg: str) -> dict | str | None:
        """The settings a DataLoader built with ``user``'s gets, or why it does not fit it."""
        return None

    def why_not(self, cap: Any, arg: str) -> str | None:
        """Why the member does not fit the script, seen at its first step (None: it does)."""
        return None

    def after_first_step(self, cap: Any, arg: str) -> None:
        """From the second step on, in a run of the member alone."""

    def enter(self, cap: Any, m: Any, arg: str) -> None:
        """The member's turn begins (after the first step)."""

    def leave(self, cap: Any, m: Any, arg: str) -> None:
        """The member's turn ends."""

    def set_to_none(self, asked: bool) -> bool:
        """What a ``zero_grad`` in the member's steps frees (the script's ``set_to_none``)."""
        return asked


class _Loader(Apply):
    """A DataLoader setting: built with the script's own arguments and the member's setting, its
    batches switched in for the member's turns (``capture_hooks.Feed``)."""

    turns = "built"
    loader = True

    def change(self, user: dict, arg: str) -> dict | str | None:
        if user[self.name]:
            return f"the script already sets {self.name}=True"
        return {self.name: True}

    def enter(self, cap: Any, m: Any, arg: str) -> None:
        if cap.fed is None:
            return
        if m.index not in cap.feeds:
            change = capture_hooks.loader_change(cap.spec, cap.fed._whichdevice_user, m.variant, (self, arg))
            if not isinstance(change, dict):  # said at its first step (why_not)
                return
            cap.feeds[m.index] = capture_hooks.Feed(cap.torch, cap.fed, change)
        cap.feed = cap.feeds[m.index]
        cap.feed.pause(False)

    def leave(self, cap: Any, m: Any, arg: str) -> None:
        if cap.feed is not None:
            cap.feed.pause(True)
            cap.feed = None


class _Batch(_Loader):
    name = "batch"

    def change(self, user: dict, arg: str) -> dict | str | None:
        if user["batch_sampler"] or user["batch_size"] is None:
            return "the DataLoader batches with its own batch_sampler: batch_size is not used"
        n = int(arg)
        return {"batch_size": n} if user["batch_size"] != n else f"the script already uses batch_size={n}"


class _Workers(_Loader):
    name = "workers"
    workers = True

    def change(self, user: dict, arg: str) -> dict | str | None:
        n = int(arg)
        if user["num_workers"] == n:
            return f"the script already uses num_workers={n}"
        return {"num_workers": n} if n else {"num_workers": 0, "persistent_workers": False, "prefetch_factor": None}


class _Pinned(_Loader):
    name = "pin_memory"

    def device_why_not(self, spec: Any) -> str | None:
        return "no GPU: pinned memory only speeds host-to-GPU copies" if spec.device != "gpu" else None


class _Persistent(_Loader):
    name = "persistent_workers"
    turns = ""  # not planned: a run of its own

    def change(self, user: dict, arg: str) -> dict | str | None:
        if user[self.name]:
            return f"the script already sets {self.name}=True"
        if not user["num_workers"]:
            return "the DataLoader has no worker processes (num_workers=0): there are none to keep"
        return {self.name: True}


class _CallWrapper(Apply):
    """Applied at the trained nn.Module around each of its top-level calls (:meth:`call`), so its
    module hook stays installed after the first step."""

    module = True
    wraps_calls = True


class _Autocast(_CallWrapper):
    """The model's forward under ``torch.autocast``: bfloat16 on the CPU, float16 on a GPU, or the
    dtype the member names (``autocast:bfloat16``, ``autocast:float16``), its outputs handed back
    in float32; not if the script already autocasts."""

    name = "autocast"
    turns = "switched"

    def call(self, cap: Any, orig: Any, m: Any, args: tuple, kwargs: dict, arg: str) -> Any:
        torch = cap.torch
        kind = "cuda" if cap.spec.device == "gpu" else "cpu"
        if torch.is_autocast_enabled(kind):
            cap.why_not = "the script already runs its model under torch.autocast"
            return orig(m, *args, **kwargs)
        half = kind == "cuda" and arg not in ("bf16", "bfloat16") or arg in ("fp16", "float16")
        with torch.autocast(kind, dtype=torch.float16 if half else torch.bfloat16):
            out = orig(m, *args, **kwargs)
        return _float32(torch, out)


def _float32(torch: Any, out: Any) -> Any:
    """The forward's half-precision outputs back in float32, so that the script's loss outside
    the autocast region gets what it got before (BCELoss refuses a bfloat16 input against float32
    targets), as Accelerate does around an autocast forward (``convert_outputs_to_fp32``)."""
    if isinstance(out, torch.Tensor):
        return out.float() if out.dtype in (torch.float16, torch.bfloat16) else out
    if type(out) is dict:
        return {k: _float32(torch, v) for k, v in out.items()}
    if isinstance(out, dict):  # an OrderedDict, a model-output class: set in place
        for k, v in list(out.items()):
            out[k] = _float32(torch, v)
        return out
    if isinstance(out, tuple) and hasattr(out, "_fields"):  # a namedtuple
        return type(out)(*(_float32(torch, v) for v in out))
    if isinstance(out, (tuple, list)):
        return type(out)(_float32(torch, v) for v in out)
    return out


_NO_CONV = "no Conv2d in the trained model"


class _ChannelsLast(_CallWrapper):
    """The convolutional model and its 4-d inputs in channels_last memory format."""

    name = "channels_last"
    turns = "built"

    def call(self, cap: Any, orig: Any, m: Any, args: tuple, kwargs: dict, arg: str) -> Any:
        torch = cap.torch
        args = tuple(a.contiguous(memory_format=torch.channels_last) if _image(torch, a) else a for a in args)
        return orig(m, *args, **kwargs)

    def new_module(self, cap: Any, m: Any, arg: str) -> None:
        if capture_hooks.convolutional(cap.torch, m):
            m.to(memory_format=cap.torch.channels_last)

    def why_not(self, cap: Any, arg: str) -> str | None:
        return None if capture_hooks.has_conv2d(cap) else _NO_CONV

    def enter(self, cap: Any, m: Any, arg: str) -> None:
        _memory_format(cap, cap.torch.channels_last)

    def leave(self, cap: Any, m: Any, arg: str) -> None:
        _memory_format(cap, cap.torch.contiguous_format)


def _image(torch: Any, a: Any) -> bool:
    return isinstance(a, torch.Tensor) and a.dim() == 4


def _memory_format(cap: Any, fmt: Any) -> None:
    """The trained convolutional modules in ``fmt`` (their parameters and gradients, kept the same
    tensors, so the optimizer holds them still), and the optimizer's state of their 4-d parameters
    with them, as a run converted at its start would have it."""
    torch = cap.torch
    for k in cap.trained:
        if capture_hooks.convolutional(torch, k):
            k.to(memory_format=fmt)
    for opt in capture_hooks.optimizers():
        for state in opt.state.values():
            for t in state.values():
                if isinstance(t, torch.Tensor) and t.dim() == 4:
                    t.data = t.contiguous(memory_format=fmt)


class _CudnnBenchmark(Apply):
    """cuDNN's benchmark flag on, the script's own setting back at its turns' ends."""

    name = "cudnn_benchmark"
    turns = "built"
    module = True
    _ALREADY = "the script already sets torch.backends.cudnn.benchmark = True"

    def device_why_not(self, spec: Any) -> str | None:
        return "no GPU: cudnn.benchmark picks cuDNN's GPU convolution algorithms" if spec.device != "gpu" else None

    def first_call(self, cap: Any, arg: str) -> None:
        cudnn = cap.torch.backends.cudnn
        if cudnn.benchmark:
            cap.why_not = self._ALREADY
        cudnn.benchmark = True

    def why_not(self, cap: Any, arg: str) -> str | None:
        return None if capture_hooks.has_conv2d(cap) else _NO_CONV

    def enter(self, cap: Any, m: Any, arg: str) -> None:
        cudnn = cap.torch.backends.cudnn
        cap.cudnn_was = bool(cudnn.benchmark)  # the script's own setting, back at the turn's end
        if cap.cudnn_was:
            cap.why_not = self._ALREADY
        cudnn.benchmark = True

    def leave(self, cap: Any, m: Any, arg: str) -> None:
        cap.torch.backends.cudnn.benchmark = cap.cudnn_was


class _Compile(Apply):
    """The trained modules compiled (``nn.Module.compile``): alone, after the first step (which ran
    eager; the second compiles them: one more warm-up step); in turns, at its member's turns."""

    name = "compile"
    turns = "built"
    module = True
    extra_warmup = 1

    def why_not(self, cap: Any, arg: str) -> str | None:
        if any(type(m).__name__ == "OptimizedModule" for m in cap.trained):
            return "the script already compiles its model with torch.compile"
        return None

    def after_first_step(self, cap: Any, arg: str) -> None:
        for m in cap.trained:
            m.compile()

    def enter(self, cap: Any, m: Any, arg: str) -> None:
        for k in cap.trained:
            if k not in cap.compiled:
                k.compile()  # nn.Module.compile: torch.compile of the module's call, kept on it
                cap.compiled[k] = k._compiled_call_impl
            k._compiled_call_impl = cap.compiled[k]

    def leave(self, cap: Any, m: Any, arg: str) -> None:
        for k in cap.compiled:
            k._compiled_call_impl = None


class _SetToNone(Apply):
    """``zero_grad`` frees the gradients in the member's steps where the script zeroes them in place."""

    name = "set_to_none"
    turns = "switched"

    def why_not(self, cap: Any, arg: str) -> str | None:
        if not capture_hooks.keeps_grads():
            return "the script frees its gradients already (zero_grad(set_to_none=True), torch's default since 2.0)"
        return None

    def set_to_none(self, asked: bool) -> bool:
        return True


class _Threads(Apply):
    """torch's thread count, set for the child before import (``env.child_env``) and held here."""

    name = "threads"

    def at_import(self, torch: Any, arg: str) -> None:
        capture_hooks.hold_threads(torch, int(arg or 1))


# Every member the capture applies, in the order its words list them.
APPLY: tuple[Apply, ...] = (
    _Batch(),
    _Workers(),
    _Pinned(),
    _Persistent(),
    _Autocast(),
    _ChannelsLast(),
    _Compile(),
    _CudnnBenchmark(),
    _SetToNone(),
    _Threads(),
)
BY_NAME: dict[str, Apply] = {a.name: a for a in APPLY}
# The members that take turns with the baseline in the round's one process (capture_hooks.enter):
# those applied per call first, then those switched in and out.
TURNS: tuple[str, ...] = (
    "baseline",
    *(a.name for a in APPLY if a.turns == "switched"),
    *(a.name for a in APPLY if a.turns == "built"),
)


def applied(member: str, typed: dict[str, Any] | None = None) -> tuple[Apply | None, str]:
    """A member's applier and its value part: by the typed variant's catalogue key where the spec
    carries it (``{"fix": key, "value": v}``), else by the member's name; (None, "") for the script
    as it runs, and for a name the capture does not know (``capture_hooks.device_why_not`` says so)."""
    arg = member.partition(":")[2]
    if typed is not None and typed.get("fix") in _BY_KEY:
        return (_BY_KEY[str(typed["fix"])] if member != "baseline" else None), arg
    return BY_NAME.get(member.partition(":")[0]), arg


def shares(member: str, params: dict[str, Any]) -> bool:
    """A member in :data:`TURNS` takes turns, but a loader member under a trainer (its loop fetches
    batches ahead of its steps: a batch would not be its turn's) and DataLoader workers off Linux
    (paused between turns only there, :data:`capture_hooks.PAUSABLE`); the thread count, read at
    import, runs alone."""
    name = member.partition(":")[0]
    fix = BY_NAME.get(name)
    if fix is not None and fix.loader and (params.get("trainer") or (fix.workers and not capture_hooks.PAUSABLE)):
        return False
    return name in TURNS


ADAPTERS: tuple[ScriptFix, ...] = (
    ScriptFix("batch", member=lambda value, _p: f"batch:{int(value)}", apply=BY_NAME["batch"]),
    ScriptFix("cpu_threads", member=_threads, apply=BY_NAME["threads"]),
    ScriptFix(
        "autocast", member=_switch("autocast"), cases=_pair("off", "bfloat16", _module), apply=BY_NAME["autocast"]
    ),
    ScriptFix(
        "set_to_none",
        member=_switch("set_to_none"),
        cases=_pair(False, True, _keeps_grads),
        apply=BY_NAME["set_to_none"],
    ),
    ScriptFix(
        "channels_last",
        member=_switch("channels_last"),
        cases=_pair(False, True, lambda f, _g: f.get("conv2d")),
        apply=BY_NAME["channels_last"],
    ),
    ScriptFix(
        "cudnn_benchmark",
        member=_switch("cudnn_benchmark"),
        cases=_pair(False, True, lambda _f, gpu: gpu),
        apply=BY_NAME["cudnn_benchmark"],
    ),
    ScriptFix(
        "num_workers",
        member=lambda value, _p: f"workers:{int(value)}" if value else "baseline",
        cases=_workers,
        apply=BY_NAME["workers"],
    ),
    ScriptFix("pin_memory", member=_switch("pin_memory"), cases=_pinned, apply=BY_NAME["pin_memory"]),
    ScriptFix(
        "torch_compile",
        member=_switch("compile"),
        cases=_pair(False, True, _module),  # last: it is slow to compile
        cost=lambda value: StepCost(extra_s=TORCH_COMPILE_S if value is True else 0.0),
        apply=BY_NAME["compile"],
    ),
)
_BY_KEY: dict[str, Apply] = {a.fix: a.apply for a in ADAPTERS}
