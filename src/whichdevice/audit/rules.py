"""What the audited script measured versus what happened: pure functions on the child's state.

``analyze(state)`` -> (blocks, measurements, findings, corrections, notes). Each finding comes
from one named rule function below, with its threshold as a module constant and a note on
where the threshold comes from. A rule sees the whole picture (blocks and measurements) and
returns zero or more ``Finding``s; ``RULES`` lists them in the order they are reported.

The blocks and measurements the rules read, and their vocabulary (block, measurement, series,
comparison), are built by ``audit/measurements.py``.
"""

from __future__ import annotations

import re

from whichdevice.analysis.significance import judge
from whichdevice.audit import causes, words
from whichdevice.audit.measurements import (
    SETUP_KINDS,
    build_blocks,
    build_measurements,
    comparisons,
    series_of,
    timed,
    torch_fallback,
)
from whichdevice.audit.measurements import DEVICE_IN_TEXT as _DEVICE_IN_TEXT
from whichdevice.audit.measurements import source_text as _source_text
from whichdevice.audit.record import Block, Correction, Finding, Measurement, Rerun
from whichdevice.core import stats
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
NEW_KERNELS_DIFF = 3  # = SETUP_EVENTS_MIN (was 10, which missed seed 000's 9 first-used kernels)
# Set-up inside a timed interval is reported when it took at least this share of the interval:
# 5 %, the share at which xprof calls a step "moderately input-bound" and the torch profiler's
# TensorBoard plugin flags DataLoader time (ANCHORS.md).
SETUP_SHARE_MIN = 0.05
# Latent GPU traps (host inputs converted per call, host reads per step) need a loop: at least
# this many calls in the interval, and one such event for every second call or more.
PER_STEP_MIN_CALLS = 5
# Cost of one host read round trip vs one asynchronous launch, measured on an H100 (PyTorch,
# tests/data/h100_probe_torch.json, from ../shared/reference/h100-2026-11-22): the GPU wording
# of the latent findings quotes them; they are never presented as this machine's cost.
# (causes.H100_LAUNCH_S / H100_ITEM_ROUNDTRIP_S, quoted by ``causes.gpu_cost`` where no GPU is measured.)
H100_LAUNCH_S = causes.H100_LAUNCH_S
H100_ITEM_ROUNDTRIP_S = causes.H100_ITEM_ROUNDTRIP_S
H100_SYNC_EACH_S = 1.87e-05


# A series shorter than this shows no spread: "measured once". 1: one number is one number.
ONE_SHOT_MAX = 1

_MISSING_DEVICE_RE = re.compile(
    r"Cannot assign a device for operation|Could not satisfy explicit device specification|"
    r"explicitly assigned to (?P<dev>\S+) but available devices|Unknown device|"
    r"no (?:GPU|device) (?:named|found)|Could not find device|"
    # PyTorch: a CPU-only build, no driver, no visible GPU, torch.cuda.Event on a CPU build
    r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available|"
    r"CUDA driver initialization failed|Tried to instantiate dummy base class|"
    # PyTorch 2.13's CPU build on X.cuda(0) (torch.accelerator): no accelerator at all
    r"Cannot access accelerator device when none is available|"
    # JAX: no GPU backend
    r"Unknown backend|no platforms that are instances of gpu|Backend '?(?:gpu|cuda)'? failed to initialize|"
    r"Unable to initialize backend '?(?:cuda|gpu)",
    re.I,
)
_TORCH_MISSING_RE = re.compile(
    r"Torch not compiled|NVIDIA driver|CUDA GPUs|CUDA driver|dummy base class|Cannot access accelerator device", re.I
)
_JAX_MISSING_RE = re.compile(r"backend|platforms that are instances", re.I)


# ---------------------------------------------------------------- wording shared by the rules


def mentions_missing_device(text: str) -> bool:
    return bool(_MISSING_DEVICE_RE.search(text or ""))


def uses_tf1(state: dict) -> bool:
    """The script runs tf.compat.v1 sessions: TF1 wording (Session, ConfigProto) fits its findings."""
    return (
        bool(state.get("first_runs"))
        or "compat.v1" in _source_text(state)
        or any(int((b.get("exit") or b.get("enter") or {}).get("sessions", 0)) for b in state.get("blocks", []))
    )


def _fix_for(state: dict, framework: str, *, tf: str, torch: str, jax: str, tf1: str | None = None) -> str:
    """The fix in the finding's own framework's terms (no TF1 text in a TF2 or PyTorch finding)."""
    if framework == "torch":
        return torch
    if framework == "jax":
        return jax
    return tf1 if tf1 is not None and uses_tf1(state) else tf


def _where(m: Measurement) -> str:
    return f"line {m.line}" if m.line else "the script"


