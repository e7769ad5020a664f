"""Reference GPU runs as normal records: ``gpu_probe.py``'s ``probe_torch.json`` and
``keras_probe.py``'s ``keras_<backend>_<device>.json`` (shared/reference/h100-2026-11-22/).

``record_from_reference`` turns one such file into a ``RunRecord`` (experiment
``reference``) that ``whichdevice report`` renders and ``whichdevice import`` writes: one
case per measured value, its device (CPU:0 or GPU:0) from the key, its parameters (n,
bytes, batch, ...) from the row. The files keep medians only (7 synchronized blocks each,
or one wall time): each value becomes a one-sample timing, and the record says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from whichdevice.core.records import CaseResult, CaseSpec, MachineInfo, RunRecord, Scalar, Timing

KIND = "reference"
_FIT = re.compile(r"^fit_(\d+)_b(\d+)_epoch_s$")


def is_torch_probe(data: object) -> bool:
    return isinstance(data, dict) and all(k in data for k in ("env", "launch", "transfer", "matmul"))


def is_keras_probe(data: object) -> bool:
    return isinstance(data, dict) and "backend" in data and "tag" in data and any(_FIT.match(k) for k in data)


def is_reference(data: object) -> bool:
    return is_torch_probe(data) or is_keras_probe(data)


def _timing(seconds: float) -> Timing:
    return Timing(first_call_s=seconds, warmup_s=[], samples_s=[seconds], number_per_sample=1, overhead_s=0.0)


def _case(section: str, framework: str, device: str, value: float, **params: Scalar) -> CaseResult:
    spec = CaseSpec(workload=section, framework=framework, device=device, params=params)
    return CaseResult(spec=spec, status="ok", timing=_timing(float(value)), wall_s=0.0)


def _device_of(key: str) -> tuple[str, str]:
    """(device, quantity) from a key such as ``cuda_step_item_s`` or ``gpu_steady_s``."""
    for prefix, dev in (("cuda_", "GPU:0"), ("gpu_", "GPU:0"), ("cpu_", "CPU:0")):
        if key.startswith(prefix):
            return dev, key[len(prefix) :]
    if "_cuda_" in key or "_gpu_" in key or key.endswith("_cuda_s"):
        return "GPU:0", key.replace("_cuda", "")
    if "_cpu_" in key or key.endswith("_cpu_s"):
        return "CPU:0", key.replace("_cpu", "")
    return "GPU:0", key


def _torch(data: dict[str, Any]) -> list[CaseResult]:
    return [
        *_torch_launch(data["launch"]),
        *_torch_transfer(data["transfer"]),
        *_torch_timed("matmul", data["matmul"], lambda row: {"n": int(row["n"]), "tf32": bool(row["tf32"])}),
        *_torch_timed("mlp step", data.get("mlp", []), lambda row: {"batch": int(row["batch"])}),
        *_torch_seed001(data.get("seed001", {})),
    ]


def _torch_launch(launch: dict[str, Any]) -> list[CaseResult]:
    out = []
    for key, v in launch.items():
        dev = "CPU:0" if key.startswith("cpu_") else "GPU:0"
        out.append(_case("launch", "torch", dev, v, quantity=key.removeprefix("cpu_")))
    return out


def _torch_transfer(rows: list[dict[str, Any]]) -> list[CaseResult]:
    out = []
    for row in rows:
        for key in ("h2d_pageable_s", "h2d_pinned_s", "d2h_s"):
            if row.get(key) is not None:
                out.append(_case("transfer", "torch", "GPU:0", row[key], quantity=key, bytes=int(row["bytes"])))
    return out


def _torch_timed(
    section: str, rows: list[dict[str, Any]], params: Callable[[dict[str, Any]], dict[str, Scalar]]
) -> list[CaseResult]:
    """One case per timed column (``*_s``) of each row, the row's own ``params(row)`` added."""
    out = []
    for row in rows:
        for key, v in row.items():
            if key.endswith("_s") and v is not None:
                dev, q = _device_of(key)
                out.append(_case(section, "torch", dev, v, quantity=q, **params(row)))
    return out


# gpu_probe.py's names for its loops of the small MLP, as a reader would say them (the page
# shows each case's quantity).
_SEED001_LOOP_WORDS = {
    "ex2_small_s": "1,000 samples, batch 10",
    "ex3_large_b32_s": "100,000 samples, batch 32",
    "ex3_large_b1024_s": "100,000 samples, batch 1024",
}


def _torch_seed001(seed: dict[str, Any]) -> list[CaseResult]:
    out = []
    for key, v in seed.items():
        dev, q = _device_of(key)
        out.append(_case("small MLP custom loop", "torch", dev, v, quantity=_SEED001_LOOP_WORDS.get(q, q)))
    return out


def _keras(data: dict[str, Any]) -> list[CaseResult]:
    fw = f"keras-{data['backend']}"
    dev = "GPU:0" if str(data["tag"]).endswith("gpu") else "CPU:0"
    out = []
    for key in ("import_s", "create_first_s", "clone_s"):
        if data.get(key) is not None:
            out.append(_case("keras start-up", fw, dev, data[key], quantity=key))
    for key, v in data.items():
        m = _FIT.match(key)
        if m and isinstance(v, list):
            n, b = int(m.group(1)), int(m.group(2))
            for epoch, s in enumerate(v, 1):
                out.append(_case("fit epoch", fw, dev, s, samples=n, batch=b, epoch=epoch))
    for row in data.get("jax_matmul", []):
        for key in ("first_call_s", "steady_s"):
            if row.get(key) is not None:
                out.append(_case("jax matmul", fw, dev, row[key], quantity=key, n=int(row["n"])))
    return out


class BadReference(ValueError):
    """A file that looks like a reference run but whose contents do not fit its format."""


def record_from_reference(data: dict[str, Any], where: str, created_at: str) -> RunRecord:
    """A reference probe file as a record (``is_reference(data)`` must hold); contents that
    do not fit the format raise ``BadReference`` naming what is wrong."""
    try:
        return _record(data, where, created_at)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise BadReference(f"{type(e).__name__}: {str(e)[:200]}") from None


def _record(data: dict[str, Any], where: str, created_at: str) -> RunRecord:
    if is_torch_probe(data):
        env = data.get("env", {})
        results = _torch(data)
        gpu = str(env.get("gpu") or "GPU")
        frameworks = f"PyTorch {env.get('torch', '?')}"
        cores = int(env.get("cpu_count") or 0)
    else:
        results = _keras(data)
        gpu = "GPU" if str(data["tag"]).endswith("gpu") else "(GPU hidden)"
        frameworks = f"Keras on {data['backend']}"
        cores = 0
    machine = MachineInfo(
        hostname="reference machine",
        os="unknown",
        python="unknown",
        cpu_model=f"reference machine with {gpu}",
        cpu_cores_logical=cores,
        cpu_cores_physical=None,
        ram_bytes=None,
    )
    return RunRecord(
        experiment=KIND,
        command=["(reference file)", where],
        created_at=created_at,
        options={"source": where, "frameworks": frameworks, "gpu": gpu},
        machine=machine,
        results=results,
        notes=[
            f"Imported from {where}: a reference run made outside whichdevice ({frameworks}).",
            "Each value is the median the probe kept (7 synchronized blocks per value, or one wall time); "
            "the raw samples were not kept, so every case shows one sample and no spread.",
        ],
    )
