"""Child process of ``whichdevice audit``: run the user's script once, unmodified, and watch it.

``python -m whichdevice.audit.child JOB.json`` where JOB names the script, its arguments, the
state file to write and the deadline. The script runs through ``runpy`` as ``__main__`` with
its own ``sys.argv``; its stdout and stderr are this process's (inherited from the parent),
so its output reaches the user unchanged.

What is installed before the script runs, and why each piece:

- **Clock reads** (``time.time``, ``time.perf_counter``, ``time.monotonic``): a read *from the
  script's own file* returns a ``Stamp`` — a ``float`` subclass that behaves like the number
  but records, when the script computes ``end - start``, which two reads formed the
  interval, on which line. So the audit knows exactly what the script timed, not a guess
  from line numbers. Reads by libraries get plain floats. At every stamped read the counters
  below are snapshotted; an interval's contents are the difference of its two snapshots.
- **TensorFlow** (``tf_hooks.py``), hooked the moment the script imports it (a
  ``sys.meta_path`` finder, so a script that sets ``CUDA_VISIBLE_DEVICES`` before importing
  still works and a script that never imports TensorFlow never pays for it):
  ``tf.device`` / ``tf.compat.v1.device`` (blocks entered from the script: requested device,
  line, counters at entry and exit); ``tf.function``'s ``Function.__call__`` (calls, traces =
  change of ``experimental_get_tracing_count()``, first call per traced signature and device
  = graph instantiation, or XLA compile with ``jit_compile``); an op callback
  (``op_callbacks.add_op_callback``: the device every eager op *actually* ran on — the
  output's ``.device`` —, inputs on another device = host<->device copies, first use of an
  op kernel on a device); ``EagerTensor._numpy`` and ``tf.test.experimental.sync_devices``
  (host reads: the points where the host waits for the device); ``tf.compat.v1`` sessions
  (created, ``run`` calls, each a synchronous host read).
- **Placement inside graphs** on a machine with a GPU: ``tf.debugging.set_log_device_placement``
  makes TensorFlow's placer print one line per op of every instantiated graph; fd 2 is then
  read by a thread that keeps those lines (and in-band markers this module writes at every
  snapshot, so each line lands in the right block) and forwards every other byte to the
  real stderr. On a machine without a GPU this is off: every op can only run on the CPU,
  and the op callback already sees where eager work ran.

After the script ends (normally, by an exception or ``sys.exit``), instrumentation is
switched off and, within the time left, every ``tf.function`` the script called inside a
device block is re-measured with the project's timing core (``timing.measure``, device
synchronized, warm-up apart) under the same device request, with the arguments of its
last call — unless the graph has side effects outside TensorFlow (files, prints, Python
callbacks, summaries) or an argument is a data iterator, in which case the reason is
recorded instead. A watchdog thread writes the state at the deadline and ends the process,
so a hanging script is still audited up to that point.

Trade-off: hooks cost a few microseconds per eager op and per stamped clock read; the
script's own printed numbers include that. ``benchmarks/audit.md`` measures it.
"""

from __future__ import annotations

import errno
import json
import re
import os
import resource
import runpy
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

import math

from whichdevice import frameworks
from whichdevice.audit import clocks
from whichdevice.core import timing
from whichdevice.frameworks.common import audit as common
from whichdevice.frameworks.common.audit import RerunItem
from whichdevice.frameworks.common.auditstate import AUDIT_STATE_VERSION, RERUN_BUDGET_S, State

# The frameworks whose scripts are audited (those with an audit part), in the order one is chosen
# when the script imported several (TensorFlow's own import can pull in JAX). Their parts are
# imported now, before the clocks are patched.
PARTS = {name: frameworks.part(name, "audit") for name in common.AUDITED}

_orig_perf = time.perf_counter
_orig_mono = time.monotonic

MAX_RERUNS = 8  # distinct (function, device) pairs re-measured after the script
RERUN_MIN_TIME_S = 0.2  # steady seconds per re-measured pair (timing.TimingPolicy.min_time_s)
# All pairs together get at most this share of the script's own run time, so the
# audit stays within 2x the script (benchmarks/audit.md); at least 0.5 s; a pair always gets MIN_ROUNDS rounds.
RERUN_SHARE = 0.3
MIN_OPS_FOR_COST = 100  # the script dispatched at least this many ops: the per-op cost is worth measuring

MIN_ROUNDS = 9  # below this the 95 % interval of a median is the whole range: no claim
MAX_ROUNDS = 41


# ---------------------------------------------------------------- re-measurement