def _one_time_count(m: Measurement) -> int:
    return m.traces + m.instantiations + m.xla_compiles + m.new_kernels


def _costs(m: Measurement) -> str:
    bits = []
    if m.traces:
        bits.append(words.traces(m.traces, m.framework))
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


def _ran(d: dict[str, int]) -> str:
    return ", ".join(f"{n} op{'s' if n != 1 else ''} on {k}" for k, n in sorted(d.items())) or "no op seen"


def _gpu_blocks(blocks: list[Block], ids) -> list[Block]:
    return [blocks[i] for i in ids if i < len(blocks) and blocks[i].requested and "GPU" in blocks[i].requested.upper()]


_SOFT_PLACED_TITLE = "Asked for GPU, ran on CPU"


def rule_soft_placed_missing_device(state, blocks, measurements) -> list[Finding]:
    """Asked for a GPU, ran on the CPU — decided from what each timed interval ran, not from the block.

    In ``tf.compat.v1`` the ``with tf.device`` block only builds the graph and ``Session.run``
    happens after it, so the block itself holds no op; the interval holds them all. Blocks
    that no interval covers are judged by their own ops (the TF2 case of a block timed from
    outside, or not timed)."""
    covered: set[int] = set()
    out = _soft_placed_series(state, blocks, measurements, covered)
    out += _soft_placed_torch_fallback(state, measurements)
    out += _soft_placed_blocks(state, blocks, measurements, covered)
    return out


def _soft_placed_series(state, blocks, measurements, covered: set[int]) -> list[Finding]:
    """'GPU' series whose timings ran no op on a GPU because the device asked for does not exist
    (the blocks they ran in are added to ``covered``)."""
    out = []
    gpus = int((state.get("physical_devices") or {}).get("GPU", 0))
    for series in series_of(measurements).values():
        if series[0].kind != "GPU":
            continue
        on_cpu = [m for m in series if m.ran_on and not any(d.startswith("GPU") for d in m.ran_on)]
        if not on_cpu:
            continue
        gblocks = _gpu_blocks(blocks, sorted({b for m in series for b in m.blocks}))
        missing = any(b.device_exists is False for b in gblocks) or (not gpus and state.get("framework") == "torch")
        if not missing and gpus:
            continue  # the GPU exists: ops placed on the CPU are gpu_ops_on_cpu's (placement log)
        covered.update(b.id for b in gblocks)
        out.append(_soft_placed_series_finding(state, series, on_cpu, gblocks))
    return out


def _soft_placed_series_finding(
    state: dict, series: list[Measurement], on_cpu: list[Measurement], gblocks: list[Block]
) -> Finding:
    asked = gblocks[0].requested if gblocks else "a GPU"
    evidence = "; ".join(
        f"measurement {m.index_in_series + 1} ({seconds(m.seconds)}): {_ran(m.ran_on)}" for m in on_cpu[:3]
    ) + (f"; … {len(on_cpu) - 3} more" if len(on_cpu) > 3 else "")
    where_asked = f"line {gblocks[0].line}: {gblocks[0].text}" if gblocks else _where(series[0])
    return Finding(
        rule="soft_placed_missing_device",
        title=_SOFT_PLACED_TITLE,
        where=f"{_where(series[0])}: {series[0].text} (device asked at {where_asked})",
        explanation=(
            f"{len(on_cpu)} of {len(series)} timings of this 'GPU' series ran no op on a GPU — {evidence}. "
            f"{asked!s} does not exist on this machine ({_devices_text(state)}); "
            + (
                "its CUDA path ran the work on the CPU"
                if series[0].framework == "torch"
                else "soft placement ran the work on the CPU"
            )
            + ", so these are CPU times, whatever the label says."
        ),
        fix=_fix_for(
            state,
            series[0].framework,
            tf=(
                "Check tf.config.list_logical_devices('GPU') before timing, or turn soft placement off "
                "(tf.config.set_soft_device_placement(False)) so a missing device raises; label results by "
                "where the ops ran (tensor.device)."
            ),
            tf1=(
                "Check tf.config.list_logical_devices('GPU') before timing, or create the Session with "
                "tf.compat.v1.ConfigProto(allow_soft_placement=False) so a missing device raises; label "
                "results by where the ops ran."
            ),
            torch=(
                "Check torch.cuda.is_available() before timing and label results by tensor.device, not by the "
                "device asked for."
            ),
            jax="Check jax.devices() before timing and label results by the array's device (x.devices()).",
        ),
        measurements=[m.id for m in series],
        blocks=[b.id for b in gblocks],
    )


