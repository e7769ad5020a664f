"""The audited script's device blocks and measurements, built from the child's state (pure).

``build_blocks(state)`` and ``build_measurements(state)`` turn the snapshots the child took
(``audit/state.py``) into :class:`~whichdevice.audit.record.Block` and
:class:`~whichdevice.audit.record.Measurement` records; ``series_of`` and ``comparisons``
group them as the rules read them (``audit/rules.py``) and as the child re-runs them.

Vocabulary:

- a **block** is one ``with tf.device(...)`` the script entered;
- a **measurement** is one ``end - start`` the script computed from two clock reads (two
  subtractions from the same start keep the first: ``times.append(time.time() - start)``
  followed by ``print(time.time() - start)`` is one measurement);
- a **series** is the measurements computed on one source line for one device kind (a loop
  over sizes or steps);
- a **comparison** pairs the i-th CPU series with the i-th GPU series, measurement by
  measurement, in the order the script ran them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from whichdevice.audit.record import Block, Measurement
from whichdevice.frameworks.common.audit import terms

# Set-up counted inside an interval, by kind (the state's ``setup_<kind>_s`` counters; what each is:
# ``present/auditwords.SETUP_KINDS``).
SETUP_KINDS = ("trace", "session", "init", "iter", "compile", "first_step", "loader")
_FLOAT_SETUP = {f"setup_{k}_s": k for k in SETUP_KINDS}

# A timing that synchronized during its loop and left only this share of its eager ops after
# the last host read is not "unsynchronized": 5 %, the share below which xprof does not flag a
# step component (ANCHORS.md); Keras's fit reads its logs every step and resets metrics after.
TRAILING_OPS_SHARE = 0.05

# A device named in a request or a message: '/device:GPU:0', '/GPU:1', 'CPU:0'.
DEVICE_IN_TEXT = re.compile(r"/(?:device:)?(?P<kind>GPU|CPU):(?P<idx>\d+)", re.I)
# A PyTorch / JAX script compares devices when its source says so (cuda, gpu); two timings of
# unrelated work in a script that never mentions a GPU are no pair.
_DEVICE_WORD = re.compile(r"(?<![a-z])(gpu|cuda)(?![a-z])", re.I)


def source_text(state: dict) -> str:
    """The text the child ran (kept in the state by ``record.run_child``), else the script file."""
    if state.get("script_source") is not None:
        return str(state["script_source"])
    try:
        with open(state.get("script") or "", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _diff(a: dict, b: dict, key: str) -> int:
    return int(b.get(key, 0)) - int(a.get(key, 0))


def _diff_devices(a: dict, b: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for field in ("ops_by_device", "placed_by_device"):
        before, after = a.get(field, {}), b.get(field, {})
        for dev, n in after.items():
            d = n - before.get(dev, 0)
            if d > 0:
                out[dev] = out.get(dev, 0) + d
    return out


def device_exists(requested: str | None, physical: dict[str, int]) -> bool | None:
    if not physical or not requested:
        return None
    m = DEVICE_IN_TEXT.search("/" + requested.lstrip("/")) or DEVICE_IN_TEXT.search(requested)
    if m is None:
        return None
    return int(m.group("idx")) < physical.get(m.group("kind").upper(), 0)


# The counters a block's or a measurement's row reports: each the difference of its two snapshots.
_BLOCK_COUNTERS = (
    "fn_calls",
    "traces",
    "instantiations",
    "xla_compiles",
    "sessions",
    "session_runs",
    "syncs",
    "h2d",
    "d2h",
    "cpu_ops_in_gpu_block",
)
_MEASUREMENT_COUNTERS = (
    "fn_calls",
    "traces",
    "instantiations",
    "xla_compiles",
    "new_kernels",
    "sessions",
    "session_runs",
    "syncs",
    "h2d",
    "d2h",
    "host_inputs",
    "pageable_moves",
    "user_syncs",
    "vars_other_device",
    "eager_ops",
    "elems",
    "first_session_runs",
)


def build_blocks(state: dict) -> list[Block]:
    physical = state.get("physical_devices") or {}
    blocks = []
    for b in state.get("blocks", []):
        enter = b["enter"]
        exit_ = b.get("exit") or state.get("totals") or enter
        blocks.append(
            Block(
                id=b["id"],
                requested=b["requested"],
                api=b["api"],
                line=b["line"],
                text=b["text"],
                device_exists=device_exists(b["requested"], physical),
                wall_s=(exit_["t"] - enter["t"]) if b.get("exit") else None,
                ran_on=_diff_devices(enter, exit_),
                **{k: _diff(enter, exit_, k) for k in _BLOCK_COUNTERS},
                error=b.get("error"),
            )
        )
    return blocks


def _blocks_in(state: dict, s0: dict, s1: dict, start_block: int | None) -> list[int]:
    raw = state.get("blocks", [])
    ids = set()
    for b in raw:
        exit_seq = b["exit"]["seq"] if b.get("exit") else float("inf")
        if b["enter"]["seq"] < s1["seq"] and exit_seq > s0["seq"]:
            ids.add(b["id"])
    bid = start_block
    while bid is not None:  # the blocks the interval started inside
        ids.add(bid)
        bid = raw[bid].get("parent")
    return sorted(ids)


@dataclass(frozen=True)
class _Script:
    """What the whole script says about each of its measurements: its framework, whether its CUDA
    path fell back to the CPU, whether it ever synchronizes, whether its source names a device."""

    framework: str
    fallback: bool
    syncs: bool
    calls: list
    device_script: bool

    @property
    def torch(self) -> bool:
        return self.framework == "torch"

    @property
    def jax(self) -> bool:
        return self.framework == "jax"

    @classmethod
    def of(cls, state: dict) -> _Script:
        fallback = torch_fallback(state)
        return cls(
            framework=state.get("framework", "tensorflow"),
            fallback=fallback,
            syncs=_script_mentions_sync(state),
            calls=state.get("torch_calls") or [],
            device_script=fallback or bool(_DEVICE_WORD.search(source_text(state))),
        )


def _first_intervals(state: dict, reads: dict[int, dict]) -> list[dict]:
    """The script's intervals between two recorded reads, one per start read (the first end wins:
    ``times.append(time.time() - start)`` then ``print(time.time() - start)`` is one measurement),
    in the order they started."""
    first_by_start: dict[int, dict] = {}
    for iv in state.get("intervals", []):
        if iv["start"] not in reads or iv["end"] not in reads or iv["seconds"] < 0:
            continue
        if iv["start"] == iv["end"]:
            continue
        kept = first_by_start.get(iv["start"])
        if kept is None or iv["end"] < kept["end"]:
            first_by_start[iv["start"]] = iv
    return sorted(first_by_start.values(), key=lambda iv: (reads[iv["start"]]["snap"]["seq"], iv["end"]))


def _interval_kind(script: _Script, block_kinds: set[str], ran_on: dict[str, int]) -> str:
    """'GPU', 'CPU' or '': the device blocks the interval ran in (TensorFlow), or where its kernels ran
    (PyTorch / JAX, which have no device blocks)."""
    if script.torch or script.jax:
        return "GPU" if any(d.startswith("GPU") for d in ran_on) else ("CPU" if ran_on else "")
    return "GPU" if "GPU" in block_kinds else ("CPU" if "CPU" in block_kinds else "")


def _work_after_last_read(s0: dict, s1: dict, key: str) -> bool:
    """Work (counter ``key``: the last GPU / any work's seq) dispatched in the interval after its last host read."""
    return s1.get(key, 0) > s0["seq"] and s1.get(key, 0) > s1.get("last_sync", 0)


def _unsynced_end(state: dict, script: _Script, s0: dict, s1: dict, gpu_side: bool) -> bool:
    """Whether the interval's second clock read came before its device work finished."""
    unsynced = _work_after_last_read(s0, s1, "last_gpu_work") and gpu_side
    if unsynced and _diff(s0, s1, "syncs") > 0:
        # The loop read results back as it went (Keras's progress bar, a loss per step); what is
        # left unsynchronized at the end is a few trailing ops (metric resets), not the work.
        trailing = int(s1.get("eager_ops", 0)) - int(s1.get("ops_at_last_sync", 0))
        unsynced = trailing > TRAILING_OPS_SHARE * max(1, _diff(s0, s1, "eager_ops"))
    if script.jax and not unsynced:
        # JAX dispatches asynchronously on every backend, the CPU too: work dispatched after the
        # last host read (block_until_ready, np.asarray, .item()) was still running at the clock read.
        unsynced = _work_after_last_read(s0, s1, "last_work")
    if script.torch and script.fallback and not unsynced:
        # The CUDA path fell back to the CPU here: the same loop on a GPU ends unsynchronized when no
        # host read follows its last kernel and the script never synchronizes anywhere — only for an
        # interval that ran a module the script sent to its device (.to(device) / .cuda()): a loop
        # that never touched the device path is not flagged (no false alarm).
        unsynced = (
            _work_after_last_read(s0, s1, "last_work")
            and not script.syncs
            and _ran_moved_module(state, s0["seq"], s1["seq"])
        )
    return unsynced


def _setup_seconds(s0: dict, s1: dict) -> dict[str, float]:
    """Seconds of set-up by kind (``SETUP_KINDS``) that happened inside the interval."""
    setup = {}
    for key, kind_name in _FLOAT_SETUP.items():
        d = float(s1.get(key, 0.0)) - float(s0.get(key, 0.0))
        if d > 0:
            setup[kind_name] = d
    return setup


def _measurement_fields(state: dict, script: _Script, i: int, iv: dict, reads: dict[int, dict]) -> dict:
    """The fields of measurement ``i`` (interval ``iv``) but its place in its series."""
    r0, r1 = reads[iv["start"]], reads[iv["end"]]
    s0, s1 = r0["snap"], r1["snap"]
    bids = _blocks_in(state, s0, s1, r0.get("block"))
    raw_blocks = state.get("blocks", [])
    ran_on = _diff_devices(s0, s1)
    kind = _interval_kind(script, {raw_blocks[b]["kind"] for b in bids}, ran_on)
    gpu_side = kind == "GPU" or any(d.startswith("GPU") for d in ran_on)
    line = iv.get("line")
    models = _torch_models(script.calls, s0["seq"], s1["seq"]) if script.torch or script.jax else ""
    return dict(
        id=i,
        line=line,
        text=iv.get("text", ""),
        seconds=iv["seconds"],
        clock=r1["fn"],
        kind=kind,
        blocks=bids,
        ran_on=ran_on,
        unsynced_gpu_end=_unsynced_end(state, script, s0, s1, gpu_side),
        series=f"{line}:{kind}" + models,
        setup_s=_setup_seconds(s0, s1),
        loader_wait_s=float(s1.get("loader_wait_s", 0.0)) - float(s0.get("loader_wait_s", 0.0)),
        start_seq=s0["seq"],
        end_seq=s1["seq"],
        framework=state.get("framework", "tensorflow"),
        tracing=r0.get("tracing") or r1.get("tracing") or "",
        device_script=script.device_script,
        loops=loops_in(state, s0["seq"], s1["seq"]),
        **{k: _diff(s0, s1, k) for k in _MEASUREMENT_COUNTERS},
    )


def build_measurements(state: dict) -> list[Measurement]:
    """One :class:`Measurement` per interval the script computed (``_first_intervals``), numbered
    within its series (same line, same device kind) in the order they ran."""
    reads = {r["id"]: r for r in state.get("reads", [])}
    script = _Script.of(state)
    partial = [_measurement_fields(state, script, i, iv, reads) for i, iv in enumerate(_first_intervals(state, reads))]
    counts: dict[str, int] = {}
    for p in partial:
        p["index_in_series"] = counts.get(p["series"], 0)
        counts[p["series"]] = p["index_in_series"] + 1
    return [Measurement(**p, series_len=counts[p["series"]]) for p in partial]


def _ran_moved_module(state: dict, s0: int, s1: int) -> bool:
    moved = {str(m) for m in state.get("moved_modules") or []}
    return any(s0 < seq < s1 and key.split("@")[0] in moved for seq, key in state.get("torch_calls") or [])


def loops_in(state: dict, s0: int, s1: int) -> list[dict]:
    """The graph loops (tf_hooks.hook_loops) the interval ran: loops of the functions it called and
    the graphs it ran (``tf_calls``), and loops run eagerly inside it; with the calls that ran each."""
    calls: dict[str, int] = {}
    for seq, owner in state.get("tf_calls") or []:
        if s0 < seq < s1:
            calls[owner] = calls.get(owner, 0) + 1
    out = []
    for lp in state.get("loops") or []:
        if lp.get("owner") == "eager":
            if s0 < lp["seq"] < s1:
                out.append({**lp, "calls": 1})
        elif lp.get("owner") in calls and lp["seq"] < s1:
            out.append({**lp, "calls": calls[lp["owner"]]})
    return out


def timed(measurements: list[Measurement]) -> list[Measurement]:
    """The measurements that timed work: not the ones whose clock was read while tracing (those ran
    once, in Python, at trace time; ``rule_clock_read_while_tracing`` reports them)."""
    return [m for m in measurements if not m.tracing]


# A timing is measured wrong when one-time set-up took at least this share of it (rules.SETUP_SHARE_MIN,
# xprof's 5 %, ANCHORS.md).
WRONG_SETUP_SHARE = 0.05


def measured_wrong(m: Measurement) -> bool:
    """What the audit measured makes this timing wrong on its own: the clock stopped before the device's
    work finished, or one-time work (a trace, a compile, a first step) is a share of it. Such a timing
    with no pair is re-run alone after the script, for its real time here (``child._Pairs.single``)."""
    setup = sum(m.setup_s.values())
    return m.unsynced_gpu_end or (m.seconds > 0 and setup >= WRONG_SETUP_SHARE * m.seconds)


def _torch_models(calls: list, s0: int, s1: int) -> str:
    """':m1' / ':m2' ... : which model objects the interval called (a function timing each device's own
    model from one line makes one series per model, as TF's blocks do)."""
    keys = sorted({key.split("@")[0] for seq, key in calls if s0 < seq < s1})
    return (":" + "+".join(keys)) if keys else ""


def torch_fallback(state: dict) -> bool:
    """A PyTorch script asked torch.cuda.is_available() and was told no: its CUDA path ran on the CPU."""
    probe = state.get("cuda_probe") or {}
    return state.get("framework") == "torch" and probe.get("answer") is False


def _script_mentions_sync(state: dict) -> bool:
    text = source_text(state)
    return "synchronize(" in text or "block_until_ready" in text


def series_of(measurements: list[Measurement]) -> dict[str, list[Measurement]]:
    out: dict[str, list[Measurement]] = {}
    for m in measurements:
        out.setdefault(m.series, []).append(m)
    return out


def comparisons(measurements: list[Measurement]) -> list[tuple[Measurement, Measurement]]:
    """Pairs (CPU-kind, GPU-kind): the i-th CPU series with the i-th GPU series, index by index."""
    by = series_of(measurements)
    cpu = [s for s in by.values() if s[0].kind == "CPU"]
    gpu = [s for s in by.values() if s[0].kind == "GPU"]
    pairs: list[tuple[Measurement, Measurement]] = []
    if measurements and terms(measurements[0].framework).SERIES_IN_ORDER and not (cpu and gpu):
        # PyTorch without a GPU here (a "cuda if available else cpu" fallback): the script's series
        # are compared as it wrote them, the first with the second, the third with the fourth —
        # only when the script labels them as devices (two timings of unrelated work are no pair).
        if not any(m.device_script for m in measurements):
            return []
        ordered = [s for s in by.values() if s[0].kind]
        for sa, sb in zip(ordered[0::2], ordered[1::2]):
            pairs.extend(zip(sa, sb))
        return pairs
    for cs, gs in zip(cpu, gpu):
        pairs.extend(zip(cs, gs))
    return pairs
