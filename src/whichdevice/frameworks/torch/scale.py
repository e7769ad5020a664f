"""``scale`` worker for PyTorch: ``DistributedDataParallel`` over N local processes.

Launched as torchrun launches: ``workloads/scale.py`` starts N processes of
``python -m whichdevice.frameworks.torch.scale JOB OUT`` (through ``core.process``) with
``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` set; each joins the
process group (``gloo`` on CPU) with ``init_process_group(init_method="env://")``. Like torchrun
(``OMP_NUM_THREADS=1`` per process by default), each process gets its own share of the cores:
``cores // max N`` intra-op threads at *every* N, the 1-replica baseline included — each replica
is one equal "device", as each DDP replica owns one GPU. (Giving the single process all cores
instead measured 166 ms a step vs 3 ms on this loaded 2-core machine: two OpenMP threads spinning
against other work, not a property of DDP.)

Every rank holds its own slice of the global batch (B / N samples) and runs the same step:
forward, loss, ``backward`` (DDP all-reduces the gradient buckets during it), ``optimizer.step``.

Timing with N processes: the project's timing core decides how many steps a block has and when to
stop from clock readings; every rank must take the same decisions or one would wait in an
all-reduce forever. So every rank reads rank 0's durations (:class:`RankZeroClock`): the timing
core reads the clock in (start, end) pairs; at a start every rank meets in a ``broadcast`` and then
rank 0 reads its clock; at an end rank 0 reads its clock and then broadcasts the duration. Both
broadcasts lie outside the timed block, so the harness's own cost per block is one clock read
(``overhead_s``). Sync: nothing to wait for on the CPU (gloo collectives return when done); the
step's own all-reduce ties the ranks together, and the next start's broadcast lines them up.

All-reduce share: the ``no_sync`` variant is the same step inside ``DDP.no_sync()`` (gradients
not all-reduced); share = (step - no_sync step) / step (method ``no_sync``).

Fix measured: ``accum4`` — gradient accumulation over 4 micro-batches of the same per-replica size
(3 backwards inside ``no_sync()``, the 4th all-reduced, one optimizer step): one call processes 4
global batches and pays one all-reduce.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from whichdevice.frameworks.common import scaleworker as sw


@dataclass(frozen=True)
class _Rank:
    """This process's place in the group, and what every point shares."""

    job: dict
    rank: int
    world: int
    seen: int  # the group's size, read back from the process group
    sync: Callable[[Any], None]


def run(job: dict, emit: sw.Emitter) -> None:
    import torch
    import torch.distributed as dist

    from whichdevice.core.machine import usable_cores
    from whichdevice.core.timing import measure_overhead

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(max(1, usable_cores() // int(job.get("max_replicas", world))))
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    try:
        seen = dist.get_world_size()  # read back from the process group
        emit(
            {
                "type": "hello",
                "devices": [f"process {r}" for r in range(seen)],
                "version": torch.__version__,
                "backend": dist.get_backend(),
            }
        )

        clock = RankZeroClock(torch, dist, rank)

        def sync(_=None) -> None:
            pass  # CPU: every op, gloo's all-reduce included, has finished when it returns

        overhead_s = measure_overhead(time.perf_counter, sync)
        policy = sw.timing_policy(job)
        me = _Rank(job, rank, world, seen, sync)
        for batch, variant in sw.points(job, world):
            make = functools.partial(_make_point, me, batch, variant)
            sw.measure_point(emit, world, batch, variant, make, policy, clock=clock, overhead_s=overhead_s, fatal=True)
    finally:
        dist.destroy_process_group()


def _make_point(me: _Rank, batch: int, variant: str):
    """One point's (step, sync, metrics): the built-in model under DDP, this rank's slice of
    the global ``batch``, and the ``variant``'s step."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from whichdevice.frameworks.torch import training

    if batch % me.world:
        raise ValueError(f"global batch {batch} is not divisible by {me.world} processes")
    local = batch // me.world
    name = me.job["model"]["model"]
    model = training.build_model(name)
    ddp = DistributedDataParallel(model)
    optimizer, loss_fn = training.optimizer_and_loss(name, ddp)
    x, y = sw.data(me.job["model"], batch)
    xb = torch.from_numpy(x[me.rank * local : (me.rank + 1) * local])
    yb = torch.from_numpy(y[me.rank * local : (me.rank + 1) * local])
    params = float(sum(p.numel() for p in model.parameters() if p.requires_grad))
    metrics = {"replicas_seen": float(me.seen), "per_replica_batch": float(local), "params": params}
    metrics["threads_per_replica"] = float(torch.get_num_threads())
    if variant == f"accum{ACCUM}":
        metrics["micro_batches"] = float(ACCUM)
    return _step(variant, ddp, (optimizer, loss_fn), (xb, yb)), me.sync, metrics


def _step(variant: str, ddp, optimizer_loss: tuple, xy: tuple) -> Callable[[], Any]:
    """The variant's step on this rank's batch ``xy``: the plain DDP step, the same inside
    ``no_sync()`` (``no_sync``: no all-reduce) or ``ACCUM`` micro-batches (``accum4``)."""
    optimizer, loss_fn = optimizer_loss
    xb, yb = xy

    local = ddp.no_sync if variant == "no_sync" else contextlib.nullcontext

    def step():
        with local():  # no_sync: the gradients stay local, no all-reduce
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(ddp(xb), yb)
            loss.backward()
        optimizer.step()
        return loss

    def step_accumulated():
        # ACCUM micro-batches, the gradient all-reduced once (the last backward),
        # one optimizer step: the fix that pays the all-reduce once per ACCUM batches.
        optimizer.zero_grad(set_to_none=True)
        with ddp.no_sync():
            for _ in range(ACCUM - 1):
                loss_fn(ddp(xb), yb).backward()
        loss = loss_fn(ddp(xb), yb)
        loss.backward()
        optimizer.step()
        return loss

    if variant == f"accum{ACCUM}":
        return step_accumulated
    return step


# Gradient accumulation (the ``accum4`` variant): micro-batches per optimizer step.
ACCUM = 4


class RankZeroClock:
    """A clock every rank of the group reads alike: rank 0's durations.

    ``core.timing.measure`` reads the clock in pairs, ``t0 = clock()`` ... ``clock() - t0``, and
    decides from the differences only. Start: all ranks meet in a broadcast, then rank 0 reads
    its clock (the others return 0). End: rank 0 reads its clock, then broadcasts the duration;
    every rank returns (its start value + that duration), so ``clock() - t0`` is rank 0's duration
    everywhere and every rank takes the same decisions."""

    def __init__(self, torch, dist, rank: int) -> None:
        self.torch, self.dist, self.rank = torch, dist, rank
        self.start: float | None = None

    def __call__(self) -> float:
        t = self.torch.zeros(1, dtype=self.torch.float64)
        if self.start is None:  # a start: line up, then read
            self.dist.broadcast(t, src=0)
            self.start = time.perf_counter() if self.rank == 0 else 0.0
            return self.start
        start, self.start = self.start, None
        if self.rank == 0:
            t[0] = time.perf_counter() - start
        self.dist.broadcast(t, src=0)
        return start + float(t.item())


def main(argv: list[str]) -> int:
    return sw.start(run, argv, emits=os.environ.get("RANK") == "0")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
