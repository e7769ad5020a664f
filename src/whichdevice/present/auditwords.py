"""The words of the audit's findings: one function per rule, from what the rule found.

The rules (``audit/rules.py``, ``audit/causes.py``) return a ``Found``: the rule's id, the
framework whose terms fit it, its evidence (numbers, the script's own lines, the measurements
and blocks it is about). :func:`finding` says it — title, where, explanation, fix — as the
record keeps it. What differs between frameworks (a step is an "nn.Module call" in PyTorch, a
"jax.jit call" in JAX; each fix in the framework's own API) is the framework's own: the
``WORDS`` of its audit part (``frameworks/<name>/audit.py``), read by :func:`said`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from whichdevice.audit.record import Block, Finding, Found, Measurement
from whichdevice.core.units import seconds
from whichdevice.present.claims import times
from whichdevice.frameworks.common.audit import terms

Words = tuple[str, str, str, str]  # title, where, explanation, fix

# Set-up counted inside an interval, by kind (the state's ``setup_<kind>_s`` counters): what each is
# (``trace`` and ``compile`` in the framework's own terms: its WORDS' ``setup.<kind>``).
SETUP_KINDS = {
    "trace": "tf.function tracing / graph set-up (first calls, with their run)",
    "session": "Session creation",
    "init": "variable initialization",
    "iter": "tf.data iterator start-up and first batch",
    "compile": "torch.compile compilation (first calls)",
    "first_step": "first step (lazy initialization, allocator growth, cuDNN autotune)",
    "loader": "DataLoader iterator start-up (worker processes) and first batch",
}


# Words every framework shares unless its WORDS says otherwise (PyTorch's inputs are moved with .to()).
SHARED = {
    "soft_placed.ran": "soft placement ran the work on the CPU",
    "host_inputs.gpu": (
        "each of the {host_inputs} calls converted host values and copied them to the GPU "
        "({h2d} host→device copies seen in this timing), inside the clock."
    ),
    "host_inputs.cpu": (
        "{host_inputs} of the {fn_calls} calls in this timing were given NumPy arrays or Python values. "
        "Here every op ran on the CPU, so nothing was copied; on a GPU this would convert and copy each input "
        "host→device on every call ({host_inputs} synchronous copies from pageable memory inside the timing)."
    ),
    "missing.device": "a CUDA GPU",
}


def said(framework: str, key: str, tf1: bool = False) -> str:
    """The framework's words for ``key`` (``key.tf1`` for a tf.compat.v1 script, where it has them;
    ``SHARED``'s where it has none of its own)."""
    words: dict[str, str] = {**SHARED, **terms(framework).WORDS}
    return words.get(f"{key}.tf1", words[key]) if tf1 else words[key]


# The multipliers this module once wrote with an 'x' ('72.9x measurement 3', 'the steady run is
# 41x faster', the TensorFlow team's '10x slower on GPU'): a record keeps a finding's words as
# written then, and a page says them with '×' as every ratio is written (present/claims.times).
# Only these phrases of ours, never the user's code a finding quotes ('print("matmul 20x", ...)').
_OLD_TIMES = re.compile(r"\b(\d[\d,]*(?:\.\d+)?)x (measurement \d|faster\)|slower on GPU, tensorflow)")


def recorded(explanation: str) -> str:
    """A finding's explanation as a record keeps it, its multipliers written with '×'."""
    return _OLD_TIMES.sub(r"\1× \2", explanation)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _at(m: Measurement) -> str:
    return f"line {m.line}" if m.line else "the script"


def _at_text(m: Measurement) -> str:
    return f"line {m.line}: {m.text}" if m.line else "the script"


def _ran(d: dict[str, int]) -> str:
    return ", ".join(f"{n} op{'s' if n != 1 else ''} on {k}" for k, n in sorted(d.items())) or "no op seen"


def _costs(m: Measurement) -> str:
    bits = []
    if m.traces:
        bits.append(_plural(m.traces, said(m.framework, "trace")))
    if m.instantiations:
        bits.append(_plural(m.instantiations, "graph instantiation"))
    if m.xla_compiles:
        bits.append(_plural(m.xla_compiles, "XLA compile"))
    if m.sessions:
        bits.append(_plural(m.sessions, "new Session"))
    if m.new_kernels:
        bits.append(_plural(m.new_kernels, "first-used op kernel"))
    return ", ".join(bits) or "no one-time cost seen"


