"""What the audited script measured versus what happened: pure functions on the child's state.

``analyze(state)`` -> (blocks, measurements, found, corrections). Each finding comes from one
named rule function below, with its threshold as a module constant and a note on where the
threshold comes from. A rule sees the whole picture (blocks and measurements) and returns zero
or more ``Found`` (its rule id, the evidence: numbers and the script's own lines it quotes);
``present/auditwords.py`` says each in words. ``RULES`` lists them in the order they are run.

The blocks and measurements the rules read, and their vocabulary (block, measurement, series,
comparison), are built by ``audit/measurements.py``.
"""

from __future__ import annotations

import re

from whichdevice.analysis.significance import judge
from whichdevice.audit import causes
from whichdevice.audit.measurements import (
    build_blocks,
    build_measurements,
    comparisons,
    measured_wrong,
    series_of,
    timed,
    torch_fallback,
)
from whichdevice.audit.measurements import DEVICE_IN_TEXT as _DEVICE_IN_TEXT
from whichdevice.audit.measurements import source_text as _source_text
from whichdevice.audit.record import MISSING_DEVICE_RE as _MISSING_DEVICE_RE
from whichdevice.audit.record import Block, Correction, Found, Measurement, Rerun, SteadyTime
from whichdevice.core import stats
from whichdevice.frameworks.common.audit import AUDITED, terms
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
# tests/data/h100_probe_torch.json, copied from a recorded H100 run): the GPU wording
# of the latent findings quotes them; they are never presented as this machine's cost.
# (causes.H100_LAUNCH_S / H100_ITEM_ROUNDTRIP_S, quoted by ``causes.gpu_cost`` where no GPU is measured.)
H100_LAUNCH_S = causes.H100_LAUNCH_S
H100_ITEM_ROUNDTRIP_S = causes.H100_ITEM_ROUNDTRIP_S


# A series shorter than this shows no spread: "measured once". 1: one number is one number.
ONE_SHOT_MAX = 1


# ---------------------------------------------------------------- shared by the rules


def uses_tf1(state: dict) -> bool:
    """The script runs tf.compat.v1 sessions: TF1 wording (Session, ConfigProto) fits its findings."""
    return (
        bool(state.get("first_runs"))
        or "compat.v1" in _source_text(state)
        or any(int((b.get("exit") or b.get("enter") or {}).get("sessions", 0)) for b in state.get("blocks", []))
    )


def _found(state: dict, rule: str, framework: str, evidence: dict, **ids: list[int]) -> Found:
    """A finding in ``framework``'s terms; ``tf1``: the script runs tf.compat.v1 sessions."""
    return Found(rule=rule, framework=framework, evidence={"tf1": uses_tf1(state), **evidence}, **ids)


def _one_time_count(m: Measurement) -> int:
    return m.traces + m.instantiations + m.xla_compiles + m.new_kernels


def _on_gpu(m: Measurement) -> bool:
    return any(d.startswith("GPU") for d in m.ran_on)


def _gpu_blocks(blocks: list[Block], ids) -> list[Block]:
    return [blocks[i] for i in ids if i < len(blocks) and blocks[i].requested and "GPU" in blocks[i].requested.upper()]


# ---------------------------------------------------------------- the rules


def rule_soft_placed_missing_device(state, blocks, measurements) -> list[Found]:
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


def _soft_placed_series(state, blocks, measurements, covered: set[int]) -> list[Found]:
    """'GPU' series whose timings ran no op on a GPU because the device asked for does not exist
    (the blocks they ran in are added to ``covered``)."""
    out = []
    gpus = int((state.get("physical_devices") or {}).get("GPU", 0))
    for series in series_of(measurements).values():
        if series[0].kind != "GPU":
            continue
        on_cpu = [m for m in series if m.ran_on and not _on_gpu(m)]
        if not on_cpu:
            continue
        gblocks = _gpu_blocks(blocks, sorted({b for m in series for b in m.blocks}))
        if gpus and not any(b.device_exists is False for b in gblocks):
            continue  # the GPU exists: ops placed on the CPU are gpu_ops_on_cpu's (placement log)
        covered.update(b.id for b in gblocks)
        evidence = {"as": "series", "series": series, "on_cpu": on_cpu, "blocks": gblocks, "devices": _devices(state)}
        out.append(
            _found(
                state,
                "soft_placed_missing_device",
                series[0].framework,
                evidence,
                measurements=[m.id for m in series],
                blocks=[b.id for b in gblocks],
            )
        )
    return out


