"""Mixed-precision A/B cases (``train --precision``, and the suite's mixed-precision fix): one
``precision`` case per policy and device, float32 always included as the reference. Parent side:
builds CaseSpecs only (the child side is ``workloads/precision.py``)."""

from __future__ import annotations

from whichdevice.core.records import CaseSpec
from whichdevice.workloads.fixes import BATCH, PRECISION, PRECISION_KIND

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# Seed 002 (Dense 256-128-1, batch 512) is the seeds' most compute-heavy model: where 16-bit math could pay.
SEED_RUN = dict(model="seed002", example="seed002", samples=10_000, batch=512, data="tfdata_shuffle")
QUICK_SAMPLES = 5_120


def cases(
    framework: str,
    device: str,
    policies: list[str],
    *,
    user: dict | None,
    quick: bool,
    samples: int | None,
    user_batch: int,
) -> list[CaseSpec]:
    if not policies:
        return []
    if user:
        run = {**user, "example": "user", "samples": samples or 10_000, BATCH.param: user_batch, "data": "tfdata"}
    else:
        run = {**SEED_RUN, "samples": QUICK_SAMPLES if quick else SEED_RUN["samples"]}
    order = sorted(set(policies) | {"float32"}, key=POLICIES.index)  # float32 is always the reference
    n_epochs = 2 if quick else 3
    return [
        CaseSpec(
            workload="train",
            framework=framework,
            device=device,
            params={**run, "kind": PRECISION_KIND, PRECISION.param: p, "epochs": n_epochs},
        )
        for p in order
    ]
