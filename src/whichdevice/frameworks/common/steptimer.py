"""A Keras 3 callback that times every training batch; users import it as ``whichdevice.keras.StepTimer``.

This is the callback itself, in frameworks/ because the training workloads run it in their
measuring children too (workloads/train.py, workloads/precision.py, with ``verbose=0``);
``whichdevice.keras`` adds what only a user needs (``result()``, the API's result object).

    from whichdevice.keras import StepTimer
    model.fit(ds, epochs=3, callbacks=[StepTimer("run.json", warmup_batches=5, sync=True)])
    # then: whichdevice report run.json

How a batch is timed. The clock is read in ``on_train_batch_begin`` (and at the end of each
epoch); a batch's time is the gap to the next reading, so it covers the train step *and*
Keras's own per-batch work (callbacks, logs), which is what a user's epoch is made of.
``on_train_batch_end`` is deliberately not overridden: a callback that overrides it stops
Keras 3 from dispatching batch-end callbacks on its thread pool (on the JAX and torch
backends), which would change the run being measured. (On the TensorFlow backend Keras
already converts the logs to Python floats after every batch, ``CallbackList.pythonify_logs``,
which reads the loss back to the host: ``model.fit`` there syncs every step on its own.)

``sync=False`` (default): the clock is read as soon as Keras calls the callback. On a GPU
whose work is still queued this measures dispatch, not execution, except where Keras itself
synchronizes (see above). Cost: two clock reads and a list append per batch.
``sync=True``: the device is synchronized before each reading, so every batch time is the
time its work took to finish. Cost: one device sync per batch (measured in
``benchmarks/train.md``), which also removes any overlap between consecutive steps.

The first ``warmup_batches`` batches (tracing / compilation / allocation are in the first)
are kept apart from the steady ones. At the end of ``fit`` it prints a two-line summary
(steady step median ± IQR/2, samples/s, the first step's cost, how many steps were warm-up;
``verbose=0`` silences it), and each epoch's ``logs`` (so ``History.history``) get
``steps_per_second`` and, with ``batch_size``, ``samples_per_second``.

Throughput is steps over *wall time*, not 1 / the median step (a fit whose epochs
2-3 ran 14,156 samples/s was reported at 30,272): an epoch also spends time outside its batches
(Keras builds the epoch's data iterator before the first batch, and ends the epoch after the
last), and its slow steps count in full. So samples/s is ``batch_size`` x the steady steps over
the wall time of the epochs that hold only steady steps (training only: validation is left
out); when no epoch does (a one-epoch fit), over the epochs' training time less the warm-up
batches. ``batch_size`` counts every step whole: a partial last batch (2,000 samples in
batches of 32) is counted as a full one, an error of under one batch per epoch. With ``path`` set, a whichdevice ``RunRecord`` is written at the end of
training (same format as ``whichdevice train``); ``timer.result()`` is the same record as the
Python API's result object (``whichdevice.load`` of that file), ``timer.write(path)`` keeps
it later, and ``whichdevice compare baseline.json run.json --fail-on-regression`` gates on it.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

import sys
import time
from pathlib import Path

import keras

from whichdevice.core.steps import raw_from_steps
from whichdevice.core.timing import measure_overhead


def _backend_sync_fn():
    """Block until the backend's device has finished queued work (None: nothing to do)."""
    name = keras.backend.backend()
    if name == "tensorflow":
        import tensorflow as tf

        return lambda _=None: tf.test.experimental.sync_devices()
    if name == "jax":
        import jax

        # JAX has no global barrier, and during fit Keras' JAX trainer keeps the model's state
        # outside its variables (it empties them: JAXTrainer._purge_model_variables), so wait
        # for every live array instead: the state the last step wrote is among them.
        return lambda _=None: jax.block_until_ready(jax.live_arrays())
    if name == "torch":
        import torch

        if torch.cuda.is_available():
            return lambda _=None: torch.cuda.synchronize()
    return lambda _=None: None


