"""What the jitted train step of a user's JAX script runs, for the no-GPU prediction of
``whichdevice diagnose SCRIPT.py`` (the JAX capture calls it; JAX is imported by then).

Collected once, in the pre-flight (``CaptureSpec.trace_step``), after the timed steps (so that
no step's time holds it): the step found by the capture is lowered again from its first call's
argument shapes (``jax.ShapeDtypeStruct``: a donated buffer is never read) and compiled by XLA
for this CPU. From the compiled executable:

- ``cost_analysis()``: XLA's own count of the step's FLOPs and bytes accessed (kept as the
  trace's totals);
- the kernels XLA launches: the instructions of the compiled HLO's entry computation
  (``frameworks/common/hlo.py``), each with its bytes, a dot with its FLOPs; a convolution's
  FLOPs are XLA's total less the dots' (given to the convolutions by their bytes), as the HLO
  text does not say them.

The step is compiled at the script's batch and at twice it (its data arguments' leading
dimension, as the capture's re-batching tiles them): each kernel's FLOPs and bytes that grow
between the two are its batch-proportional part. Where XLA fused the two differently, each
kernel's part is the totals' growth. XLA's GPU compiler fuses along the same lines as its CPU
one but not identically: an approximation the prediction states.
"""

from __future__ import annotations

import time
from typing import Any

SOURCE = "XLA's cost analysis and kernels of the compiled step"

_STATE: dict[str, Any] = {}


def remember(st: Any, w: Any, args: tuple, kwargs: dict, batch_args: list[int]) -> None:
    """The step's first call (``capture._call``): its function and argument shapes, kept for
    :func:`result` where the pre-flight asks for a trace."""
    if not st.spec.trace_step or "step" in _STATE:
        return
    jax = st.jax

    def abstract(x: Any) -> Any:
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return jax.ShapeDtypeStruct(tuple(x.shape), x.dtype)
        return x

    _STATE["step"] = (w._inner, jax.tree_util.tree_map(abstract, args), jax.tree_util.tree_map(abstract, kwargs))
    _STATE["batch_args"], _STATE["batch"] = list(batch_args), int(st.batch or 0)


def _doubled(jax: Any, args: tuple, where: list[int], batch: int) -> tuple:
    """``args`` with the data arguments' leading dimension at twice the batch."""

    def grow(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct) and x.shape and x.shape[0] == batch:
            return jax.ShapeDtypeStruct((2 * batch, *x.shape[1:]), x.dtype)
        return x

    return tuple(jax.tree_util.tree_map(grow, a) if i in where else a for i, a in enumerate(args))


def _compiled(fn: Any, args: tuple, kwargs: dict) -> tuple[list[dict], dict[str, float]]:
    from whichdevice.frameworks.common.hlo import kernels_from_hlo

    c = fn.lower(*args, **kwargs).compile()
    cost = c.cost_analysis()
    if isinstance(cost, list):  # older JAX: one dict per computation
        cost = cost[0] if cost else {}
    totals = {"flops": float((cost or {}).get("flops", 0.0)), "bytes": float((cost or {}).get("bytes accessed", 0.0))}
    ops = kernels_from_hlo(c.as_text() or "")
    _conv_flops(ops, totals["flops"])
    return ops, totals


def _conv_flops(ops: list[dict], total: float) -> None:
    """XLA's FLOPs beyond the dots' given to the convolutions, by their bytes (module doc)."""
    convs = [o for o in ops if o["op_type"] == "convolution"]
    rest = total - sum(o["flops"] for o in ops if o["kind"] == "matmul")
    if not convs or rest <= 0:
        return
    weight = sum(o["bytes"] for o in convs) or float(len(convs))
    for o in convs:
        o["kind"] = "conv"
        o["flops"] = rest * (o["bytes"] or 1.0) / weight


def _trace(jax: Any) -> dict[str, Any]:
    fn, args, kwargs = _STATE["step"]
    batch, where = _STATE["batch"], _STATE["batch_args"]
    ops, totals = _compiled(fn, args, kwargs)
    grown: list[tuple[float, float]] = [(0.0, 0.0)] * len(ops)
    if batch and where:
        ops2, totals2 = _compiled(fn, _doubled(jax, args, where, batch), kwargs)
        if [(o["op_type"], o["kind"]) for o in ops] == [(o["op_type"], o["kind"]) for o in ops2]:
            grown = [(max(b["flops"] - a["flops"], 0.0), max(b["bytes"] - a["bytes"], 0.0)) for a, b in zip(ops, ops2)]
        else:  # fused differently at twice the batch: each kernel grows as the totals do
            gf = min(max(totals2["flops"] / totals["flops"] - 1.0, 0.0), 1.0) if totals["flops"] else 0.0
            gb = min(max(totals2["bytes"] / totals["bytes"] - 1.0, 0.0), 1.0) if totals["bytes"] else 0.0
            grown = [(o["flops"] * gf, o["bytes"] * gb) for o in ops]
        totals |= {"flops_at_twice_batch": totals2["flops"], "bytes_at_twice_batch": totals2["bytes"]}
    precision = getattr(jax.config, "jax_default_matmul_precision", None)
    return {
        "framework": "jax",
        "source": SOURCE,
        "batch": batch,
        "launch_mode": "xla",
        "tf32": precision in (None, "default", "bfloat16", "tensorfloat32"),  # JAX's default on a GPU with TF32
        "ops": [
            {**o, "count": 1, "batched_flops": min(g[0], o["flops"]), "batched_bytes": min(g[1], o["bytes"])}
            for o, g in zip(ops, grown)
        ],
        "totals": totals,
    }


def result(st: Any) -> dict[str, Any] | None:
    """The trace for the baseline's result (None: not asked for). Compiled once; its time is all
    overhead (the step itself ran untraced)."""
    if not st.spec.trace_step:
        return None
    if "trace" in _STATE:
        return dict(_STATE["trace"])
    if "step" not in _STATE:
        return {
            "framework": "jax",
            "source": SOURCE,
            "why_not": "the loop's step is not jitted (XLA compiles no step to analyse)",
        }
    t0 = time.perf_counter()
    try:
        got = _trace(st.jax)
    except Exception as e:  # noqa: BLE001 (a step XLA cannot lower again: said, the measurement goes on)
        got = {"framework": "jax", "source": SOURCE, "why_not": f"the step could not be compiled again ({e})"[:300]}
    wall = time.perf_counter() - t0
    got |= {"collect_s": wall, "overhead_s": wall}
    _STATE["trace"] = got
    return dict(got)
