"""The no-GPU prediction of ``diagnose SCRIPT`` checked against the recorded real H100 runs.

    python benchmarks/script_gpu_prediction.py            # the table of benchmarks/script_gpu_prediction.md
    python benchmarks/script_gpu_prediction.py --overhead # also: what tracing adds to a pre-flight
    python benchmarks/script_gpu_prediction.py --paired   # also: a traced step against an untraced one

- torch: the reference's MLP (100 -> Linear 128 -> ReLU -> Linear 10, Adam, cross-entropy) as a
  script's step is traced (frameworks/torch/steptrace.StepRecorder over one step, at batch 32 only),
  its op list scaled to each batch of ``tests/data/h100_probe_torch.json``'s ``mlp`` rows
  (analysis/scriptpredict.description), the H100 step predicted with that machine's own CPU steps
  (``cpu_step_s``) and compared with the measured ``cuda_step_s``;
- JAX: a jitted float32 square matmul compiled for this CPU (frameworks/jax/steptrace._compiled:
  XLA's cost analysis and kernels), predicted beside ``tests/data/keras_jax_{cpu,gpu}.json``'s
  ``jax_matmul`` steady calls (the same H100 machine).

The H100's host time is modelled from that machine's CPU steps (prediction.host_overhead): the op
times a trace measures here are this CPU's, not that machine's.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
MLP_BATCHES = (1, 4, 10, 32, 128, 512, 2048, 8192, 32768)
JAX_SIZES = (16, 64, 256, 1000, 2000, 4000, 8000)
TRACED_BATCH = 32


def mlp_trace(batch: int = TRACED_BATCH):
    """The reference MLP's training step traced as a script's would be (one step, one batch)."""
    import torch

    from whichdevice.core.records import StepTrace
    from whichdevice.frameworks.torch.steptrace import StepRecorder

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(100, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = torch.randn(batch, 100), torch.randint(0, 10, (batch,))

    def step() -> None:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    step()  # the optimizer's state is made in the first step, as in the pre-flight
    rec = StepRecorder(torch, batch)
    rec.start([opt])
    step()
    rec.stop()
    return StepTrace.model_validate(rec.trace())


def _rows(framework, trace_at, cpu, gpu):
    """(batch, real GPU s, predicted band) per batch, the host time modelled from ``cpu``."""
    from whichdevice.analysis import deviceprofile, errormodel, prediction
    from whichdevice.analysis.scriptpredict import description

    profile = deviceprofile.load(prediction.RUN_PROFILE)
    errors = errormodel.shipped(prediction.RUN_ERRORS)
    steps = {b: (s, s, s) for b, s in cpu.items()}
    described = {b: description(trace_at(b), b) for b in steps}
    answers = prediction.gpu_would_help(framework, steps, described, profile, errors)
    return [(a.batch, gpu[a.batch], a.band) for a in answers if a.band is not None]


def torch_points():
    probe = json.loads((DATA / "h100_probe_torch.json").read_text())
    rows = {int(r["batch"]): r for r in probe["mlp"] if int(r["batch"]) in MLP_BATCHES}
    trace = mlp_trace()
    cpu = {b: r["cpu_step_s"] for b, r in rows.items()}
    gpu = {b: r["cuda_step_s"] for b, r in rows.items()}
    return _rows("torch", lambda _b: trace, cpu, gpu)


def jax_trace(n: int):
    import jax
    import numpy as np

    from whichdevice.core.records import StepTrace
    from whichdevice.frameworks.jax.steptrace import _compiled

    spec = jax.ShapeDtypeStruct((n, n), np.float32)
    ops, totals = _compiled(jax.jit(lambda a, b: a @ b), (spec, spec), {})
    return StepTrace(
        framework="jax",
        source="",
        batch=n,
        launch_mode="xla",
        tf32=True,
        ops=[{**o, "count": 1} for o in ops],
        totals=totals,
    )


def jax_points():
    cpu_run = json.loads((DATA / "keras_jax_cpu.json").read_text())["jax_matmul"]
    gpu_run = json.loads((DATA / "keras_jax_gpu.json").read_text())["jax_matmul"]
    cpu = {int(r["n"]): r["steady_s"] for r in cpu_run if int(r["n"]) in JAX_SIZES}
    gpu = {int(r["n"]): r["steady_s"] for r in gpu_run if int(r["n"]) in cpu}
    traces = {n: jax_trace(n) for n in gpu}
    return _rows("jax", traces.__getitem__, cpu, gpu)


def summary(points) -> tuple[float, int]:
    """Median |log(predicted mid / real)| as a factor, and how many real steps lie in the band."""
    errs = [abs(math.log(band.mid / real)) for _, real, band in points]
    inside = sum(band.low <= real <= band.high for _, real, band in points)
    return math.exp(statistics.median(errs)), inside


def overhead(script: str, runs: int = 3) -> list[tuple[float, float, float]]:
    """(pre-flight wall, traced step's collect_s, overhead_s) of ``runs`` pre-flights of ``script``."""
    from whichdevice.workloads import scriptplan

    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        facts = scriptplan.preflight({"script": script, "args": []}, 60)
        t = facts.get("step_trace") or {}
        out.append((time.perf_counter() - t0, float(t.get("collect_s") or 0), float(t.get("overhead_s") or 0)))
    return out


def paired_overhead(pairs: int = 15) -> tuple[list[float], list[float], list[float]]:
    """torch_cnn.py's step (its Net, batch 32, SGD with momentum) in ``pairs`` alternating pairs:
    untraced, then traced (the recorder as the pre-flight runs it): the two walls and the
    recording's own time (``trace_s``) per pair."""
    import torch

    from whichdevice.frameworks.torch.steptrace import StepRecorder

    sys.path.insert(0, str(ROOT / "tests" / "script_corpus"))
    from torch_cnn import Net  # type: ignore[import-not-found]

    torch.manual_seed(0)
    net, loss_fn = Net(), torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))

    def step() -> None:
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    plain, traced, recording = [], [], []
    for _ in range(pairs):
        t0 = time.perf_counter()
        step()
        plain.append(time.perf_counter() - t0)
        rec = StepRecorder(torch, 32)
        rec.start([opt])
        step()
        rec.stop()
        traced.append(rec.wall_s)
        recording.append(rec.trace_s)
    return plain, traced, recording


