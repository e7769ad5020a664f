"""Keras' training entry points in the user's script on the jax backend:
common/kerascapture.py (the contract: frameworks/contracts.Capture)."""

from __future__ import annotations

from collections.abc import Callable

from whichdevice.frameworks.common import kerascapture
from whichdevice.frameworks.contracts import CaptureSpec


def install(spec: CaptureSpec, sink: Callable[[dict], None]) -> None:
    kerascapture.install(spec, sink)
