"""Named verdict rules: why one device wins, from the shape of measured curves.

Each rule is a function with its threshold as a module constant and the threshold's
source (STYLE.md principle 5). Rules read analysis tables; they never measure.

The central observation (TensorFlow's GPU performance guide; HTA's "short kernel" notion,
ANCHORS.md): a device whose time per step does not grow when the work grows is not
computing, it is paying a fixed per-step cost — kernel launches, framework dispatch,
synchronization. On a log-log plot of time vs work that is a flat line; a device that is
computing shows a slope near the work's own exponent (1 for batch size, 3 for a matmul's n).

    time ▲                        ___ CPU  (slope ≈ 1: compute-bound)
         │                    ___/
         │ ─────────────────/────── GPU  (slope ≈ 0: at its per-step floor)
         │             ___/
         └──────────────────────────▶ work (batch, n)   [log-log]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from whichdevice.analysis.sweep import Table
from whichdevice.analysis.warmup import BreakEven

# Local log-log slope below which a device's time is "flat": growing the work 16x costs
# < 1.75x more time. Our own threshold, checked on the recorded H100 MLP sweep
# (tests/data/h100_probe_torch.json: GPU step 1.2 ms -> 1.0 ms from batch 1 to 32768).
FLAT_SLOPE = 0.2
# At or above this slope the time follows the work: the device is computing.
SCALING_SLOPE = 0.5
# The span (ratio of x) over which the local slope is taken: wide enough to average
# out per-point noise, narrow enough to describe the top of the range.
SLOPE_SPAN = 4.0


def loglog_slope(xs: Sequence[float], ts: Sequence[float], span: float = SLOPE_SPAN) -> float | None:
    """Slope of log t vs log x between the largest x and the largest x' <= x / span."""
    pts = sorted(zip(xs, ts))
    if len(pts) < 2:
        return None
    x1, t1 = pts[-1]
    lower = [(x, t) for x, t in pts[:-1] if x <= x1 / span] or [pts[0]]
    x0, t0 = lower[-1]
    if x0 == x1 or t0 <= 0 or t1 <= 0:
        return None
    return math.log(t1 / t0) / math.log(x1 / x0)


def regime(xs: Sequence[float], ts: Sequence[float]) -> str:
    """'floor' (flat: a fixed per-step cost dominates), 'scaling' (compute-bound),
    'between', or 'unknown' (too few points)."""
    slope = loglog_slope(xs, ts)
    if slope is None:
        return "unknown"
    if slope < FLAT_SLOPE:
        return "floor"
    if slope >= SCALING_SLOPE:
        return "scaling"
    return "between"


@dataclass(frozen=True)
class Finding:
    """One verdict line: which rule fired, on what, and what to do about it."""

    rule: str  # e.g. "launch_bound", "compute_bound"
    device: str
    text: str
    advice: str = ""


def device_regimes(table: Table) -> dict[str, str]:
    out = {}
    for d in table.devices:
        pts = [(r.x, t.median_s) for r in table.rows if d in r.cells and (t := r.cells[d].timing) is not None]
        out[d] = regime([x for x, _ in pts], [t for _, t in pts])
    return out


def sweep_findings(table: Table, x_label: str) -> list[Finding]:
    """Rules on one sweep: at the largest size both devices ran, who wins and why."""
    findings: list[Finding] = []
    regimes = device_regimes(table)
    top = next((r for r in reversed(table.rows) if r.comparisons), None)
    for d, reg in regimes.items():
        if reg == "floor" and d.startswith("GPU"):
            floor = min(t.median_s for r in table.rows if d in r.cells and (t := r.cells[d].timing) is not None)
            findings.append(
                Finding(
                    "launch_bound",
                    d,
                    f"{d}: time flat in {x_label} (log-log slope < {FLAT_SLOPE}): it sits at a per-step floor of "
                    f"≈{floor * 1e3:.3g} ms of kernel launches, dispatch and synchronization, not computing",
                    f"give each step more work: a larger {x_label}, steps_per_execution, or jit_compile to fuse ops",
                )
            )
        elif reg == "scaling":
            findings.append(
                Finding(
                    "compute_bound",
                    d,
                    f"{d}: time grows with {x_label} (log-log slope ≥ {SCALING_SLOPE}): compute-bound at the top of the range",
                )
            )
    if top is not None:
        for d, comp in top.comparisons.items():
            if comp.winner is None:
                findings.append(Finding("no_difference", d, f"at {x_label}={top.x:g}: {comp.describe()}"))
            elif comp.winner == d:
                findings.append(Finding("gpu_wins", d, f"at {x_label}={top.x:g}: {comp.describe()}"))
            else:
                findings.append(
                    Finding(
                        "cpu_wins",
                        d,
                        f"at {x_label}={top.x:g}: {comp.describe()}",
                        "for work this small the CPU is the right device",
                    )
                )
    return findings


def warmup_dominated(be: BreakEven, run_steps: int) -> bool:
    """Rule 'warm-up dominated': the GPU would not pay back its extra one-time cost within
    the run (break-even from analysis/warmup.py: never, or after more steps than it has)."""
    if be.kind in ("no_gpu", "no_data"):
        return False  # nothing to say without a GPU run
    return be.n is None or be.n > run_steps
