"""What one training step of a user's PyTorch script runs, for the no-GPU prediction of
``whichdevice diagnose SCRIPT.py`` (imported by the torch capture before the script runs: it imports torch only once a step is
traced, as the capture does nothing of torch's before the script's own import).

Collected once, in the pre-flight (``CaptureSpec.trace_step``), over one warm-up step of the
script's own loop — never a timed one: from the first step boundary to the second
(``capture.boundary`` calls :func:`at_boundary`), a ``TorchDispatchMode``
(``torch.utils._python_dispatch``) records every ATen op the step dispatches — forward,
autograd's backward, the optimizer — with its kind, FLOPs and bytes (``calibration.py``'s
costing, the one ``predict`` reads). Why this and not ``torch.utils.flop_counter.FlopCounterMode``
(built on the same mode) or ``torch.profiler``: the cost model prices each kernel (a launch
floor per op, a curve per matmul size, bytes per elementwise op), so it needs the op list with
each op's size, which the flop counter sums away (it gives FLOPs per op type, no bytes, no
elementwise ops) and the profiler gives as CPU times of this machine, not sizes.

What a GPU run would do differently is read here, not assumed:

- ``torch.optim`` runs its multi-tensor (``foreach``) path on a GPU by default: for the traced
  step every optimizer group that left ``foreach`` to torch takes it (put back after);
- the ops the DataLoader runs in the loop's own process (its collate) stay on the host on a GPU
  machine: left out (their time is in the measured CPU step, the host's part);
- the optimizer's step counters (0-d tensors) stay on the host without ``capturable``: free.

Per op the part of its FLOPs and bytes that grows with the batch is kept apart (a tensor with a
dimension equal to the batch, outside the optimizer, grows with it; a matmul or convolution with
such an operand has FLOPs proportional to the batch), so the prediction can be made at the
batches the sweep measured. Each op's call is timed too (``op_s``: the seconds the step spent
inside its ops on this CPU) and the recording itself (``trace_s``): the traced step's wall less
both is the step's host time (``host_s``: the loop's Python, autograd's bookkeeping, the
DataLoader in the loop's process), measured in the same step under the same load, not modelled. A ``torch.compile``d model is not traced (its kernels are Inductor's,
not the eager op list): the result says why.
"""

from __future__ import annotations

import sys
import time
from types import FrameType
from typing import Any

SOURCE = "the ATen ops of one step under a TorchDispatchMode (forward, backward, optimizer)"
_LOADER = ("torch/utils/data/", "torch\\utils\\data\\")
_OPTIM = ("torch/optim/", "torch\\optim\\")
_DEPTH = 80  # frames looked at per op (a step's ops are called well within it)


def _where() -> str:
    """'loader' when the op is called from the DataLoader's code, 'optim' from an optimizer's,
    else 'step'."""
    f: FrameType | None = sys._getframe(2)
    for _ in range(_DEPTH):
        if f is None:
            break
        name = f.f_code.co_filename
        if any(p in name for p in _LOADER):
            return "loader"
        if any(p in name for p in _OPTIM):
            return "optim"
        f = f.f_back
    return "step"


def _flops(calibration: Any, name: str, args: Any, kwargs: Any, out: Any) -> float:
    """An op's FLOPs. ``convolution_backward(grad_out, input, weight, ..., output_mask)``: each
    gradient it computes (the input's, the weight's: ``output_mask``) costs the forward's
    2 · elements of the output · weight elements per output channel."""
    if name != "convolution_backward":
        return float(calibration._flops(name, (args, kwargs), out))
    grad_out, weight = args[0], args[2]
    forward = 2.0 * float(grad_out.numel()) * float(weight[0].numel())
    mask = args[-1] if isinstance(args[-1], (list, tuple)) else (True, True)
    return forward * (int(bool(mask[0])) + int(bool(mask[1])))


