"""Block until every queued op has finished, so the clock reads real completion times."""

from __future__ import annotations

import tensorflow as tf


def sync(result=None) -> None:
    """Wait for all devices. GPU kernels run asynchronously from the Python thread;
    without this the clock measures how fast ops are *queued*, not run.

    ``tf.test.experimental.sync_devices`` (TF >= 2.12) waits for every device's queue;
    ``result`` is unused here (other frameworks need it, e.g. JAX's block_until_ready).
    """
    tf.test.experimental.sync_devices()