def _soft_placed_torch_fallback(state, measurements) -> list[Found]:
    """A PyTorch script told torch.cuda.is_available() is False: its CUDA path ran on the CPU."""
    gpus = int((state.get("physical_devices") or {}).get("GPU", 0))
    if not (torch_fallback(state) and measurements and not gpus):
        return []
    heads = [s[0] for s in list(series_of(measurements).values())[:4] if s[0].ran_on]
    evidence = {"as": "fallback", "probe": state.get("cuda_probe") or {}, "heads": heads}
    fw = measurements[0].framework
    return [_found(state, "soft_placed_missing_device", fw, evidence, measurements=[m.id for m in measurements])]


def _soft_placed_blocks(state, blocks, measurements, covered: set[int]) -> list[Found]:
    """Blocks no 'GPU' series covered that asked for a missing device and ran work: one finding per line."""
    out = []
    by_line: dict[int, list[Block]] = {}
    for b in blocks:
        if b.id in covered:
            continue
        if b.device_exists is False and b.error is None and (b.ran_on or b.fn_calls or b.session_runs):
            by_line.setdefault(b.line, []).append(b)
    for bs in by_line.values():
        ran = sorted({d for b in bs for d in b.ran_on}) or ["CPU:0"]
        ms = [m.id for m in measurements if set(m.blocks) & {b.id for b in bs}]
        evidence = {"as": "blocks", "blocks": bs, "ran": ran, "devices": _devices(state)}
        ids = {"measurements": ms, "blocks": [b.id for b in bs]}
        out.append(_found(state, "soft_placed_missing_device", "tensorflow", evidence, **ids))
    return out


def rule_different_one_time_costs(state, blocks, measurements) -> list[Found]:
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
        evidence = {"a": a, "b": b, "payer": payer, "other": other}
        out.append(_found(state, "different_one_time_costs", a.framework, evidence, measurements=[a.id, b.id]))
    return out


def rule_gpu_timing_without_sync(state, blocks, measurements) -> list[Found]:
    """GPU timings whose clock was read while GPU work was still queued (one finding per series)."""
    out = []
    for series in series_of(measurements).values():
        hit = [m for m in series if m.unsynced_gpu_end]
        if not hit:
            continue
        evidence = {"m": hit[0], "hit": len(hit), "of": len(series), "on_gpu": _on_gpu(hit[0])}
        out.append(
            _found(state, "gpu_timing_without_sync", hit[0].framework, evidence, measurements=[x.id for x in hit])
        )
    return out


def rule_one_shot_timing(state, blocks, measurements) -> list[Found]:
    """A series of one: a single timing (often a single call or step), so its noise is invisible."""
    out = []
    for series in series_of(measurements).values():
        if len(series) > ONE_SHOT_MAX:
            continue
        m = series[0]
        out.append(_found(state, "one_shot_timing", m.framework, {"m": m}, measurements=[m.id]))
    return out


def rule_first_includes_setup(state, blocks, measurements) -> list[Found]:
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
        evidence = {
            "first": first,
            "rest": rest,
            "later": min(faster, key=lambda m: m.seconds) if faster else None,
            "of": len(series),
        }
        out.append(
            _found(state, "first_includes_setup", first.framework, evidence, measurements=[m.id for m in series])
        )
    return out


def _source_line(state: dict, line: int | None) -> str:
    if not line:
        return ""
    lines = _source_text(state).splitlines()
    return lines[line - 1].strip()[:200] if 0 < line <= len(lines) else ""


def _failed_framework(text: str) -> str:
    """Whose missing-device failure this is (each said in its terms): the framework whose messages it
    matches, the last listed first (TensorFlow's words are the most general, and its messages name
    other frameworks' devices)."""
    return next((n for n in reversed(AUDITED) if re.search(terms(n).MISSING_DEVICE, text, re.I)), AUDITED[0])


def _tf1_session(state: dict) -> bool:
    """A tf.compat.v1 Session (or the source says compat.v1): soft placement is a ConfigProto setting."""
    session = bool(state.get("first_runs")) or any(
        int(b.get("enter", {}).get("sessions", 0)) for b in state.get("blocks", [])
    )
    return session or "compat.v1" in _source_text(state)