class StepRecorder:
    """The op list of the step under way, with each op's batch-proportional part (module doc)."""

    def __init__(self, torch: Any, batch: int | None) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        from whichdevice.frameworks.torch import calibration

        rec = self
        self.cal = calibration

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                t0 = time.perf_counter()
                out = func(*args, **(kwargs or {}))
                t1 = time.perf_counter()
                rec.record(str(func.overloadpacket.__name__), args, kwargs or {}, out, t1 - t0)
                rec.trace_s += time.perf_counter() - t1
                return out

        self.torch, self.batch = torch, batch
        self.mode = _Mode()
        self.ops: dict[tuple[str, str, float, float, float, float], int] = {}
        self.skipped = 0  # ops of the DataLoader's collate, left out
        self.op_s = 0.0  # seconds inside the step's ops on this CPU (the rest of a step is host time)
        self.trace_s = 0.0  # seconds the recording itself took (not the step's)
        self.t0 = 0.0
        self.wall_s = 0.0
        self.foreach: list[dict] = []  # optimizer groups switched to foreach for the step

    def record(self, name: str, args: Any, kwargs: Any, out: Any, took: float) -> None:
        where = _where()
        if where == "loader":
            self.skipped += 1
            return
        self.op_s += took
        calibration = self.cal
        ins = calibration._tensors((args, kwargs))
        outs = calibration._tensors(out)
        every = ins + outs
        if name in calibration.FREE or not every or all(t.dim() == 0 for t in every):
            kind = "free"  # views, markers; 0-d tensors: host-side scalars (torch.optim's step counters)
        elif name in calibration.MATMUL:
            kind = "matmul"
        elif name in calibration.CONV:
            kind = "conv"
        else:
            kind = "elementwise"
        flops = _flops(calibration, name, args, kwargs, out) if kind in ("matmul", "conv") else 0.0
        nbytes = sum(calibration._nbytes(t) for t in every) if kind != "free" else 0.0
        grows = where == "step" and self.batch is not None and self.batch > 1
        b_bytes = sum(calibration._nbytes(t) for t in every if self.batch in t.shape) if grows and nbytes else 0.0
        b_flops = flops if grows and flops and any(self.batch in t.shape for t in ins) else 0.0
        key = (name, kind, flops, nbytes, b_flops, b_bytes)
        self.ops[key] = self.ops.get(key, 0) + 1

    def start(self, optimizers: list[Any]) -> None:
        for o in optimizers:
            for g in getattr(o, "param_groups", []):
                if "foreach" in g and g["foreach"] is None:  # torch's own choice: foreach on a GPU
                    g["foreach"] = True
                    self.foreach.append(g)
        self.t0 = time.perf_counter()
        self.mode.__enter__()

    def stop(self) -> None:
        self.mode.__exit__(None, None, None)
        self.wall_s = time.perf_counter() - self.t0
        for g in self.foreach:
            g["foreach"] = None

    def trace(self) -> dict[str, Any]:
        """The ``StepTrace`` fields (core/records.py) of the recorded step."""
        ops = [
            {
                "op_type": name,
                "kind": kind,
                "count": n,
                "flops": flops,
                "bytes": nbytes,
                "batched_flops": bf,
                "batched_bytes": bb,
            }
            for (name, kind, flops, nbytes, bf, bb), n in self.ops.items()
        ]
        return {
            "framework": "torch",
            "source": SOURCE,
            "batch": int(self.batch or 0),
            "launch_mode": "eager",
            "tf32": self.cal.tf32_matmul(),
            "ops": ops,
            "totals": {
                "loader_ops_left_out": float(self.skipped),
                "op_s": self.op_s,
                "trace_s": self.trace_s,
                # the step's own host time: its wall less its ops and the recording (an upper bound:
                # the entry into the mode for each op is in it)
                "host_s": max(self.wall_s - self.op_s - self.trace_s, 0.0),
            },
            "collect_s": self.wall_s,
        }


# The state of the one trace a pre-flight takes: the recorder while the step is under way, then
# the trace or why there is none.
_STATE: dict[str, Any] = {}


def at_boundary(cap: Any) -> None:
    """A step boundary of the capture (``capture.boundary``): the traced step ends here, or
    begins here (after the first step, where the pre-flight asks for a trace)."""
    rec = _STATE.get("recorder")
    if rec is not None:
        rec.stop()
        _STATE["recorder"] = None
        _STATE["trace"] = rec.trace()
        return
    if not cap.spec.trace_step or "trace" in _STATE or cap.last is not None or cap.torch is None:
        return  # not asked, done already, or past the first step (the one traced is the second)
    _STATE["trace"] = {"framework": "torch", "source": SOURCE, "why_not": "the script ended before a whole step"}
    why = _untraceable(cap)
    if why:
        _STATE["trace"]["why_not"] = why
        return
    from whichdevice.frameworks.torch import capture_hooks

    batch = cap.samples or capture_hooks.loader_batch(cap.loader)
    rec = StepRecorder(cap.torch, batch)
    _STATE["recorder"] = rec
    rec.start(list(capture_hooks._OPTIMIZERS))


def _untraceable(cap: Any) -> str | None:
    compiled = getattr(getattr(cap.torch, "_dynamo", None), "eval_frame", None)
    kind = getattr(compiled, "OptimizedModule", None)
    if kind is not None and any(isinstance(m, kind) for m in [*cap.trained, *cap.modules]):
        return "the model is compiled with torch.compile: its kernels are Inductor's, not the eager ops traced here"
    if cap.spec.device != "cpu":
        return "traced on the CPU only"
    from whichdevice.frameworks.torch import capture_hooks

    if capture_hooks.warmup_steps(cap) < 2:
        return "the pre-flight had no second warm-up step to trace (a timed step is never traced)"
    return None


def result(cap: Any) -> dict[str, Any] | None:
    """The trace for the capture's result (None: not asked for). A step still under way is
    stopped first (its ops so far would be a part of a step: said as not traced)."""
    if not cap.spec.trace_step:
        return None
    rec = _STATE.get("recorder")
    if rec is not None:
        rec.stop()
        _STATE["recorder"] = None
    return _STATE.get("trace") or {
        "framework": "torch",
        "source": SOURCE,
        "why_not": "the script ended before its second step" if cap.last is None else "no step was traced",
    }
