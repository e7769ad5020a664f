"""The defaults that a command's ``--help`` states, apart from the modules that plan and measure
the command's cases (``workloads/suite.py``, ``pipeline.py``, ``placement.py``, the API) so that
the help imports none of what they import (the records, pydantic, the analysis)."""

from __future__ import annotations

# run, diagnose
DEFAULT_BUDGET_S = 90.0  # seconds per device

# matmul: a point samples at least this long, then stops as soon as its median's 95 % CI is
# within 5 % (core/timing.py) — a steady matmul point converges in ~0.05 s here; before, every
# point paid a fixed 0.2 s. A point that does not converge samples up to the cap (api.py's).
MATMUL_MIN_TIME_S = 0.05

# pipeline: seed 003's synthetic images (count, side in pixels), by default, with --quick, and
# as the seed wrote them, and the seed's batch
PIPELINE_IMAGES, PIPELINE_SIZE = 512, 128
PIPELINE_QUICK_IMAGES, PIPELINE_QUICK_SIZE = 256, 64
PIPELINE_SEED_IMAGES, PIPELINE_SEED_SIZE, PIPELINE_SEED_BATCH = 1000, 256, 32

# placement: training steps profiled after warm-up, by default and with --quick
PLACEMENT_STEPS = 20
PLACEMENT_QUICK_STEPS = 10

# run, diagnose: the share of a small budget that a reserve takes at most (round 2's, the page's)
RESERVE_SHARE = 0.15
# Seconds of the budget kept for the page after the last case (analysis, report, plots,
# history): measured 2.2-5.5 s at load 7-9 on the 2-core machine (benchmarks/run_budget.md),
# outside the budget until then, so `run --budget 30` took 1.3 x its budget. At most
# RESERVE_SHARE of a small budget. Taken from the first device's round 1: its later rounds
# are the last measured (ABBA), and their window moves earlier by as much. The script plan
# sizes its rounds within what the budget leaves after it.
PAGE_RESERVE_S = 4.0


def page_reserve(budget_s: float) -> float:
    """The seconds of the budget kept for the page after the last case (``PAGE_RESERVE_S``, at
    most ``RESERVE_SHARE`` of the budget)."""
    return min(PAGE_RESERVE_S, RESERVE_SHARE * budget_s)
