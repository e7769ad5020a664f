"""The causes public "why is it slower on the GPU?" threads give, each a rule with evidence from the run.

Each rule is a small function ``rule(state, blocks, measurements) -> list[Found]`` over the
child's state (``audit/child.py``) and every measurement, tracing ones included; ``rules.analyze``
runs them after the timing rules; ``present/auditwords.py`` says what they found. Thresholds are
module constants with their source.

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

from whichdevice.audit import static
from whichdevice.audit.record import Block, Found, Measurement
from whichdevice.frameworks.common.audit import terms

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
# tests/data/h100_probe_torch.json, copied from a recorded H100 run): quoted, labelled with
# that card, only where no GPU is present to measure (``gpu_cost``).
H100_LAUNCH_S = 9.68e-06
H100_ITEM_ROUNDTRIP_S = 2.22e-05
# A loop's iterations are "per element" when one iteration works on at most this many elements.
LOOP_ELEMS_MAX = TINY_OP_ELEMS
# Set-up counts when it is at least this share of the interval (rules.SETUP_SHARE_MIN, ANCHORS.md: xprof's 5 %).
SETUP_SHARE_MIN = 0.05


@dataclass(frozen=True)
class GpuCost:
    """The launch costs a finding quotes, and whose they are: this machine's GPU, measured by the audit
    child after the script (each framework's audit part's ``gpu_cost``), or the H100's recorded figure where no GPU
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


# ---------------------------------------------------------------- clock read while tracing


def rule_clock_read_while_tracing(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Found]:
    """A clock read inside a function ``tf.function`` / ``jax.jit`` traced: the read ran once, in Python,
    while the graph was built; the difference the function returns is a constant of that graph."""
    reads = [r for r in state.get("reads", []) if r.get("tracing")]
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
        name = tracer.split(" ", 1)[1] if " " in tracer else ""
        ms = [m for m in measurements if m.tracing == tracer]
        evidence = {
            "tracer": tracer,
            "lines": sorted({r["line"] for r in reads if r["tracing"] == tracer}),
            "text": rs[0]["text"],
            "function": next((f for f in functions.values() if name and f.get("name") == name), None),
            "took_s": ms[0].seconds if ms else None,
        }
        fw = state.get("framework") or "tensorflow"
        out.append(
            Found(rule="clock_read_while_tracing", framework=fw, evidence=evidence, measurements=[m.id for m in ms])
        )
    return out


# ---------------------------------------------------------------- first Session.run


def rule_first_run_is_setup(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Found]:
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
        if steady is None:
            continue  # no steady run to compare with: no evidence, no claim (the state keeps why)
        setup = max(0.0, r["seconds"] - steady)
        share = setup / m.seconds if m.seconds > 0 else 0.0
        if share < SETUP_SHARE_MIN:
            continue
        seen.add(m.series)
        others = sum(
            1
            for x in measurements
            if x.series == m.series and x.id != m.id and any(x.start_seq < r["seq"] < x.end_seq for r in runs)
        )
        evidence = {"m": m, "run": r, "steady_s": steady, "setup_s": setup, "share": share, "others": others}
        out.append(Found(rule="first_run_is_setup", framework="tensorflow", evidence=evidence, measurements=[m.id]))
    return out


# ---------------------------------------------------------------- per-element loops


def rule_per_element_loop(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Found]:
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
            evidence = {"loop": lp, "m": m, "elems": elems, "tiny": elems is not None and elems <= LOOP_ELEMS_MAX}
            out.append(Found(rule="per_element_loop", framework="tensorflow", evidence=evidence, measurements=[m.id]))
    return out


# ---------------------------------------------------------------- dispatch / launch bound


def rule_dispatch_bound(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Found]:
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
        t_plain = m.seconds
        if plain and hooked and hooked > plain:
            t_plain = max(m.seconds - m.eager_ops * (hooked - plain), m.eager_ops * plain)
        if m.fn_calls and not (plain and m.eager_ops * plain >= DISPATCH_SHARE_MIN * t_plain):
            # The interval called compiled steps (tf.function / nn.Module / jax.jit): its eager ops are the
            # loop's bookkeeping (Keras's metrics, callbacks), not its work — unless dispatch alone is most of it.
            continue
        seen.add(m.series)
        evidence = {
            "m": m,
            "size": size,
            "plain_s": plain,
            "hooked_s": hooked if plain and hooked and hooked > plain else None,
            "t_plain_s": t_plain,
            "op": cost.get("op", "a 4x4 add"),
            "gpu": gpu_cost(state),
            "on_gpu": any(d.startswith("GPU") for d in m.ran_on),
        }
        out.append(Found(rule="dispatch_bound", framework=m.framework, evidence=evidence, measurements=[m.id]))
    return out


# ---------------------------------------------------------------- read from the source


def rule_latent_from_source(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Found]:
    """The script stopped (no GPU) before a timed region that runs CUDA work: what that timing would
    measure on a GPU, read from its source (``audit/static.py``) — never said as a cost measured here."""
    exc = state.get("exception") or {}
    stop = exc.get("line")
    if not stop:
        return []
    text = script_source(state)
    if text is None:
        return []
    out = []
    timed_lines = {m.line for m in measurements if m.line}
    # said in the terms of the script's framework where it has them (JAX's), else PyTorch's (CUDA code)
    fw = state.get("framework") or "tensorflow"
    fw = fw if "fix.latent" in terms(fw).WORDS else "torch"
    # its framework's words first; every audited framework's syncs, as a script may mix them (JAX beside torch)
    own = terms(fw).HOST_SYNCS
    for r in static.scan(text, own + tuple(x for x in static.all_syncs() if x not in own)):
        if r.end_line in timed_lines or not r.cuda_names:
            continue  # measured (the other rules say it) or no CUDA work in it
        if not _at_or_after_stop(r, stop):
            continue
        # said when it would time the launches only, wait once per iteration, or pay a first call's set-up
        if not r.waits or r.iterations or not r.warmed:
            evidence = {"region": r, "stop": stop, "cost": gpu_cost(state), "tiny_elems": TINY_OP_ELEMS}
            out.append(
                Found(rule="latent_from_source", framework=fw, evidence=evidence, lines=[r.start_line, r.end_line])
            )
    return out


def script_source(state: dict) -> str | None:
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


# ---------------------------------------------------------------- recurrent layers

# An RNN over this many time steps runs that many dependent steps one after another.
RNN_STEPS_MIN = 100


def rule_recurrent_layer(state: dict, blocks: list[Block], measurements: list[Measurement]) -> list[Found]:
    """A Keras LSTM / GRU over many time steps: on a GPU it is fast only on the fused cuDNN kernel;
    otherwise each time step is its own small ops, one after another (per-element control flow)."""
    out = []
    for ly in state.get("rnn_layers") or []:
        steps, off = ly.get("timesteps"), ly.get("not_cudnn_because") or {}
        if not off and not (steps and steps >= RNN_STEPS_MIN):
            continue
        evidence = {"layer": ly, "no_gpu": not (state.get("physical_devices") or {}).get("GPU")}
        out.append(Found(rule="recurrent_layer", framework="tensorflow", evidence=evidence, lines=[ly["line"]]))
    return out


RULES = (
    rule_recurrent_layer,
    rule_latent_from_source,
    rule_clock_read_while_tracing,
    rule_first_run_is_setup,
    rule_per_element_loop,
    rule_dispatch_bound,
)
