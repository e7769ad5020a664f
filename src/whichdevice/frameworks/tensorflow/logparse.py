"""TensorFlow's device-placement log, XProf's op statistics and a step's graph edges, parsed.

Pure text in, dataclasses out (no TensorFlow import): the one copy of these parsers, used by the
placement workload (in the measuring child), the audit's TensorFlow hooks, and the placement
analysis (``analysis/placement.py``, which rebuilds the tables from a case's metrics).

Sources, and what each one can say:

- **Placement log** (``tf.debugging.set_log_device_placement(True)``). When a ``tf.function``
  is instantiated, TensorFlow's placer logs one line per graph node::

      I0000 00:00:1795400006.145373   28383 placer.cc:162] sequential_1/dense_1/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0

  and every eager op executed logs ``execute.cc:...] Executing op Cast in device /job:.../device:CPU:0``.
  The same placer lines are also printed bare (without the ``I0000 ... placer.cc]`` prefix) on
  stdout; when prefixed lines exist, the bare copies are ignored so nothing is counted twice.
  This is *authoritative* for placement: it says where each node was put, after soft placement.
- **XProf ``framework_op_stats``** (a profile converted by ``xprof``): one row per op name with
  ``Host/device``, type, occurrences and self time (µs). It gives *time*; on a CPU-only run every
  row is ``Host``.
- **Copies**: a node whose input comes from a node on another device needs a copy (TensorFlow
  inserts a ``_Send``/``_Recv`` pair after placement; the placer does not log it). Counted from
  the step function's graph edges and the placement, with bytes where the tensor's shape is
  static. Inputs fed from the host (NumPy batches) are copies too when the step runs on a GPU.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

PLUMBING = frozenset(
    {
        "_Arg",
        "_Retval",
        "_DeviceArg",
        "_DeviceRetval",
        "NoOp",
        "Const",
        "Identity",
        "_EagerConst",
        "IdentityN",
        "StopGradient",
        "PartitionedCall",
        "StatefulPartitionedCall",
    }
)
# Ops that are about variables/resources: they live where the variable lives.
RESOURCE_OPS = frozenset(
    {
        "VarHandleOp",
        "ReadVariableOp",
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "VarIsInitializedOp",
        "ResourceGather",
    }
)

# Ops that run Python (tf.py_function, tf.numpy_function): on the CPU whatever the device.
PYTHON_OPS = frozenset({"PyFunc", "EagerPyFunc", "PyFuncStateless"})

_PREFIXED = re.compile(r"placer\.cc:\d+\]\s+(?P<name>\S+): \((?P<type>[^)]+)\): (?P<dev>/\S+)")
_BARE = re.compile(r"^(?P<name>[^\s:]\S*): \((?P<type>[^)]+)\): (?P<dev>/job:\S+)\s*$")
_EAGER = re.compile(r"Executing op (?P<type>\S+) in device (?P<dev>/\S+)")


@dataclass(frozen=True)
class Placed:
    """One node (graph) or one eager op execution and the device it was put on."""

    name: str  # node name ("" for an eager op)
    op_type: str
    device: str  # short form: CPU:0, GPU:0
    source: str  # "graph" (placer) or "eager" (executed op)


def short_device(name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:GPU:0' -> 'GPU:0'; '' -> '' (a placement line's device,
    and the audit's ``tensor.device``)."""
    if not name:
        return ""
    tail = name.split("device:")[-1] if "device:" in name else name.rsplit("/", 1)[-1]
    return tail.upper()


def parse_placement_log(text: str) -> list[Placed]:
    """Every placement line in ``text`` (stdout and stderr of a run with placement logging on)."""
    lines = text.splitlines()
    prefixed = any("placer.cc" in ln for ln in lines)
    out: list[Placed] = []
    for ln in lines:
        m = _PREFIXED.search(ln)
        if m:
            out.append(Placed(m["name"], m["type"], short_device(m["dev"]), "graph"))
            continue
        m = _EAGER.search(ln)
        if m:
            out.append(Placed("", m["type"], short_device(m["dev"]), "eager"))
            continue
        if not prefixed:
            m = _BARE.match(ln.strip())
            if m:
                out.append(Placed(m["name"], m["type"], short_device(m["dev"]), "graph"))
    return out


def placement_map(placed: list[Placed]) -> dict[str, str]:
    """Graph node name -> device (the last placement of a name wins: a retrace re-places it)."""
    return {p.name: p.device for p in placed if p.source == "graph" and p.name}


def op_type_counts(placed: list[Placed], *, include_plumbing: bool = False) -> dict[str, Counter]:
    """device -> Counter(op type -> nodes placed there)."""
    out: dict[str, Counter] = defaultdict(Counter)
    for p in placed:
        if include_plumbing or p.op_type not in PLUMBING:
            out[p.device][p.op_type] += 1
    return dict(out)


# ---------------- XProf framework_op_stats ----------------


@dataclass(frozen=True)
class OpStat:
    host_or_device: str  # "Host" or "Device"
    op_type: str
    name: str
    occurrences: int
    self_us: float  # total self time over the profiled window


def parse_op_stats(data: bytes | str) -> list[OpStat]:
    """XProf's ``framework_op_stats`` JSON (a list of data tables; the first holds the ops).

    The ``IDLE`` row (time the host or device did nothing) is left out."""
    tables = json.loads(data)
    if isinstance(tables, dict):
        tables = [tables]
    out: list[OpStat] = []
    for table in tables[:1]:
        ids = [c["id"] for c in table["cols"]]
        for row in table.get("rows", []):
            v = {k: c.get("v") for k, c in zip(ids, row["c"])}
            if v.get("type") == "IDLE":
                continue
            out.append(
                OpStat(
                    str(v["host_or_device"]),
                    str(v["type"]),
                    str(v["operation"]),
                    int(v.get("occurrences") or 0),
                    float(v.get("total_self_time") or 0.0),
                )
            )
    return out


# ---------------- copies ----------------


@dataclass(frozen=True)
class Edge:
    src: str  # producing node name
    dst: str  # consuming node name
    nbytes: int | None  # tensor size when its shape is static


@dataclass(frozen=True)
class Copies:
    count: int
    nbytes: int  # known bytes only
    unknown_size: int  # copies whose tensor shape is not static
    by_direction: dict[str, int] = field(default_factory=dict)  # "CPU:0->GPU:0" -> count


def count_copies(edges: list[Edge], placement: dict[str, str]) -> Copies:
    """Edges whose two ends sit on different devices: one copy each per step.

    An edge with an end that was never placed (a node the placer did not log) is not counted."""
    n = nbytes = unknown = 0
    by_dir: Counter = Counter()
    for e in edges:
        a, b = placement.get(e.src), placement.get(e.dst)
        if a is None or b is None or a == b:
            continue
        n += 1
        by_dir[f"{a}->{b}"] += 1
        if e.nbytes is None:
            unknown += 1
        else:
            nbytes += e.nbytes
    return Copies(n, nbytes, unknown, dict(by_dir))
