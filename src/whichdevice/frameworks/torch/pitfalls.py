"""PyTorch's benchmarking mistakes for ``whichdevice pitfalls --framework torch``. Importable in
the parent (torch is imported inside :func:`run_case` only).

Measured by the ``train`` workload's kinds where one fits (``steady``: ``.item()`` every step,
a tiny batch, one CPU thread; ``loop``: the first iteration timed; ``nosync``: no
``torch.cuda.synchronize``), and by two kinds of its own (``pitfall`` cases):

- ``compile``: ``torch.compile`` inside the timing. A 100-step loop (seed 001 ex2's epoch) of
  the compiled model, every step synchronized and timed: its first step compiles. The wrong
  figure is that loop's time per step, the right one its steady steps' median. ``--quick``
  compiles with ``backend="aot_eager"`` (TorchDynamo's capture and AOTAutograd, no code
  generation: seconds), the full run with torch's default (Inductor, which compiles C++ on
  a CPU: tens of seconds on 2 cores); the record says which.
- ``num_workers``: the ``DataLoader`` fetching seed 001's samples (one ``__getitem__`` a sample
  and the default collate, shuffled) in the training process (``num_workers=0``, the default)
  against 2 worker processes; whole passes, each step's fetch, step and ``.item()`` timed
  (``core.steps.time_loop``), a pass's first step (workers starting) left out.

The no-sync mistake is GPU-only: torch's CPU ops return when done, so an unsynchronized clock
cannot distort a CPU timing; on a CPU it is said, not measured.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

from typing import TYPE_CHECKING, Any

from whichdevice.core.records import CaseSpec, scalar_int
from whichdevice.frameworks.common.pitfalls import LARGE_BATCH, NOSYNC_STEPS, SEED_BATCH, THREADS_BATCH, seed_case

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import Framework

MISTAKES: tuple[str, ...] = (
    "first_step",
    "no_sync",
    "sync_each",
    "compile_in_timing",
    "num_workers",
    "one_thread",
    "small_batch",
)
GPU_ONLY: tuple[str, ...] = ("no_sync",)

LOADER_BATCH = 32
LOADER_WORKERS = 2
COMPILE_STEPS = 100  # seed 001 ex2's epoch: 1000 samples, batch 10


def cases(framework: str, device: str, *, quick: bool, is_cpu: bool) -> tuple[list[CaseSpec], list[CaseSpec]]:
    """(cases for the default child, cases for the one-thread child). The first-step loop
    first: its first step carries the process's one-time costs, as a user's script's does."""

    t = seed_case(framework, device)
    loader = dict(kind="pitfall", mistake="num_workers", batch=LOADER_BATCH, samples=512 if quick else 2048)
    main = [
        t(kind="loop", example="ex2", samples=1000, batch=SEED_BATCH, data="numpy", epochs=1),  # first step
        t(kind="steady", batch=SEED_BATCH, sync="none"),  # right figure for .item(), no sync and batch
        t(kind="steady", batch=SEED_BATCH, sync="each"),  # .item() every step
        *([] if is_cpu else [t(kind="nosync", batch=SEED_BATCH, steps=NOSYNC_STEPS // (2 if quick else 1))]),
        t(kind="steady", batch=LARGE_BATCH, sync="none"),  # the batch pitfall's right figure
        *([t(kind="steady", batch=THREADS_BATCH, sync="none")] if is_cpu else []),  # one thread's right figure
        t(kind="pitfall", mistake="compile", batch=SEED_BATCH, steps=COMPILE_STEPS, backend=_backend(quick)),
        t(**loader, workers=0),
        t(**loader, workers=LOADER_WORKERS),
    ]
    one = [t(kind="steady", batch=THREADS_BATCH, sync="none", threads=1)] if is_cpu else []
    return main, one


def _backend(quick: bool) -> str:
    return "aot_eager" if quick else "inductor"


def run_case(spec: CaseSpec, fw: Framework, policy: Any, overhead_s: float) -> tuple[Any, dict]:
    mistake = spec.params.get("mistake")
    if mistake == "compile":
        return _compile(spec, fw, overhead_s)
    if mistake == "num_workers":
        return _loader(spec, fw, overhead_s)
    raise ValueError(f"torch has no pitfall case {mistake!r}")


def _built(spec: CaseSpec, fw: Framework):
    from whichdevice import frameworks
    from whichdevice.frameworks.common.casemodel import CaseModel

    training = frameworks.part(fw.name, "training")
    m = CaseModel(spec.params, training)
    model = m.build()
    return training, m, model


def _compile(spec: CaseSpec, fw: Framework, overhead_s: float) -> tuple[Any, dict]:
    """``torch.compile(model)`` then a loop of ``steps`` synchronized, timed steps: the first compiles."""
    import torch

    from whichdevice.core.steps import raw_from_steps, time_loop

    steps = scalar_int(spec.params.get("steps", COMPILE_STEPS))
    with fw.placement.scope(spec.device):
        training, m, model = _built(spec, fw)
        opt, loss = m.optimizer_and_loss(model)
        compiled = torch.compile(model, backend=str(spec.params.get("backend", "inductor")))
        step = training.train_step(compiled, opt, loss)
        x, y = m.one_batch(training, scalar_int(spec.params[fixkeys.BATCH]))
        xb, yb = training.on_device(x, y, fw.placement.scope(spec.device))
        times = time_loop(range(steps), lambda _: step(xb, yb), sync=fw.sync.sync)
    return raw_from_steps(times, warmup_steps=1, overhead_s=overhead_s), {
        "samples_per_step": float(scalar_int(spec.params[fixkeys.BATCH])),
        "steps": float(len(times)),
        "loop_s": float(sum(times)),
    }


class _Samples:
    """Seed 001's samples, one ``__getitem__`` each (a ``torch.utils.data.Dataset``'s protocol)."""

    def __init__(self, x, y) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        import torch

        return torch.from_numpy(self.x[i]).float(), int(self.y[i])


def _loader(spec: CaseSpec, fw: Framework, overhead_s: float) -> tuple[Any, dict]:
    """Passes over a ``DataLoader`` with ``workers`` processes; each step's fetch, step and
    ``.item()`` timed; a pass's first step (workers starting) apart."""
    import torch

    from whichdevice.core.records import Timing
    from whichdevice.core.steps import time_loop
    from whichdevice.frameworks.torch.placement import host

    b, n, workers = (scalar_int(spec.params[k]) for k in (fixkeys.BATCH, "samples", "workers"))
    with fw.placement.scope(spec.device):
        training, m, model = _built(spec, fw)
        opt, loss = m.optimizer_and_loss(model)
        step = training.train_step(model, opt, loss)
        x, y = m.arrays(n)
    with host():
        loader: Any = torch.utils.data.DataLoader(_Samples(x, y), batch_size=b, shuffle=True, num_workers=workers)  # type: ignore[arg-type]
    firsts: list[float] = []
    steady: list[float] = []
    for i in range(3):  # a warm-up pass, then two
        with host():  # the loader read on the host (its sampler's generator is a CPU one); the step copies
            t = time_loop(loader, lambda xy: training.read_back(step(xy[0], xy[1])), sync=fw.sync.sync)
        firsts.append(t[0])
        if i:
            steady += t[1:]
    timing = Timing(
        first_call_s=firsts[0], warmup_s=firsts, samples_s=steady, number_per_sample=1, overhead_s=overhead_s
    )
    return timing, {"samples_per_step": float(b), "workers": float(workers), "passes": 2.0}
