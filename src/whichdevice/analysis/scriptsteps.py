"""What the user's script did per step at its own settings (``diagnose SCRIPT``), as shares of
the step: its wait for the next batch and its host reads, each measured by the capture in the
script's own timed steps (``frameworks/<fw>/capture.py``), on the baseline case at the user's
batch (the case nothing was changed in).

These are measurements of the baseline alone, not A/B pairs: they name why a step is slow even
where every fix pair is too noisy to clear the significance rule (a busy machine), as an
instrumenting profiler does; what would help is still only what a pair measured.

Each share is the part against the step from the same processes, over the same timed steps;
with several rounds (a fresh process each: the capture's metrics of round 2 on as ``round2:...``,
its steps in ``Timing.rounds_s``) the rounds' medians are combined by their median, so one
process landing on a busy moment does not decide the share alone:

- the wait for the next batch (``data_wait_s``: the median time in the DataLoader's
  ``__next__``, or the loop's work between two steps) is inside the step's time, boundary to
  boundary, so its share is ``data_wait_s / step``;
- host reads (``syncs``, ``sync_s``: ``.item()``, ``.numpy()``, ... from the script's code) are
  counted over the process's whole timed run, which a shared baseline process deals out among
  its members (``workloads/script.time_group``): per step they are divided by that run's steps
  (``counted_steps``; a record written before it: the member's steps times the members).

Host-to-device copies are counted (``h2d_count``, ``h2d_bytes``) but not timed, so they have no
share and name no cause here.

Where none of these parts reaches its share, :class:`QuietStep` holds what was measured all the
same (each part's share, and which were not measured), so a report says why no cause is named
instead of saying nothing.

Two more come from the same baseline with the batch cases beside it and the threads it ran with:

- the batch sweep (the script's step at other batches, nothing else changed) splits the step into
  a part that grows with the batch and a fixed part, by a robust line through the cases' fastest
  steps against their batch (:func:`batch_line`, :func:`fast_step`); at the user's batch the growing part,
  less the wait for input (which grows with the batch too, and is named on its own), is the
  share of the step that is the arithmetic per sample (compute-bound), and the intercept is the
  fixed cost per step (Python, dispatch: the part a larger batch shares out);
- the same sweep's largest batch against the user's (:func:`batch_gain`): the time per sample at
  each, compared round by round (the batch's turns share the baseline's process where the step is
  re-batched), each round by its fastest tenth of steps, so that "the batch is too small" is said
  with its ratio, its interval and the rounds it rests on (significance.from_round_ratios);
- the CPU threads the framework ran the steps with (``cpu_threads``, as the capture read it) against
  the machine's cores: more threads than cores contend for them in every parallel op, and the share
  of the median step above the fastest of its steps is the time that contention can have cost;
- the same threads at the cores' count or above on a machine other work kept busy (the
  pre-flight's load per core, ``preflight_load_per_core``, at ``scriptplan.CONTENDED_LOAD`` or
  more, or other programs' share of the cores while the baseline ran, its telemetry:
  analysis/utilization.others_busy), where the steps show it: a median step
  ``CONTENDED_SPREAD`` times its fastest tenth or more, or the baseline's processes in two modes
  (significance.rounds_bimodal). Each thread then waits for a core in every parallel op, and a
  step lands fast or slow by whether the others let it run (a 2-thread step at load 3 on 2
  cores: median 74-98 ms, fastest tenth 0.27 ms).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Literal

from whichdevice import frameworks
from whichdevice.analysis.pipeline import MODERATELY_INPUT_BOUND_PERCENT
from whichdevice.analysis.significance import Claim, ClaimNote, Modes, from_round_ratios, judge, rounds_bimodal
from whichdevice.analysis.utilization import others_busy, summarize
from whichdevice.core.records import CaseResult, RunRecord
from whichdevice.workloads import script as scriptcases
from whichdevice.workloads.scriptplan import CONTENDED_LOAD
from whichdevice.workloads.fixes import BATCH, CPU_THREADS, SYNC, params_of

# The wait for input is a cause from XProf's "MODERATELY input-bound" share of the step (5 %,
# xprof op_stats_to_input_pipeline_analysis.cc), the same share at which the PyTorch profiler's
# plugin says to raise DataLoader workers (kineto tb_plugin: DataLoader > 5 % of the step);
# both from the tools' own documentation.
INPUT_WAIT_SHARE = MODERATELY_INPUT_BOUND_PERCENT / 100
# Host reads are a cause from 5 % of the step too: a read is the step's host waiting, as it waits
# for input, so the same share is where it starts to count. Below it, a read costs less than the
# run-to-run noise of a step on a busy machine, and naming it would send the user after nothing.
HOST_READ_SHARE = 0.05
# The per-sample arithmetic (the fixed cost) is a cause where it is most of the step: over half of
# it, the part that dominates is that one, as a profiler's "compute-bound" verdict says.
COMPUTE_SHARE = 0.5
FIXED_SHARE = 0.5
# Contending threads are a cause from the same share as a host read: time waiting, not computing.
CONTENTION_SHARE = 0.05
# Threads at the cores' count contend only where other work keeps the cores busy; the steps show
# it where the median step is this many times its fastest tenth (a step that only waited for a
# core some of the time; on a quiet machine the corpus's steps kept within 2x of their fastest
# tenth, on a busy one 4-40x: tests/data/*_cpu_2core*.json), or where the processes fell in two modes.
CONTENDED_SPREAD = 3.0
# Host reads at least once a step are a sync every step on a GPU, whatever they cost on a CPU: a
# read of a GPU tensor (``.item()``, ``.cpu()``, ``.numpy()``) waits for all the work queued before
# it, which the PyTorch Performance Tuning Guide ("Avoid unnecessary CPU-GPU synchronization")
# names as a cost. On a CPU the same read only copies a value, so a CPU run measures its cost
# here but cannot time the wait it becomes on a GPU: a report says both, never a GPU cost.
GPU_READS_PER_STEP = 1.0


@dataclass(frozen=True)
class BatchGain:
    """The time per sample at the sweep's largest batch against the user's batch, per round."""

    batch: int  # the user's batch
    larger: int  # the largest batch the sweep measured
    claim: Claim  # per sample, the user's batch / the larger one: > 1, the larger batch is faster
    steps: int  # timed steps a side in the rounds compared (the fewer of the two sides)
    tiled: bool  # the larger batch ran the script's own step, its batch tiled (the script makes its batches)


@dataclass(frozen=True)
class ScriptStep:
    """The baseline's step at the user's batch on one device, and what its parts took."""

    device: str
    framework: str
    step_s: float  # the median timed step (the median of the rounds' medians)
    steps: int  # the timed steps it is measured over, all rounds
    data_wait_s: float | None  # the median wait for the next batch, as step_s; None: not measured (no loader seen)
    reads: float = 0.0  # host reads per step
    read_s: float = 0.0  # their time per step
    copies: float = 0.0  # host-to-device copies per step (counted, not timed)
    copy_bytes: float = 0.0  # their bytes per step
    rounds: int = 1  # processes (rounds) it is measured in
    trainer: str = ""  # the trainer whose loop ran the step (Lightning, the HF Trainer), "": the script's own loop
    batch: int = 0  # the user's batch the step was timed at (0: not known)
    # the batch sweep's line (:func:`batch_line`): seconds per sample and the fixed seconds per
    # step, and the batches it was fitted over; None: fewer than two batches measured
    per_sample_s: float | None = None
    fixed_s: float | None = None
    batches: tuple[int, ...] = ()
    threads: int | None = None  # the CPU threads the steps ran with (None: not read)
    cores: int = 0  # the machine's logical cores the threads share
    fast_s: float | None = None  # the fastest tenth of the timed steps (its 10th percentile)
    # whether host reads were counted: a capture that counts them records none when there were
    # none, and one that does not (Keras' fit) records none too, so a zero is only a measurement
    # where the framework's capture counts them (its env.py's COUNTS_HOST_READS)
    reads_counted: bool = False
    larger: BatchGain | None = None  # the sweep's largest batch against the user's (:func:`batch_gain`)
    # how busy the machine was: the pre-flight's 1-minute load average per core (None: not recorded),
    # and the cores other programs used while the baseline's steps ran (its telemetry; None: not sampled)
    load_per_core: float | None = None
    others_cores: float | None = None
    others_busy: bool = False  # analysis/utilization.others_busy over that window
    modes: Modes | None = None  # the baseline's processes in two modes (significance.rounds_bimodal)

    @property
    def on_cpu(self) -> bool:
        return not self.device.upper().startswith("GPU")

    @property
    def reads_every_step(self) -> bool:
        """Host reads counted at least once a step (``GPU_READS_PER_STEP``): a sync a step on a GPU."""
        return self.reads_counted and self.reads >= GPU_READS_PER_STEP

    @property
    def wait_share(self) -> float | None:
        """The wait for the next batch as a share of the step (0..1), or None."""
        if self.data_wait_s is None or self.step_s <= 0:
            return None
        return min(1.0, self.data_wait_s / self.step_s)

    @property
    def read_share(self) -> float:
        """The host reads' time as a share of the step (0..1)."""
        return min(1.0, self.read_s / self.step_s) if self.step_s > 0 else 0.0

    @property
    def input_bound(self) -> bool:
        return _reaches(self.wait_share, INPUT_WAIT_SHARE)

    @property
    def read_bound(self) -> bool:
        return self.reads > 0 and self.read_share >= HOST_READ_SHARE

    @property
    def compute_share(self) -> float | None:
        """The per-sample arithmetic's share of the step at the user's batch: the sweep line's
        growing part, less the wait for input; None without a line."""
        line = self.line_step_s
        if line is None or self.per_sample_s is None:
            return None
        part = self.per_sample_s * self.batch - (self.data_wait_s or 0.0)
        return min(1.0, max(0.0, part / line))

    @property
    def fixed_share(self) -> float | None:
        """The sweep line's fixed part as a share of the step at the user's batch; None without a line."""
        line = self.line_step_s
        if line is None or self.fixed_s is None:
            return None
        return min(1.0, self.fixed_s / line)

    @property
    def line_step_s(self) -> float | None:
        """The sweep line's step at the user's batch, which its two parts are shares of (the
        line's, not the one case's median: the parts and the whole from the same points)."""
        if self.per_sample_s is None or self.fixed_s is None or not self.batch:
            return None
        line = self.fixed_s + self.per_sample_s * self.batch
        return line if line > 0 else None

    @property
    def compute_bound(self) -> bool:
        return _reaches(self.compute_share, COMPUTE_SHARE)

    @property
    def fixed_bound(self) -> bool:
        return _reaches(self.fixed_share, FIXED_SHARE)

    @property
    def contention_share(self) -> float:
        """The share of the median step above its fastest tenth, where the threads outnumber the cores."""
        if self.threads is None or self.threads <= self.cores:
            return 0.0
        return self.above_fastest

    @property
    def oversubscribed(self) -> bool:
        return self.contention_share >= CONTENTION_SHARE

    @property
    def spread(self) -> float | None:
        """The median step over its fastest tenth (None: no steps timed)."""
        return self.step_s / self.fast_s if self.fast_s and self.step_s > 0 else None

    @property
    def above_fastest(self) -> float:
        """The share of the median step above its fastest tenth, whatever the threads."""
        if self.fast_s is None or self.step_s <= 0:
            return 0.0
        return max(0.0, 1 - self.fast_s / self.step_s)

    @property
    def busy(self) -> bool:
        """Other work kept the cores busy: the pre-flight's load per core at ``CONTENDED_LOAD`` or
        more, or other programs' share of the cores while the baseline ran (utilization.others_busy)."""
        return self.busy_by_load or self.others_busy

    @property
    def busy_by_load(self) -> bool:
        """The pre-flight's load per core at ``CONTENDED_LOAD`` or more."""
        return self.load_per_core is not None and self.load_per_core >= CONTENDED_LOAD

    @property
    def contended(self) -> bool:
        """Threads contending for busy cores (see the module's docstring): at least as many threads
        as cores, the machine busy, and the steps' spread or two modes to show it."""
        if self.threads is None or self.cores <= 0 or self.threads < self.cores or not self.busy:
            return False
        shows = (self.spread or 0.0) >= CONTENDED_SPREAD or self.modes is not None
        return shows and self.above_fastest >= CONTENTION_SHARE

    @property
    def load(self) -> float | None:
        """The pre-flight's 1-minute load average (per core times the cores; None: not recorded)."""
        return self.load_per_core * self.cores if self.load_per_core is not None and self.cores else None