def rule_missing_device_failure(state, blocks, measurements) -> list[Found]:
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
        block = next((b for b in reversed(blocks) if b.device_exists is False), None)
        evidence = {
            "device": f"{m.group('kind').upper()}:{m.group('idx')}" if m else None,
            "block": block,
            "line": line,
            "source_line": _source_line(state, line),
            # a notebook's cells after the stop run all the same (child._run_cells): their timings are after it
            "timed_before": sum(1 for t in timed(measurements) if not (line and t.line and t.line > line)),
            "timed_after": sum(1 for t in timed(measurements) if line and t.line and t.line > line),
            "message": next((ln.strip() for ln in (text or "").splitlines() if _MISSING_DEVICE_RE.search(ln)), ""),
            "devices": _devices(state),
            "tf1": _tf1_session(state),
        }
        fw = _failed_framework(text)
        return [
            Found(rule="missing_device_failure", framework=fw, evidence=evidence, blocks=[block.id] if block else [])
        ]
    return []


def rule_gpu_ops_on_cpu(state, blocks, measurements) -> list[Found]:
    """Ops inside a block asking for an existing GPU that ran on the CPU."""
    out = []
    types = state.get("placed_cpu_in_gpu_block") or {}
    for b in blocks:
        if b.device_exists is not True or not b.requested or "GPU" not in b.requested.upper():
            continue
        if not b.cpu_ops_in_gpu_block:
            continue
        evidence = {
            "block": b,
            "cpu": sum(n for d, n in b.ran_on.items() if d.startswith("CPU")),
            "top": sorted(types.items(), key=lambda kv: -kv[1])[:5],
        }
        out.append(_found(state, "gpu_ops_on_cpu", "tensorflow", evidence, blocks=[b.id]))
    return out


def rule_gpu_label_without_gpu(state, blocks, measurements) -> list[Found]:
    """The script's own text says GPU for a timing that asked for no device and ran on no GPU."""
    return [
        _found(state, "gpu_label_without_gpu", m.framework, {"m": m}, measurements=[m.id])
        for m in measurements
        if not m.kind and "gpu" in m.text.lower() and not _on_gpu(m)
    ]


def rule_setup_inside_timing(state, blocks, measurements) -> list[Found]:
    """One-time set-up (traces, Session creation, variable init, iterator start-up, compile,
    first step) inside a timed interval, with the share of the interval it took."""
    out = []
    paired = {m.id: other for a, b in comparisons(measurements) for m, other in ((a, b), (b, a))}
    for series in series_of(measurements).values():
        hit = [m for m in series if m.seconds > 0 and sum(m.setup_s.values()) >= SETUP_SHARE_MIN * m.seconds]
        if not hit:
            continue
        evidence = {"hit": hit, "of": len(series), "other": paired.get(hit[0].id), "share_min": SETUP_SHARE_MIN}
        out.append(_found(state, "setup_inside_timing", hit[0].framework, evidence, measurements=[m.id for m in hit]))
    return out


def _no_gpu(state) -> bool:
    return not (state.get("physical_devices") or {}).get("GPU", 0)


def _gpu_side(m: Measurement, state: dict | None = None) -> bool:
    """The measurement asked for (or ran on) a GPU — or it is PyTorch code whose CUDA path fell back here."""
    return m.kind == "GPU" or _on_gpu(m) or bool(state and torch_fallback(state))


def _steps(m: Measurement) -> int:
    return m.fn_calls + m.session_runs


def rule_host_inputs_per_call(state, blocks, measurements) -> list[Found]:
    """NumPy / Python inputs given to a compiled step at every call: a host->device copy per step on a GPU."""
    out = []
    for series in series_of(measurements).values():
        hit = [
            m
            for m in series
            if _gpu_side(m, state) and _steps(m) >= PER_STEP_MIN_CALLS and 2 * m.host_inputs >= max(1, m.fn_calls)
        ]
        if hit:
            evidence = {"m": hit[0], "on_gpu": _on_gpu(hit[0])}
            ids = [x.id for x in hit]
            out.append(_found(state, "host_inputs_per_call", hit[0].framework, evidence, measurements=ids))
    return out


def rule_host_read_per_step(state, blocks, measurements) -> list[Found]:
    """A host read (.numpy(), float(loss), .item(), Session.run) at every step of a GPU timing."""
    out = []
    for series in series_of(measurements).values():
        hit = [
            m for m in series if _gpu_side(m, state) and m.fn_calls >= PER_STEP_MIN_CALLS and m.user_syncs >= m.fn_calls
        ]
        if hit:
            evidence = {"m": hit[0], "on_gpu": _on_gpu(hit[0]), "cost": causes.gpu_cost(state)}
            ids = [x.id for x in hit]
            out.append(_found(state, "host_read_per_step", hit[0].framework, evidence, measurements=ids))
    return out


