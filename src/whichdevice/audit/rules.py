"""What the audited script measured versus what happened: pure functions on the child's state.

``analyze(state)`` -> (blocks, measurements, findings, corrections, notes). Each finding comes
from one named rule function below, with its threshold as a module constant and a note on
where the threshold comes from. A rule sees the whole picture (blocks and measurements) and
returns zero or more ``Finding``s; ``RULES`` lists them in the order they are reported.

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

from whichdevice.core import stats
from whichdevice.audit.record import Block, Correction, Finding, Measurement, Rerun
from whichdevice.core.units import seconds
from whichdevice.core.records import Timing

# The first of a series is "set-up included" when it is this much slower than a later one
# that did as much or more work. 25 %: well above the 10 % spread torch.utils.benchmark
# treats as noise (ANCHORS.md), so a noisy but honest series is not flagged.
FIRST_SLOWER_RATIO = 1.25
# One-time events (first-used kernels, traces...) that make a first measurement "set-up
# included" even when the clock does not show it above the noise: a handful of first-used
# kernels (each built on first use) is more than a stray op.
SETUP_EVENTS_MIN = 3
# Two compared measurements "paid different one-time costs" when their traces, graph
# instantiations or XLA compiles differ, or when one used this many more op kernels for
# the first time (each first use builds a kernel; a handful is noise-level).
NEW_KERNELS_DIFF = 10
# A series shorter than this shows no spread: "measured once". 1: one number is one number.
ONE_SHOT_MAX = 1

_MISSING_DEVICE_RE = re.compile(
    r"Cannot assign a device for operation|Could not satisfy explicit device specification|"
    r"explicitly assigned to (?P<dev>\S+) but available devices|Unknown device|"
    r"no (?:GPU|device) (?:named|found)|Could not find device",
    re.I,
)
_DEVICE_IN_TEXT = re.compile(r"/(?:device:)?(?P<kind>GPU|CPU):(?P<idx>\d+)", re.I)


# ---------------------------------------------------------------- building blocks and measurements


def mentions_missing_device(text: str) -> bool:
    return bool(_MISSING_DEVICE_RE.search(text or ""))


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
    m = _DEVICE_IN_TEXT.search("/" + requested.lstrip("/")) or _DEVICE_IN_TEXT.search(requested)
    if m is None:
        return None
    return int(m.group("idx")) < physical.get(m.group("kind").upper(), 0)


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
                **{
                    k: _diff(enter, exit_, k)
                    for k in (
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
                },
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


def build_measurements(state: dict) -> list[Measurement]:
    reads = {r["id"]: r for r in state.get("reads", [])}
    raw_blocks = state.get("blocks", [])
    first_by_start: dict[int, dict] = {}
    for iv in state.get("intervals", []):
        if iv["start"] not in reads or iv["end"] not in reads or iv["seconds"] < 0:
            continue
        if iv["start"] == iv["end"]:
            continue
        kept = first_by_start.get(iv["start"])
        if kept is None or iv["end"] < kept["end"]:
            first_by_start[iv["start"]] = iv
    items = sorted(first_by_start.values(), key=lambda iv: (reads[iv["start"]]["snap"]["seq"], iv["end"]))
    partial = []
    for i, iv in enumerate(items):
        r0, r1 = reads[iv["start"]], reads[iv["end"]]
        s0, s1 = r0["snap"], r1["snap"]
        bids = _blocks_in(state, s0, s1, r0.get("block"))
        kinds = {raw_blocks[b]["kind"] for b in bids}
        kind = "GPU" if "GPU" in kinds else ("CPU" if "CPU" in kinds else "")
        ran_on = _diff_devices(s0, s1)
        gpu_ran = any(d.startswith("GPU") for d in ran_on)
        unsynced = (
            s1.get("last_gpu_work", 0) > s0["seq"]
            and s1.get("last_gpu_work", 0) > s1.get("last_sync", 0)
            and (kind == "GPU" or gpu_ran)
        )
        line = iv.get("line")
        partial.append(
            dict(
                id=i,
                line=line,
                text=iv.get("text", ""),
                seconds=iv["seconds"],
                clock=r1["fn"],
                kind=kind,
                blocks=bids,
                ran_on=ran_on,
                unsynced_gpu_end=unsynced,
                series=f"{line}:{kind}",
                **{
                    k: _diff(s0, s1, k)
                    for k in (
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
                    )
                },
            )
        )
    counts: dict[str, int] = {}
    for p in partial:
        p["index_in_series"] = counts.get(p["series"], 0)
        counts[p["series"]] = p["index_in_series"] + 1
    return [Measurement(**p, series_len=counts[p["series"]]) for p in partial]


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
    pairs = []
    for cs, gs in zip(cpu, gpu):
        pairs.extend(zip(cs, gs))
    return pairs


def _where(m: Measurement) -> str:
    return f"line {m.line}" if m.line else "the script"


def _one_time_count(m: Measurement) -> int:
    return m.traces + m.instantiations + m.xla_compiles + m.new_kernels


def _costs(m: Measurement) -> str:
    bits = []
    if m.traces:
        bits.append(f"{m.traces} tf.function trace{'s' if m.traces != 1 else ''}")
    if m.instantiations:
        bits.append(f"{m.instantiations} graph instantiation{'s' if m.instantiations != 1 else ''}")
    if m.xla_compiles:
        bits.append(f"{m.xla_compiles} XLA compile{'s' if m.xla_compiles != 1 else ''}")
    if m.sessions:
        bits.append(f"{m.sessions} new Session{'s' if m.sessions != 1 else ''}")
    if m.new_kernels:
        bits.append(f"{m.new_kernels} first-used op kernel{'s' if m.new_kernels != 1 else ''}")
    return ", ".join(bits) or "no one-time cost seen"


# ---------------------------------------------------------------- the rules


def rule_soft_placed_missing_device(state, blocks, measurements) -> list[Finding]:
    """A block asked for a device that does not exist; soft placement ran it elsewhere."""
    by_line: dict[int, list[Block]] = {}
    for b in blocks:
        if b.device_exists is False and b.error is None and (b.ran_on or b.fn_calls or b.session_runs):
            by_line.setdefault(b.line, []).append(b)
    out = []
    for line, bs in by_line.items():
        ran = sorted({d for b in bs for d in b.ran_on}) or ["CPU:0"]
        n = f"{len(bs)} blocks" if len(bs) > 1 else "the block"
        ms = [m.id for m in measurements if set(m.blocks) & {b.id for b in bs}]
        out.append(
            Finding(
                rule="soft_placed_missing_device",
                title="The requested device does not exist: the block ran elsewhere",
                where=f"line {line}: {bs[0].text}",
                explanation=(
                    f"{bs[0].requested!s} does not exist on this machine (TensorFlow sees "
                    f"{_devices_text(state)}); soft placement ran {n} on {', '.join(ran)}, so its time is a "
                    f"{', '.join(ran)} time, whatever the label says."
                ),
                fix=(
                    "Check tf.config.list_logical_devices('GPU') before timing, or call "
                    "tf.config.set_soft_device_placement(False) so a missing device raises; label results by where the "
                    "ops ran (tensor.device)."
                ),
                measurements=ms,
                blocks=[b.id for b in bs],
            )
        )
    return out


def rule_different_one_time_costs(state, blocks, measurements) -> list[Finding]:
    """Compared measurements where one paid tracing/instantiation/compilation and the other reused it."""
    out = []
    for a, b in comparisons(measurements):
        differ = (
            a.traces != b.traces
            or a.instantiations != b.instantiations
            or a.xla_compiles != b.xla_compiles
            or a.sessions != b.sessions
            or abs(a.new_kernels - b.new_kernels) >= NEW_KERNELS_DIFF
        )
        if not differ:
            continue
        payer = (
            a
            if (a.traces + a.instantiations + a.xla_compiles, a.new_kernels)
            >= (b.traces + b.instantiations + b.xla_compiles, b.new_kernels)
            else b
        )
        other = b if payer is a else a
        out.append(
            Finding(
                rule="different_one_time_costs",
                title="The compared blocks paid different one-time costs",
                where=f"{_where(a)} vs {_where(b)}",
                explanation=(
                    f"the {payer.kind} measurement ({_where(payer)}, {seconds(payer.seconds)}) includes "
                    f"{_costs(payer)}; the {other.kind} one ({_where(other)}, {seconds(other.seconds)}) "
                    f"includes {_costs(other)} — it reused what the first paid for, so the comparison "
                    "measures set-up order, not the devices."
                ),
                fix=(
                    "Warm up each device before its clock starts (call the step once per device and read the result), "
                    "then time many steady steps — or use `whichdevice train`, which does."
                ),
                measurements=[a.id, b.id],
            )
        )
    return out


def rule_gpu_timing_without_sync(state, blocks, measurements) -> list[Finding]:
    """A GPU measurement whose clock was read while GPU work was still queued."""
    out = []
    for m in measurements:
        if not m.unsynced_gpu_end:
            continue
        on_gpu = any(d.startswith("GPU") for d in m.ran_on)
        here = (
            ""
            if on_gpu
            else " On this machine the block ran on the CPU, whose eager ops finish before they "
            "return, so the number is right here — on a real GPU it would time only the queueing."
        )
        out.append(
            Finding(
                rule="gpu_timing_without_sync",
                title="GPU timing ends without synchronizing",
                where=f"{_where(m)}: {m.text}",
                explanation=(
                    "the clock was read after GPU work was queued and before anything waited for it (no "
                    ".numpy(), no Session.run, no sync_devices): GPU ops run asynchronously, so the time "
                    "is how fast the work was launched, not how fast it ran." + here
                ),
                fix=(
                    "Read a result back (.numpy()) or call tf.test.experimental.sync_devices() right before the "
                    "second clock read."
                ),
                measurements=[m.id],
            )
        )
    return out


def rule_one_shot_timing(state, blocks, measurements) -> list[Finding]:
    """A series of one: a single timing (often a single call or step), so its noise is invisible."""
    out = []
    for series in series_of(measurements).values():
        if len(series) > ONE_SHOT_MAX:
            continue
        m = series[0]
        work = ""
        if m.fn_calls == 1 or m.session_runs == 1:
            work = " of a single call"
        elif m.fn_calls > 1:
            work = f" ({m.fn_calls} tf.function calls in one timing)"
        out.append(
            Finding(
                rule="one_shot_timing",
                title="Measured once: the noise cannot be seen",
                where=f"{_where(m)}: {m.text}",
                explanation=(
                    f"this number ({seconds(m.seconds)}) is one timing{work}; with one sample there is no "
                    "median and no spread, so a difference between devices cannot be told from noise "
                    "(a busy core, a page fault, a first-call cost)."
                ),
                fix=(
                    "Repeat the timed block (≥ 5 times after a warm-up run) and report the median and the spread "
                    "(IQR); compare devices only when the spreads do not overlap."
                ),
                measurements=[m.id],
            )
        )
    return out


def rule_first_includes_setup(state, blocks, measurements) -> list[Finding]:
    """The first of a series paid one-time set-up that the later ones did not.

    Evidence comes first: the first measurement holds one-time events the later ones lack
    (traces, instantiations, XLA compiles, op kernels used for the first time). It fires when
    those events are many (``SETUP_EVENTS_MIN``) or when the time shows it too — the first is
    ``FIRST_SLOWER_RATIO`` slower than a later point that did as much work or more (a sweep
    whose smallest size is slower than a larger one). A slow first repeat with no such event
    is noise or a cold cache, not set-up, and is left alone.
    """
    out = []
    for series in series_of(measurements).values():
        if len(series) < 2:
            continue
        first, rest = series[0], series[1:]
        extra = _one_time_count(first) - max(_one_time_count(m) for m in rest)
        if extra <= 0:
            continue
        faster = [m for m in rest if first.seconds > FIRST_SLOWER_RATIO * m.seconds]
        strong = first.traces + first.instantiations + first.xla_compiles > 0 or extra >= SETUP_EVENTS_MIN
        if not faster and not strong:
            continue
        if faster:
            later = min(faster, key=lambda m: m.seconds)
            shows = (
                f"it took {seconds(first.seconds)}, {first.seconds / later.seconds:.1f}x measurement "
                f"{later.index_in_series + 1} ({seconds(later.seconds)}), which did as much work or more"
            )
        else:
            shows = (
                f"it took {seconds(first.seconds)} (the others {seconds(min(m.seconds for m in rest))} to "
                f"{seconds(max(m.seconds for m in rest))}; on a busy machine the set-up can hide in the noise)"
            )
        out.append(
            Finding(
                rule="first_includes_setup",
                title="The first measurement of the series includes the set-up",
                where=f"{_where(first)}: {first.text}",
                explanation=(
                    f"measurement 1 of {len(series)} paid one-time costs the later ones did not "
                    f"({_costs(first)}; later: {_costs(rest[0])}): {shows}."
                ),
                fix=(
                    "Run one untimed warm-up iteration (same device, same shapes) before the loop, or drop the first "
                    "point; time each point several times and keep the median."
                ),
                measurements=[m.id for m in series],
            )
        )
    return out


def rule_missing_device_failure(state, blocks, measurements) -> list[Finding]:
    """The script stopped because it asked for a device this machine does not have."""
    exc = state.get("exception")
    texts = []
    if exc:
        texts.append((exc.get("message", ""), exc.get("line")))
    for b in state.get("blocks", []):
        if b.get("error"):
            texts.append((b["error"], b["line"]))
    for text, line in texts:
        if not _MISSING_DEVICE_RE.search(text or ""):
            continue
        m = _DEVICE_IN_TEXT.search(text)
        dev = f"{m.group('kind').upper()}:{m.group('idx')}" if m else "a device"
        block = next((b for b in reversed(blocks) if b.device_exists is False), None)
        where = f"line {block.line}: {block.text}" if block else (f"line {line}" if line else "the script")
        return [
            Finding(
                rule="missing_device_failure",
                title=f"The script failed: {dev} does not exist on this machine",
                where=where,
                explanation=(
                    f"the script asked for {dev}, and this machine has {_devices_text(state)}; TensorFlow "
                    "refused to place the ops there (a tf.compat.v1 Session does not fall back unless soft "
                    "placement is allowed), so it stopped."
                ),
                fix=(
                    "Run it where TensorFlow sees a GPU (`whichdevice devices` says why it does not here); or allow "
                    "soft placement (tf.ConfigProto(allow_soft_placement=True) / tf.config.set_soft_device_placement(True)) "
                    "knowing the 'GPU' numbers will then be CPU numbers."
                ),
                blocks=[block.id] if block else [],
            )
        ]
    return []


def rule_gpu_ops_on_cpu(state, blocks, measurements) -> list[Finding]:
    """Ops inside a block asking for an existing GPU that ran on the CPU."""
    out = []
    types = state.get("placed_cpu_in_gpu_block") or {}
    for b in blocks:
        if b.device_exists is not True or not b.requested or "GPU" not in b.requested.upper():
            continue
        cpu = sum(n for d, n in b.ran_on.items() if d.startswith("CPU"))
        if not b.cpu_ops_in_gpu_block:
            continue
        top = ", ".join(f"{t} ({n})" for t, n in sorted(types.items(), key=lambda kv: -kv[1])[:5])
        out.append(
            Finding(
                rule="gpu_ops_on_cpu",
                title="Ops in a GPU block ran on the CPU",
                where=f"line {b.line}: {b.text}",
                explanation=(
                    f"{b.cpu_ops_in_gpu_block} op(s) in this block ran on the CPU ({cpu} CPU placements in all"
                    f"{'; most frequent: ' + top if top else ''}); each one moves data between host and GPU "
                    f"({b.h2d} host→device, {b.d2h} device→host copies seen)."
                ),
                fix=(
                    "Find them with tf.debugging.set_log_device_placement(True); replace ops without a GPU kernel, keep "
                    "the data pipeline (tf.data) on the CPU on purpose, and feed the GPU with prefetch."
                ),
                blocks=[b.id],
            )
        )
    return out


def rule_gpu_label_without_gpu(state, blocks, measurements) -> list[Finding]:
    """The script's own text says GPU for a timing that asked for no device and ran on no GPU."""
    out = []
    for m in measurements:
        if m.kind or "gpu" not in m.text.lower() or any(d.startswith("GPU") for d in m.ran_on):
            continue
        ran = ", ".join(sorted(m.ran_on)) or "the CPU (no TensorFlow op was seen)"
        out.append(
            Finding(
                rule="gpu_label_without_gpu",
                title="Labelled GPU, but nothing ran on a GPU",
                where=f"{_where(m)}: {m.text}",
                explanation=(
                    f"the line that reports this time says GPU, but no tf.device block asked for one and the "
                    f"work ran on {ran}; tf.data transformations (map, batch) always run on the CPU."
                ),
                fix="Label results by where the ops ran (tensor.device), and time the GPU only inside a GPU block.",
                measurements=[m.id],
            )
        )
    return out


