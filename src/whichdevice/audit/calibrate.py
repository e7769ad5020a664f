"""Measurements the audit child makes after the script, for the rules' evidence (no rule here).

- :func:`per_op_cost`: the cost of one tiny framework op dispatched from Python on this machine,
  plainly and under the audit's own per-op hook (the same hook, fed a throwaway state). The
  dispatch-bound rule multiplies the ops an interval ran by the plain cost; the difference is
  the audit's overhead per op, announced when it makes the script run more than 2x slower.
- :func:`rerun_first_runs`: the script's first ``Session.run`` of each fetch (TF1), run again
  in the same session with the same feeds, so the first run's set-up share is measured: first
  run minus the steady median of the re-runs. A fetch whose graph writes state (assignments,
  optimizers, queues, iterators, files) is not re-run, and the reason is kept.

- :func:`gpu_launch_cost`: on the GPU the script's framework sees, the cost of one tiny kernel launch
  and of a launch plus a host read (a short synchronized loop of 1-element adds), so the findings
  quote this machine's figure, not the H100's recorded one (issue #39).

All run with the hooks inactive and the clocks restored; each is bounded (``OPS``, ``RUNS``).
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


# ---------------------------------------------------------------- this machine's GPU launch cost

LAUNCHES = 1000  # tiny kernels per timed block (≈ 10 ms on an H100 at ≈ 9.7 µs each)
ROUNDTRIPS = 200  # launches each followed by a host read, per timed block
LAUNCH_BLOCKS = 3  # timed blocks of each; the median is kept


def launch_cost(step: Any, read: Any, sync: Any, device: str, framework: str) -> dict:
    """Seconds per tiny kernel launched back to back (``step`` launches one, ``sync`` waits for the device
    once after the block: the queue's rate, as tests/data/h100_probe_torch.json's ``tiny_add_async_s``),
    and per launch followed by a host read (``read``: ``tiny_add_item_roundtrip_s``); each the median of
    ``LAUNCH_BLOCKS`` blocks after a warm-up."""
    for _ in range(20):  # warm-up: the kernel built, the allocator and the stream warm
        step()
    read()
    launches, reads = [], []
    for _ in range(LAUNCH_BLOCKS):
        sync()
        t0 = _perf()
        for _ in range(LAUNCHES):
            step()
        sync()
        launches.append((_perf() - t0) / LAUNCHES)
        t0 = _perf()
        for _ in range(ROUNDTRIPS):
            read()
        reads.append((_perf() - t0) / ROUNDTRIPS)
    return {
        "device": device,
        "framework": framework,
        "launch_s": _median(launches),
        "item_roundtrip_s": _median(reads),
        "launches": LAUNCHES,
        "roundtrips": ROUNDTRIPS,
        "blocks": LAUNCH_BLOCKS,
    }


def torch_launch_cost(torch: Any, device: str, name: str) -> dict:
    """A 1-element in-place add on ``device`` ('cuda', or 'cpu' where a test runs it), synchronized
    with ``torch.cuda.synchronize`` on CUDA; the read is ``.item()``."""
    x = torch.zeros(1, device=device)
    cuda = torch.device(device).type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    return launch_cost(lambda: x.add_(1), lambda: x.add_(1).item(), sync, name, "torch")


def jax_launch_cost(jax: Any, device: Any, name: str) -> dict:
    """A jitted 1-element add on ``device``, waited for with ``block_until_ready``; the read is ``float()``."""
    add = jax.jit(lambda a: a + 1)
    box = [jax.device_put(jax.numpy.zeros(1), device)]

    def step() -> None:
        box[0] = add(box[0])

    return launch_cost(step, lambda: float(add(box[0])[0]), lambda: box[0].block_until_ready(), name, "jax")


def tf_launch_cost(tf: Any, device: str, name: str) -> dict:
    """A 1-element eager add under ``tf.device(device)``; the read (and the wait) is ``.numpy()``."""
    with tf.device(device):
        x = tf.zeros([1])

    def step() -> None:
        with tf.device(device):
            x + 1

    def read() -> None:
        with tf.device(device):
            (x + 1).numpy()

    return launch_cost(step, read, read, name, "tensorflow")


def gpu_launch_cost(framework: str) -> dict | None:
    """This machine's GPU launch costs in the script's framework (issue #39: quoted by the findings in
    place of the H100's recorded figure); None where that framework sees no GPU."""
    if framework == "torch":
        import torch

        if not torch.cuda.is_available():
            return None
        return torch_launch_cost(torch, "cuda", torch.cuda.get_device_name(0))
    if framework == "jax":
        import jax

        gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda", "rocm")]
        if not gpus:
            return None
        return jax_launch_cost(jax, gpus[0], str(getattr(gpus[0], "device_kind", "") or "GPU"))
    if framework == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_logical_devices("GPU")
        if not gpus:
            return None
        details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
        return tf_launch_cost(tf, gpus[0].name, str(details.get("device_name") or "GPU"))
    return None


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
