"""Device profiles: what one machine's devices cost per op, per byte and per FLOP.

A ``DeviceProfile`` is the calibrated input of the cost model (``costmodel.py``): for each
device of one machine (its CPU, and its GPU when it has one) the measured figures the model
needs, every one a median of real measurements with where it came from:

- ``dispatch_eager_s``: seconds per tiny op issued eagerly, queued without a sync (the
  dispatch + launch rate; the floor every kernel pays);
- ``dispatch_graph_s``: the same inside a compiled function (``tf.function``), when known;
- ``step_call_s``: the fixed cost of calling a compiled step (zero ops inside);
- ``sync_s``: the extra cost of reading one scalar back to the host (a device sync);
- curves ``(x, seconds)`` measured across sizes: ``matmul`` (square float32, x = n, operands
  on the device), ``matmul_tf32`` (the same with TF32, GPU only), ``elementwise`` (an add,
  x = bytes moved: two inputs + one output), ``h2d`` / ``h2d_pinned`` / ``d2h`` (x = bytes);
- ``memory_floor_bytes_per_s``: a *lower bound* on the device's memory bandwidth, used only
  when there is no elementwise curve (see costmodel.py).

Profiles are versioned (``PROFILE_VERSION``); one from a newer version is refused. The
profiles we measured ship in ``whichdevice/profiles/*.json``; ``whichdevice calibrate`` and
``whichdevice profile import`` write users' own into ``$WHICHDEVICE_HOME/profiles`` (default
``~/.whichdevice``). ``--profile`` takes a shipped name, a saved name, or a path to a profile
JSON file or a reference probe file (``probe_torch.json``, converted on the fly).

The reference probe format (``gpu_probe.py`` in ``shared/reference/h100-2026-11-22/``;
run it with PyTorch on any machine with a GPU to add that GPU)::

    {"env": {"gpu": str, "cpu_count": int, "threads": int, "torch": str},
     "launch": {"tiny_add_async_s", "tiny_add_sync_each_s", "tiny_add_item_roundtrip_s", "cpu_tiny_add_s"},
     "transfer": [{"bytes", "h2d_pageable_s", "h2d_pinned_s", "d2h_s"}, ...],
     "matmul": [{"n", "tf32": bool, "cpu_steady_s", "gpu_steady_s", ...}, ...],
     "mlp": [...]}   # optional: validation data, never read into a profile

every value the median seconds per call of 7 synchronized blocks (``bench`` there).
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from whichdevice.analysis.reference import is_torch_probe
from whichdevice.core.errors import UsageError

PROFILE_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CurvePoint(_Frozen):
    """One calibrated size: ``x`` (n, or bytes) and the median seconds per call."""

    x: float = Field(gt=0)
    s: float = Field(gt=0, description="median seconds per call")
    q1_s: float | None = Field(default=None, description="first quartile of the samples, when kept")
    q3_s: float | None = Field(default=None, description="third quartile of the samples, when kept")


class DeviceCosts(_Frozen):
    """Calibrated costs of one device. ``None``: not measured (the model says what it assumes)."""

    kind: Literal["cpu", "gpu"]
    description: str
    dispatch_eager_s: float = Field(gt=0, description="tiny op, eager, queued without sync: s per op")
    dispatch_graph_s: float | None = Field(default=None, description="tiny op inside a compiled function: s per op")
    step_call_s: float | None = Field(default=None, description="calling a compiled step with nothing in it: s")
    sync_s: float | None = Field(default=None, description="extra cost of reading a scalar back per step: s")
    matmul: list[CurvePoint] = Field(min_length=1, description="square float32 matmul, x = n")
    matmul_tf32: list[CurvePoint] = Field(default_factory=list, description="the same with TF32 (GPU), x = n")
    elementwise: list[CurvePoint] = Field(default_factory=list, description="a + b, x = bytes moved (3 arrays)")
    h2d: list[CurvePoint] = Field(default_factory=list, description="host (pageable) -> device copy, x = bytes")
    h2d_pinned: list[CurvePoint] = Field(default_factory=list, description="pinned host -> device copy, x = bytes")
    d2h: list[CurvePoint] = Field(default_factory=list, description="device -> host copy, x = bytes")
    memory_floor_bytes_per_s: float | None = Field(
        default=None, gt=0, description="lower bound on memory bandwidth (used without an elementwise curve)"
    )
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sorted_curves(self) -> DeviceCosts:
        for name in ("matmul", "matmul_tf32", "elementwise", "h2d", "h2d_pinned", "d2h"):
            xs = [p.x for p in getattr(self, name)]
            if xs != sorted(set(xs)):
                raise ValueError(f"curve '{name}' must have strictly increasing sizes")
        return self


class DeviceProfile(_Frozen):
    """One machine's calibrated devices, with the machine's description."""

    profile_version: int = PROFILE_VERSION
    name: str = Field(min_length=1)
    created_at: str
    source: str = Field(description="how it was made: the command, or the reference file it was derived from")
    machine: dict[str, str | int | float | None] = Field(description="CPU model, cores, GPU name, ...")
    framework: str = Field(description="framework and version the figures were measured with")
    dispatch_mode: Literal["eager", "graph"] = Field(
        description="how the framework that was measured issues ops (eager PyTorch, tf.function, ...)"
    )
    cpu: DeviceCosts
    gpu: DeviceCosts | None = None
    notes: list[str] = Field(default_factory=list)

    def device(self, kind: str) -> DeviceCosts | None:
        return self.cpu if kind == "cpu" else self.gpu

    @property
    def shipped(self) -> bool:
        """One of the package's profiles (its name is a file's), not one the user saved."""
        return self.name in shipped_names()


# ---------------- where profiles live ----------------


def user_dir() -> Path:
    return Path(os.environ.get("WHICHDEVICE_HOME") or Path.home() / ".whichdevice") / "profiles"


def shipped_names() -> list[str]:
    folder = resources.files("whichdevice") / "profiles"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def saved_names() -> list[str]:
    d = user_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def parse(text: str, where: str, argument: str = "--profile") -> DeviceProfile:
    """A profile from JSON text; every way it can be wrong becomes a ``UsageError``."""
    fix = "Pass an intact profile (whichdevice calibrate writes one) or a shipped name (e.g. --profile h100)."
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise UsageError(argument, f"'{where}' is not readable JSON", fix) from None
    if not isinstance(data, dict) or "profile_version" not in data:
        raise UsageError(argument, f"'{where}' is not a whichdevice device profile", fix)
    v = data.get("profile_version")
    if not isinstance(v, int) or v > PROFILE_VERSION:
        raise UsageError(
            argument,
            f"'{where}' has profile version {v!r}, newer than this whichdevice reads ({PROFILE_VERSION})",
            "Upgrade whichdevice: pip install -U whichdevice.",
        )
    try:
        return DeviceProfile.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        at = ".".join(str(x) for x in first.get("loc", ()))
        raise UsageError(
            argument, f"'{where}' does not match the profile schema (at {at}: {first.get('msg')})", fix
        ) from None


def slug(text: str) -> str:
    """A profile name from free text: ``NVIDIA H100 80GB HBM3`` -> ``nvidia-h100-80gb-hbm3``."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64]
    return out or "imported"


