"""Environment for a NumPy child: BLAS thread counts are read at import."""

from __future__ import annotations

# The registry's entry for this framework (frameworks/__init__.py: what each name means).
PARTS: tuple[str, ...] = ()
REQUIRES: tuple[str, ...] = ("numpy",)
KERAS = False
CPU_ONLY = True
# More work per step, in this framework's words (frameworks.declared; default: Keras' steps_per_execution).
MORE_WORK = ""


def child_env(device_kind: str, cpu_threads: int | None = None) -> dict[str, str]:
    if device_kind not in ("cpu", "discover"):
        raise ValueError("numpy runs on the CPU only")
    env: dict[str, str] = {}
    if cpu_threads is not None:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(cpu_threads)
    return env