def rule_dataloader_settings(state, blocks, measurements) -> list[Found]:
    """A DataLoader with no worker processes (and pageable memory) feeding a timed loop."""
    loaders = state.get("loaders") or []
    weak = [ld for ld in loaders if ld.get("num_workers", 0) == 0 or not ld.get("pin_memory")]
    if not weak:
        return []
    hit = [m for m in measurements if m.seconds > 0 and m.loader_wait_s >= SETUP_SHARE_MIN * m.seconds]
    if not hit:
        return []
    evidence = {"loader": weak[0], "hit": hit, "gpu_here": not _no_gpu(state)}
    return [_found(state, "dataloader_settings", "torch", evidence, measurements=[m.id for m in hit])]


def rule_read_from_page_cache(state, blocks, measurements) -> list[Found]:
    """The timed pipeline reads a file the script wrote moments before: from memory, not from disk."""
    out = []
    for r in state.get("read_after_write") or []:
        hit = [m for m in measurements if m.start_seq > r.get("seq", 0)]
        if hit:
            ids = [m.id for m in hit]
            out.append(_found(state, "read_from_page_cache", "tensorflow", {"read": r}, measurements=ids))
    return out


def rule_variables_on_other_device(state, blocks, measurements) -> list[Found]:
    """Variables created in a block of one device kind and used from a block of another."""
    out = []
    for series in series_of(measurements).values():
        hit = [m for m in series if m.vars_other_device and m.kind]
        if not hit:
            continue
        m = hit[0]
        evidence = {"m": m, "here_cpu": m.kind == "GPU" and not _on_gpu(m) and _no_gpu(state)}
        out.append(_found(state, "variables_on_other_device", m.framework, evidence, measurements=[x.id for x in hit]))
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


def _devices(state: dict) -> dict[str, int]:
    """The devices the script's framework reported (the findings name them)."""
    return dict(state.get("physical_devices") or {})


# ---------------------------------------------------------------- corrected comparison


def significant(ratio: float | None, low: float | None, high: float | None, n: int) -> bool | None:
    """The project's one rule for "significant" (``analysis.significance.judge``): enough
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


def steady_times(state: dict, measurements: list[Measurement], corrections: list[Correction]) -> list[SteadyTime]:
    """Each timing in no compared pair that the audit measured to be wrong (``measured_wrong``): the real
    time of its block, re-run alone after the script (the child's ``singles``), or one line saying why not."""
    paired = {i for c in corrections for i in (c.a, c.b)}
    entries = {e["m"]: e for e in state.get("singles", [])}
    singles = state.get("singles", [])
    out = []
    for m in timed(measurements):
        if m.id in paired or not measured_wrong(m):
            continue
        e = entries.get(m.id)
        if e is not None and "same_as" in e:
            e = {**singles[e["same_as"]], "m": m.id}
        if e is None or "rounds" not in e:
            why = (e or {}).get("skipped") or (
                next((r["reason"] for r in state.get("rerun_skipped", []) if r.get("block") is None), None)
                or "not re-run (--no-rerun, or the script ended past --timeout)"
            )
            out.append(SteadyTime(m=m.id, script_s=m.seconds, note=f"no real time: {why}"))
            continue
        rounds = [float(x) for x in e["rounds"]]
        med = stats.median(rounds)
        lo, hi = stats.median_ci(rounds) or (min(rounds), max(rounds))
        fns = e.get("functions", [])
        ran = sorted({f["ran_on"] for f in fns if f.get("ran_on")})
        what = ", ".join(f"{f['function']} × {f['calls_in_block']}" for f in fns)
        out.append(
            SteadyTime(
                m=m.id,
                script_s=m.seconds,
                steady_s=med,
                low_s=lo,
                high_s=hi,
                ratio=med / m.seconds if m.seconds > 0 else None,
                rounds=len(rounds),
                ran_on=", ".join(ran),
                note=(
                    f"re-run alone after the script: {what} (the calls the block made, with the arguments of the last), "
                    f"warmed up, device synchronized after each sample; median of {len(rounds)} rounds"
                    + (f", on {', '.join(ran)}" if ran else "")
                ),
            )
        )
    return out


def analyze(state: dict):
    """-> (blocks, measurements, found, corrections). The rules see the measurements that timed
    work (``timed``); the tracing rule sees the clock reads themselves."""
    blocks = build_blocks(state)
    measurements = build_measurements(state)
    work = timed(measurements)
    found = [f for rule in RULES for f in rule(state, blocks, work)]
    found += [f for rule in causes.RULES for f in rule(state, blocks, measurements)]
    found.sort(key=lambda f: _ORDER.get(f.rule, 50))
    return blocks, measurements, found, correct(state, work)
