"""TensorFlow's benchmarking mistakes for ``whichdevice pitfalls`` (importable in the parent: it
does not import TensorFlow). Every one is measured by the ``train`` workload's own kinds and
the generic ``nosync`` loop (``workloads/pitfalls.py``): TensorFlow has no kind of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from whichdevice.core.records import CaseSpec
from whichdevice.frameworks.common.pitfalls import LARGE_BATCH, NOSYNC_STEPS, SEED_BATCH, THREADS_BATCH, seed_case

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import Framework

# analysis/pitfalls.py's rows, in the page's order.
MISTAKES: tuple[str, ...] = ("first_epoch", "no_sync", "sync_each", "one_thread", "xla_one_device", "small_batch")
# On a CPU TensorFlow returns from the step after the work is done: the no-sync case is measured
# there too, and the page says it cannot distort (older records have it so).
GPU_ONLY: tuple[str, ...] = ()


def cases(framework: str, device: str, *, quick: bool, is_cpu: bool) -> tuple[list[CaseSpec], list[CaseSpec]]:
    """(cases for the default child, cases for the one-thread child). Cheapest first."""

    t = seed_case(framework, device)
    epochs = 2 if quick else 3
    ex2 = dict(example="ex2", samples=1000, batch=SEED_BATCH, data="numpy")
    main = [
        t(kind="steady", batch=SEED_BATCH, sync="none"),  # right figure for sync, nosync and batch
        t(kind="steady", batch=SEED_BATCH, sync="each"),  # syncing every step
        t(kind="nosync", batch=SEED_BATCH, steps=NOSYNC_STEPS // (2 if quick else 1)),  # clock without sync
        t(kind="steady", batch=LARGE_BATCH, sync="none"),  # the batch pitfall's right figure
        t(kind="steady", batch=THREADS_BATCH, sync="none"),  # the one-thread pitfall's right figure
        t(kind="fit", epochs=epochs, **ex2),  # first epoch vs steady epochs
        t(kind="fit", epochs=2, jit_compile=False, **ex2),  # what jit_compile="auto" gives on a CPU-only machine
        t(kind="fit", epochs=2, jit_compile=True, **ex2),  # what it gives where a GPU is visible
    ]
    one = [t(kind="steady", batch=THREADS_BATCH, sync="none", threads=1)] if is_cpu else []
    return main, one


def run_case(spec: CaseSpec, fw: Framework, policy: Any, overhead_s: float) -> tuple[Any, dict]:
    raise ValueError(f"TensorFlow has no pitfall kind of its own (asked: {spec.params.get('mistake')!r})")