def _devices_text(p: dict[str, int]) -> str:
    if not p:
        return "no device list (no framework reported its devices)"
    names = [f"CPU:{i}" for i in range(p.get("CPU", 0))] + [f"GPU:{i}" for i in range(p.get("GPU", 0))]
    return (", ".join(names) or "no devices") + ("" if p.get("GPU") else " and no GPU")


def _setup_text(setup: dict[str, float], framework: str) -> str:
    words: dict[str, str] = terms(framework).WORDS
    return ", ".join(
        f"{words.get('setup.' + k, SETUP_KINDS.get(k, k))} {seconds(v)}"
        for k, v in sorted(setup.items(), key=lambda kv: -kv[1])
    )


# ---------------------------------------------------------------- the timing rules (audit/rules.py)

_SOFT_PLACED_TITLE = "Asked for GPU, ran on CPU"


def _soft_placed_missing_device(f: Found, e: dict[str, Any]) -> Words:
    if e["as"] == "fallback":
        probe, heads = e["probe"], e["heads"]
        evidence = "; ".join(f"{_at(m)}: {_ran(m.ran_on)}" for m in heads)
        return (
            _SOFT_PLACED_TITLE,
            f"line {probe.get('line')}: {probe.get('text', '')}",
            "the script asked torch.cuda.is_available() and got False (no CUDA device here), so its CUDA path "
            f"fell back to the CPU: every kernel of every timing ran on CPU:0 ({evidence}). A series printed "
            "as GPU is a CPU time, whatever the label says.",
            "Run it where torch.cuda.is_available() is True, and label each result by the device its tensors "
            "are on (tensor.device), not by the device asked for.",
        )
    if e["as"] == "blocks":
        bs: list[Block] = e["blocks"]
        ran = ", ".join(e["ran"])
        n = f"{len(bs)} blocks" if len(bs) > 1 else "the block"
        return (
            _SOFT_PLACED_TITLE,
            f"line {bs[0].line}: {bs[0].text}",
            f"{bs[0].requested!s} does not exist on this machine (TensorFlow sees {_devices_text(e['devices'])}); "
            f"soft placement ran {n} on {ran}, so its time is a {ran} time, whatever the label says.",
            "Check tf.config.list_logical_devices('GPU') before timing, or call "
            "tf.config.set_soft_device_placement(False) so a missing device raises; label results by where the "
            "ops ran (tensor.device).",
        )
    series: list[Measurement] = e["series"]
    on_cpu: list[Measurement] = e["on_cpu"]
    gblocks: list[Block] = e["blocks"]
    asked = gblocks[0].requested if gblocks else "a GPU"
    evidence = "; ".join(
        f"measurement {m.index_in_series + 1} ({seconds(m.seconds)}): {_ran(m.ran_on)}" for m in on_cpu[:3]
    ) + (f"; … {len(on_cpu) - 3} more" if len(on_cpu) > 3 else "")
    where_asked = f"line {gblocks[0].line}: {gblocks[0].text}" if gblocks else _at(series[0])
    return (
        _SOFT_PLACED_TITLE,
        f"{_at(series[0])}: {series[0].text} (device asked at {where_asked})",
        f"{len(on_cpu)} of {len(series)} timings of this 'GPU' series ran no op on a GPU — {evidence}. "
        f"{asked!s} does not exist on this machine ({_devices_text(e['devices'])}); "
        f"{said(series[0].framework, 'soft_placed.ran')}, so these are CPU times, whatever the label says.",
        said(f.framework, "fix.soft_placed", e["tf1"]),
    )