def main(argv: list[str]) -> int:
    for name, points in (("torch MLP (traced at batch 32)", torch_points()), ("JAX jitted matmul", jax_points())):
        print(f"\n{name}: batch | real H100 | predicted (band) | predicted / real")
        for b, real, band in points:
            inside = "in band" if band.low <= real <= band.high else "OUTSIDE"
            print(
                f"  {b:>6} | {real * 1e3:8.3f} ms | {band.mid * 1e3:8.3f} ms "
                f"({band.low * 1e3:.3f}–{band.high * 1e3:.3f}) | {band.mid / real:5.2f}× {inside}"
            )
        factor, inside = summary(points)
        print(f"  median error ×{factor:.2f}; {inside} of {len(points)} real steps inside the band")
    if "--paired" in argv:
        plain, traced, recording = paired_overhead()
        med = statistics.median
        print(
            f"\ntorch_cnn.py's step, {len(plain)} alternating pairs: untraced median {med(plain) * 1e3:.1f} ms, "
            f"traced {med(traced) * 1e3:.1f} ms (ratio {med(t / p for t, p in zip(traced, plain)):.2f}), "
            f"the recording itself {med(recording) * 1e3:.1f} ms"
        )
    if "--overhead" in argv:
        for script in ("torch_cnn.py", "jax_optax_loop.py"):
            got = overhead(str(ROOT / "tests" / "script_corpus" / script))
            print(f"\n{script}: pre-flight wall, trace collect_s, overhead_s per run: {got}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