def _soft_placed_torch_fallback(state, measurements) -> list[Finding]:
    """A PyTorch script told torch.cuda.is_available() is False: its CUDA path ran on the CPU."""
    gpus = int((state.get("physical_devices") or {}).get("GPU", 0))
    if not (torch_fallback(state) and measurements and not gpus):
        return []
    probe = state.get("cuda_probe") or {}
    by = series_of(measurements)
    evidence = "; ".join(f"{_where(s[0])}: {_ran(s[0].ran_on)}" for s in list(by.values())[:4] if s[0].ran_on)
    return [
        Finding(
            rule="soft_placed_missing_device",
            title=_SOFT_PLACED_TITLE,
            where=f"line {probe.get('line')}: {probe.get('text', '')}",
            explanation=(
                "the script asked torch.cuda.is_available() and got False (no CUDA device here), so its CUDA path "
                f"fell back to the CPU: every kernel of every timing ran on CPU:0 ({evidence}). A series printed "
                "as GPU is a CPU time, whatever the label says."
            ),
            fix=(
                "Run it where torch.cuda.is_available() is True, and label each result by the device its tensors "
                "are on (tensor.device), not by the device asked for."
            ),
            measurements=[m.id for m in measurements],
        )
    ]


def _soft_placed_blocks(state, blocks, measurements, covered: set[int]) -> list[Finding]:
    """Blocks no 'GPU' series covered that asked for a missing device and ran work: one finding per line."""
    out = []
    by_line: dict[int, list[Block]] = {}
    for b in blocks:
        if b.id in covered:
            continue
        if b.device_exists is False and b.error is None and (b.ran_on or b.fn_calls or b.session_runs):
            by_line.setdefault(b.line, []).append(b)
    for line, bs in by_line.items():
        ran = sorted({d for b in bs for d in b.ran_on}) or ["CPU:0"]
        n = f"{len(bs)} blocks" if len(bs) > 1 else "the block"
        ms = [m.id for m in measurements if set(m.blocks) & {b.id for b in bs}]
        out.append(
            Finding(
                rule="soft_placed_missing_device",
                title=_SOFT_PLACED_TITLE,
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
    """GPU timings whose clock was read while GPU work was still queued (one finding per series)."""
    out = []
    for series in series_of(measurements).values():
        hit = [m for m in series if m.unsynced_gpu_end]
        if not hit:
            continue
        m = hit[0]
        on_gpu = any(d.startswith("GPU") for d in m.ran_on)
        torch = m.framework == "torch"
        reads = {
            "torch": "no .item(), no .cpu(), no torch.cuda.synchronize()",
            "jax": "no block_until_ready(), no np.asarray(), no .item()",
        }.get(m.framework, "no .numpy(), no Session.run, no sync_devices")
        if on_gpu:
            here = ""
        elif m.framework == "jax":
            here = (
                " JAX dispatches asynchronously on the CPU too, so this is measured here: the clock stopped while "
                "the last jitted call was still running."
            )
        elif torch:
            here = (
                " Here the CUDA path fell back to the CPU, whose kernels finish before they return, so the number is "
                "right here; on a GPU this would time only the kernel launches (the script never synchronizes)."
            )
        else:
            here = (
                " On this machine the block ran on the CPU, whose eager ops finish before they return, so the number "
                "is right here — on a real GPU it would time only the queueing."
            )
        out.append(
            Finding(
                rule="gpu_timing_without_sync",
                title="GPU timing ends without synchronizing",
                where=f"{_where(m)}: {m.text}",
                explanation=(
                    f"{len(hit)} of {len(series)} timings of this series read the clock after GPU work was queued and "
                    f"before anything waited for it ({reads}): GPU work runs asynchronously, so the time is how fast "
                    "the work was launched, not how fast it ran." + here
                ),
                fix=_fix_for(
                    state,
                    m.framework,
                    tf="Read a result back (.numpy()) or call tf.test.experimental.sync_devices() right before the second clock read.",
                    tf1="Fetch the result with Session.run (it returns host values) inside the timing, before the second clock read.",
                    torch="Call torch.cuda.synchronize() right before the second clock read (or time with torch.cuda.Event).",
                    jax="Call result.block_until_ready() (or jax.block_until_ready(result)) before the second clock read.",
                ),
                measurements=[x.id for x in hit],
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
            work = f" ({words.steps(m.fn_calls, m.framework)} in one timing)"
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


def _source_line(state: dict, line: int | None) -> str:
    if not line:
        return ""
    lines = _source_text(state).splitlines()
    return lines[line - 1].strip()[:200] if 0 < line <= len(lines) else ""


def _missing_device_words(text: str, state: dict) -> tuple[str, str, str]:
    """(framework's name, what it did, the fix) for a missing-device failure, in the failing framework's terms."""
    if _TORCH_MISSING_RE.search(text):
        return (
            "PyTorch",
            "this PyTorch cannot reach a CUDA device (a CPU-only build, no NVIDIA driver, or no visible GPU), so "
            "the first .cuda() / device='cuda' / torch.cuda call stopped the script before its GPU timing ran",
            "Run it where torch.cuda.is_available() is True (`whichdevice devices` says why it is not here; a CPU-only "
            "wheel needs the CUDA build of torch), or choose the device with "
            "`device = 'cuda' if torch.cuda.is_available() else 'cpu'` and label results by tensor.device.",
        )
    if _JAX_MISSING_RE.search(text) and (state.get("jax_installed") or "jax" in text.lower()):
        return (
            "JAX",
            "this JAX has no GPU backend (the CPU-only jaxlib, or no CUDA plugin), so asking for a GPU device "
            "stopped the script",
            "Install the CUDA build (pip install -U 'jax[cuda12]') on a machine with a GPU, or pick devices with "
            "jax.devices() and label results by the array's device (x.devices()).",
        )
    session = bool(state.get("first_runs")) or any(
        int(b.get("enter", {}).get("sessions", 0)) for b in state.get("blocks", [])
    )
    soft = (
        "tf.compat.v1.ConfigProto(allow_soft_placement=True)"
        if session or "compat.v1" in _source_text(state)
        else "tf.config.set_soft_device_placement(True)"
    )
    return (
        "TensorFlow",
        "TensorFlow refused to place the ops there"
        + (
            " (a tf.compat.v1 Session does not fall back unless soft placement is allowed)"
            if "ConfigProto" in soft
            else ""
        )
        + ", so it stopped",
        f"Run it where TensorFlow sees a GPU (`whichdevice devices` says why it does not here); or allow soft placement "
        f"({soft}) knowing the 'GPU' numbers will then be CPU numbers.",
    )


def rule_missing_device_failure(state, blocks, measurements) -> list[Finding]:
    """The script stopped because it asked for a device this machine does not have (TensorFlow,
    PyTorch or JAX, each said in its own terms)."""
    exc = state.get("exception")
    texts = []
    if exc:
        texts.append((exc.get("message", ""), exc.get("line")))
    for b in state.get("blocks", []):
        if b.get("error"):
            texts.append((b["error"], b["line"]))
    for text, line in texts:
        if not _MISSING_DEVICE_RE.search(text or "") and not (exc and _MISSING_DEVICE_RE.search(exc.get("type", ""))):
            continue
        m = _DEVICE_IN_TEXT.search(text)
        name, did, fix = _missing_device_words(text, state)
        dev = (
            f"{m.group('kind').upper()}:{m.group('idx')}" if m else ("a CUDA GPU" if name != "TensorFlow" else "a GPU")
        )
        block = next((b for b in reversed(blocks) if b.device_exists is False), None)
        where = (
            f"line {block.line}: {block.text}"
            if block
            else (f"line {line}: {_source_line(state, line)}" if line else "the script")
        )
        timed_before = len(timed(measurements))
        after = (
            f" It had timed {timed_before} interval(s) before it stopped; what they show is below."
            if timed_before
            else " Nothing the script meant to time on the GPU ran."
        )
        first = next((ln.strip() for ln in (text or "").splitlines() if _MISSING_DEVICE_RE.search(ln)), "")
        return [
            Finding(
                rule="missing_device_failure",
                title=f"The script failed: {dev} does not exist on this machine",
                where=where,
                explanation=(
                    f"the script asked for {dev}, and this machine has {_devices_text(state)}; {did}"
                    + (f" ({first[:160]})" if first else "")
                    + "."
                    + after
                ),
                fix=fix,
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
        tf = m.framework not in ("torch", "jax")
        ran = ", ".join(sorted(m.ran_on)) or f"the CPU (no {words.name(m.framework)} op was seen)"
        out.append(
            Finding(
                rule="gpu_label_without_gpu",
                title="Labelled GPU, but nothing ran on a GPU",
                where=f"{_where(m)}: {m.text}",
                explanation=(
                    f"the line that reports this time says GPU, but no tf.device block asked for one and the "
                    f"work ran on {ran}; tf.data transformations (map, batch) always run on the CPU."
                    if tf
                    else f"the line that reports this time says GPU, but nothing in this timing ran on a GPU: the "
                    f"work ran on {ran}."
                ),
                fix=_fix_for(
                    state,
                    m.framework,
                    tf="Label results by where the ops ran (tensor.device), and time the GPU only inside a GPU block.",
                    torch="Label results by where the tensors are (tensor.device), and move the work there first "
                    "(.to('cuda')).",
                    jax="Label results by where the arrays are (x.devices()), and put the work there first "
                    "(jax.device_put(x, jax.devices('gpu')[0])).",
                ),
                measurements=[m.id],
            )
        )
    return out


def _setup_text(setup: dict[str, float], framework: str) -> str:
    return ", ".join(
        f"{words.setup_kind(k, framework, SETUP_KINDS.get(k, k))} {seconds(v)}"
        for k, v in sorted(setup.items(), key=lambda kv: -kv[1])
    )


def rule_setup_inside_timing(state, blocks, measurements) -> list[Finding]:
    """One-time set-up (traces, Session creation, variable init, iterator start-up, compile,
    first step) inside a timed interval, with the share of the interval it took."""
    out = []
    paired = {m.id: other for a, b in comparisons(measurements) for m, other in ((a, b), (b, a))}
    for series in series_of(measurements).values():
        hit = [m for m in series if m.seconds > 0 and sum(m.setup_s.values()) >= SETUP_SHARE_MIN * m.seconds]
        if not hit:
            continue
        parts = []
        for m in hit[:3]:
            total = sum(m.setup_s.values())
            share = min(1.0, total / m.seconds)
            parts.append(
                f"measurement {m.index_in_series + 1} ({seconds(m.seconds)}): {seconds(total)} = {share:.0%} "
                f"set-up ({_setup_text(m.setup_s, m.framework)})"
            )
        if len(hit) > 3:
            parts.append(f"… {len(hit) - 3} more")
        compared = ""
        other = paired.get(hit[0].id)
        if other is not None:
            o_total = sum(other.setup_s.values())
            compared = (
                f" It is compared with {_where(other)} ({other.kind or 'no device asked'}), whose timing holds "
                + (f"{o_total / other.seconds:.0%} set-up" if other.seconds > 0 and o_total else "no set-up")
                + ": the ratio mixes set-up with the work."
            )
        out.append(
            Finding(
                rule="setup_inside_timing",
                title="Set-up inside the timing",
                where=f"{_where(hit[0])}: {hit[0].text}",
                explanation=(
                    f"{len(hit)} of {len(series)} timing{'s' if len(series) != 1 else ''} of this series include one-time "
                    f"set-up (≥ {SETUP_SHARE_MIN:.0%} of the interval): " + "; ".join(parts) + "." + compared
                ),
                fix=_fix_for(
                    state,
                    hit[0].framework,
                    tf=(
                        "Do the set-up before the first clock read: call the tf.function (or the model) once on each "
                        "device with the same shapes, build the tf.data iterator and take one batch — then start the "
                        "clock and time the steady steps only."
                    ),
                    tf1=(
                        "Do the set-up before the first clock read: create the Session and initialize the variables, "
                        "run each fetch once untimed — then start the clock and time the steady runs only."
                    ),
                    torch=(
                        "Do the set-up before the first clock read: run one warm-up step per device (first calls, "
                        "torch.compile, DataLoader workers) — then start the clock and time the steady steps only."
                    ),
                    jax=(
                        "Do the set-up before the first clock read: call the jitted function once with the same shapes "
                        "(it compiles) and block_until_ready() — then start the clock and time the steady calls only."
                    ),
                ),
                measurements=[m.id for m in hit],
            )
        )
    return out


def _no_gpu(state) -> bool:
    return not (state.get("physical_devices") or {}).get("GPU", 0)


def _gpu_side(m: Measurement, state: dict | None = None) -> bool:
    """The measurement asked for (or ran on) a GPU — or it is PyTorch code whose CUDA path fell back here."""
    return m.kind == "GPU" or any(d.startswith("GPU") for d in m.ran_on) or bool(state and torch_fallback(state))


def _steps(m: Measurement) -> int:
    return m.fn_calls + m.session_runs


def rule_host_inputs_per_call(state, blocks, measurements) -> list[Finding]:
    """NumPy / Python inputs given to a compiled step at every call: a host->device copy per step on a GPU."""
    out = []
    for series in series_of(measurements).values():
        hit = [
            m
            for m in series
            if _gpu_side(m, state) and _steps(m) >= PER_STEP_MIN_CALLS and 2 * m.host_inputs >= max(1, m.fn_calls)
        ]
        if not hit:
            continue
        m = hit[0]
        ran_gpu = any(d.startswith("GPU") for d in m.ran_on)
        if m.framework == "torch":
            said = (
                f"{m.host_inputs} tensors built in host memory were moved with .to()/.cuda() inside this timing "
                f"({m.fn_calls} steps), {m.pageable_moves} of them from pageable memory (tensor.is_pinned() False). "
                + (
                    f"{m.h2d} host→device copies ran inside the clock."
                    if ran_gpu
                    else "Here the CUDA path fell back to the CPU, so nothing was copied; on a GPU each move would be "
                    "a host→device copy per step, synchronous from pageable (not pinned) memory."
                )
            )
        elif ran_gpu:
            said = (
                f"each of the {m.host_inputs} calls converted host values and copied them to the GPU "
                f"({m.h2d} host→device copies seen in this timing), inside the clock."
            )
        else:
            said = (
                f"{m.host_inputs} of the {m.fn_calls} calls in this timing were given NumPy arrays or Python values. "
                f"Here every op ran on the CPU, so nothing was copied; on a GPU this would convert and copy each input "
                f"host→device on every call ({m.host_inputs} synchronous copies from pageable memory inside the timing)."
            )
        out.append(
            Finding(
                rule="host_inputs_per_call",
                title="Inputs converted from host memory at every call",
                where=f"{_where(m)}: {m.text}",
                explanation=said,
                fix=_fix_for(
                    state,
                    m.framework,
                    tf="Convert once before the clock starts (tf.constant(x) on the device), or feed with tf.data and .prefetch.",
                    torch=(
                        "Move the data to the device once before the clock starts (torch.as_tensor(x, device=...)), or "
                        "feed with a DataLoader(pin_memory=True) and .to(device, non_blocking=True)."
                    ),
                    jax="Put the data on the device once before the clock starts (jax.device_put(x)).",
                ),
                measurements=[x.id for x in hit],
            )
        )
    return out


def rule_host_read_per_step(state, blocks, measurements) -> list[Finding]:
    """A host read (.numpy(), float(loss), .item(), Session.run) at every step of a GPU timing."""
    out = []
    for series in series_of(measurements).values():
        hit = [
            m for m in series if _gpu_side(m, state) and m.fn_calls >= PER_STEP_MIN_CALLS and m.user_syncs >= m.fn_calls
        ]
        if not hit:
            continue
        m = hit[0]
        ran_gpu = any(d.startswith("GPU") for d in m.ran_on)
        c = causes.gpu_cost(state)
        cost = (
            f"on {c.card} a launch costs ≈ {c.launch_s * 1e6:.0f} µs and a launch plus a host read "
            f"≈ {c.roundtrip_s * 1e6:.0f} µs ({c.how})"
        )
        if ran_gpu:
            said = (
                f"{m.user_syncs} host reads for {m.fn_calls} steps: the host waited for the GPU at every step, so the queue "
                f"emptied each time and the launch latency of the next step was not hidden ({cost})."
            )
        else:
            said = (
                f"{m.user_syncs} host reads by the script for {m.fn_calls} steps. Here the work ran on the CPU, where a read costs nothing "
                f"extra; on a GPU this would make the host wait for the device at every step, so the GPU would idle "
                f"while the next step is launched ({cost})."
            )
        out.append(
            Finding(
                rule="host_read_per_step",
                title="A host read at every step",
                where=f"{_where(m)}: {m.text}",
                explanation=said,
                fix=(
                    "Keep the loss on the device and read it every N steps (or once after the loop); accumulate with "
                    "tensor ops instead of float()/.item()/.numpy()."
                ),
                measurements=[x.id for x in hit],
            )
        )
    return out


def rule_dataloader_settings(state, blocks, measurements) -> list[Finding]:
    """A DataLoader with no worker processes (and pageable memory) feeding a timed loop."""
    out: list[Finding] = []
    loaders = state.get("loaders") or []
    weak = [ld for ld in loaders if ld.get("num_workers", 0) == 0 or not ld.get("pin_memory")]
    if not weak:
        return out
    hit = [m for m in measurements if m.seconds > 0 and m.loader_wait_s >= SETUP_SHARE_MIN * m.seconds]
    if not hit:
        return out
    ld = weak[0]
    shares = "; ".join(
        f"{_where(m)} #{m.index_in_series + 1}: {seconds(m.loader_wait_s)} of {seconds(m.seconds)} "
        f"({m.loader_wait_s / m.seconds:.0%})"
        for m in hit[:3]
    )
    gpu_here = not _no_gpu(state)
    bits = []
    if ld.get("num_workers", 0) == 0:
        bits.append("num_workers=0: every batch is prepared in the main process, between two steps")
    if not ld.get("pin_memory"):
        bits.append("pin_memory=False: batches are in pageable memory, so each copy to the GPU is synchronous")
    gpu_text = (
        "the GPU idled while the loop waited for each batch."
        if gpu_here
        else "on a GPU this would leave the device idle while each batch is prepared, and the shorter the GPU step "
        "the larger that share becomes."
    )
    out.append(
        Finding(
            rule="dataloader_settings",
            title="The timed loop waits for its DataLoader",
            where=f"line {ld.get('line')}: {ld.get('text', '')}",
            explanation=(
                f"{'; '.join(bits)}. The loop waited for batches for a measured share of its timing ({shares}); "
                + gpu_text
            ),
            fix=(
                "DataLoader(..., num_workers=N (≥ 2), pin_memory=True, persistent_workers=True) and "
                ".to(device, non_blocking=True); or keep a small dataset on the device once, before the loop."
            ),
            measurements=[m.id for m in hit],
        )
    )
    return out


def rule_read_from_page_cache(state, blocks, measurements) -> list[Finding]:
    """The timed pipeline reads a file the script wrote moments before: from memory, not from disk."""
    out = []
    for r in state.get("read_after_write") or []:
        hit = [m for m in measurements if m.start_seq > r.get("seq", 0)]
        if not hit:
            continue
        out.append(
            Finding(
                rule="read_from_page_cache",
                title="The timed pipeline reads a file written just before",
                where=f"line {r.get('read_line')}: reads {r['path']} (written at line {r.get('written_line')})",
                explanation=(
                    f"the script wrote {r['path']} and then read it back inside the timing: the operating system "
                    "still holds the file in its page cache, so the timing measures reading memory, not the disk "
                    "(or network storage) a real training run reads from. This is not measured here (the cache "
                    "cannot be emptied without root); it is why such a number is a best case."
                ),
                fix=(
                    "Write the file in a separate run (or drop the page cache: `echo 1 > /proc/sys/vm/drop_caches` as "
                    "root, or read a file larger than RAM), then time the reads; report the first epoch apart."
                ),
                measurements=[m.id for m in hit],
            )
        )
    return out


def rule_variables_on_other_device(state, blocks, measurements) -> list[Finding]:
    """Variables created in a block of one device kind and used from a block of another."""
    out = []
    for series in series_of(measurements).values():
        hit = [m for m in series if m.vars_other_device and m.kind]
        if not hit:
            continue
        m = hit[0]
        other = "CPU" if m.kind == "GPU" else "GPU"
        ran_gpu = any(d.startswith("GPU") for d in m.ran_on)
        if m.kind == "GPU" and not ran_gpu and _no_gpu(state):
            effect = (
                "Here both ran on the CPU; on a GPU this would make the GPU block train weights that live in host "
                "memory, copying them to the GPU (and the updates back) at every step."
            )
        else:
            effect = f"the {m.kind} work read (and updated) variables placed by the {other} block: a copy every step."
        out.append(
            Finding(
                rule="variables_on_other_device",
                title=f"Variables made in a {other} block are used in a {m.kind} block",
                where=f"{_where(m)}: {m.text}",
                explanation=(
                    f"{m.vars_other_device} variable(s) used in this {m.kind} timing were created inside a "
                    f"{other} device block (model and optimizer state live where they were created). {effect}"
                ),
                fix=(
                    "Build the model and the optimizer inside the device block that trains them (one model per device "
                    "being compared), or outside any block so they follow the default device."
                ),
                measurements=[x.id for x in hit],
            )
        )
    return out


# Findings are listed with the causes first: the failure, what the clock really measured, why.
_ORDER = {
    "missing_device_failure": 0,
    "clock_read_while_tracing": 1,
    "first_run_is_setup": 2,
    "per_element_loop": 3,
    "dispatch_bound": 4,
    "soft_placed_missing_device": 5,
    "different_one_time_costs": 6,
    "gpu_timing_without_sync": 7,
    "latent_from_source": 8,
    "first_includes_setup": 9,
    "setup_inside_timing": 10,
}

RULES = (
    rule_missing_device_failure,
    rule_soft_placed_missing_device,
    rule_gpu_ops_on_cpu,
    rule_different_one_time_costs,
    rule_gpu_timing_without_sync,
    rule_first_includes_setup,
    rule_one_shot_timing,
    rule_gpu_label_without_gpu,
    rule_setup_inside_timing,
    rule_host_inputs_per_call,
    rule_host_read_per_step,
    rule_variables_on_other_device,
    rule_dataloader_settings,
    rule_read_from_page_cache,
)


def _devices_text(state: dict) -> str:
    p = state.get("physical_devices") or {}
    if not p:
        return "no device list (no framework reported its devices)"
    names = [f"CPU:{i}" for i in range(p.get("CPU", 0))] + [f"GPU:{i}" for i in range(p.get("GPU", 0))]
    return (", ".join(names) or "no devices") + ("" if p.get("GPU") else " and no GPU")


# ---------------------------------------------------------------- corrected comparison


def significant(ratio: float | None, low: float | None, high: float | None, n: int) -> bool | None:
    """The project's one rule for "significant" (``analysis.significance.judge``, issue #16): enough
    samples (rounds here), and the whole 95 % interval beyond the noise threshold."""
    if ratio is None or low is None or high is None:
        return None
    return judge(ratio, low, high, n, unit="samples").significant


def _reruns(entry: dict, side: str) -> list[Rerun]:
    out = []
    for f in entry.get("functions", []):
        if f["side"] != side or not f["samples_s"]:
            continue
        timing = Timing(
            first_call_s=f["samples_s"][0],
            warmup_s=[],
            samples_s=f["samples_s"],
            number_per_sample=f["number_per_sample"],
            overhead_s=0.0,
        )
        out.append(
            Rerun(
                function=f["function"],
                requested=f["requested"],
                ran_on=f["ran_on"],
                calls_in_block=f["calls_in_block"],
                timing=timing,
            )
        )
    return out


def summarize(rounds: list[dict]) -> dict:
    """Median ratio A/B over the interleaved rounds (above 1: B faster), its distribution-free 95 %
    interval (``core.stats.median_ci``; the whole range when the rounds are too few for one), the
    per-round ratios and the sides' medians."""
    ratios = [r["a_s"] / r["b_s"] for r in rounds if r["b_s"] > 0]
    if not ratios:
        return {"ratios": [], "ratio": None, "low": None, "high": None, "a_s": None, "b_s": None}
    lo, hi = stats.median_ci(ratios) or (min(ratios), max(ratios))
    return {
        "ratios": ratios,
        "ratio": stats.median(ratios),
        "low": lo,
        "high": hi,
        "a_s": stats.median([r["a_s"] for r in rounds]),
        "b_s": stats.median([r["b_s"] for r in rounds]),
    }


def correct(state: dict, measurements: list[Measurement]) -> list[Correction]:
    """The corrected ratio of every compared pair, from the child's interleaved rounds."""

    entries = {(e["a"], e["b"]): e for e in state.get("interleaved", [])}
    all_entries = state.get("interleaved", [])
    out = []
    for a, b in comparisons(measurements):
        ratio = a.seconds / b.seconds if b.seconds > 0 else float("inf")  # A/B as compare: above 1, B faster
        entry = entries.get((a.id, b.id))
        if entry is not None and "same_as" in entry:
            entry = {**all_entries[entry["same_as"]], "a": a.id, "b": b.id}
        if entry is None or "rounds" not in entry:
            failed = next((r["reason"] for r in state.get("rerun_skipped", []) if r.get("block") is None), None)
            why = (entry or {}).get("skipped") or (
                (failed or "not re-run (--no-rerun, or the script ended past --timeout)")
                if entry is None
                else "not re-run"
            )
            out.append(Correction(a=a.id, b=b.id, script_ratio=ratio, note=f"cannot be re-run safely: {why}"))
            continue
        summ = summarize(entry["rounds"])
        ra, rb = _reruns(entry, "a"), _reruns(entry, "b")
        ran = sorted({r.ran_on for r in ra + rb if r.ran_on})
        functions = " and ".join(sorted({r.function for r in ra + rb}))
        replayed = any("replayed" in r.function for r in ra + rb)
        note = (
            f"re-measured interleaved: {len(entry['rounds'])} rounds of A and B in random order, device synchronized, "
            + (
                f"warm-up apart, each block's torch ops run again in order on fresh tensors of the same shapes, "
                f"dtypes and devices ({functions}); "
                if replayed
                else f"warm-up apart, with the arguments of the last call; {functions} per call × calls in the block; "
            )
            + "interval: 95 % of the median of the per-round ratios"
        )
        if len(ran) == 1:
            note += f"; both ran on {ran[0]}"
        out.append(
            Correction(
                a=a.id,
                b=b.id,
                script_ratio=ratio,
                a_steady_s=summ["a_s"],
                b_steady_s=summ["b_s"],
                real_ratio=summ["ratio"],
                real_ratio_low=summ["low"],
                real_ratio_high=summ["high"],
                reruns=ra + rb,
                note=note,
                rerun_ok=summ["ratio"] is not None,
                round_ratios=summ["ratios"],
                significant=significant(summ["ratio"], summ["low"], summ["high"], len(summ["ratios"])),
            )
        )
    return out


def analyze(state: dict):
    """-> (blocks, measurements, findings, corrections). The rules see the measurements that timed
    work (``timed``); the tracing rule sees the clock reads themselves."""
    blocks = build_blocks(state)
    measurements = build_measurements(state)
    work = timed(measurements)
    findings = [f for rule in RULES for f in rule(state, blocks, work)]
    findings += [f for rule in causes.RULES for f in rule(state, blocks, measurements)]
    findings.sort(key=lambda f: _ORDER.get(f.rule, 50))
    return blocks, measurements, findings, correct(state, work)
