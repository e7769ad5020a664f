"""Calibration probes (``whichdevice calibrate``) and the step description (``predict``).

One workload, ``calibrate``, with a ``probe`` parameter:

- ``tiny_eager``: one 1-element add, eager, queued without a sync per call;
- ``tiny_sync``: the same plus a ``.numpy()`` read per call (difference: the sync cost);
- ``graph`` (``k``): a compiled function of ``k`` chained 1-element ops; k = 0 gives the
  per-call cost of a compiled step, (t(k) - t(0)) / k the per-op cost inside it;
- ``matmul`` (``n``): square float32 matmul, operands on the device;
- ``elementwise`` (``bytes``): ``a + b`` moving that many bytes;
- ``h2d`` / ``d2h`` (``bytes``): copies between host and device (GPU devices only);
- ``describe`` (train-case model parameters + ``batch``): no timing of interest — traces
  one training step and returns its op list (kind, FLOPs, bytes per op) flattened into the
  metrics; its "timing" is the trace time.

The framework's probes come from ``whichdevice.frameworks.<name>.calibration`` (``frameworks.part``; or
``fw.calibration`` when the caller provides one, as the fake-clock tests do), timed by
``timing.measure`` with ``fw.clock`` when given.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from whichdevice.core.records import CaseSpec, Timing, scalar_float, scalar_int
from whichdevice.core.timing import TimingPolicy, measure
from whichdevice.workloads.fixes import BATCH

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import Calibration, CalibrationProbes

MATMUL_N: tuple[int, ...] = (1, 16, 64, 128, 256, 512, 1024)
GPU_MATMUL_N: tuple[int, ...] = MATMUL_N + (2048, 4096)
ELEMENTWISE_BYTES: tuple[int, ...] = (12, 12_000, 120_000, 1_200_000, 12_000_000, 48_000_000)
COPY_BYTES: tuple[int, ...] = (4, 4096, 65536, 1 << 20, 16 << 20, 64 << 20)
# Ops in the in-graph dispatch probe's chain: its time minus the empty call's is the signal.
# 256 (was 64): ~0.3-0.5 ms of per-op cost on a CPU, above the call's jitter on a busy machine.
GRAPH_CHAIN = 256


def skipped_probes(framework: str) -> tuple[str, ...]:
    """The probes that do not apply to ``framework`` (its env.py's ``CALIBRATE_SKIPS``: PyTorch
    has no compiled chain); none for a name that is not a framework folder (the fake-clock tests)."""
    from whichdevice import frameworks

    if framework not in frameworks.FRAMEWORKS:
        return ()
    return tuple(getattr(frameworks.env_module(framework), "CALIBRATE_SKIPS", ()))


def build_cases(framework: str, device: str, kind: str) -> list[CaseSpec]:
    """Every probe for one device, cheapest first (less the framework's ``skipped_probes``)."""

    def spec(**params) -> CaseSpec:
        return CaseSpec(workload="calibrate", framework=framework, device=device, params=params)

    cases = [spec(probe="tiny_eager"), spec(probe="tiny_sync")]
    if "graph" not in skipped_probes(framework):
        cases += [spec(probe="graph", k=k) for k in (0, GRAPH_CHAIN)]
    cases += [spec(probe="matmul", n=n) for n in (GPU_MATMUL_N if kind == "gpu" else MATMUL_N)]
    cases += [spec(probe="elementwise", bytes=b) for b in ELEMENTWISE_BYTES]
    if kind == "gpu":
        cases += [spec(probe=p, bytes=b) for p in ("h2d", "d2h") for b in COPY_BYTES]
    return cases


def describe_cases(framework: str, device: str, model_params: dict, batches) -> list[CaseSpec]:
    return [
        CaseSpec(
            workload="calibrate",
            framework=framework,
            device=device,
            params={**model_params, "probe": "describe", BATCH.param: b},
        )
        for b in sorted(batches)
    ]


def encode_ops(ops: list[dict], input_bytes: float, launch_mode: str = "graph", tf32: bool = False) -> dict[str, float]:
    """Flatten an op list into float metrics: ``op.<i>.<kind>.<type>.flops`` / ``.bytes``;
    free ops only counted (``free_ops``); how the framework launches them as
    ``launch_mode.<mode>`` = 1 (graph, xla or eager: costmodel.py); ``tf32`` = 1 when the
    framework runs float32 matmuls as TF32 on a GPU that has it."""
    m: dict[str, float] = {
        "input_bytes": float(input_bytes),
        "free_ops": 0.0,
        f"launch_mode.{launch_mode}": 1.0,
        "tf32": 1.0 if tf32 else 0.0,
    }
    i = 0
    for o in ops:
        if o["kind"] == "free":
            m["free_ops"] += 1
            continue
        key = f"op.{i:05d}.{o['kind']}.{o['op_type']}"
        m[key + ".flops"] = float(o["flops"])
        m[key + ".bytes"] = float(o["bytes"])
        i += 1
    return m


# ---------------- inside the child ----------------


def _calibration(fw) -> Calibration:
    """The framework's calibration module (or ``fw.calibration`` when the caller provides one,
    as the fake-clock tests do)."""
    from whichdevice import frameworks

    return getattr(fw, "calibration", None) or frameworks.part(fw.name, "calibration")


def _probes(fw) -> CalibrationProbes:
    """The calibration module with the ``calibrate`` probes (TensorFlow's), or ``fw.calibration``."""
    from whichdevice import frameworks

    return getattr(fw, "calibration", None) or frameworks.part(fw.name, "probes")


def run_case(spec: CaseSpec, fw, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict]:
    p = spec.params
    probe = p["probe"]
    if probe == "describe":
        return _describe(spec, fw, overhead_s)
    cal = _probes(fw)
    dev = spec.device
    if probe == "tiny_eager":
        metrics: dict[str, float]
        fn, metrics = cal.tiny_eager(dev), {}
    elif probe == "tiny_sync":
        fn, metrics = cal.tiny_sync(dev), {}
    elif probe == "graph":
        fn, metrics = cal.graph_chain(dev, scalar_int(p["k"])), {"ops_per_call": scalar_float(p["k"])}
    elif probe == "matmul":
        n = scalar_int(p["n"])
        # TensorFlow's probe is the matmul workload's own steady op (placement checked there).
        fn = cal.matmul(dev, n) if hasattr(cal, "matmul") else fw.ops.matmul_steady(n, "float32", dev)
        metrics = {"flops_per_call": 2.0 * n**3}
    elif probe in ("elementwise", "h2d", "d2h"):
        fn, metrics = getattr(cal, probe)(dev, scalar_int(p["bytes"])), {"bytes_per_call": scalar_float(p["bytes"])}
    else:
        raise ValueError(f"unknown calibration probe {probe!r}")
    clock = getattr(fw, "clock", time.perf_counter)
    raw = measure(fn, sync=fw.sync.sync, clock=clock, policy=policy, overhead_s=overhead_s)
    return raw, metrics


def _describe(spec: CaseSpec, fw, overhead_s: float) -> tuple[Timing, dict]:
    from whichdevice.frameworks.common.casemodel import CaseModel

    from whichdevice import frameworks

    training = frameworks.part(fw.name, "training")
    cal = _calibration(fw)
    m = CaseModel(spec.params, training)
    b = scalar_int(spec.params[BATCH.param])
    t0 = time.perf_counter()
    with fw.placement.scope(spec.device):
        model = m.build()
        opt, loss = m.optimizer_and_loss(model)
        x, y = m.one_batch(training, b)
        described = cal.describe_train(model, opt, loss, training, x, y)
    trace_s = time.perf_counter() - t0
    raw = Timing(
        first_call_s=trace_s, warmup_s=[trace_s], samples_s=[trace_s], number_per_sample=1, overhead_s=overhead_s
    )
    # Input bytes as the step receives them: float64 host arrays become float32 on the device.
    x_bytes = (
        x.nbytes // 2
        if getattr(x, "dtype", None) is not None and x.dtype.itemsize == 8 and x.dtype.kind == "f"
        else x.nbytes
    )
    return raw, encode_ops(
        described["ops"], float(x_bytes + y.nbytes), described.get("launch_mode", "graph"), described.get("tf32", False)
    )
