"""A user's ``--data``: a ``tf.data.Dataset`` (TensorFlow's; imported only when one is given)."""

from __future__ import annotations


def is_dataset(obj) -> bool:
    import tensorflow as tf

    return isinstance(obj, tf.data.Dataset)


def looks_batched(ds) -> bool:
    """True when the first component's leading dimension is unknown (a batched dataset)."""
    spec = ds.element_spec
    first = spec[0] if isinstance(spec, tuple) else spec
    shape = getattr(first, "shape", None)
    return shape is not None and shape.rank is not None and shape.rank >= 1 and shape[0] is None
