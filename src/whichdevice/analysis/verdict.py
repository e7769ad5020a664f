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

from whichdevice.analysis.compare import Comparison
from whichdevice.analysis.sweep import Table

# Local log-log slope below which a device's time is "flat": growing the work 16x costs
# < 1.75x more time. Our own threshold, checked on the recorded H100 MLP sweep
# (tests/data/h100_probe_torch.json: GPU step 1.2 ms -> 1.0 ms from batch 1 to 32768).
FLAT_SLOPE = 0.2
# At or above this slope the time follows the work: the device is computing.
SCALING_SLOPE = 0.5
# The span (ratio of x) over which the local slope is taken: wide enough to average
# out per-point noise, narrow enough to describe the top of the range.
SLOPE_SPAN = 4.0


def loglog_slope(xs: Sequence[float], ts: Sequence[float]) -> float | None:
    """Slope of log t vs log x between the largest x and the largest x' <= x / ``SLOPE_SPAN``."""
    pts = sorted(zip(xs, ts))
    if len(pts) < 2:
        return None
    x1, t1 = pts[-1]
    lower = [(x, t) for x, t in pts[:-1] if x <= x1 / SLOPE_SPAN] or [pts[0]]
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
    """One rule that fired on a sweep, on which device, with what the presenter needs to say
    it (present/suitepage.finding_text): the swept parameter, the per-step floor of a
    launch-bound device, and the size and comparison at the top of the range."""

    rule: str  # launch_bound | compute_bound | no_difference | gpu_wins | cpu_wins
    device: str
    x_label: str  # the swept parameter: "n", "batch"
    floor_s: float | None = None  # launch_bound: the lowest median over the sweep
    x: float | None = None  # the largest size both devices ran (the *_wins and no_difference rules)
    comparison: Comparison | None = None


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
            findings.append(Finding("launch_bound", d, x_label, floor_s=floor))
        elif reg == "scaling":
            findings.append(Finding("compute_bound", d, x_label))
    if top is not None:
        for d, comp in top.comparisons.items():
            rule = "no_difference" if comp.winner is None else ("gpu_wins" if comp.winner == d else "cpu_wins")
            findings.append(Finding(rule, d, x_label, x=top.x, comparison=comp))
    return findings