def from_data(data: object, where: str, argument: str, created_at: str, name: str | None = None) -> DeviceProfile:
    """A profile from parsed JSON in any format ``profile import`` reads: a profile (as
    ``calibrate`` writes it), or a reference probe file (``gpu_probe.py``'s
    ``probe_torch.json``: converted by ``from_torch_probe``). ``name`` renames it."""
    fix = (
        "Pass a profile (whichdevice calibrate writes one), a calibrate record, or a reference probe file "
        "(gpu_probe.py's probe_torch.json)."
    )
    if is_torch_probe(data):
        assert isinstance(data, dict)
        try:
            prof = from_torch_probe(
                data, name or slug(str(data["env"].get("gpu") or "gpu")), f"imported from {where}", created_at
            )
        except (KeyError, TypeError, ValueError, ZeroDivisionError, ValidationError) as e:
            raise UsageError(
                argument,
                f"'{where}' looks like a reference probe file but does not fit its format ({type(e).__name__}: {e})",
                fix,
            ) from None
        return prof
    if isinstance(data, dict) and "profile_version" in data:
        prof = parse(json.dumps(data), where, argument)
        return prof.model_copy(update={"name": name}) if name else prof
    raise UsageError(argument, f"'{where}' is neither a whichdevice device profile nor a reference probe file", fix)


