"""TensorFlow's training entry points in the user's script (the contract:
``frameworks/contracts.Capture``).

Keras' own (``model.fit``, ``train_on_batch``, ``optimizer.apply_gradients``) come from
``common/kerascapture.py``. TensorFlow adds, for a custom loop (a ``GradientTape`` and
``optimizer.apply_gradients``):

- ``GradientTape.__enter__`` begins a step (the time since the previous step ended is the loop's
  wait for its next batch, ``data_wait_s``);
- a ``tf.function`` whose tracing met ``apply_gradients`` is the compiled step: each call of it
  begins and ends a step (inside it ``apply_gradients`` only runs while tracing);
- ``Dataset.batch`` records the loop's batch size; the ``batch:K`` variant builds the batches
  with K instead (the user's data re-batched where they batch it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from whichdevice.frameworks.common import capturekit, kerascapture
from whichdevice.frameworks.contracts import CaptureSpec


def install(spec: CaptureSpec, sink: Callable[[dict], None]) -> None:
    st = kerascapture.install(spec, sink)
    capturekit.after_import("tensorflow", lambda tf: _patch(tf, st))


def _patch(tf: Any, st: kerascapture.KerasState) -> None:
    if st.spec.device == "gpu":
        st.sync = lambda: tf.test.experimental.sync_devices()
    _patch_tape(tf, st)
    _patch_function(st)
    _patch_batch(tf, st)


def _patch_tape(tf: Any, st: kerascapture.KerasState) -> None:
    cls = tf.GradientTape
    orig = cls.__enter__

    @functools.wraps(orig)
    def __enter__(self):  # noqa: ANN001, ANN202
        if not st.inside_fit and not tf.inside_function():
            if st.clock is not None and st.entry == kerascapture.ENTRY_TAPE:
                st.clock.begin()
            elif st.clock is None and st.tape_began is None:
                st.tape_began = capturekit.now()  # the first step's start, if it turns out to be one
        return orig(self)

    cls.__enter__ = __enter__


def _patch_function(st: kerascapture.KerasState) -> None:
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    cls = pf.Function
    orig = cls.__call__

    @functools.wraps(orig)
    def __call__(self, *args, **kwargs):  # noqa: ANN001, ANN202
        import tensorflow as tf

        if st.inside_fit or tf.inside_function() or (capturekit.OWNER and st.entry != kerascapture.ENTRY_TAPE):
            return orig(self, *args, **kwargs)
        known = id(self) in st.step_fns
        t0 = capturekit.now()
        clock = st.clock if known and st.entry == kerascapture.ENTRY_TAPE else None
        if clock is not None:
            clock.begin(at=t0)
        st.traced_apply = False
        out = orig(self, *args, **kwargs)
        if not known and st.traced_apply:  # this function is the loop's step
            st.step_fns.add(id(self))
            clock = st.loop_clock(kerascapture.ENTRY_TAPE)
            if clock is not None:
                clock.begin(at=t0)
        if clock is not None:
            clock.end()
        return out

    cls.__call__ = __call__


def _patch_batch(tf: Any, st: kerascapture.KerasState) -> None:
    cls = tf.data.Dataset
    orig = cls.batch

    @functools.wraps(orig)
    def batch(self, batch_size, *args, **kwargs):  # noqa: ANN001, ANN202
        if not st.inside_fit:
            st.batch_sizes.append(int(batch_size))
            # the batch variant alone in its process (a loop's): at build time. A fit's shared child
            # (``also``) keeps the user's batch for its other members; kerasfit re-batches the variant's copy.
            fix, arg = st.first
            if fix is not None and fix.rebatches and arg and not st.spec.also:
                st.batch_patched = True
                batch_size = int(arg)
        return orig(self, batch_size, *args, **kwargs)

    cls.batch = batch