def _profiler_check():
    """TensorFlow's own "is a profiler running" check (a C++ call), or None on another backend."""
    if keras.backend.backend() != "tensorflow":
        return None
    try:
        from tensorflow.python.profiler import trace  # the check tf.profiler.experimental.Trace uses
    except ImportError:
        return None
    return getattr(trace, "enabled", None)


def _step_marker(step_num: int, epoch: int):
    """An open XProf step marker (frameworks/tensorflow/profiler.py says why)."""
    import tensorflow as tf

    marker = tf.profiler.experimental.Trace("train", step_num=step_num, epoch_num=epoch, _r=1)
    marker.__enter__()
    return marker


def _device_name() -> str:
    name = keras.backend.backend()
    try:
        if name == "tensorflow":
            import tensorflow as tf

            return "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"
        if name == "jax":
            import jax

            return "GPU:0" if jax.default_backend() == "gpu" else "CPU:0"
        if name == "torch":
            import torch

            return "GPU:0" if torch.cuda.is_available() else "CPU:0"
    except Exception:  # naming the device must never break training
        pass
    return "CPU:0"


class StepTimer(keras.callbacks.Callback):
    """Per-batch training times; see the module docstring for the method and its cost.

    Args:
        path: where to write the RunRecord JSON at the end of training (None: do not write).
        warmup_batches: how many first batches are warm-up (>= 1; the first always is).
        sync: synchronize the device before every clock reading.
        batch_size: samples per batch, for samples/s in the report (optional).
        verbose: 1 (default) prints the summary at the end of ``fit``; 0 prints nothing.
        mark_steps: on the TensorFlow backend, while a profiler runs (e.g. Keras's own
            ``TensorBoard(profile_batch=...)``), mark each batch as a training step for XProf
            (a "train" TraceMe with ``step_num`` and ``_r=1``, from the batch's begin to the next
            batch's begin or the epoch's end: the batch this callback times), so TensorBoard's
            profile shows a step time instead of "No step marker observed" (Keras 3 marks none).
            Costs one check of the profiler's state per batch when none runs.
    """

    # Safe to run on Keras's callback thread: it never is, since it only overrides
    # *_begin and epoch hooks, which Keras always calls on the training thread.
    async_safe = True

    def __init__(
        self,
        path: str | Path | None = None,
        warmup_batches: int = 1,
        sync: bool = False,
        batch_size: int | None = None,
        clock=time.perf_counter,
        verbose: int = 1,
        mark_steps: bool = True,
    ):
        super().__init__()
        if not isinstance(warmup_batches, int) or warmup_batches < 1:
            raise ValueError(
                f"warmup_batches must be an integer >= 1, got {warmup_batches!r}. Pass e.g. warmup_batches=1."
            )
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer or None, got {batch_size!r}.")
        if verbose not in (0, 1, 2, True, False):
            raise ValueError(f"verbose must be 0 (silent) or 1 (summary at the end of fit), got {verbose!r}.")
        self.verbose = int(verbose)
        self.mark_steps = bool(mark_steps)
        self._profiling = None  # TensorFlow's "is a profiler running" check, when marking steps
        self._marker = None  # the open step marker
        self._step_num = 0
        self.path = Path(path) if path is not None else None
        self.warmup_batches = warmup_batches
        self.sync = bool(sync)
        self.batch_size = batch_size
        self._clock = clock
        self._sync_fn = None
        self.batch_times_s: list[float] = []
        self.batch_epochs: list[int] = []
        self.epoch_s: list[float] = []
        self.epoch_train_s: list[float] = []  # each epoch's wall time to its last batch's end (no validation)
        self.setup_s: float | None = None  # fit() start to the first batch's start
        self.overhead_s = 0.0

    # --- Keras hooks (training thread only) ---
    def _now(self) -> float:
        if self._sync_fn is not None:
            self._sync_fn()
        return self._clock()

    def on_train_begin(self, logs=None):
        self._sync_fn = _backend_sync_fn() if self.sync else None
        self.overhead_s = measure_overhead(self._clock, self._sync_fn or (lambda _=None: None), reps=5)
        self.batch_times_s, self.batch_epochs, self.epoch_s, self.epoch_train_s = [], [], [], []
        self._train_start = self._now()
        self.setup_s = None
        self._profiling = _profiler_check() if self.mark_steps else None
        self._step_num = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._stamps: list[float] = []
        self._epoch_start = self._now()
        self._val_start: float | None = None

    def on_train_batch_begin(self, batch, logs=None):
        t = self._now()
        if self.setup_s is None:
            self.setup_s = t - self._train_start
        self._stamps.append(t)
        if self._profiling is not None:  # after the clock: marking is charged to no batch's start
            self._close_marker()
            if self._profiling():
                self._marker = _step_marker(self._step_num, self._epoch)
            self._step_num += 1

    def _close_marker(self) -> None:
        if self._marker is not None:
            self._marker.__exit__(None, None, None)
            self._marker = None

    def on_test_begin(self, logs=None):
        # Validation inside fit: the epoch's last batch ends here, not at epoch end.
        if getattr(self, "_stamps", None) and self._val_start is None:
            self._val_start = self._now()
            self._close_marker()

    def on_epoch_end(self, epoch, logs=None):
        end = self._now()
        self._close_marker()
        last = self._val_start if self._val_start is not None else end
        ends = self._stamps[1:] + [last]
        first = len(self.batch_times_s)
        for t0, t1 in zip(self._stamps, ends):
            self.batch_times_s.append(t1 - t0)
            self.batch_epochs.append(epoch)
        self.epoch_s.append(end - self._epoch_start)
        self.epoch_train_s.append(last - self._epoch_start)
        if logs is not None:
            # This epoch's steady steps over its wall time (the run's warm-up batches left out);
            # Keras's History runs after the user's callbacks on the same dict, so
            # History.history gets them too.
            steps, wall = self._epoch_rate(epoch, first)
            if steps and wall > 0:
                logs["steps_per_second"] = steps / wall
                if self.batch_size:
                    logs["samples_per_second"] = self.batch_size * steps / wall

    def _epoch_rate(self, epoch: int, first: int) -> tuple[int, float]:
        """Epoch ``epoch``'s steady steps and its training wall time less its warm-up batches
        (its batches start at index ``first``); a fit of warm-up only: all its batches."""
        mine = range(first, first + self.batch_epochs.count(epoch))
        warm = [i for i in mine if i < self.warmup_batches]
        if len(warm) == len(mine):  # nothing steady yet: the epoch as it ran
            return len(mine), self.epoch_train_s[epoch]
        return len(mine) - len(warm), self.epoch_train_s[epoch] - sum(self.batch_times_s[i] for i in warm)

    def steady_rate(self) -> tuple[int, float]:
        """The steady steps and the wall time they took (module doc): the epochs holding only
        steady steps, else each epoch's training time less its warm-up batches."""
        starts = [self.batch_epochs.index(e) for e in range(len(self.epoch_train_s)) if e in self.batch_epochs]
        whole = [e for e, i in enumerate(starts) if i >= self.warmup_batches]
        if whole:
            return sum(self.batch_epochs.count(e) for e in whole), sum(self.epoch_train_s[e] for e in whole)
        rates = [self._epoch_rate(e, i) for e, i in enumerate(starts)]
        return sum(n for n, _ in rates), sum(w for _, w in rates)

    def on_train_end(self, logs=None):
        from whichdevice.core.records import now_iso

        self._close_marker()
        self.ended_at = now_iso()  # the record's time, whenever it is built
        if (
            self.path is not None and self.batch_times_s
        ):  # the user's timer (whichdevice.keras): the workloads' have no path
            self.write(self.path)
        if self.verbose and self.batch_times_s:
            lines = self.summary().lines()
            if self.path is not None:
                lines.append(f"  Record: {self.path} (whichdevice report {self.path})")
            else:
                lines.append('  Not kept: timer.write("run.json") keeps it (whichdevice report / compare read it)')
            print("\n".join(lines), flush=True)

    # --- what it says ---
    def summary(self):
        """The numbers of the end-of-fit summary (``present/steps.StepSummary``)."""
        from whichdevice.core.stepsummary import StepSummary

        steps, wall = self.steady_rate()
        return StepSummary.of(
            self.raw(),
            epochs=len(self.epoch_s),
            batch_size=self.batch_size,
            sync=self.sync,
            wall=(steps, wall) if steps and wall > 0 else None,
        )

    def __repr__(self) -> str:
        if not self.batch_times_s:
            return f"<StepTimer warmup_batches={self.warmup_batches} sync={self.sync}: no batch timed yet>"
        return f"<StepTimer: {self.summary().short()}>"

    def _repr_html_(self) -> str:
        from html import escape

        if not self.batch_times_s:
            return f'<div class="whichdevice-report"><code>{escape(repr(self))}</code></div>'
        return self.summary().html()

    # --- results ---
    def raw(self):
        """The batches as a ``Timing``: first ``warmup_batches`` apart, the rest steady."""
        return raw_from_steps(self.batch_times_s, warmup_steps=self.warmup_batches, overhead_s=self.overhead_s)

    def steady(self) -> list[float]:
        return list(self.raw().samples_s)

    def metrics(self) -> dict[str, float]:
        m: dict[str, float] = {f"epoch_{i + 1}_s": s for i, s in enumerate(self.epoch_s)}
        m["epochs"] = float(len(self.epoch_s))
        m["steps"] = float(len(self.batch_times_s))
        if self.epoch_s:
            m["steps_per_epoch"] = float(self.batch_epochs.count(self.batch_epochs[0]))
        if self.setup_s is not None:
            m["setup_s"] = self.setup_s
        if self.batch_size:
            m["samples_per_step"] = float(self.batch_size)
        steps, wall = self.steady_rate() if self.epoch_train_s else (0, 0.0)
        if steps and wall > 0:  # throughput over wall time (module doc)
            m["steady_steps"] = float(steps)
            m["steady_wall_s"] = wall
        return m

    def record(self):
        """The ``RunRecord`` (experiment ``train``) that :meth:`write` writes."""
        from whichdevice.core.machine import describe_machine
        from whichdevice.core.records import CaseResult, CaseSpec, RunRecord, now_iso

        timing = self.raw()
        params = {
            "kind": "callback",
            "model": getattr(self.model, "name", "model"),
            "loop": "fit",
            fixkeys.SYNC: "each" if self.sync else "none",
        }
        if self.batch_size:
            params[fixkeys.BATCH] = self.batch_size
        spec = CaseSpec(workload="train", framework=keras.backend.backend(), device=_device_name(), params=params)
        notes = []
        if len(self.batch_times_s) <= self.warmup_batches:
            notes.append(
                f"only {len(self.batch_times_s)} batches for {self.warmup_batches} warm-up batches: "
                "the steady time is the last batch alone; train longer or lower warmup_batches"
            )
        return RunRecord(
            experiment="train",
            command=list(sys.argv),
            created_at=getattr(self, "ended_at", None) or now_iso(),
            options={
                "source": "whichdevice.keras.StepTimer",
                "sync": self.sync,
                "warmup_batches": self.warmup_batches,
                "keras": keras.__version__,
            },
            machine=describe_machine(),
            results=[
                CaseResult(spec=spec, status="ok", timing=timing, metrics=self.metrics(), wall_s=sum(self.epoch_s))
            ],
            notes=notes,
        )