def load(spec: str, argument: str = "--profile") -> DeviceProfile:
    """``spec``: a path to a JSON file (a profile or a reference probe file), a name saved
    by ``calibrate`` or ``profile import``, or a shipped name."""
    spec = spec.strip()
    if not spec:
        raise UsageError(argument, "is empty", "Pass a profile name (e.g. --profile h100) or a profile JSON file.")
    p = Path(spec).expanduser()
    if spec.endswith(".json") or os.sep in spec:
        if not p.is_file():
            raise UsageError(
                argument,
                f"no such profile file '{p}'",
                f"Check the path, or pass a name: {', '.join(shipped_names() + saved_names())}.",
            )
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(
                argument, f"cannot read '{p}' ({type(e).__name__})", "Pass a readable profile file."
            ) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return parse(text, str(p), argument)  # says what is wrong
        if is_torch_probe(data):
            return from_data(data, str(p), argument, file_date(p))
        return parse(text, str(p), argument)
    saved = user_dir() / f"{spec}.json"
    if saved.is_file():
        return parse(saved.read_text(encoding="utf-8"), str(saved), argument)
    if spec in shipped_names():
        return parse(
            (resources.files("whichdevice") / "profiles" / f"{spec}.json").read_text(encoding="utf-8"),
            f"shipped profile {spec}",
            argument,
        )
    known = shipped_names() + saved_names()
    raise UsageError(
        argument,
        f"unknown profile '{spec}'",
        f"Use one of: {', '.join(known)} — or run `whichdevice calibrate` on the machine to profile.",
    )


def default_name(framework: str, hostname: str) -> str:
    """``calibrate``'s profile name when ``--name`` is not given: this host's name, made safe for a
    file name, or ``HOST-FRAMEWORK`` when a profile saved under the host's name was calibrated with
    another framework. Calibrating torch used to replace this machine's TensorFlow profile without a
    word; calibrating the same framework again still replaces its own."""
    host = re.sub(r"[^A-Za-z0-9_.-]", "-", hostname)[:64] or "local"
    try:
        saved = parse((user_dir() / f"{host}.json").read_text(encoding="utf-8"), host)
    except (OSError, UnicodeDecodeError, UsageError):
        return host  # none saved under that name (or unreadable: replaced, as before)
    return host if saved.framework.split(" ")[0] == framework else f"{host}-{framework}"[:64]


def local_profile(framework: str, hostname: str) -> DeviceProfile | None:
    """The newest profile saved by ``calibrate --framework FRAMEWORK`` on ``hostname`` (this
    machine), or None; unreadable saved files are passed over (``profile list`` names them)."""
    found = []
    for n in saved_names():
        try:
            p = parse((user_dir() / f"{n}.json").read_text(encoding="utf-8"), n)
        except (OSError, UnicodeDecodeError, UsageError):
            continue
        if p.framework.split(" ")[0] == framework and p.machine.get("hostname") == hostname:
            found.append(p)
    return max(found, key=lambda p: p.created_at, default=None)


def with_local_cpu(profile: DeviceProfile, framework: str, hostname: str) -> DeviceProfile:
    """``profile`` (the GPU machine to predict) with this machine's CPU costs, calibrated here
    with the same framework (:func:`local_profile`), in place of the CPU of the machine it was
    measured on (the shipped h100's is that machine's host CPU): ``predict`` measures its CPU
    steps here, and fits the per-step host overhead on this CPU's costs. Unchanged when there is
    no such profile, or when ``profile`` was itself calibrated on this machine."""
    if profile.machine.get("hostname") == hostname:
        return profile
    local = local_profile(framework, hostname)
    if local is None:
        return profile
    note = (
        f"CPU costs: this machine's own calibration ({local.framework}, {local.created_at}, --profile {local.name}) "
        "in place of the profile's CPU"
    )
    return profile.model_copy(update={"cpu": local.cpu, "notes": [*profile.notes, note]})