@dataclass
class _Pairs:
    """The interleaved re-run of every compared pair (A = CPU-asked, B = GPU-asked), pair by pair.

    Each side is what the framework's audit part gives for its measurement (``rerun_side``: the
    tf.functions, module calls or jitted calls its blocks made, with the arguments of their last
    call, or a PyTorch block's ops replayed); one side's block time is Σ calls × (time of k calls,
    device synchronized) / k. Rounds of A and B in an order drawn at random per round
    (``core.timing.interleave``, the measuring path's); identical pairs point at the first, and the
    time left (``deadline``, the state's ``rerun_left_s``) is shared between them."""

    st: State
    deadline: float
    part: Any
    sync: Callable[[Any], None]
    done: dict[tuple, int] = field(default_factory=dict)
    done_single: dict[tuple, int] = field(default_factory=dict)

    def pair(self, a: Any, b: Any) -> None:
        st = self.st
        base = {"a": a.id, "b": b.id}
        wa, why_a = self.part.rerun_side(st, a)
        wb, why_b = self.part.rerun_side(st, b)
        why = why_a or why_b
        key = (tuple((w.key, w.calls) for w in wa), tuple((w.key, w.calls) for w in wb))
        if not why and key in self.done:
            st.interleaved.append({**base, "same_as": self.done[key]})
            return
        why, left = self._why_not(why, len(self.done), f"more than {MAX_RERUNS} compared pairs; the first were re-run")
        if why:
            st.interleaved.append({**base, "skipped": why})
            return
        try:  # a side that cannot run is this pair's reason, said in one line; the other pairs go on
            t_pair = _orig_perf()
            rounds, per_call = self._interleave(wa, wb, max(0.0, min(RERUN_BUDGET_S, left / 4, st.rerun_left_s)))
            st.rerun_left_s -= _orig_perf() - t_pair
        except Exception as e:
            st.interleaved.append({**base, "skipped": f"re-running raised {type(e).__name__}: {str(e).strip()[:200]}"})
            return
        self.done[key] = len(st.interleaved)
        st.interleaved.append({**base, "rounds": rounds, "functions": per_call})

    def single(self, m: Any) -> None:
        """A timing with no pair that the script measured wrong (``measured_wrong``): its side re-run alone,
        warmed up and device synchronized, for the real time of its block on this machine; or why not."""
        st = self.st
        items, why = self.part.rerun_side(st, m)
        key = tuple((w.key, w.calls) for w in items)
        if not why and key in self.done_single:
            st.singles.append({"m": m.id, "same_as": self.done_single[key]})
            return
        why, left = self._why_not(
            why, len(self.done_single), f"more than {MAX_RERUNS} timings to re-run; the first were"
        )
        if not why and st.rerun_left_s <= 0:
            why = f"the re-runs' time ({RERUN_SHARE:.0%} of the script's run time) was spent on the timings before it"
        if why:
            st.singles.append({"m": m.id, "skipped": why})
            return
        try:
            t0 = _orig_perf()
            rounds, per_call = self._alone(items, max(0.0, min(RERUN_BUDGET_S, left / 4, st.rerun_left_s)))
            st.rerun_left_s -= _orig_perf() - t0
        except Exception as e:
            st.singles.append({"m": m.id, "skipped": f"re-running raised {type(e).__name__}: {str(e).strip()[:200]}"})
            return
        self.done_single[key] = len(st.singles)
        st.singles.append({"m": m.id, "rounds": rounds, "functions": per_call})

    def _why_not(self, why: str | None, done: int, too_many: str) -> tuple[str | None, float]:
        """Why a re-run does not start (the side's own reason ``why``; else ``too_many`` once
        ``MAX_RERUNS`` are ``done``; else too little time left before ``--timeout``), and the time left."""
        left = self.deadline - _orig_mono()
        if not why and done >= MAX_RERUNS:
            why = too_many
        elif not why and left < 10 * RERUN_MIN_TIME_S:
            why = "no time left before --timeout"
        return why, left

    def _alone(self, work: list[RerunItem], budget_s: float) -> tuple[list[float], list[dict]]:
        """Rounds of one side: each function warmed up, then k calls per sample (the slowest ≥ 10 ms),
        until ``MIN_ROUNDS`` rounds and the budget, or ``MAX_ROUNDS``; a round is Σ calls × per-call time."""
        k = self._warm_k(work)
        samples: dict[int, list[float]] = {id(i): [] for i in work}
        rounds: list[float] = []
        t0 = _orig_perf()
        while len(rounds) < MAX_ROUNDS and (len(rounds) < MIN_ROUNDS or _orig_perf() - t0 < budget_s):
            total = 0.0
            for item in work:
                per = self._call_k(item, k) / k
                samples[id(item)].append(per)
                total += item.calls * per
            rounds.append(total)
        per_call = [
            {
                "function": item.function,
                "ran_on": item.ran_on,
                "calls_in_block": item.calls,
                "number_per_sample": k,
                "samples_s": samples[id(item)],
            }
            for item in work
        ]
        return rounds, per_call

    def _warm_k(self, work: list[RerunItem]) -> int:
        """Each function warmed up (traced, instantiated, built on its device; where it ran noted),
        then the calls per sample that make the slowest one's chunk at least 10 ms."""
        ones = []
        for item in work:
            with item.scope():
                out = item.fn()
            self.sync(out)
            if item.where is not None:
                item.ran_on = item.where(out)
            ones.append(max(self._call_k(item, 1), 1e-6))
        return max(1, min(1000, int(0.01 / max(ones)) + 1))

    def _call_k(self, item: RerunItem, k: int) -> float:
        """Seconds of k calls inside the item's scope, synchronized (core.timing.block)."""
        with item.scope():
            return timing.block(item.fn, k, self.sync, _orig_perf)

    def _interleave(self, wa: list[RerunItem], wb: list[RerunItem], budget_s: float) -> tuple[list[dict], list[dict]]:
        # Warm-up (trace / instantiate / build on each device), then one k for every function of the
        # pair, so the slowest chunk is ≥ 10 ms: the same k on both sides amortizes the sync and the
        # clock reads equally (a k per side biased the ratio of two identical sides).
        k = self._warm_k(wa + wb)
        samples: dict[int, list[float]] = {id(i): [] for i in wa + wb}

        def side(work: list[RerunItem]) -> Callable[[], list[float]]:
            def slot() -> list[float]:
                total = 0.0
                for item in work:
                    per = self._call_k(item, k) / k
                    samples[id(item)].append(per)
                    total += item.calls * per
                return [total]

            return slot

        t0 = _orig_perf()

        def stop(got: list[float], _total: float) -> str | None:
            enough = len(got) >= MAX_ROUNDS or (len(got) >= MIN_ROUNDS and _orig_perf() - t0 >= budget_s)
            return "rounds" if enough else None

        got = timing.interleave(
            [timing.Slotted(side(wa), stop), timing.Slotted(side(wb), stop)], clock=_orig_perf, cap_s=math.inf
        )
        for g in got:
            if g.error is not None:
                raise g.error
        rounds = [{"a_s": x, "b_s": y} for x, y in zip(got[0].samples_s, got[1].samples_s)]
        per_call = [
            {
                "side": "a" if any(item is w for w in wa) else "b",
                "function": item.function,
                "requested": item.requested,
                "ran_on": item.ran_on,
                "calls_in_block": item.calls,
                "number_per_sample": k,
                "samples_s": samples[id(item)],
            }
            for item in wa + wb
        ]
        return rounds, per_call