def _different_one_time_costs(f: Found, e: dict[str, Any]) -> Words:
    a, b, payer, other = e["a"], e["b"], e["payer"], e["other"]
    return (
        "The compared blocks paid different one-time costs",
        f"{_at(a)} vs {_at(b)}",
        f"the {payer.kind} measurement ({_at(payer)}, {seconds(payer.seconds)}) includes {_costs(payer)}; the "
        f"{other.kind} one ({_at(other)}, {seconds(other.seconds)}) includes {_costs(other)} — it reused what the "
        "first paid for, so the comparison measures set-up order, not the devices.",
        "Warm up each device before its clock starts (call the step once per device and read the result), "
        "then time many steady steps — or use `whichdevice train`, which does.",
    )


def _gpu_timing_without_sync(f: Found, e: dict[str, Any]) -> Words:
    m: Measurement = e["m"]
    here = "" if e["on_gpu"] else said(f.framework, "sync.here")
    return (
        "GPU timing ends without synchronizing",
        f"{_at(m)}: {m.text}",
        f"{e['hit']} of {e['of']} timings of this series read the clock after GPU work was queued and before "
        f"anything waited for it ({said(f.framework, 'sync.reads')}): GPU work runs asynchronously, so the time is "
        "how fast the work was launched, not how fast it ran." + here,
        said(f.framework, "fix.sync", e["tf1"]),
    )


def _one_shot_timing(f: Found, e: dict[str, Any]) -> Words:
    m: Measurement = e["m"]
    work = ""
    if m.fn_calls == 1 or m.session_runs == 1:
        work = " of a single call"
    elif m.fn_calls > 1:
        work = f" ({_plural(m.fn_calls, said(m.framework, 'step'))} in one timing)"  # '125 nn.Module calls'
    return (
        "Measured once: the noise cannot be seen",
        f"{_at(m)}: {m.text}",
        f"this number ({seconds(m.seconds)}) is one timing{work}; with one sample there is no median and no "
        "spread, so a difference between devices cannot be told from noise (a busy core, a page fault, a "
        "first-call cost).",
        "Repeat the timed block (≥ 5 times after a warm-up run) and report the median and the spread "
        "(IQR); compare devices only when the spreads do not overlap.",
    )


def _first_includes_setup(f: Found, e: dict[str, Any]) -> Words:
    first: Measurement = e["first"]
    rest: list[Measurement] = e["rest"]
    later: Measurement | None = e["later"]
    if later is not None:
        shows = (
            f"it took {seconds(first.seconds)}, {times(first.seconds / later.seconds)}× measurement "
            f"{later.index_in_series + 1} ({seconds(later.seconds)}), which did as much work or more"
        )
    else:
        shows = (
            f"it took {seconds(first.seconds)} (the others {seconds(min(m.seconds for m in rest))} to "
            f"{seconds(max(m.seconds for m in rest))}; on a busy machine the set-up can hide in the noise)"
        )
    return (
        "The first measurement of the series includes the set-up",
        f"{_at(first)}: {first.text}",
        f"measurement 1 of {e['of']} paid one-time costs the later ones did not ({_costs(first)}; later: "
        f"{_costs(rest[0])}): {shows}.",
        "Run one untimed warm-up iteration (same device, same shapes) before the loop, or drop the first "
        "point; time each point several times and keep the median.",
    )


def _missing_device_failure(f: Found, e: dict[str, Any]) -> Words:
    dev = e["device"] or said(f.framework, "missing.device")
    block: Block | None = e["block"]
    line = e["line"]
    where = (
        f"line {block.line}: {block.text}" if block else (f"line {line}: {e['source_line']}" if line else "the script")
    )
    after = (
        f" It had timed {e['timed_before']} interval(s) before it stopped; what they show is below."
        if e["timed_before"]
        else " Nothing the script meant to time on the GPU ran."
    )
    if e.get("timed_after"):  # a notebook's later cells, run all the same on the devices that are here
        after += f" Its later cells ran all the same: {e['timed_after']} interval(s) timed after it, below."
    first = e["message"]
    return (
        f"The script failed: {dev} does not exist on this machine",
        where,
        f"the script asked for {dev}, and this machine has {_devices_text(e['devices'])}; "
        f"{said(f.framework, 'missing.did', e['tf1'])}" + (f" ({first[:160]})" if first else "") + "." + after,
        said(f.framework, "fix.missing", e["tf1"]),
    )


