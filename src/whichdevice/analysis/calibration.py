"""A device profile from a ``calibrate`` record (pure: no framework, no measuring).

Per device of the record (one child session each):

- ``dispatch_eager_s`` = median of ``tiny_eager``;
- ``sync_s`` = median(``tiny_sync``) - median(``tiny_eager``) (clamped at 0);
- ``step_call_s`` = median of ``graph`` with k = 0; ``dispatch_graph_s`` =
  (median(k = K) - median(k = 0)) / K for the largest K;
- curves: the median and quartiles of every ``matmul`` / ``elementwise`` / ``h2d`` /
  ``d2h`` point, by size.

A probe that failed is left out (its field stays ``None`` or its curve point missing); a
device without its tiny-op or matmul figures cannot make a profile and is reported.

A fitted value that is not positive — the chain of ops measured no slower than the empty
call, or the synced tiny op no slower than the unsynced one — is noise, not a cost: the
profile is refused (``NoisyCalibration``, naming the two measurements) instead of writing a
clamped 0, which would make every prediction from it wrong.
"""

from __future__ import annotations

from typing import Literal

from whichdevice.analysis.deviceprofile import CurvePoint, DeviceCosts, DeviceProfile
from whichdevice.core.errors import UsageError
from whichdevice.analysis.values import as_float, as_int, timing_of
from whichdevice.core.records import CaseResult, RunRecord, Scalar


def _ok(results: list[CaseResult], probe: str) -> list[CaseResult]:
    return [r for r in results if r.status == "ok" and r.timing is not None and r.spec.params.get("probe") == probe]


def _median(results: list[CaseResult], probe: str, **params: Scalar) -> float | None:
    for r in _ok(results, probe):
        if all(r.spec.params.get(k) == v for k, v in params.items()):
            return timing_of(r).median_s
    return None


def _curve(results: list[CaseResult], probe: str, key: str) -> list[CurvePoint]:
    pts = sorted(((as_float(r.spec.params[key]), timing_of(r)) for r in _ok(results, probe)), key=lambda p: p[0])
    return [CurvePoint(x=x, s=t.median_s, q1_s=t.q1_s, q3_s=t.q3_s) for x, t in pts if t.median_s > 0]


class NoisyCalibration(ValueError):
    """A difference of two measurements came out non-positive: they were too noisy."""


def _us(s: float) -> str:
    return f"{s * 1e6:.2f} µs"


def device_costs(results: list[CaseResult], kind: Literal["cpu", "gpu"], description: str) -> DeviceCosts:
    eager = _median(results, "tiny_eager")
    matmul = _curve(results, "matmul", "n")
    if eager is None or not matmul:
        raise ValueError("the tiny-op and matmul probes are needed for a profile")
    synced = _median(results, "tiny_sync")
    ks = sorted(as_int(r.spec.params["k"]) for r in _ok(results, "graph"))
    call = _median(results, "graph", k=0)
    graph = None
    dev = description or kind
    if call is not None and ks and ks[-1] > 0:
        chain = _median(results, "graph", k=ks[-1])
        if chain is None:  # ks lists the measured chains: the longest one has a median
            raise ValueError(f"{description or kind}: the compiled chain of {ks[-1]} ops has no timing")
        graph = (chain - call) / ks[-1]
        if graph <= 0:
            raise NoisyCalibration(
                f"{dev}: the in-graph dispatch probe was too noisy — a compiled chain of {ks[-1]} ops took "
                f"{_us(chain)} per call, no more than the empty compiled call ({_us(call)})"
            )
    sync = None
    if synced is not None:
        sync = synced - eager
        if sync <= 0:
            raise NoisyCalibration(
                f"{dev}: the sync probe was too noisy — a tiny op read back each call took {_us(synced)}, "
                f"no more than without the read ({_us(eager)})"
            )
    return DeviceCosts(
        kind=kind,
        description=description,
        dispatch_eager_s=eager,
        dispatch_graph_s=graph,
        step_call_s=call,
        sync_s=sync,
        matmul=matmul,
        elementwise=_curve(results, "elementwise", "bytes"),
        h2d=_curve(results, "h2d", "bytes"),
        d2h=_curve(results, "d2h", "bytes"),
    )


def dispatch_mode(record: RunRecord) -> Literal["eager", "graph"]:
    """How the calibrated framework issues ops: ``graph`` when the record planned the compiled
    chain (TensorFlow's tf.function, JAX's jit), ``eager`` when its framework has none
    (PyTorch: workloads/calibrate.skipped_probes)."""
    return "graph" if any(r.spec.params.get("probe") == "graph" for r in record.results) else "eager"


def profile_from_record(record: RunRecord, name: str) -> DeviceProfile:
    """The profile of the machine that produced ``record`` (experiment ``calibrate``)."""
    by_device: dict[str, list[CaseResult]] = {}
    for r in record.results:
        by_device.setdefault(r.spec.device, []).append(r)
    sessions = {s.device.name: s for s in record.sessions}
    cpu = gpu = None
    problems = []
    for dev, results in sorted(by_device.items()):
        s = sessions.get(dev)
        kind = s.device.kind if s else ("gpu" if dev.startswith("GPU") else "cpu")
        desc = (s.device.description if s else "") or dev
        try:
            costs = device_costs(results, kind, desc)
        except NoisyCalibration as e:
            raise UsageError(
                "calibrate",
                f"no profile written: {e}",
                "Re-run on a quieter machine or with a longer --min-time (e.g. --min-time 0.5); "
                "the record keeps every sample.",
            ) from None
        except ValueError as e:
            problems.append(f"{dev}: {e}")
            continue
        if kind == "cpu" and cpu is None:
            cpu = costs
        elif kind == "gpu" and gpu is None:
            gpu = costs
    if cpu is None:
        raise UsageError(
            "calibrate",
            "the CPU probes did not succeed (" + "; ".join(problems or ["no results"]) + ")",
            "See the failures above; re-run whichdevice calibrate.",
        )
    fw = record.sessions[0].framework if record.sessions else None
    m = record.machine
    return DeviceProfile(
        name=name,
        created_at=record.created_at,
        source=" ".join(record.command),
        machine={
            "hostname": m.hostname,
            "cpu_model": m.cpu_model,
            "cpu_cores_logical": m.cpu_cores_logical,
            "ram_bytes": m.ram_bytes,
            "gpu": gpu.description if gpu else None,
        },
        framework=f"{fw.name} {fw.version}" if fw else "unknown",
        dispatch_mode=dispatch_mode(record),
        cpu=cpu,
        gpu=gpu,
        notes=problems,
    )
