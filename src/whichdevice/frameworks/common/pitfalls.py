"""What every framework's ``pitfalls`` part (``frameworks/<name>/pitfalls.py``) shares: the seed's
batches and steps its cases are measured at, and the one way to name a case of seed 001's model.
Importable in the parent: it imports no framework."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from whichdevice.core.records import CaseSpec

SEED_BATCH = 10  # seed 001 ex2's batch: where per-step costs weigh most
LARGE_BATCH = 512  # seed 002's batch
THREADS_BATCH = 4096  # the one-thread pitfall is about compute: a batch where cores have work to share
NOSYNC_STEPS = 200  # steps of the no-sync loop (workloads/pitfalls.py), alternately synced and not


def seed_case(framework: str, device: str) -> Callable[..., CaseSpec]:
    """``t(**params)``: a ``train`` case of seed 001's model on ``device`` with these parameters."""

    def t(**p: Any) -> CaseSpec:
        return CaseSpec(workload="train", framework=framework, device=device, params={"model": "seed001", **p})

    return t