def _gpu_ops_on_cpu(f: Found, e: dict[str, Any]) -> Words:
    b: Block = e["block"]
    top = ", ".join(f"{t} ({n})" for t, n in e["top"])
    return (
        "Ops in a GPU block ran on the CPU",
        f"line {b.line}: {b.text}",
        f"{b.cpu_ops_in_gpu_block} op(s) in this block ran on the CPU ({e['cpu']} CPU placements in all"
        f"{'; most frequent: ' + top if top else ''}); each one moves data between host and GPU "
        f"({b.h2d} host→device, {b.d2h} device→host copies seen).",
        "Find them with tf.debugging.set_log_device_placement(True); replace ops without a GPU kernel, keep "
        "the data pipeline (tf.data) on the CPU on purpose, and feed the GPU with prefetch.",
    )


def _gpu_label_without_gpu(f: Found, e: dict[str, Any]) -> Words:
    m: Measurement = e["m"]
    ran = ", ".join(sorted(m.ran_on)) or f"the CPU (no {said(m.framework, 'name')} op was seen)"
    return (
        "Labelled GPU, but nothing ran on a GPU",
        f"{_at(m)}: {m.text}",
        said(f.framework, "label").format(ran=ran),
        said(f.framework, "fix.label", e["tf1"]),
    )


def _setup_inside_timing(f: Found, e: dict[str, Any]) -> Words:
    hit: list[Measurement] = e["hit"]
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
    other: Measurement | None = e["other"]
    if other is not None:
        o_total = sum(other.setup_s.values())
        compared = (
            f" It is compared with {_at(other)} ({other.kind or 'no device asked'}), whose timing holds "
            + (f"{o_total / other.seconds:.0%} set-up" if other.seconds > 0 and o_total else "no set-up")
            + ": the ratio mixes set-up with the work."
        )
    n = e["of"]
    return (
        "Set-up inside the timing",
        f"{_at(hit[0])}: {hit[0].text}",
        f"{len(hit)} of {n} timing{'s' if n != 1 else ''} of this series include one-time set-up "
        f"(≥ {e['share_min']:.0%} of the interval): " + "; ".join(parts) + "." + compared,
        said(f.framework, "fix.setup", e["tf1"]),
    )


def _host_inputs_per_call(f: Found, e: dict[str, Any]) -> Words:
    m: Measurement = e["m"]
    counts = {"host_inputs": m.host_inputs, "fn_calls": m.fn_calls, "pageable_moves": m.pageable_moves, "h2d": m.h2d}
    return (
        "Inputs converted from host memory at every call",
        f"{_at(m)}: {m.text}",
        said(f.framework, "host_inputs.gpu" if e["on_gpu"] else "host_inputs.cpu").format(**counts),
        said(f.framework, "fix.host_inputs", e["tf1"]),
    )


def _host_read_per_step(f: Found, e: dict[str, Any]) -> Words:
    m: Measurement = e["m"]
    c = e["cost"]
    cost = (
        f"on {c.card} a launch costs ≈ {c.launch_s * 1e6:.0f} µs and a launch plus a host read "
        f"≈ {c.roundtrip_s * 1e6:.0f} µs ({c.how})"
    )
    if e["on_gpu"]:
        explained = (
            f"{m.user_syncs} host reads for {m.fn_calls} steps: the host waited for the GPU at every step, so the "
            f"queue emptied each time and the launch latency of the next step was not hidden ({cost})."
        )
    else:
        explained = (
            f"{m.user_syncs} host reads by the script for {m.fn_calls} steps. Here the work ran on the CPU, where a "
            "read costs nothing extra; on a GPU this would make the host wait for the device at every step, so the "
            f"GPU would idle while the next step is launched ({cost})."
        )
    return (
        "A host read at every step",
        f"{_at(m)}: {m.text}",
        explained,
        "Keep the loss on the device and read it every N steps (or once after the loop); accumulate with "
        "tensor ops instead of float()/.item()/.numpy().",
    )


