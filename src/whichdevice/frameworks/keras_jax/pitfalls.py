"""Keras-on-JAX's benchmarking mistakes for ``whichdevice pitfalls --framework keras-jax``.
Importable in the parent (JAX is imported inside :func:`run_case` only).

Measured by the ``train`` workload's kinds where one fits (``loop``: the first step of a
100-step loop compiles the jitted step, so timing it puts the compile inside the timing;
``nosync``: no ``block_until_ready``; ``steady``: ``float(loss)`` every step, a tiny batch),
and one kind of its own (``pitfall``, ``mistake=device_put``): the step fed
``jax.device_put(x)``, ``jax.device_put(y)`` of the host batch at every call, timed as the
steady step on a batch put on the device once (its right figure).

JAX dispatches asynchronously on the CPU too (a jitted call returns once the work is queued),
so the no-sync mistake is measured on every device: nothing here is GPU-only.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

from typing import TYPE_CHECKING, Any

from whichdevice.core.records import CaseSpec, scalar_int
from whichdevice.frameworks.common.pitfalls import LARGE_BATCH, NOSYNC_STEPS, SEED_BATCH, seed_case

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import Framework

MISTAKES: tuple[str, ...] = ("compile_in_timing", "no_sync", "sync_each", "device_put", "small_batch")
GPU_ONLY: tuple[str, ...] = ()


def cases(framework: str, device: str, *, quick: bool, is_cpu: bool) -> tuple[list[CaseSpec], list[CaseSpec]]:
    """(cases for the default child, none for a one-thread child: JAX has no thread setting)."""

    t = seed_case(framework, device)
    main = [
        t(kind="loop", example="ex2", samples=1000, batch=SEED_BATCH, data="numpy", epochs=1),  # compile timed
        t(kind="steady", batch=SEED_BATCH, sync="none"),  # right figure for float(loss), no sync, device_put, batch
        t(kind="steady", batch=SEED_BATCH, sync="each"),  # float(loss) every step
        t(kind="nosync", batch=SEED_BATCH, steps=NOSYNC_STEPS // (2 if quick else 1)),  # no block_until_ready
        t(kind="pitfall", mistake="device_put", batch=SEED_BATCH),  # device_put every step
        t(kind="steady", batch=LARGE_BATCH, sync="none"),  # the batch pitfall's right figure
    ]
    return main, []


def run_case(spec: CaseSpec, fw: Framework, policy: Any, overhead_s: float) -> tuple[Any, dict]:
    if spec.params.get("mistake") != "device_put":
        raise ValueError(f"keras-jax has no pitfall case {spec.params.get('mistake')!r}")
    import jax

    from whichdevice import frameworks
    from whichdevice.core.timing import measure
    from whichdevice.frameworks.common.casemodel import CaseModel
    from whichdevice.frameworks.jax.placement import jax_device

    training = frameworks.part(fw.name, "training")
    m = CaseModel(spec.params, training)
    b = scalar_int(spec.params[fixkeys.BATCH])
    dev = jax_device(spec.device)
    with fw.placement.scope(spec.device):
        step, x, y = m.step_and_batch(training, b)

    def fn():
        with fw.placement.scope(spec.device):
            return step(jax.device_put(x, dev), jax.device_put(y, dev))

    raw = measure(fn, sync=fw.sync.sync, policy=policy, overhead_s=overhead_s)
    return raw, {"samples_per_step": float(b), "feed_bytes": float(x.nbytes + y.nbytes)}