# ---------------------------------------------------------------- main


def _calibrate(st: State, deadline: float) -> None:
    """After the script: the per-op cost (plain and hooked) when the script dispatched many ops, the
    launch costs of the GPU present (none: the findings quote the H100's recorded ones), and the re-run
    of its one-time work (TF1's first Session.runs); each the framework's audit part's. A failure here
    loses only that evidence."""
    part = PARTS.get(st.framework)
    if part is None or not part.installed(st):
        return
    try:
        if st.c["eager_ops"] >= MIN_OPS_FOR_COST:
            st.op_cost = part.op_cost()
    except Exception as e:
        st.op_cost = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    try:
        if (st.physical or {}).get("GPU"):
            st.gpu_costs = part.gpu_cost()
    except Exception as e:
        st.gpu_costs = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    try:
        part.rerun_setup(st, min(max(1.0, RERUN_SHARE * (st.script_s or 0.0)), (deadline - _orig_mono()) / 4))
    except Exception as e:
        for r in st.first_runs:
            r.setdefault("not_rerun", f"{type(e).__name__}: {str(e)[:200]}")


def _write_state(st: State, path: str) -> None:
    for _ in range(5):  # the main thread may be mutating lists while the watchdog dumps
        try:
            text = json.dumps(st.to_json())
            break
        except RuntimeError:
            time.sleep(0.01)
    else:
        text = json.dumps({"version": AUDIT_STATE_VERSION, "error": "state could not be serialized"})
    # O_EXCL|O_NOFOLLOW random temporary file beside it, renamed (core/safeio.py)
    from whichdevice.core import safeio

    safeio.write_atomic(path, text, remember=False)