RULES = (
    rule_missing_device_failure,
    rule_soft_placed_missing_device,
    rule_gpu_ops_on_cpu,
    rule_different_one_time_costs,
    rule_gpu_timing_without_sync,
    rule_first_includes_setup,
    rule_one_shot_timing,
    rule_gpu_label_without_gpu,
)


def _devices_text(state: dict) -> str:
    p = state.get("physical_devices") or {}
    if not p:
        return "no device list (TensorFlow was not imported)"
    names = [f"CPU:{i}" for i in range(p.get("CPU", 0))] + [f"GPU:{i}" for i in range(p.get("GPU", 0))]
    return (", ".join(names) or "no devices") + ("" if p.get("GPU") else " and no GPU")


# ---------------------------------------------------------------- corrected comparison


def _rerun_for(state: dict, block_ids: list[int]) -> tuple[list[Rerun], str | None]:
    """Reruns covering the traced functions called in these blocks, or why there are none."""
    reruns = state.get("reruns", [])
    skipped = state.get("rerun_skipped", [])
    calls = state.get("block_calls", {})
    out: list[Rerun] = []
    for bid in block_ids:
        for fid, n in (calls.get(str(bid)) or {}).items():
            entry = next((r for r in reruns if r.get("block") == bid and str(r.get("function_id")) == fid), None)
            if entry is None:
                why = next(
                    (s["reason"] for s in skipped if s.get("block") == bid and str(s.get("function_id")) == fid),
                    "it was not re-measured",
                )
                return [], why
            if "same_as" in entry:
                entry = {**reruns[entry["same_as"]], "block": bid}
            timing = Timing(
                first_call_s=entry["first_call_s"],
                warmup_s=entry["warmup_s"],
                samples_s=entry["samples_s"],
                number_per_sample=entry["number_per_sample"],
                overhead_s=entry["overhead_s"],
            )
            out.append(
                Rerun(
                    function=entry["function"],
                    requested=entry["requested"],
                    ran_on=entry["ran_on"],
                    calls_in_block=n,
                    timing=timing,
                )
            )
    if not out:
        return [], (
            "the timed work calls no tf.function (eager ops, Keras internals or a tf.compat.v1 session); "
            "only traced functions are re-run, because their graph is the whole work and calling it "
            "again touches nothing outside TensorFlow"
        )
    return out, None


