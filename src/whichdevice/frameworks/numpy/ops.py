"""Workload ops for NumPy (CPU)."""

from __future__ import annotations

import numpy as np

DTYPES = {"float32": np.float32, "float16": np.float16}


def noop():
    return lambda: None


def matmul_steady(n: int, dtype: str, device: str):
    if dtype not in DTYPES:
        raise ValueError(f"numpy has no {dtype} matmul")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(DTYPES[dtype])
    b = rng.standard_normal((n, n)).astype(DTYPES[dtype])
    return lambda: a @ b


def matmul_seed(n: int, dtype: str, device: str):
    if dtype not in DTYPES:
        raise ValueError(f"numpy has no {dtype} matmul")
    rng = np.random.default_rng(0)

    def call():
        a = rng.standard_normal((n, n), dtype=np.float32).astype(DTYPES[dtype], copy=False)
        b = rng.standard_normal((n, n), dtype=np.float32).astype(DTYPES[dtype], copy=False)
        return a @ b

    return call