# The parts of a script's step a cause can be named from, in the order a report lists them.
StepPart = Literal["input_wait", "host_reads", "compute_bound", "fixed_cost", "threads"]


@dataclass(frozen=True)
class QuietStep:
    """A script's measured baseline step where no cause is named: each part the capture measured,
    with its share (every one under its cause's threshold), and whether the wait for input was
    measured at all (torch's capture times it only in a DataLoader)."""

    step: ScriptStep
    parts: tuple[tuple[StepPart, float], ...]  # (part, share of the step 0..1), in StepPart's order

    @property
    def wait_measured(self) -> bool:
        return self.step.wait_share is not None

    @property
    def rest_share(self) -> float:
        """The step less its measured wait for input and host reads: the step's own work (and,
        where the wait was not measured, any wait for input)."""
        timed = dict(self.parts)
        return max(0.0, 1.0 - timed.get("input_wait", 0.0) - timed.get("host_reads", 0.0))


@dataclass(frozen=True)
class BusyLoad:
    """The machine was busy when the steps were timed: the pre-flight's 1-minute load per core
    (``preflight_load_per_core``, read as the pre-flight ended, just before the cases ran) at
    ``CONTENDED_LOAD`` or more, the threshold the contention cause and the plan use. Other work then
    competed for the cores, so the times measured can be slower than the machine's own when idle;
    a report says so beside the answer, whether or not a cause is named."""

    load_per_core: float
    cores: int  # the machine's logical cores (0: not recorded)
    predicted: bool  # the no-GPU prediction set these CPU steps beside the GPU's

    @property
    def load(self) -> float | None:
        """The 1-minute load average (per core times the cores; None: the cores not recorded)."""
        return self.load_per_core * self.cores if self.cores else None