def correct(state: dict, measurements: list[Measurement]) -> list[Correction]:
    out = []
    for a, b in comparisons(measurements):
        ratio = b.seconds / a.seconds if a.seconds > 0 else float("inf")
        ra, why_a = _rerun_for(state, a.blocks)
        rb, why_b = _rerun_for(state, b.blocks)
        if why_a or why_b:
            out.append(
                Correction(a=a.id, b=b.id, script_ratio=ratio, note=f"cannot be re-run safely: {why_a or why_b}")
            )
            continue

        def est(rs, q):
            return sum(r.calls_in_block * stats.quantile(r.timing.samples_s, q) for r in rs)

        a_med, b_med = est(ra, 0.5), est(rb, 0.5)
        lo = est(rb, 0.25) / est(ra, 0.75) if est(ra, 0.75) > 0 else None
        hi = est(rb, 0.75) / est(ra, 0.25) if est(ra, 0.25) > 0 else None
        ran = sorted({r.ran_on for r in ra + rb if r.ran_on})
        note = (
            f"re-measured steady (warm-up apart, synchronized) with the arguments of the last call; "
            f"{' and '.join(sorted({r.function for r in ra + rb}))} per call × calls in the block"
        )
        if len(ran) == 1:
            note += f"; both ran on {ran[0]}"
        out.append(
            Correction(
                a=a.id,
                b=b.id,
                script_ratio=ratio,
                a_steady_s=a_med,
                b_steady_s=b_med,
                real_ratio=b_med / a_med if a_med > 0 else None,
                real_ratio_low=lo,
                real_ratio_high=hi,
                reruns=ra + rb,
                note=note,
                rerun_ok=True,
            )
        )
    return out


def analyze(state: dict):
    """-> (blocks, measurements, findings, corrections)."""
    blocks = build_blocks(state)
    measurements = build_measurements(state)
    findings = [f for rule in RULES for f in rule(state, blocks, measurements)]
    return blocks, measurements, findings, correct(state, measurements)