def file_date(p: Path) -> str:
    """A file's modification date (UTC), for a profile converted from it."""
    return datetime.fromtimestamp(p.stat().st_mtime, tz=timezone.utc).date().isoformat()


def dumps(profile: DeviceProfile) -> str:
    return json.dumps(profile.model_dump(mode="json"), indent=1) + "\n"


# ---------------- a profile from the H100 reference probe ----------------


def _curve(rows: list[dict[str, Any]], key: str, x_key: str) -> list[CurvePoint]:
    return [CurvePoint(x=float(r[x_key]), s=float(r[key])) for r in rows if r.get(key) is not None]


def from_torch_probe(probe: dict[str, Any], name: str, source: str, created_at: str) -> DeviceProfile:
    """A profile from ``gpu_probe.py``'s ``probe_torch.json`` — its ``launch``, ``transfer`` and
    ``matmul`` sections only (``mlp`` is validation data and is never read here).

    - GPU dispatch floor: ``tiny_add_async_s`` (one 1-element add, no sync per call);
      CPU: ``cpu_tiny_add_s``.
    - GPU ``sync_s``: ``tiny_add_item_roundtrip_s - tiny_add_async_s`` (the ``.item()`` read).
    - Memory-bandwidth lower bounds (no elementwise curve was measured there): device memory
      is never slower than the PCIe link that fills it, so the GPU's is the fastest pinned
      host->device copy; a pageable copy first reads host memory, so the CPU's is the fastest
      pageable host->device copy.
    """
    env, launch, transfer = probe["env"], probe["launch"], probe["transfer"]
    fp32 = [r for r in probe["matmul"] if not r["tf32"]]
    tf32 = [r for r in probe["matmul"] if r["tf32"]]
    pinned_bw = max(r["bytes"] / r["h2d_pinned_s"] for r in transfer)
    pageable_bw = max(r["bytes"] / r["h2d_pageable_s"] for r in transfer)
    cpu = DeviceCosts(
        kind="cpu",
        description=f"{env.get('cpu_count')}-core CPU, {env.get('threads')} threads",
        dispatch_eager_s=launch["cpu_tiny_add_s"],
        matmul=_curve(fp32, "cpu_steady_s", "n"),
        memory_floor_bytes_per_s=pageable_bw,
        notes=["no elementwise curve: memory bandwidth bounded below by the fastest pageable host->device copy"],
    )
    gpu = DeviceCosts(
        kind="gpu",
        description=str(env.get("gpu")),
        dispatch_eager_s=launch["tiny_add_async_s"],
        sync_s=max(launch["tiny_add_item_roundtrip_s"] - launch["tiny_add_async_s"], 0.0) or None,
        matmul=_curve(fp32, "gpu_steady_s", "n"),
        matmul_tf32=_curve(tf32, "gpu_steady_s", "n"),
        h2d=_curve(transfer, "h2d_pageable_s", "bytes"),
        h2d_pinned=_curve(transfer, "h2d_pinned_s", "bytes"),
        d2h=_curve(transfer, "d2h_s", "bytes"),
        memory_floor_bytes_per_s=pinned_bw,
        notes=["no elementwise curve: memory bandwidth bounded below by the fastest pinned host->device copy"],
    )
    return DeviceProfile(
        name=name,
        created_at=created_at,
        source=source,
        machine={"gpu": env.get("gpu"), "cpu_count": env.get("cpu_count"), "threads": env.get("threads")},
        framework=f"torch {env.get('torch')}",
        dispatch_mode="eager",
        cpu=cpu,
        gpu=gpu,
        notes=[
            "derived from the probe's launch, transfer and matmul sections only (its mlp section is "
            "held out as validation data)"
        ],
    )