def busy_load(record: RunRecord, *, predicted: bool = False) -> BusyLoad | None:
    """The record's pre-flight load where it reaches ``CONTENDED_LOAD`` per core (None: below it,
    or not recorded). ``predicted``: whether a GPU prediction was made from the record's CPU steps."""
    load = record.options.get("preflight_load_per_core")
    if not isinstance(load, (int, float)) or isinstance(load, bool) or load < CONTENDED_LOAD:
        return None
    return BusyLoad(float(load), int(record.machine.cpu_cores_logical or 0), predicted)


def quiet_step(st: ScriptStep) -> QuietStep:
    """What ``st`` measured of its parts, each share only where the record holds it: the wait
    where the capture saw one, the reads where they were counted, the batch line's two parts
    where it was fitted, the threads' contention where they outnumber the cores."""
    parts: list[tuple[StepPart, float]] = []
    if st.wait_share is not None:
        parts.append(("input_wait", st.wait_share))
    if st.reads_counted or st.reads > 0:
        parts.append(("host_reads", st.read_share))
    if st.compute_share is not None:
        parts.append(("compute_bound", st.compute_share))
    if st.fixed_share is not None:
        parts.append(("fixed_cost", st.fixed_share))
    if st.threads is not None and st.threads > st.cores and st.fast_s is not None:
        parts.append(("threads", st.contention_share))
    return QuietStep(st, tuple(parts))


