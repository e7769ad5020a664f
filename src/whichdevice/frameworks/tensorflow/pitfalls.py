"""TensorFlow's benchmarking mistakes for ``whichdevice pitfalls`` (importable in the parent: it
does not import TensorFlow). Every one is measured by the ``train`` workload's own kinds and
the generic ``nosync`` loop (``workloads/pitfalls.py``): TensorFlow has no kind of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from whichdevice.core.records import CaseSpec

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import Framework

# analysis/pitfalls.py's rows, in the page's order.
MISTAKES: tuple[str, ...] = ("first_epoch", "no_sync", "sync_each", "one_thread", "xla_one_device", "small_batch")
# On a CPU TensorFlow returns from the step after the work is done: the no-sync case is measured
# there too, and the page says it cannot distort (records before issue #42 have it so).
GPU_ONLY: tuple[str, ...] = ()

SEED_BATCH = 10  # seed 001 ex2's batch: where per-step costs weigh most
LARGE_BATCH = 512  # seed 002's batch
THREADS_BATCH = 4096  # the one-thread pitfall is about compute: a batch where cores have work to share
NOSYNC_STEPS = 200


def cases(framework: str, device: str, *, quick: bool, is_cpu: bool) -> tuple[list[CaseSpec], list[CaseSpec]]:
    """(cases for the default child, cases for the one-thread child). Cheapest first."""

    def t(**p) -> CaseSpec:
        return CaseSpec(workload="train", framework=framework, device=device, params={"model": "seed001", **p})

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