def _decide_framework(st: State) -> None:
    """Which framework's audit this is: the first (``PARTS``' order: TensorFlow, PyTorch, JAX) whose
    hooks the script used (TensorFlow's import can pull in JAX; a script may import several)."""
    part = next((p for p in PARTS.values() if p.installed(st)), None)
    if part is not None:
        part.adopt(st)


# The audit's own files (this folder, the frameworks' audit parts): their frames are not the user's.
_OWN = (
    str(Path(__file__).resolve().parent),
    *(str(Path(getattr(m, "__file__", "")).resolve()) for m in (*PARTS.values(), common)),
    str(Path(common.__file__).resolve().with_name("auditstate.py")),
)


def _user_frames(te: traceback.TracebackException, seen: set[int], script: str) -> None:
    """Drop the audit's own frames (the runner before the script, the hooks around the calls it
    made) from a traceback and from the exceptions chained to it: the user sees Python's traceback."""
    if id(te) in seen:
        return
    seen.add(id(te))
    frames = list(te.stack)
    first = next((i for i, f in enumerate(frames) if f.filename == script), 0)
    te.stack = traceback.StackSummary.from_list([f for f in frames[first:] if not str(f.filename).startswith(_OWN)])
    for other in (te.__cause__, te.__context__):
        if other is not None:
            _user_frames(other, seen, script)


def _print_script_traceback(e: BaseException, script: str) -> None:
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    _user_frames(te, set(), script)
    # Messages that quote a Python stack (TensorFlow's "defined at (most recent call last)") list the
    # runner's frames too: those lines go, the script's and the libraries' stay.
    runner = re.compile(r'^\s*File "(?:<frozen runpy>|' + "|".join(map(re.escape, _OWN)) + r')[^"]*", line \d+, in .*$')
    text = "".join(te.format())
    sys.stderr.write("".join(ln for ln in text.splitlines(keepends=True) if not runner.match(ln)))


def _script_line(e: BaseException, script: str) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        if frame.f_code.co_filename == script:
            line = lineno
    return line


# File descriptors kept back while the script runs (a script that used up its file
# descriptors crashed the audit child itself, at the import after it, and no state was written):
# closed when the script ends or the watchdog fires, so the audit's own files can be opened.
FD_RESERVE = 32
_reserved: list[int] = []


def _reserve_fds() -> None:
    """Keep ``FD_RESERVE`` descriptors back, and import now what the audit needs after the script
    (an import opens the module's file)."""
    from whichdevice.audit import measurements  # noqa: F401
    from whichdevice.core import safeio  # noqa: F401

    for _ in range(FD_RESERVE):
        try:
            _reserved.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            break