def _dataloader_settings(f: Found, e: dict[str, Any]) -> Words:
    ld: dict[str, Any] = e["loader"]
    hit: list[Measurement] = e["hit"]
    shares = "; ".join(
        f"{_at(m)} #{m.index_in_series + 1}: {seconds(m.loader_wait_s)} of {seconds(m.seconds)} "
        f"({m.loader_wait_s / m.seconds:.0%})"
        for m in hit[:3]
    )
    bits = []
    if ld.get("num_workers", 0) == 0:
        bits.append("num_workers=0: every batch is prepared in the main process, between two steps")
    if not ld.get("pin_memory"):
        bits.append("pin_memory=False: batches are in pageable memory, so each copy to the GPU is synchronous")
    gpu_text = (
        "the GPU idled while the loop waited for each batch."
        if e["gpu_here"]
        else "on a GPU this would leave the device idle while each batch is prepared, and the shorter the GPU step "
        "the larger that share becomes."
    )
    return (
        "The timed loop waits for its DataLoader",
        f"line {ld.get('line')}: {ld.get('text', '')}",
        f"{'; '.join(bits)}. The loop waited for batches for a measured share of its timing ({shares}); " + gpu_text,
        "DataLoader(..., num_workers=N (≥ 2), pin_memory=True, persistent_workers=True) and "
        ".to(device, non_blocking=True); or keep a small dataset on the device once, before the loop.",
    )


def _read_from_page_cache(f: Found, e: dict[str, Any]) -> Words:
    r: dict[str, Any] = e["read"]
    return (
        "The timed pipeline reads a file written just before",
        f"line {r.get('read_line')}: reads {r['path']} (written at line {r.get('written_line')})",
        f"the script wrote {r['path']} and then read it back inside the timing: the operating system still holds "
        "the file in its page cache, so the timing measures reading memory, not the disk (or network storage) a "
        "real training run reads from. This is not measured here (the cache cannot be emptied without root); it "
        "is why such a number is a best case.",
        "Write the file in a separate run (or drop the page cache: `echo 1 > /proc/sys/vm/drop_caches` as "
        "root, or read a file larger than RAM), then time the reads; report the first epoch apart.",
    )


def _variables_on_other_device(f: Found, e: dict[str, Any]) -> Words:
    m: Measurement = e["m"]
    other = "CPU" if m.kind == "GPU" else "GPU"
    if e["here_cpu"]:
        effect = (
            "Here both ran on the CPU; on a GPU this would make the GPU block train weights that live in host "
            "memory, copying them to the GPU (and the updates back) at every step."
        )
    else:
        effect = f"the {m.kind} work read (and updated) variables placed by the {other} block: a copy every step."
    return (
        f"Variables made in a {other} block are used in a {m.kind} block",
        f"{_at(m)}: {m.text}",
        f"{m.vars_other_device} variable(s) used in this {m.kind} timing were created inside a {other} device "
        f"block (model and optimizer state live where they were created). {effect}",
        "Build the model and the optimizer inside the device block that trains them (one model per device "
        "being compared), or outside any block so they follow the default device.",
    )


# ---------------------------------------------------------------- the causes (audit/causes.py)


def _clock_read_while_tracing(f: Found, e: dict[str, Any]) -> Words:
    tracer: str = e["tracer"]
    lines: list[int] = e["lines"]
    info: dict[str, Any] | None = e["function"]
    calls = (
        f"The function was called {info['calls']} time(s) and traced {info['traces']} time(s): every call "
        "after a trace returned the same trace-time number, whatever the device did."
        if info
        else "Every call after the trace returns that same number."
    )
    took = f" (the difference was {seconds(e['took_s'])}: the time to trace, once)" if e["took_s"] is not None else ""
    tf = tracer.startswith("tf.function")
    return (
        f"The clock is read while {tracer.split(' ')[0]} traces: it times the tracing, once",
        f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}: {e['text']}",
        f"{len(lines)} clock read(s) ran inside {tracer} while it was being traced{took}. Python code in a "
        f"{'tf.function' if tf else 'jitted function'} runs only when it is traced: the clock is read "
        "once, before any device work runs, and the subtraction becomes a constant of the graph. " + calls,
        "Read the clock outside the function: call it once to warm up, then `t0 = time.perf_counter(); "
        + ("out = f(x); _ = out.numpy()" if tf else "out = f(x).block_until_ready()")
        + "; t = time.perf_counter() - t0`"
        + ("; inside a graph, tf.timestamp() is the in-graph clock." if tf else "."),
    )


