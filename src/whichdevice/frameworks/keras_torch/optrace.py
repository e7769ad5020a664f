"""Keras on torch: the step runs torch ops eagerly; torch's trace (``frameworks/torch/optrace.py``)."""

from whichdevice.frameworks.torch.optrace import trace_step

__all__ = ["trace_step"]
