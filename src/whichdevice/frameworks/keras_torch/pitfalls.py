"""Keras-on-torch's benchmarking mistakes for ``whichdevice pitfalls --framework keras-torch``.
Importable in the parent (nothing here imports Keras or torch).

Every one is measured by the ``train`` workload's own kinds: the first step of seed 001 ex2's
loop timed alone (``loop``), ``model.fit``'s first epoch against the later ones (``fit``: Keras'
``jit_compile="auto"`` is eager on torch, so no compile is in it), the loss read back every step
and a tiny batch (``steady``), one CPU thread (``torch.set_num_threads(1)``, its own child) and,
on a GPU, the clock read without ``torch.cuda.synchronize`` (``nosync``). torch's CPU ops
return when done: on a CPU the no-sync mistake is said, not measured. Keras has no kind of its
own here (its DataLoader and torch.compile are plain torch's: ``--framework torch``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from whichdevice.core.records import CaseSpec
from whichdevice.frameworks.common.pitfalls import LARGE_BATCH, NOSYNC_STEPS, SEED_BATCH, THREADS_BATCH, seed_case

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import Framework

MISTAKES: tuple[str, ...] = ("first_step", "first_epoch", "no_sync", "sync_each", "one_thread", "small_batch")
GPU_ONLY: tuple[str, ...] = ("no_sync",)


def cases(framework: str, device: str, *, quick: bool, is_cpu: bool) -> tuple[list[CaseSpec], list[CaseSpec]]:
    """(cases for the default child, the one-thread child's). The first-step loop first: its
    first step carries the process's one-time costs, as a user's script's does."""

    t = seed_case(framework, device)
    ex2 = dict(example="ex2", samples=1000, batch=SEED_BATCH, data="numpy")
    main = [
        t(kind="loop", epochs=1, **ex2),  # the first step timed alone
        t(kind="steady", batch=SEED_BATCH, sync="none"),
        t(kind="steady", batch=SEED_BATCH, sync="each"),  # the loss read back every step
        *([] if is_cpu else [t(kind="nosync", batch=SEED_BATCH, steps=NOSYNC_STEPS // (2 if quick else 1))]),
        t(kind="steady", batch=LARGE_BATCH, sync="none"),
        *([t(kind="steady", batch=THREADS_BATCH, sync="none")] if is_cpu else []),
        t(kind="fit", epochs=2 if quick else 3, **ex2),  # model.fit's first epoch vs the later ones
    ]
    one = [t(kind="steady", batch=THREADS_BATCH, sync="none", threads=1)] if is_cpu else []
    return main, one


def run_case(spec: CaseSpec, fw: Framework, policy: Any, overhead_s: float) -> tuple[Any, dict]:
    raise ValueError(f"keras-torch has no pitfall kind of its own (asked: {spec.params.get('mistake')!r})")