def _first_run_is_setup(f: Found, e: dict[str, Any]) -> Words:
    m: Measurement = e["m"]
    r: dict[str, Any] = e["run"]
    steady: float = e["steady_s"]
    evidence = (
        f"that run took {seconds(r['seconds'])}; the same fetch re-run {r.get('reruns')} times after the "
        f"script, in the same session with the same feeds: median {seconds(steady)}. So "
        f"{seconds(e['setup_s'])} = {e['share']:.0%} of this {seconds(m.seconds)} timing is the session's set-up "
        f"(the steady run is {times(r['seconds'] / max(steady, 1e-9))}× faster)."
    )
    if e["others"]:
        evidence += f" {e['others']} more timing(s) of this series also hold a first run of their fetch."
    return (
        "The timed Session.run is the session's first run of that fetch: set-up",
        _at_text(m),
        "the timing holds the first Session.run of this fetch in its session; TensorFlow prunes and "
        "optimizes the graph, creates the kernels and allocates memory in that run (on a GPU it also "
        "copies the constants and initial values there): " + evidence,
        "Run the fetch once untimed (sess.run(fetch)), then time a loop of runs and report the median "
        "per run; compare devices on those steady runs.",
    )


def _loop_name(lp: dict[str, Any]) -> str:
    n = lp.get("iterations")
    count = f"{n:,} iterations" if n is not None else "a number of iterations known only at run time"
    if lp["kind"] == "tf.map_fn":
        return f"tf.map_fn over {n:,} elements" if n is not None else "tf.map_fn (element count known at run time)"
    return f"{lp['kind']} ({count})"


def _per_element_loop(f: Found, e: dict[str, Any]) -> Words:
    lp: dict[str, Any] = e["loop"]
    m: Measurement = e["m"]
    elems: int | None = e["elems"]
    tiny: bool = e["tiny"]
    n, calls = lp.get("iterations"), max(1, int(lp.get("calls", 1)))
    size = (
        f"{elems:,} element{'s' if elems != 1 else ''}"
        if elems is not None
        else "loop variables of shapes " + ", ".join(lp.get("var_shapes") or ["unknown"])
    )
    if n:
        evidence = (
            f"this timing ({seconds(m.seconds)}, {calls} call{'s' if calls != 1 else ''}) ran {calls * n:,} "
            f"iterations: {seconds(m.seconds / (calls * n))} per iteration"
            + (
                f", where the arithmetic on {size} takes nanoseconds — the time is the loop's per-iteration machinery."
                if tiny
                else ", each a scalar loop-condition step plus the body's ops, one after another."
            )
        )
    else:
        evidence = (
            f"this timing ({seconds(m.seconds)}) ran it; each iteration works on {size}, and the loop's "
            "per-iteration machinery (condition, body dispatch, TensorArray reads and writes) is the time."
        )
    return (
        f"A graph loop per element: {_loop_name(lp)}",
        f"line {lp['line']}: {lp.get('text', '')} (timed at {_at_text(m)})",
        f"{_loop_name(lp)} built at line {lp['line']} runs one loop iteration after another"
        + (f", each on {size}; " if tiny else f" ({size}); ")
        + evidence
        + " On a GPU each iteration's ops are separate kernel launches and the loop condition goes back to the "
        "host every iteration, so such a loop runs slower on the GPU than on the CPU (the TensorFlow team "
        "measured tf.while_loop ≈ 10× slower on GPU, tensorflow/tensorflow#40708).",
        "Write the per-element function on the whole tensor (e.g. `elems ** 6`, no map_fn), or "
        "tf.vectorized_map(fn, elems); or compile the loop with tf.function(jit_compile=True) (XLA)."
        if lp["kind"] == "tf.map_fn"
        else "Vectorize the loop body over the whole tensor; for a small fixed count use Python's range "
        "(unrolled at trace time); or compile with tf.function(jit_compile=True) (XLA fuses the loop).",
    )