def _release_fds(st: State) -> None:
    """Give the reserve back; first note whether the script left no descriptor free."""
    try:
        os.close(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    except OSError as e:
        if e.errno == errno.EMFILE:
            st.fd_limit_reached = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    while _reserved:
        fd = _reserved.pop()
        try:
            os.close(fd)
        except OSError:
            pass


def _start_watchdog(st: State, done: threading.Event, deadline: float, state_path: str) -> None:
    """A thread that, at the deadline, records where the script was, writes the state and ends the
    process (124 while the script still ran; its own exit code when only the re-run ran out of time)."""
    main_thread = threading.main_thread()

    def watchdog():
        if done.wait(max(0.0, deadline - _orig_mono())):
            return
        finished = st.exit_code is not None  # the script ended; the re-measurement ran out of time
        st.timed_out = not finished
        if not finished:
            st.script_s = _orig_perf() - st.started
        frame = sys._current_frames().get(main_thread.ident)
        while frame is not None and frame.f_code.co_filename != st.script:
            frame = frame.f_back
        if frame is not None:
            st.hang_line = {"line": frame.f_lineno, "text": st.source(frame.f_lineno)}
        st.active = False
        try:
            _release_fds(st)
            if not finished:
                _decide_framework(st)
            _write_state(st, state_path)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(st.exit_code if finished else 124)

    threading.Thread(target=watchdog, daemon=True, name="whichdevice-watchdog").start()


def _install_hooks(st: State) -> None:
    """The clocks now; each framework's hooks the moment the script imports it (now, for one that
    something imported already: never the audit itself)."""
    clocks.install(st)
    for part in PARTS.values():
        for finder in part.finders(st):
            sys.meta_path.insert(0, finder)
            if finder.name in sys.modules:
                finder.install(sys.modules[finder.name], st)


def _run_script(st: State, job: dict) -> int:
    """Run the script as ``__main__`` with its own ``sys.argv``; its exit code (its own failure is
    shown as Python would show it, and kept in the state)."""
    sys.argv = [job.get("shown_as") or st.script, *job.get("args", [])]
    sys.path.insert(0, job.get("path0") or str(Path(st.script).parent))
    code = 0
    st.started = _orig_perf()
    try:
        if job.get("notebook") and job.get("cells"):
            _run_cells(st, job["cells"])
        else:
            magics = {"__whichdevice_magics__": clocks.Magics(st)} if job.get("notebook") else None
            runpy.run_path(st.script, init_globals=magics, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    except BaseException as e:  # the script's own failure: shown as Python would, then audited
        _print_script_traceback(e, st.script)
        msg = str(e).strip()
        st.exception = {"type": type(e).__name__, "message": msg[:4000], "line": _script_line(e, st.script)}
        code = 1
    st.script_s = _orig_perf() - st.started
    st.exit_code = code
    return code


def _run_cells(st: State, first_lines: list[int]) -> None:
    """A notebook's translated cells (``first_lines``: where each starts), one after another in
    one namespace, as "Run All" runs them. A cell that fails stops the rest, as in Jupyter, except
    a failure on a missing device (``.to("cuda")`` with no GPU here): the later cells are the
    notebook's timings, so each is still run on the device that is here, and one that cannot run
    (a name the stopped cell was to define) is recorded and passed. The first failure is raised
    at the end, so the run reads as the script's failure at that line."""
    import types

    from whichdevice.audit.record import mentions_missing_device

    lines = Path(st.script).read_text(encoding="utf-8").splitlines(keepends=True)
    ends = [x - 1 for x in first_lines[1:]] + [len(lines)]
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": st.script, "__whichdevice_magics__": clocks.Magics(st)})
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    stopped: BaseException | None = None
    try:
        for k, (a, b) in enumerate(zip(first_lines, ends), 1):
            code = compile("\n" * (a - 1) + "".join(lines[a - 1 : b]), st.script, "exec")
            try:
                exec(code, main.__dict__)  # noqa: S102 -- the notebook's own cell, run as Jupyter would
            except Exception as e:
                if stopped is not None:
                    st.cells_after_stop.append({"cell": k, "line": a, "error": f"{type(e).__name__}: {e}"[:300]})
                    continue
                if not mentions_missing_device(str(e)):
                    raise
                stopped = e
                continue
            if stopped is not None:
                st.cells_after_stop.append({"cell": k, "line": a, "error": None})
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
    if stopped is not None:
        raise stopped


def _stop_watching(st: State) -> None:
    """After the script: instrumentation off, hooks and clocks removed, the framework decided."""
    st.active = False
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    for part in PARTS.values():
        part.stop(st)
    _decide_framework(st)
    clocks.uninstall()


def _rerun_all(st: State, deadline: float) -> None:
    """The steady re-measurement of the compared pairs; a failure is recorded, never fatal."""
    from whichdevice.audit import measurements

    part = PARTS.get(st.framework)
    if part is None or not part.installed(st):
        return
    try:
        st.rerun_left_s = max(0.5, RERUN_SHARE * (st.script_s or 0.0))
        pairs = _Pairs(st, deadline, part, frameworks.load(st.framework).sync.sync)  # the project's sync
        timed = measurements.timed(measurements.build_measurements(st.to_json()))
        compared = measurements.comparisons(timed)
        for a, b in compared:
            pairs.pair(a, b)
        paired = {m.id for pair in compared for m in pair}
        for m in timed:
            if m.id not in paired and measurements.measured_wrong(m):
                pairs.single(m)
    except Exception as e:  # never lose the audit to a failed re-measurement
        st.rerun_skipped.append(
            {
                "block": None,
                "function": None,
                "requested": None,
                "reason": f"re-measurement failed: {type(e).__name__}: {e}",
            }
        )


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    script = str(Path(job["script"]).resolve())
    state_path = job["state"]
    deadline = _orig_mono() + float(job["timeout_s"])
    st = State(script)
    done = threading.Event()
    _start_watchdog(st, done, deadline, state_path)
    _install_hooks(st)
    _reserve_fds()
    code = _run_script(st, job)
    _release_fds(st)
    _stop_watching(st)
    _calibrate(st, deadline)
    if not job.get("no_rerun"):
        _rerun_all(st, deadline)
    done.set()
    _write_state(st, state_path)
    if st.log_reader is not None:
        st.log_reader.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