def _reaches(share: float | None, limit: float) -> bool:
    """A share known and at ``limit`` or above: what makes a step input-, compute- or fixed-bound."""
    return share is not None and share >= limit


def _plain_step(p: dict[str, Any]) -> bool:
    """A script's steady case with nothing read back added and no fix: only its batch may differ."""
    return "script" in p and p.get("kind") == "steady" and p.get(SYNC.param) == "none" and "fix" not in p


def is_baseline(r: CaseResult) -> bool:
    """The script's case at its own settings: steady, nothing read back added, no fix, the user's batch."""
    p = params_of(r.spec)
    return _plain_step(p) and p.get(BATCH.param) == p.get("user_batch")


def is_batch_case(r: CaseResult) -> bool:
    """The script's case at another batch, nothing else changed (the batch sweep)."""
    p = params_of(r.spec)
    return _plain_step(p) and bool(p.get(BATCH.param)) and p.get(BATCH.param) != p.get("user_batch")


def batch_line(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """The line ``step = fixed + per_sample * batch`` through (batch, median step) points:
    (per_sample, fixed), or None with fewer than two batches or a line that falls (a step that
    got no longer with more samples measures noise, not a per-sample cost). The slope is the
    median of the slopes between every two batches and the fixed part the median of what each
    point leaves over it (Theil-Sen): one batch's process landing on a busy moment moves a
    least-squares line as far as it likes, and this one not."""
    slopes = [(t2 - t1) / (b2 - b1) for i, (b1, t1) in enumerate(points) for b2, t2 in points[i + 1 :] if b2 != b1]
    if not slopes:
        return None
    slope = statistics.median(slopes)
    if slope <= 0:
        return None
    return slope, max(0.0, statistics.median(t - slope * b for b, t in points))


def _fastest_tenth(samples: list[float]) -> float | None:
    every = sorted(samples)
    return every[int(0.1 * (len(every) - 1))] if every else None


def batch_gain(base: CaseResult, cases: list[CaseResult], *, tiled: bool = False) -> BatchGain | None:
    """The largest batch among ``cases`` (the sweep's, each nothing else changed) against the
    user's (``base``), per sample: round by round (round i of both ran in one process where the
    batch takes turns in the baseline's, else in the i-th pair of runs), each round's fastest tenth
    of its steps divided by its batch (:func:`fast_step`'s reason: on a busy machine a step only
    gets longer), the ratios judged as any rounded claim is (significance.from_round_ratios). One
    round gives a ratio and no interval: not enough. None where no larger batch was measured.
    ``tiled``: the plan re-batched the script's step by tiling its own batch (the record's
    ``rebatched`` option), not the script's DataLoader."""
    b = int(params_of(base.spec).get("user_batch") or 0)
    larger = [x for x in cases if int(params_of(x.spec).get(BATCH.param) or 0) > b > 0 and x.timing is not None]
    if not larger or base.timing is None:
        return None
    top = max(larger, key=lambda x: int(params_of(x.spec).get(BATCH.param) or 0))
    assert top.timing is not None
    k = int(params_of(top.spec).get(BATCH.param) or 0)
    rounds = [
        (list(sa), list(sk))
        for sa, sk in zip(
            base.timing.rounds_s or [base.timing.samples_s], top.timing.rounds_s or [top.timing.samples_s]
        )
        if min(sa, default=0.0) > 0 and min(sk, default=0.0) > 0
    ]
    if not rounds:
        return None
    ratios = [(_fastest_tenth(sa) or 0.0) / b / ((_fastest_tenth(sk) or 1.0) / k) for sa, sk in rounds]
    if len(ratios) > 1:
        claim = from_round_ratios(ratios)
    else:  # one round: its ratio as measured, no interval
        few = ClaimNote("too_few_rounds", 1, 2)
        claim = judge(ratios[0], float("nan"), float("nan"), 1, unit="rounds", enough=False, note=few)
    steps = min(sum(len(sa) for sa, _ in rounds), sum(len(sk) for _, sk in rounds))
    return BatchGain(b, k, claim, steps, tiled)


def fast_step(r: CaseResult) -> float | None:
    """The fastest tenth of a case's timed steps, all rounds (its 10th percentile): on a busy
    machine a step only ever gets longer (a process waiting for a core), so the fast end is the
    step's own time and the median is partly the machine's."""
    return _fastest_tenth([t for samples, _ in _rounds(r) for t in samples])


def _rounds(r: CaseResult) -> list[tuple[list[float], dict[str, float]]]:
    """Per round (process), its timed steps and its capture metrics (``round<i>:`` prefix gone)."""
    assert r.timing is not None
    rounds = r.timing.rounds_s or [r.timing.samples_s]
    out = []
    for i, samples in enumerate(rounds, start=1):
        prefix = "" if i == 1 else f"round{i}:"
        metrics = {
            k.removeprefix(prefix): v
            for k, v in r.metrics.items()
            if k.startswith(prefix) and ":" not in k.removeprefix(prefix)
        }
        if samples:
            out.append((list(samples), metrics))
    return out


def _counted_steps(record: RunRecord, r: CaseResult, m: dict[str, float], steps: int) -> float:
    """The timed steps a process's copies and reads were counted over (see the module's docstring)."""
    if m.get("counted_steps"):
        return float(m["counted_steps"])
    if not scriptcases.shares_child(r.spec) or r.spec.params.get("entry") in scriptcases.KERAS_ENTRIES:
        return float(steps)  # its own process, or a Keras fit that times each member apart
    # a record without counted_steps predates variants taking turns: its shared process ran the
    # baseline cases only (an autocast, batch, workers, channels_last or compile case there had a
    # process of its own)
    if scriptcases.variant_of(r.spec) != "baseline":
        return float(steps)
    key = scriptcases.group_key(r.spec)
    members = sum(
        1
        for x in record.results
        if x.status == "ok" and scriptcases.group_key(x.spec) == key and scriptcases.variant_of(x.spec) == "baseline"
    )
    return float(steps * max(1, members))


def script_steps(record: RunRecord) -> list[ScriptStep]:
    """Per device, the baseline's measured step at the user's batch (none for a record that is
    not a script's)."""
    if "script" not in record.options:
        return []
    out: list[ScriptStep] = []
    seen: set[str] = set()
    for r in record.results:
        if r.status != "ok" or r.timing is None or r.spec.device in seen or not is_baseline(r):
            continue
        rounds = _rounds(r)
        if not rounds:
            continue
        waits = [m["data_wait_s"] for _, m in rounds if "data_wait_s" in m]
        counted = sum(_counted_steps(record, r, m, len(samples)) for samples, m in rounds)

        def per_step(key: str) -> float:
            return sum(m.get(key, 0.0) for _, m in rounds) / counted  # noqa: B023  # used at once

        seen.add(r.spec.device)
        step_s = statistics.median(statistics.median(samples) for samples, _ in rounds)
        batch = int(params_of(r.spec).get("user_batch") or 0)
        fast = fast_step(r)
        cases = [r] + [
            x
            for x in record.results
            if x.status == "ok" and x.timing is not None and x.spec.device == r.spec.device and is_batch_case(x)
        ]
        points = [(int(params_of(x.spec).get(BATCH.param) or 0), fast_step(x) or 0.0) for x in cases] if batch else []
        line = batch_line(points) if batch else None
        threads = [m[CPU_THREADS.param] for _, m in rounds if m.get(CPU_THREADS.param)]
        tele = summarize(r.timing.telemetry) if r.timing.telemetry is not None else None
        load = record.options.get("preflight_load_per_core")
        out.append(
            ScriptStep(
                r.spec.device,
                r.spec.framework,
                step_s,
                sum(len(samples) for samples, _ in rounds),
                statistics.median(waits) if waits else None,
                per_step("syncs"),
                per_step("sync_s"),
                per_step("h2d_count"),
                per_step("h2d_bytes"),
                len(rounds),
                str(params_of(r.spec).get("trainer") or ""),
                batch,
                line[0] if line else None,
                line[1] if line else None,
                tuple(sorted({b for b, _ in points})) if line else (),
                int(max(threads)) if threads else None,
                int(record.machine.cpu_cores_logical or 0),
                fast,
                frameworks.declared(r.spec.framework, "COUNTS_HOST_READS", False),
                batch_gain(r, cases[1:], tiled=record.options.get("rebatched") == "step") if batch else None,
                float(load) if isinstance(load, (int, float)) else None,
                tele.others_cpu_cores if tele is not None else None,
                bool(tele is not None and others_busy(tele)),
                rounds_bimodal([samples for samples, _ in rounds]),
            )
        )
    return out