def _dispatch_bound(f: Found, e: dict[str, Any]) -> Words:
    m: Measurement = e["m"]
    plain: float | None = e["plain_s"]
    hooked: float | None = e["hooked_s"]
    t_plain: float = e["t_plain_s"]
    size: float = e["size"]
    hook_note = (
        f" (the audit's per-op hook adds ≈ {seconds(hooked - plain)} per op, measured: without it this timing "
        f"would be ≈ {seconds(t_plain)}, {seconds(t_plain / m.eager_ops)} per op)"
        if plain and hooked
        else ""
    )
    floor = (
        f"; the cheapest op here ({e['op']}) costs {seconds(plain)} to dispatch, measured after "
        f"the script: {m.eager_ops:,} × {seconds(plain)} = {seconds(m.eager_ops * plain)}, "
        f"{min(1.0, m.eager_ops * plain / t_plain):.0%} of the timing is dispatch alone"
        if plain
        else ""
    )
    g = e["gpu"]
    where_gpu = (
        "On this GPU each op is also a kernel launch"
        if e["on_gpu"]
        else "On a GPU each op would also be a kernel launch"
    )
    return (
        f"{m.eager_ops:,} tiny ops, one by one: the time is per-op overhead, not arithmetic",
        _at_text(m),
        f"this timing ran {m.eager_ops:,} {said(m.framework, 'eager')} ops dispatched one by one from Python, each on "
        f"{size:,.0f} element{'s' if round(size) != 1 else ''} on average: {seconds(m.seconds)} in all, "
        f"{seconds(m.seconds / m.eager_ops)} per op{hook_note}{floor}. The arithmetic of an op this small takes "
        f"nanoseconds. {where_gpu} (≈ {seconds(g.launch_s)} each on {g.card}, {g.how}): {m.eager_ops:,} launches "
        f"≈ {seconds(m.eager_ops * g.launch_s)} at the least, whatever the GPU's speed — each op also waits for the "
        "one before when they depend on each other, so nothing runs in parallel. The CPU wins on ops this small; the "
        "GPU pays only when one op carries enough work.",
        said(m.framework, "fix.dispatch"),
    )


def _latent_from_source(f: Found, e: dict[str, Any]) -> Words:
    r = e["region"]
    cost = e["cost"]
    bits = []
    if r.waits:
        line, written, why = r.waits_on[0]
        if r.waits_per_iteration and r.iterations:
            bits.append(
                f"each of its {r.iterations:,} iterations waits for the GPU at line {line} ({written} — {why}), so "
                f"every iteration pays a host round trip (≈ {seconds(cost.roundtrip_s)} for a launch and a read on "
                f"{cost.card}, {cost.how}) and the time grows with the iterations — ops that only queue (an add) "
                "return before the GPU runs them, so a loop of them looks almost free"
            )
        else:
            bits.append(
                f"line {line} waits for the GPU ({written} — {why}), so the clock stops after the GPU's work and the "
                "number includes it"
            )
        if not r.warmed:
            bits.append(
                "nothing before it runs the same work, so it also includes the first call's one-time set-up (the "
                "CUDA context, memory allocation, the library's kernel or algorithm choice)"
            )
    if not r.waits:
        bits.append(
            f"nothing in it waits for the GPU ({said(f.framework, 'latent.waits')}): "
            f"{said(f.framework, 'latent.async')} asynchronously, so the clock would stop when the last kernel was "
            "queued, not when it finished — the number is the launch time, and a later timing pays for the queue "
            "this one left"
        )
    if r.iterations and r.elems is not None and r.elems <= e["tiny_elems"]:
        bits.append(
            f"its loop runs {r.iterations:,} iterations of ops on a {r.elems}-element tensor: each op is a kernel "
            f"launch (≈ {seconds(cost.launch_s)} on {cost.card}, {cost.how}), "
            f"≥ {seconds(r.iterations * cost.launch_s)} of launches for a few nanoseconds of arithmetic each — "
            "launch-bound, so the CPU wins at this size"
        )
    elif r.iterations and not r.waits_per_iteration:
        bits.append(f"its loop runs {r.iterations:,} iterations")
    return (
        "Not run here (no GPU): what the GPU timing would measure, read from the source",
        (f"line {r.start_line}" if r.start_line == r.end_line else f"lines {r.start_line}-{r.end_line}")
        + f": {r.text}",
        f"the script stopped at line {e['stop']} before this timed region, which works on CUDA "
        f"({', '.join(r.cuda_names[:4])}); read from its source, not measured: " + "; ".join(bits) + ".",
        said(f.framework, "fix.latent"),
    )


