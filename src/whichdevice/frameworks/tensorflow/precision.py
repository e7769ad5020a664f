"""Keras mixed precision for one case, and whether this CPU has fast 16-bit math.

``keras.mixed_precision.set_global_policy`` is process-global: ``policy(name)`` sets it for a
block and always puts ``float32`` back, so the next case in the same child is unaffected.

A CPU computes float16/bfloat16 fast only with the instructions oneDNN uses for them:
``avx512_bf16`` or ``amx_bf16`` (bfloat16), ``avx512_fp16`` or ``amx_fp16`` (float16), read from
``/proc/cpuinfo``. Without them the 16-bit math is converted to float32 and back, so mixed
precision on that CPU costs time instead of saving it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
FP16_FLAGS = ("avx512_fp16", "amx_fp16")


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU feature flags (Linux ``/proc/cpuinfo``); empty when unreadable."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        if line.split(":")[0].strip() in ("flags", "Features"):
            return set(line.split(":", 1)[1].split())
    return set()


def fast_16bit(flags: set[str]) -> dict[str, bool]:
    return {"bfloat16": any(f in flags for f in BF16_FLAGS), "float16": any(f in flags for f in FP16_FLAGS)}


@contextlib.contextmanager
def policy(name: str):
    import keras

    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy("float32")
