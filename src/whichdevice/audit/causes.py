"""The causes public "why is it slower on the GPU?" threads give, each a rule with evidence from the run.

Each rule is a small function ``rule(state, blocks, measurements) -> list[Finding]`` over the
child's state (``audit/child.py``) and every measurement, tracing ones included; ``rules.analyze``
runs them after the timing rules. Thresholds are module constants with their source.

- :func:`rule_clock_read_while_tracing`: a clock read while ``tf.function`` / ``jax.jit`` traced
  (tensorflow/tensorflow#34231): it ran once, at trace time, and its difference is a constant.
- :func:`rule_first_run_is_setup`: the timing holds a session's first ``Session.run`` of a fetch
  (tensorflow/tensorflow#1532), its set-up measured by re-running the fetch after the script.
- :func:`rule_per_element_loop`: a graph loop per element (``tf.map_fn``, ``tf.while_loop``,
  ``for i in tf.range(n)``) inside the timing (tensorflow/tensorflow#24774, #40708).
- :func:`rule_dispatch_bound`: many tiny ops dispatched one by one from Python (pytorch/pytorch#2219,
  the ``b += b`` question): ops × the measured per-op cost against the interval, with op sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

from whichdevice.audit import static, words
from whichdevice.audit.record import Block, Finding, Measurement
from whichdevice.core.units import seconds

# An op is "tiny" when its output has at most this many elements: 4096 floats (a 64x64 matrix) is
# 16 KiB, which an H100 moves in ~5 ns at 3 TB/s against a ~9.7 µs launch (recorded,
# tests/data/h100_probe_torch.json): on a GPU such an op is all launch, whatever its arithmetic.
TINY_OP_ELEMS = 4096
# A loop of tiny ops needs this many ops in one interval before the per-op cost is its story.
DISPATCH_MIN_OPS = 100
# With compiled steps in the interval, the tiny eager ops are its story only when their measured
# dispatch cost is at least half of it.
DISPATCH_SHARE_MIN = 0.5
# Cost of one kernel launch, and of a launch plus a host read (.item()), measured on an H100 (PyTorch,
# tests/data/h100_probe_torch.json, from ../shared/reference/h100-2026-11-22): quoted, labelled with
# that card, only where no GPU is present to measure (issue #39; ``gpu_cost``).
H100_LAUNCH_S = 9.68e-06
H100_ITEM_ROUNDTRIP_S = 2.22e-05
# A loop's iterations are "per element" when one iteration works on at most this many elements.
LOOP_ELEMS_MAX = TINY_OP_ELEMS
# Set-up counts when it is at least this share of the interval (rules.SETUP_SHARE_MIN, ANCHORS.md: xprof's 5 %).
SETUP_SHARE_MIN = 0.05


def _where(m: Measurement) -> str:
    return f"line {m.line}: {m.text}" if m.line else "the script"


@dataclass(frozen=True)
class GpuCost:
    """The launch costs a finding quotes, and whose they are: this machine's GPU, measured by the audit
    child after the script (``calibrate.gpu_launch_cost``), or the H100's recorded figure where no GPU
    is present (or measuring it failed)."""

    launch_s: float
    roundtrip_s: float
    card: str  # 'an H100' / 'this NVIDIA H200'
    how: str  # 'recorded there' / 'measured here after the script'

    @property
    def measured(self) -> bool:
        return self.card != "an H100"


def gpu_cost(state: dict) -> GpuCost:
    """This machine's GPU launch costs when the child measured them, else the H100's, labelled so."""
    g = state.get("gpu_costs") or {}
    if g.get("launch_s") and g.get("item_roundtrip_s"):
        return GpuCost(
            float(g["launch_s"]),
            float(g["item_roundtrip_s"]),
            f"this {g.get('device') or 'GPU'}",
            "measured here after the script",
        )
    return GpuCost(H100_LAUNCH_S, H100_ITEM_ROUNDTRIP_S, "an H100", "recorded there")


def _us(s: float) -> str:
    return seconds(s)


# ---------------------------------------------------------------- clock read while tracing


def rule_clock_read_while_tracing(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Finding]:
    """A clock read inside a function ``tf.function`` / ``jax.jit`` traced: the read ran once, in Python,
    while the graph was built; the difference the function returns is a constant of that graph."""
    reads = [r for r in state.get("reads", []) if r.get("tracing")]
    if not reads:
        return []
    out = []
    by: dict[tuple, list[dict]] = {}
    for r in reads:
        by.setdefault((r["tracing"], r["line"]), []).append(r)
    functions = state.get("functions") or {}
    seen_fn: set[str] = set()
    for (tracer, line), rs in by.items():
        if tracer in seen_fn:
            continue
        seen_fn.add(tracer)
        lines = sorted({r["line"] for r in reads if r["tracing"] == tracer})
        name = tracer.split(" ", 1)[1] if " " in tracer else ""
        info = next((f for f in functions.values() if name and f.get("name") == name), None)
        ms = [m for m in measurements if m.tracing == tracer]
        calls = (
            f"The function was called {info['calls']} time(s) and traced {info['traces']} time(s): every call "
            "after a trace returned the same trace-time number, whatever the device did."
            if info
            else "Every call after the trace returns that same number."
        )
        took = f" (the difference was {seconds(ms[0].seconds)}: the time to trace, once)" if ms else ""
        tf = tracer.startswith("tf.function")
        out.append(
            Finding(
                rule="clock_read_while_tracing",
                title=f"The clock is read while {tracer.split(' ')[0]} traces: it times the tracing, once",
                where=f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}: {rs[0]['text']}",
                explanation=(
                    f"{len(lines)} clock read(s) ran inside {tracer} while it was being traced{took}. Python code in a "
                    f"{'tf.function' if tf else 'jitted function'} runs only when it is traced: the clock is read "
                    "once, before any device work runs, and the subtraction becomes a constant of the graph. " + calls
                ),
                fix=(
                    "Read the clock outside the function: call it once to warm up, then `t0 = time.perf_counter(); "
                    + ("out = f(x); _ = out.numpy()" if tf else "out = f(x).block_until_ready()")
                    + "; t = time.perf_counter() - t0`"
                    + ("; inside a graph, tf.timestamp() is the in-graph clock." if tf else ".")
                ),
                measurements=[m.id for m in ms],
            )
        )
    return out


# ---------------------------------------------------------------- first Session.run


def rule_first_run_is_setup(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Finding]:
    """The timing holds a session's first run of a fetch: graph pruning and optimization, kernel
    creation, allocation (and on a GPU, copying the constants there) happen in that run."""
    out = []
    runs = state.get("first_runs") or []
    seen: set[str] = set()
    for m in measurements:
        if m.tracing or m.series in seen:
            continue
        inside = [r for r in runs if m.start_seq < r["seq"] < m.end_seq]
        if not inside:
            continue
        r = max(inside, key=lambda x: x["seconds"])
        steady = r.get("steady_s")
        if steady is not None:
            setup = max(0.0, r["seconds"] - steady)
            share = setup / m.seconds if m.seconds > 0 else 0.0
            if share < SETUP_SHARE_MIN:
                continue
            evidence = (
                f"that run took {seconds(r['seconds'])}; the same fetch re-run {r.get('reruns')} times after the "
                f"script, in the same session with the same feeds: median {seconds(steady)}. So "
                f"{seconds(setup)} = {share:.0%} of this {seconds(m.seconds)} timing is the session's set-up "
                f"(the steady run is {r['seconds'] / max(steady, 1e-9):.0f}x faster)."
            )
        else:
            continue  # no steady run to compare with: no evidence, no claim (the state keeps why)
        seen.add(m.series)
        others = sum(
            1
            for x in measurements
            if x.series == m.series and x.id != m.id and any(x.start_seq < r["seq"] < x.end_seq for r in runs)
        )
        if others:
            evidence += f" {others} more timing(s) of this series also hold a first run of their fetch."
        out.append(
            Finding(
                rule="first_run_is_setup",
                title="The timed Session.run is the session's first run of that fetch: set-up",
                where=_where(m),
                explanation=(
                    "the timing holds the first Session.run of this fetch in its session; TensorFlow prunes and "
                    "optimizes the graph, creates the kernels and allocates memory in that run (on a GPU it also "
                    "copies the constants and initial values there): " + evidence
                ),
                fix=(
                    "Run the fetch once untimed (sess.run(fetch)), then time a loop of runs and report the median "
                    "per run; compare devices on those steady runs."
                ),
                measurements=[m.id],
            )
        )
    return out


# ---------------------------------------------------------------- per-element loops


def _loop_name(lp: dict) -> str:
    n = lp.get("iterations")
    count = f"{n:,} iterations" if n is not None else "a number of iterations known only at run time"
    if lp["kind"] == "tf.map_fn":
        return f"tf.map_fn over {n:,} elements" if n is not None else "tf.map_fn (element count known at run time)"
    return f"{lp['kind']} ({count})"


def rule_per_element_loop(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Finding]:
    """A graph loop whose iterations each work on a few elements, inside a timing: one iteration (its
    condition, its body's ops) per element, run one after another."""
    out = []
    seen: set[tuple] = set()
    for m in measurements:
        if m.tracing:
            continue
        for lp in m.loops:
            key = (lp["line"], lp["kind"])
            if key in seen:
                continue
            elems = lp.get("elems_per_iteration")
            if elems is not None and elems > LOOP_ELEMS_MAX and lp["kind"] != "tf.map_fn":
                continue
            seen.add(key)
            n, calls = lp.get("iterations"), max(1, int(lp.get("calls", 1)))
            size = (
                f"{elems:,} element{'s' if elems != 1 else ''}"
                if elems is not None
                else "loop variables of shapes " + ", ".join(lp.get("var_shapes") or ["unknown"])
            )
            tiny = elems is not None and elems <= LOOP_ELEMS_MAX
            if n:
                per = m.seconds / (calls * n)
                evidence = (
                    f"this timing ({seconds(m.seconds)}, {calls} call{'s' if calls != 1 else ''}) ran {calls * n:,} "
                    f"iterations: {_us(per)} per iteration"
                    + (
                        f", where the arithmetic on {size} takes nanoseconds — the time is the loop's per-iteration "
                        "machinery."
                        if tiny
                        else ", each a scalar loop-condition step plus the body's ops, one after another."
                    )
                )
            else:
                evidence = (
                    f"this timing ({seconds(m.seconds)}) ran it; each iteration works on {size}, and the loop's "
                    "per-iteration machinery (condition, body dispatch, TensorArray reads and writes) is the time."
                )
            tf_gpu = (
                " On a GPU each iteration's ops are separate kernel launches and the loop condition goes back to the "
                "host every iteration, so such a loop runs slower on the GPU than on the CPU (the TensorFlow team "
                "measured tf.while_loop ≈ 10x slower on GPU, tensorflow/tensorflow#40708)."
            )
            fix = (
                "Write the per-element function on the whole tensor (e.g. `elems ** 6`, no map_fn), or "
                "tf.vectorized_map(fn, elems); or compile the loop with tf.function(jit_compile=True) (XLA)."
                if lp["kind"] == "tf.map_fn"
                else "Vectorize the loop body over the whole tensor; for a small fixed count use Python's range "
                "(unrolled at trace time); or compile with tf.function(jit_compile=True) (XLA fuses the loop)."
            )
            out.append(
                Finding(
                    rule="per_element_loop",
                    title=f"A graph loop per element: {_loop_name(lp)}",
                    where=f"line {lp['line']}: {lp.get('text', '')} (timed at {_where(m)})",
                    explanation=(
                        f"{_loop_name(lp)} built at line {lp['line']} runs one loop iteration after another"
                        + (f", each on {size}; " if tiny else f" ({size}); ")
                        + evidence
                        + tf_gpu
                    ),
                    fix=fix,
                    measurements=[m.id],
                )
            )
    return out


# ---------------------------------------------------------------- dispatch / launch bound

_DISPATCH_FIX = {
    "torch": (
        "Batch the work into few large ops (stack the small matrices and call the op once, e.g. "
        "torch.linalg.inv(batch)); or compile the loop with torch.compile / CUDA graphs so it launches once; "
        "compare devices at the sizes you will really use."
    ),
    "tensorflow": (
        "Batch the work into few large ops (e.g. tf.linalg.inv(batch) on a stacked batch); or put the loop in a "
        "tf.function(jit_compile=True) so XLA fuses it; compare devices at the sizes you will really use."
    ),
    "jax": "Batch the work into few large ops (jax.vmap), and jax.jit the loop so it is one compiled call.",
}


def rule_dispatch_bound(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Finding]:
    """Many tiny ops dispatched one by one from Python inside a timing: the time is the per-op cost
    (dispatch here; on a GPU, at least one kernel launch per op), not the arithmetic."""
    out = []
    cost = state.get("op_cost") or {}
    plain, hooked = cost.get("plain_s"), cost.get("hooked_s")
    seen: set[str] = set()
    for m in measurements:
        if m.tracing or m.eager_ops < DISPATCH_MIN_OPS or m.seconds <= 0:
            continue
        size = m.elems / m.eager_ops
        if size > TINY_OP_ELEMS or m.series in seen:
            continue
        per = m.seconds / m.eager_ops
        hook_note = ""
        t_plain = m.seconds
        if plain and hooked and hooked > plain:
            t_plain = max(m.seconds - m.eager_ops * (hooked - plain), m.eager_ops * plain)
        if m.fn_calls and not (plain and m.eager_ops * plain >= DISPATCH_SHARE_MIN * t_plain):
            # The interval called compiled steps (tf.function / nn.Module / jax.jit): its eager ops are the
            # loop's bookkeeping (Keras's metrics, callbacks), not its work — unless dispatch alone is most of it.
            continue
        seen.add(m.series)
        if plain and hooked and hooked > plain:
            hook_note = (
                f" (the audit's per-op hook adds ≈ {_us(hooked - plain)} per op, measured: without it this timing "
                f"would be ≈ {seconds(t_plain)}, {_us(t_plain / m.eager_ops)} per op)"
            )
        floor = (
            f"; the cheapest op here ({cost.get('op', 'a 4x4 add')}) costs {_us(plain)} to dispatch, measured after "
            f"the script: {m.eager_ops:,} × {_us(plain)} = {seconds(m.eager_ops * plain)}, "
            f"{min(1.0, m.eager_ops * plain / t_plain):.0%} of the timing is dispatch alone"
            if plain
            else ""
        )
        gpu_c = gpu_cost(state)
        gpu = m.eager_ops * gpu_c.launch_s
        fw = "TensorFlow eager" if m.framework == "tensorflow" else words.name(m.framework)
        on_gpu = any(d.startswith("GPU") for d in m.ran_on)
        where_gpu = (
            "On this GPU each op is also a kernel launch"
            if on_gpu
            else "On a GPU each op would also be a kernel launch"
        )
        out.append(
            Finding(
                rule="dispatch_bound",
                title=f"{m.eager_ops:,} tiny ops, one by one: the time is per-op overhead, not arithmetic",
                where=_where(m),
                explanation=(
                    f"this timing ran {m.eager_ops:,} {fw} ops dispatched one by one from Python, each on "
                    f"{size:,.0f} element{'s' if round(size) != 1 else ''} on average: {seconds(m.seconds)} in all, "
                    f"{_us(per)} per op{hook_note}{floor}. The arithmetic of an op this small takes nanoseconds. "
                    f"{where_gpu} (≈ {_us(gpu_c.launch_s)} each on {gpu_c.card}, {gpu_c.how}): {m.eager_ops:,} launches "
                    f"≈ {seconds(gpu)} at the least, whatever the GPU's speed — each op also waits for the one before "
                    "when they depend on each other, so nothing runs in parallel. The CPU wins on ops this small; the "
                    "GPU pays only when one op carries enough work."
                ),
                fix=_DISPATCH_FIX.get(m.framework, _DISPATCH_FIX["jax"]),
                measurements=[m.id],
            )
        )
    return out


# ---------------------------------------------------------------- read from the source


def rule_latent_from_source(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Finding]:
    """The script stopped (no GPU) before a timed region that runs CUDA work: what that timing would
    measure on a GPU, read from its source (``audit/static.py``) — never said as a cost measured here."""
    exc = state.get("exception") or {}
    stop = exc.get("line")
    if not stop:
        return []
    text = _script_source(state)
    if text is None:
        return []
    out = []
    timed_lines = {m.line for m in measurements if m.line}
    jax = state.get("framework") == "jax"
    for r in static.scan(text):
        if r.end_line in timed_lines or not r.cuda_names:
            continue  # measured (the other rules say it) or no CUDA work in it
        if not _at_or_after_stop(r, stop):
            continue
        bits = _latent_bits(r, gpu_cost(state), jax)
        if bits:
            out.append(_latent_finding(r, stop, bits, jax))
    return out


def _script_source(state: dict) -> str | None:
    """The audited script's source: as the state kept it, else read from its file (None when
    that cannot be read)."""
    text = state.get("script_source")
    if text is None:
        try:
            with open(state.get("script") or "", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return None
    return text


def _at_or_after_stop(r: static.Region, stop: int) -> bool:
    """Whether the region is at or after the line the script stopped at (one it did not get
    through): it starts at or after that line, holds it, or ends after it."""
    return r.start_line >= stop or r.start_line <= stop <= r.end_line or stop < r.end_line


def _latent_bits(r: static.Region, cost: GpuCost, jax: bool = False) -> list[str]:
    """What the region's timing would measure on a GPU, read from its source: no wait for the
    GPU before the clock stops, and its loop's launches (launch-bound when its tensors are tiny)."""
    bits = []
    if not r.waits:
        waits = (
            "no block_until_ready(), np.asarray(), .item()" if jax else "no torch.cuda.synchronize(), .item(), .cpu()"
        )
        bits.append(
            f"nothing in it waits for the GPU ({waits}): {'GPU work runs' if jax else 'CUDA kernels run'} "
            "asynchronously, so the clock would stop when the last kernel was queued, not when it finished — "
            "the number is the launch time, and a later timing pays for the queue this one left"
        )
    if r.iterations and r.elems is not None and r.elems <= TINY_OP_ELEMS:
        bits.append(
            f"its loop runs {r.iterations:,} iterations of ops on a {r.elems}-element tensor: each op is a kernel "
            f"launch (≈ {_us(cost.launch_s)} on {cost.card}, {cost.how}), "
            f"≥ {seconds(r.iterations * cost.launch_s)} of launches for a few nanoseconds of arithmetic each — "
            "launch-bound, so the CPU wins at this size"
        )
    elif r.iterations:
        bits.append(f"its loop runs {r.iterations:,} iterations")
    return bits


def _latent_finding(r: static.Region, stop: int, bits: list[str], jax: bool = False) -> Finding:
    uses = ", ".join(r.cuda_names[:4])
    return Finding(
        rule="latent_from_source",
        title="Not run here (no GPU): what the GPU timing would measure, read from the source",
        where=f"lines {r.start_line}-{r.end_line}: {r.text}",
        explanation=(
            f"the script stopped at line {stop} before this timed region, which works on CUDA "
            f"({uses}); read from its source, not measured: " + "; ".join(bits) + "."
        ),
        fix=(
            "Call result.block_until_ready() before each clock read; call the jitted function once to compile "
            "before timing; and give the GPU work in few large ops (jax.vmap over the small arrays) before "
            "comparing it with the CPU."
            if jax
            else "Call torch.cuda.synchronize() before each clock read (or time with torch.cuda.Event / "
            "torch.utils.benchmark.Timer, which synchronize); warm up once before timing; and give the GPU "
            "work in few large ops (batch the small tensors) before comparing it with the CPU."
        ),
    )


# ---------------------------------------------------------------- recurrent layers

# An RNN over this many time steps runs that many dependent steps one after another.
RNN_STEPS_MIN = 100


def rule_recurrent_layer(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Finding]:
    """A Keras LSTM / GRU over many time steps: on a GPU it is fast only on the fused cuDNN kernel;
    otherwise each time step is its own small ops, one after another (per-element control flow)."""
    out = []
    for ly in state.get("rnn_layers") or []:
        steps, off = ly.get("timesteps"), ly.get("not_cudnn_because") or {}
        if not off and not (steps and steps >= RNN_STEPS_MIN):
            continue
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
        n = f"{steps:,} time steps" if steps else "its time steps"
        out.append(
            Finding(
                rule="recurrent_layer",
                title=f"{ly['layer']} over {n}: fast on a GPU only on the cuDNN kernel",
                where=f"line {ly['line']}: {ly.get('text', '')}",
                explanation=(
                    f"the {ly['layer']} built at line {ly['line']} runs {n} one after another, and {step}: the work "
                    f"of one step is tiny and each depends on the last. {path[0].upper() + path[1:]}; then the CPU wins. "
                    "Read from the layer's configuration"
                    + (", not measured here (no GPU)." if not (state.get("physical_devices") or {}).get("GPU") else ".")
                ),
                fix=(
                    "Keep the LSTM on the cuDNN path on a GPU (default activations, recurrent_dropout=0, unroll=False; "
                    "in old Keras, CuDNNLSTM), and give each step more work: a larger batch (batch_size rows per "
                    "step) and shorter sequences (split one 50,000-step sequence into many windows)."
                ),
            )
        )
    return out


RULES = (
    rule_recurrent_layer,
    rule_latent_from_source,
    rule_clock_read_while_tracing,
    rule_first_run_is_setup,
    rule_per_element_loop,
    rule_dispatch_bound,
)
