"""Would a GPU help the user's own script? ``diagnose SCRIPT`` on a machine without a GPU: the
step the pre-flight traced (``RunRecord.step_trace``: its ops, FLOPs and bytes, read from the
framework's own trace on the CPU) set beside the steps this CPU measured, at the script's batch
and at each batch the sweep measured, with the reference GPU's step predicted by the cost model
(``costmodel.py``) on the shipped profile and calibrated on its validation errors — the same
``prediction.gpu_would_help`` and ``gpudecision.decide`` that ``run`` answers with.

At a batch other than the traced one each op's FLOPs and bytes are its fixed part plus its
batch-proportional part scaled to that batch (``TracedOp.batched_*``: the trace says which
part grows with the batch). The step's host time — the script's Python, autograd's bookkeeping,
its data loading in the loop's process — is measured where the trace timed its ops (torch: the
traced step's wall less its time inside its ops and the recording's, ``measured_host_s``), else modelled
from this CPU's steps (``prediction.host_overhead``, JAX); it is taken to be the GPU machine's
host time too, at every batch (the loop's data loading growing with the batch is not added).
"""

from __future__ import annotations

from whichdevice.analysis import costmodel, errormodel
from whichdevice.analysis.costmodel import OpCost, WorkloadDescription
from whichdevice.analysis.deviceprofile import DeviceProfile
from whichdevice.analysis.prediction import GpuAnswer, PredictReport, answer, gpu_would_help, report_of, rows_said
from whichdevice.analysis.values import as_int
from whichdevice.core.records import RunRecord, StepTrace
from whichdevice.workloads.fixes import BATCH, SYNC, params_of


def description(trace: StepTrace, batch: int) -> WorkloadDescription:
    """The traced step's op list at ``batch`` (module doc); the traced batch unknown (0): as traced."""
    scale = batch / trace.batch if trace.batch and batch else 1.0
    ops: list[OpCost] = []
    free = 0
    for o in trace.ops:
        if o.kind == "free":
            free += o.count
            continue
        flops = o.flops - o.batched_flops + o.batched_flops * scale
        nbytes = o.bytes - o.batched_bytes + o.batched_bytes * scale
        ops += [OpCost(op_type=o.op_type, kind=o.kind, flops=max(flops, 0.0), bytes=max(nbytes, 0.0))] * o.count
    return WorkloadDescription(
        batch=max(batch or trace.batch, 1),
        ops=ops,
        input_bytes=0.0,
        free_ops=free,
        launch_mode=trace.launch_mode,
        compiled=trace.launch_mode != "eager",
        tf32=trace.tf32,
    )


def measured_host_s(trace: StepTrace, measured: dict[int, tuple[float, float, float]]) -> float | None:
    """The step's host time measured on this CPU in the traced step (``host_s``: its wall less the
    time inside its ops and the recording's own), or, from a trace that timed its ops only, an
    untraced step (its median at the traced batch) less them; None where the trace timed nothing
    (then ``prediction.host_overhead`` models it from the CPU profile)."""
    if "host_s" in trace.totals:
        return trace.totals["host_s"]
    op_s = trace.totals.get("op_s")
    at = measured.get(trace.batch) or measured.get(0)
    if op_s is None or at is None:
        return None
    return max(at[0] - op_s, 0.0)


def _row(
    framework: str,
    batch: int,
    cpu: tuple[float, float, float],
    work: WorkloadDescription,
    host_s: float,
    profile: DeviceProfile,
    errors: errormodel.ErrorModel | None,
) -> GpuAnswer:
    """One batch: the GPU's step with the measured host time (none of the CPU's own dispatch is in
    it: the ops' time was taken out whole), its calibrated band, the winner (gpudecision)."""
    gpu = profile.gpu
    assert gpu is not None
    work = work.model_copy(update={"host_overhead_s": host_s, "host_dispatch_paid_s": 0.0})
    return answer(framework, batch, cpu, work, gpu, profile.dispatch_mode, errors)


def cpu_steps(record: RunRecord) -> dict[int, tuple[float, float, float]]:
    """This CPU's measured steps of the script as it runs (no fix applied) by batch: (median, q1,
    q3) of the baseline and of each batch of the sweep."""
    out: dict[int, tuple[float, float, float]] = {}
    for r in record.results:
        p = params_of(r.spec)
        if r.status != "ok" or r.timing is None or not r.spec.device.startswith("CPU") or r.spec.workload != "train":
            continue
        if p.get("kind") != "steady" or p.get(SYNC.param) != "none" or p.get("fix"):
            continue
        b = as_int(p.get(BATCH.param) or 0)
        if b not in out:  # the first (the baseline) where a batch was measured twice
            t = r.timing
            out[b] = (t.median_s, t.q1_s, t.q3_s)
    return out


def measure_command(record: RunRecord) -> str:
    """What settles a too-close batch: the same diagnose on the machine with the GPU."""
    script = str(record.options.get("script") or "SCRIPT.py").rsplit("/", 1)[-1]
    return f"whichdevice diagnose {script}"


def script_prediction(
    record: RunRecord, profile: DeviceProfile, errors: errormodel.ErrorModel | None
) -> PredictReport | None:
    """The no-GPU answer for a script (module doc). None: no usable trace (none recorded, or it
    says why not), or no CPU step measured to set beside it."""
    trace = record.step_trace
    if trace is None or trace.why_not or not trace.ops:
        return None
    measured = cpu_steps(record)
    if not measured:
        return None
    described = {b: description(trace, b) for b in measured}
    host = measured_host_s(trace, measured)
    rows = gpu_would_help(trace.framework, measured, described, profile, errors) if host is None else []
    if host is not None:
        rows = [_row(trace.framework, b, measured[b], described[b], host, profile, errors) for b in sorted(described)]
    assumptions, extrapolated, cannot = rows_said(rows)
    if host is None and rows and all(r.gpu.bound == "host dispatch" for r in rows):
        # every batch's predicted step is the modelled host time (a jitted JAX step's is not
        # measured in its trace): a Flax CNN's came out over a second a step, an H100 "losing"
        # to a 2-core CPU, so no winner is told from it
        cannot = "host_unmeasured"
    assumptions.append(costmodel.Assumption("host_from_cpu"))
    sweep = record.options.get("sweep_batches")
    planned = [as_int(b) for b in sweep if isinstance(b, int | float)] if isinstance(sweep, list) else []
    failures: list[str] = []
    said = (assumptions, extrapolated, cannot, failures)
    return report_of(trace.framework, rows, errors, said, lambda _: measure_command(record), rows, planned)