def _recurrent_layer(f: Found, e: dict[str, Any]) -> Words:
    ly: dict[str, Any] = e["layer"]
    steps_, off = ly.get("timesteps"), ly.get("not_cudnn_because") or {}
    feats = ly.get("features")
    step = (
        f"each step multiplies a (batch × {feats}) input and a (batch × {ly.get('units')}) state by small weights"
        if feats
        else f"each step is a few small matmuls of {ly.get('units')} units"
    )
    if off:
        path = (
            "its arguments keep it off Keras's cuDNN kernel ("
            + ", ".join(f"{k}={v}" for k, v in off.items())
            + "), so on a GPU it loops over the time steps, launching each step's small ops one after another"
        )
    else:
        path = (
            "its arguments meet Keras 3's conditions for the fused cuDNN kernel (activation tanh, recurrent "
            "activation sigmoid, no recurrent dropout, unroll False, use_bias True), so on a GPU Keras 3 runs it "
            "as one cuDNN call; an LSTM off that path (other arguments, or the pre-cuDNN LSTM of Keras 1.x / "
            "Theano that posts of this kind used, where CuDNNLSTM was the fix) loops over the time steps, "
            "launching each step's small ops one after another"
        )
    n = f"{steps_:,} time steps" if steps_ else "its time steps"
    return (
        f"{ly['layer']} over {n}: fast on a GPU only on the cuDNN kernel",
        f"line {ly['line']}: {ly.get('text', '')}",
        f"the {ly['layer']} built at line {ly['line']} runs {n} one after another, and {step}: the work "
        f"of one step is tiny and each depends on the last. {path[0].upper() + path[1:]}; then the CPU wins. "
        "Read from the layer's configuration" + (", not measured here (no GPU)." if e["no_gpu"] else "."),
        "Keep the LSTM on the cuDNN path on a GPU (default activations, recurrent_dropout=0, unroll=False; "
        "in old Keras, CuDNNLSTM), and give each step more work: a larger batch (batch_size rows per "
        "step) and shorter sequences (split one 50,000-step sequence into many windows).",
    )


_WORDS: dict[str, Callable[[Found, dict[str, Any]], Words]] = {
    "soft_placed_missing_device": _soft_placed_missing_device,
    "different_one_time_costs": _different_one_time_costs,
    "gpu_timing_without_sync": _gpu_timing_without_sync,
    "one_shot_timing": _one_shot_timing,
    "first_includes_setup": _first_includes_setup,
    "missing_device_failure": _missing_device_failure,
    "gpu_ops_on_cpu": _gpu_ops_on_cpu,
    "gpu_label_without_gpu": _gpu_label_without_gpu,
    "setup_inside_timing": _setup_inside_timing,
    "host_inputs_per_call": _host_inputs_per_call,
    "host_read_per_step": _host_read_per_step,
    "dataloader_settings": _dataloader_settings,
    "read_from_page_cache": _read_from_page_cache,
    "variables_on_other_device": _variables_on_other_device,
    "clock_read_while_tracing": _clock_read_while_tracing,
    "first_run_is_setup": _first_run_is_setup,
    "per_element_loop": _per_element_loop,
    "dispatch_bound": _dispatch_bound,
    "latent_from_source": _latent_from_source,
    "recurrent_layer": _recurrent_layer,
}


def finding(f: Found) -> Finding:
    """What the rule found, in words, as the record keeps it."""
    title, where, explanation, fix = _WORDS[f.rule](f, f.evidence)
    return Finding(
        rule=f.rule,
        title=title,
        where=where,
        explanation=explanation,
        fix=fix,
        measurements=f.measurements,
        blocks=f.blocks,
    )


def findings(found: list[Found]) -> list[Finding]:
    return [finding(f) for f in found]
