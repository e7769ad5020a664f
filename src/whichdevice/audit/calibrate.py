"""Measurements the audit child makes after the script, for the rules' evidence (no rule here).

- :func:`per_op_cost`: the cost of one tiny framework op dispatched from Python on this machine,
  plainly and under the audit's own per-op hook (the same hook, fed a throwaway state). The
  dispatch-bound rule multiplies the ops an interval ran by the plain cost; the difference is
  the audit's overhead per op, announced when it makes the script run more than 2x slower.
- :func:`rerun_first_runs`: the script's first ``Session.run`` of each fetch (TF1), run again
  in the same session with the same feeds, so the first run's set-up share is measured: first
  run minus the steady median of the re-runs. A fetch whose graph writes state (assignments,
  optimizers, queues, iterators, files) is not re-run, and the reason is kept.

Both run with the hooks inactive and the clocks restored; each is bounded (``OPS``, ``RUNS``).
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

_perf = time.perf_counter
OPS = 2000  # tiny ops timed per side (a few ms plain on this machine)
RUNS = 20  # re-runs of a first Session.run (median of these is the steady time)
MIN_OPS_FOR_COST = 100  # the script dispatched at least this many ops: the per-op cost is worth measuring
# Op types whose run changes state: such a fetch is not re-run.
_WRITES = ("Assign", "Apply", "ResourceApply", "Queue", "Iterator", "Save", "Restore", "Write", "Print", "PyFunc")


def _dummy_state() -> Any:
    from collections import defaultdict

    return SimpleNamespace(
        active=True,
        lock=threading.RLock(),
        c=defaultdict(int),
        seq=0,
        ops_by_device={},
        placed_by_device={},
        seen_kernels=set(),
        stack=[],
        var_kind={},
        var_handles=[],
        var_seen=set(),
        physical={},
        placed_cpu_in_gpu_block={},
        requested_kind=lambda: "",
    )


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def _per_op(run: Any, reps: int = 5) -> float:
    """Median over ``reps`` blocks of ``OPS`` ops: seconds per op."""
    run(50)  # warm-up: kernels built, allocator warm
    out = []
    for _ in range(reps):
        t0 = _perf()
        run(OPS)
        out.append((_perf() - t0) / OPS)
    return _median(out)


def per_op_cost(framework: str, torch_mode_factory: Any = None, tf_callback: Any = None) -> dict:
    """{'framework', 'op', 'plain_s', 'hooked_s', 'ops'}: a 4x4 add dispatched from Python."""
    if framework == "torch":
        import torch

        x = torch.ones(4, 4)

        def run(n: int) -> None:
            y = x
            for _ in range(n):
                y = y + x

        plain = _per_op(run)
        hooked = None
        if torch_mode_factory is not None:
            mode = torch_mode_factory(torch, _dummy_state())
            with mode:
                hooked = _per_op(run)
        return {"framework": "torch", "op": "4x4 add (torch)", "plain_s": plain, "hooked_s": hooked, "ops": OPS}
    if framework == "tensorflow":
        import tensorflow as tf
        from tensorflow.python.framework import op_callbacks

        x = tf.ones((4, 4))

        def run_tf(n: int) -> None:
            y = x
            for _ in range(n):
                y = y + x

        plain = _per_op(run_tf)
        hooked = None
        if tf_callback is not None:
            cb = tf_callback(_dummy_state(), op_callbacks)
            try:
                hooked = _per_op(run_tf)
            finally:
                op_callbacks.remove_op_callback(cb)
        return {"framework": "tensorflow", "op": "4x4 add (TF eager)", "plain_s": plain, "hooked_s": hooked, "ops": OPS}
    return {}


def _fetch_names(fetches: Any) -> list[str]:
    from tensorflow.python.util import nest

    names = []
    for x in nest.flatten(fetches):
        op = getattr(x, "op", x)
        name = getattr(op, "name", None)
        if name:
            names.append(name)
    return names


def rerun_first_runs(first_runs: list[dict], entries: list[tuple], budget_s: float) -> None:
    """Fill ``first_runs[i]['steady_s']`` (or ``['not_rerun']``) for the script's own first runs, within
    ``budget_s`` in all: a fetch whose first run alone took longer than what is left is not re-run
    (its steady run could be as long), and re-runs stop when the budget is spent (at least 3)."""
    from tensorflow.python.framework import graph_util
    from tensorflow.python.util import deprecation

    spent = 0.0
    for sess, args, kwargs, i in entries:
        rec = first_runs[i]
        if rec["seconds"] > budget_s - spent:
            rec["not_rerun"] = (
                f"its first run took {rec['seconds']:.3g} s, more than the {max(0.0, budget_s - spent):.3g} s left "
                "for re-runs (30 % of the script's time)"
            )
            continue
        try:
            fetches = args[0] if args else kwargs.get("fetches")
            with deprecation.silence():  # the audit's own call: no TensorFlow warning on the user's stderr
                sub = graph_util.extract_sub_graph(sess.graph.as_graph_def(), _fetch_names(fetches))
            writes = sorted({n.op for n in sub.node if n.op.startswith(_WRITES)})
            if writes:
                rec["not_rerun"] = f"the fetch's graph changes state ({', '.join(writes[:4])})"
                continue
            t_all = _perf()
            times = []
            for _ in range(RUNS):
                t0 = _perf()
                sess.run(*args, **kwargs)
                times.append(_perf() - t0)
                if len(times) >= 3 and spent + _perf() - t_all > budget_s:
                    break
            spent += _perf() - t_all
            rec["steady_s"] = _median(times)
            rec["reruns"] = len(times)
        except Exception as e:  # a closed session, a feed that cannot be repeated...
            rec["not_rerun"] = f"re-running raised {type(e).__name__}: {str(e).strip()[:160]}"
    for sess, _, _, _ in entries:
        if getattr(sess, "_whichdevice_close_deferred", False):
            try:
                type(sess).close.__wrapped__(sess)  # type: ignore[attr-defined]
            except Exception:
                pass
