"""Keras on torch: ``torch.cuda.synchronize`` (see ``frameworks/torch/sync.py``)."""

from whichdevice.frameworks.torch.sync import sync

__all__ = ["sync"]
