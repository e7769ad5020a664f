# CuPy: a NumPy expression timed on the host, then the same on a CuPy array (not followed by the audit).
import time

import numpy as np
import cupy as cp

a = np.random.rand(1_000_000)
t0 = time.perf_counter()
b = np.sqrt(a) * 2.0
print("numpy:", time.perf_counter() - t0)

g = cp.asarray(a)
t0 = time.perf_counter()
h = cp.sqrt(g) * 2.0
print("cupy:", time.perf_counter() - t0)
